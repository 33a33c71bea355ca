"""Video VVR tasks: a seeded generator (one task per temporal predicate type), a renderer of videos that satisfy
them (few frames, 32-64 px: the scale of tiny video generators trained on moving / bouncing shapes) and the small
``video`` split (20 tasks per type, 220 in all, sha256-checked).

Each object of a video task moves by a :class:`Motion` (start, velocity, acceleration, a floor bounce, growth,
appearance frame); positions and sizes are in thousandths of the image side, per frame.
"""
from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .colour_model import BACKGROUND_COLOURS, COLOUR_NAMES, OBJECT_COLOURS
from .geometry import circumradius
from .render import render_scene
from .spec import PAPER_VERSION, SHAPE_NAMES, Group, VisualSpec
from .spec_prompts import noun
from .task import Obj, Scene
from .video import TEMPORAL_TYPES, Track, parse_video_spec, temporal_outcome

VIDEO_SPLIT_SIZE = 220
VIDEO_SPLIT_SHA256 = "406031189c978ccf64b090e31680c7e96fae82fb82f7457ea728f9fd1977c484"
VIDEO_BASE_SEED = 1_400_000_000
FRAME_CHOICES = (8, 12, 16)


@dataclass
class Motion:
    """Trajectory of one object (milli units per frame; ``bounce``: reflect off the floor)."""

    shape: str
    color: str
    x: int
    y: int
    s: int
    vx: int = 0
    vy: int = 0
    ax: int = 0
    ay: int = 0
    growth: int = 0  # size change per frame, in thousandths of the starting size
    appear: int = 0
    vanish: int = -1  # first frame without the object (-1: never leaves)
    bounce: bool = False
    rot: int = 0

    def states(self, frames: int) -> list[tuple[float, float, float] | None]:
        out: list[tuple[float, float, float] | None] = []
        x, y, vx, vy = float(self.x), float(self.y), float(self.vx), float(self.vy)
        for t in range(frames):
            s = self.s * (1 + self.growth * t / 1000)
            floor = 1000 - 20 - circumradius(self.shape, s)
            if self.bounce and y > floor:
                y, vy = 2 * floor - y, -abs(vy) * 0.8
            out.append((x, y, s) if t >= self.appear and (self.vanish < 0 or t < self.vanish) else None)
            x, y, vx, vy = x + vx, y + vy, vx + self.ax, vy + self.ay
        return out


@dataclass
class VideoTask:
    id: str
    prompt: str
    spec: VisualSpec
    motions: list[Motion]
    frames: int
    primary: str
    extra: dict[str, Any] = field(default_factory=dict)

    def to_row(self) -> dict[str, Any]:
        return {"id": self.id, "prompt": self.prompt, "visual_spec_json": self.spec.to_json(),
                "active_criteria": [self.primary], "difficulty_bin": 1, "frames": self.frames, "primary": self.primary,
                "version": "vvr-2", "witness_video": [asdict(m) for m in self.motions]}

    def to_json(self) -> str:
        return json.dumps(self.to_row(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)

    @classmethod
    def from_row(cls, row: dict[str, Any], where: str = "") -> "VideoTask":
        if isinstance(row, VideoTask):
            return row
        spec = parse_video_spec(row["visual_spec_json"], where or f"task {row.get('id')}")
        motions = [Motion(**m) for m in row.get("witness_video", [])]
        return cls(str(row["id"]), str(row["prompt"]), spec, motions, int(row.get("frames", 8)),
                   str(row.get("primary", "")))

    def symbolic_tracks(self) -> dict[str, Track]:
        out = {}
        for g in self.spec.groups:
            ms = [m.states(self.frames) for m in self.motions if m.color == g.color]
            xy, size, count = [], [], []
            for t in range(self.frames):
                here = [m[t] for m in ms if m[t] is not None]
                count.append(len(here))
                xy.append((float(np.mean([p[0] for p in here])) / 1000, float(np.mean([p[1] for p in here])) / 1000) if here else None)
                size.append(float(np.mean([p[2] for p in here])) / 1000 if here else None)
            out[g.id] = Track(xy, size, count)
        return out


def render_video(task: VideoTask, size: int = 32, frames: int | None = None) -> np.ndarray:
    """``T x size x size x 3`` uint8 frames of the task's witness motion."""
    frames = frames or task.frames
    states = [m.states(frames) for m in task.motions]
    bg = task.spec.background or "white"
    out = []
    for t in range(frames):
        objs = [Obj(m.shape, m.color, st[t][0], st[t][1], st[t][2], m.rot) for m, st in zip(task.motions, states)
                if st[t] is not None]
        out.append(render_scene(Scene(objs), size, bg, colours=OBJECT_COLOURS, backgrounds=BACKGROUND_COLOURS))
    return np.stack(out)


def to_video_tensor(videos: list[np.ndarray]) -> Any:
    """Stack ``T x H x W x 3`` uint8 videos into ``B x 3 x T x H x W`` floats in [-1, 1]."""
    import torch

    arr = np.stack(videos).astype(np.float32) / 127.5 - 1.0
    return torch.from_numpy(arr).permute(0, 4, 1, 2, 3).contiguous()


# ---------------------------------------------------------------- generator


def _objects(rng: random.Random, n: int) -> list[tuple[str, str]]:
    colours = rng.sample(list(COLOUR_NAMES), n)
    return [(c, rng.choice(SHAPE_NAMES)) for c in colours]


def _build(rng: random.Random, primary: str, frames: int) -> tuple[list[Motion], list[dict[str, Any]]]:
    """Motions and temporal predicates for one primary type (generous margins, objects large enough for 32 px)."""
    span = frames - 1
    (c1, s1), (c2, s2) = _objects(rng, 2)
    size = rng.randint(200, 240)
    a = Motion(s1, c1, 500, 500, size, rot=rng.randrange(0, 360) if s1 != "circle" else 0)
    t: dict[str, Any] = {"type": primary, "object": f"{c1}_{s1}"}
    extra: list[Motion] = []
    if primary in ("persistent", "stationary", "count_consistency"):
        a.x, a.y = rng.randint(250, 750), rng.randint(250, 750)
        if primary == "persistent":
            a.vx = rng.choice([-1, 1]) * rng.randint(0, 300 // span)
        if primary == "count_consistency":
            a.x, a.y, a.vx = 260, rng.randint(250, 400), rng.randint(5, 300 // span)
            extra = [Motion(s1, c1, 740, a.y + 350, size, vx=-a.vx, rot=a.rot)]
    elif primary in ("moves_direction", "velocity_range"):
        direction = rng.choice(["left", "right", "up", "down"])
        dist = rng.randint(400, 520)
        v = dist // span
        ux, uy = {"left": (-1, 0), "right": (1, 0), "up": (0, -1), "down": (0, 1)}[direction]
        a.x, a.y = 500 - ux * dist // 2, 500 - uy * dist // 2
        a.vx, a.vy = ux * v, uy * v
        if primary == "moves_direction":
            t["direction"] = direction
        else:
            t["min_speed"], t["max_speed"] = round(v / 1000 * 0.6, 3), round(v / 1000 * 1.4, 3)
    elif primary == "acceleration_trend":
        trend = rng.choice(["accelerating", "decelerating", "constant"])
        t["trend"] = trend
        a.y = rng.randint(300, 700)
        if trend == "constant":
            a.x, a.vx = 230, 520 // span
        else:
            acc = max(2, 1040 // (span * span))
            v0 = acc * span if trend == "decelerating" else 0
            a.ax = acc if trend == "accelerating" else -acc
            dist = v0 * span + a.ax * span * (span - 1) // 2
            a.x, a.vx = 500 - dist // 2, v0
            if trend == "accelerating":
                a.vx = acc
    elif primary == "size_change":
        change = rng.choice(["grows", "shrinks", "constant"])
        t["change"] = change
        a.x, a.y = 500, 500
        if change == "grows":
            a.s, a.growth = 170, 700 // span
        elif change == "shrinks":
            a.s, a.growth = 280, -420 // span
    elif primary == "trajectory_shape":
        shape = rng.choice(["linear", "curved", "bounce"])
        t["shape"] = shape
        a.s = min(a.s, 210)
        if shape == "linear":
            a.x, a.y, a.vx, a.vy = 220, 220, 560 // span, 560 // span
        elif shape == "curved":
            a.x, a.y, a.vx, a.vy, a.ay = 220, 200, 560 // span, 0, max(2, 1100 // (span * span))
        else:
            a.x, a.y, a.vx, a.ay, a.bounce = 230, 180, 540 // span, max(6, 2600 // (span * span)), True
    else:  # pairwise: temporal_order, relative_distance_change, relative_position_change
        b = Motion(s2, c2, 500, 500, size, rot=rng.randrange(0, 360) if s2 != "circle" else 0)
        t["reference_object"] = f"{c2}_{s2}"
        a.y, b.y = 280, 720
        if primary == "temporal_order":
            t["event"] = rng.choice(["appears", "starts_moving"])
            a.x, b.x = 300, 700
            if t["event"] == "appears":
                b.appear = rng.randint(2, span // 2)
            else:  # a moves from the start; b stands still until ``late``, then moves left
                a.vx = 300 // span
                late = rng.randint(span // 2, span - 2)
                b.vanish = late
                moving = Motion(b.shape, b.color, b.x, b.y, b.s, rot=b.rot, appear=late)
                moving.vx = -(320 // max(span - late, 1))
                moving.x = b.x - moving.vx * late
                extra.append(moving)
        elif primary == "relative_distance_change":
            change = rng.choice(["decreases", "increases"])
            t["change"] = change
            a.y, b.y = 300, 700
            if change == "decreases":
                a.x, b.x, a.vx, b.vx = 200, 800, 280 // span, -280 // span
            else:
                a.x, b.x, a.vx, b.vx = 420, 580, -300 // span, 300 // span
        else:
            t["from"], t["to"] = "left_of", "right_of"
            if rng.random() < 0.5:
                t["from"], t["to"] = "right_of", "left_of"
            sign = 1 if t["to"] == "right_of" else -1
            b.x = 500
            a.x, a.vx = 500 - sign * 300, sign * 600 // span
        extra = [b, *extra]
    return [a, *extra], [t]


def _prompt(spec: VisualSpec, rng: random.Random) -> str:
    groups = [f"{'two' if g.count == 2 else 'a'} {noun(g)}" for g in spec.groups]
    text = [f"A short video on a plain {spec.background} background showing {' and '.join(groups)}, and nothing else."]
    for t in spec.temporal:
        o = spec.group(t["object"])
        S = f"The {noun(o)}"
        ref = f"the {noun(spec.group(t['reference_object']))}" if "reference_object" in t else ""
        kind = t["type"]
        text.append({
            "persistent": f"{S} stays visible the whole time.",
            "moves_direction": f"{S} moves {t.get('direction')}.",
            "stationary": f"{S} stays still.",
            "velocity_range": f"{S} moves at a steady speed of about {50 * (t.get('min_speed', 0) + t.get('max_speed', 0)):.0f}% of the frame per step.",
            "acceleration_trend": {"accelerating": f"{S} speeds up.", "decelerating": f"{S} slows down.",
                                   "constant": f"{S} moves at a constant speed."}.get(t.get("trend", ""), ""),
            "size_change": {"grows": f"{S} grows.", "shrinks": f"{S} shrinks.",
                            "constant": f"{S} keeps its size."}.get(t.get("change", ""), ""),
            "count_consistency": f"There are two {noun(o, True)} in every frame.",
            "trajectory_shape": {"linear": f"{S} moves along a straight line.", "curved": f"{S} moves along a curve.",
                                 "bounce": f"{S} falls and bounces."}.get(t.get("shape", ""), ""),
            "temporal_order": f"{S} {'appears' if t.get('event') == 'appears' else 'starts moving'} before {ref}"
                              f"{' does' if t.get('event') == 'starts_moving' else ''}.",
            "relative_distance_change": f"{S} and {ref} move {'closer together' if t.get('change') == 'decreases' else 'apart'}.",
            "relative_position_change": f"{S} starts {str(t.get('from')).replace('_of', '')} of {ref} and ends "
                                        f"{str(t.get('to')).replace('_of', '')} of it.",
        }[kind])
    return " ".join(text)


def generate_video_task(seed: int, primary: str, frames: int = 8, task_id: str | None = None) -> VideoTask:
    """A video task whose witness satisfies its temporal predicate (checked on the symbolic tracks)."""
    if primary not in TEMPORAL_TYPES:
        raise KeyError(f"unknown temporal predicate {primary!r}; known: {', '.join(TEMPORAL_TYPES)}")
    if frames < 4:
        raise ValueError(f"a video task needs >= 4 frames, got {frames}")
    rng = random.Random(seed)
    for _ in range(50):
        motions, temporal = _build(rng, primary, frames)
        keys = []
        for m in motions:
            if (m.color, m.shape) not in keys:
                keys.append((m.color, m.shape))
        states = [m.states(frames) for m in motions]
        groups = [Group(f"{c}_{s}", c, s, max(sum(1 for m, st in zip(motions, states) if (m.color, m.shape) == (c, s)
                                                      and st[f] is not None) for f in range(frames))) for c, s in keys]
        bg = "white" if rng.random() < 0.6 else rng.choice(["light gray", "black", "beige"])
        spec = VisualSpec(PAPER_VERSION, "video", bg, groups, [], [], temporal)
        spec = parse_video_spec(spec.to_dict())
        task = VideoTask(task_id or f"vvr2-video-{primary}-{seed}", "", spec, motions, frames, primary)
        tr = task.symbolic_tracks()
        if all(_clear(t, temporal_outcome(t, tr, spec)) for t in spec.temporal) and _apart(task):
            task.prompt = _prompt(spec, rng)
            return task
    raise RuntimeError(f"could not generate a video task for {primary} (seed {seed})")


def _clear(t: dict[str, Any], o: Any) -> bool:
    """Holds on the witness with a safety margin (a quarter of the predicate's credit scale; exact for counts)."""
    exact = t["type"] in ("persistent", "count_consistency", "temporal_order") or t.get("shape") == "bounce"
    return o.margin >= (0.0 if exact else 0.25 * o.scale)


def _apart(task: VideoTask, gap: float = 40.0) -> bool:
    """Objects never overlap (and stay inside the frame)."""
    states = [m.states(task.frames) for m in task.motions]
    for t in range(task.frames):
        here = [(m, st[t]) for m, st in zip(task.motions, states) if st[t] is not None]
        for m, (x, y, s) in here:
            r = circumradius(m.shape, s)
            if not (10 + r <= x <= 990 - r and 10 + r <= y <= 990 - r):
                return False
        for i in range(len(here)):
            for j in range(i + 1, len(here)):
                (mi, pi), (mj, pj) = here[i], here[j]
                if np.hypot(pi[0] - pj[0], pi[1] - pj[1]) < circumradius(mi.shape, pi[2]) + circumradius(mj.shape, pj[2]) + gap:
                    return False
    return True


def video_split(limit: int | None = None) -> list[VideoTask]:
    """The ``video`` split: task ``i`` has type ``i mod 11`` and ``8, 12 or 16`` frames."""
    n = VIDEO_SPLIT_SIZE if limit is None else min(limit, VIDEO_SPLIT_SIZE)
    return [generate_video_task(VIDEO_BASE_SEED + i, TEMPORAL_TYPES[i % len(TEMPORAL_TYPES)],
                                FRAME_CHOICES[(i // len(TEMPORAL_TYPES)) % 3], f"vvrvideo2-{i:05d}") for i in range(n)]
