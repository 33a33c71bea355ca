"""VVR for video: temporal predicates on per-frame parses.

A video spec is a visual spec with ``"modality": "video"``, object groups of distinct colours (a track follows a
group by its colour from frame to frame) and a ``temporal`` list. Each frame is parsed by the image parser
(:func:`visalign.vvr.segment.segment`); a group's track is, per frame, its objects' mean centroid and size (or
absent). The 11 predicates (margins in image sides and frames; ``>= 0`` is satisfied):

| type | holds when |
|---|---|
| ``persistent`` | the group is present in at least ``min_fraction`` (default 1) of the frames |
| ``moves_direction`` | it moves ``direction`` (left/right/up/down) by >= ``min_distance`` (0.15), mostly monotone, drifting sideways less than half as much |
| ``stationary`` | its centroid stays within ``max_displacement`` (0.03) of its median position |
| ``velocity_range`` | its mean speed (image sides per frame) lies in [``min_speed``, ``max_speed``] |
| ``acceleration_trend`` | ``trend`` accelerating / decelerating / constant: mean speed of the second half over the first >= 1.3 / <= 1/1.3 / within 1.15 |
| ``size_change`` | ``change`` grows / shrinks / constant: last over first size >= 1.2 / <= 1/1.2 / within 1.1 |
| ``count_consistency`` | the group's object count equals its spec count in every frame |
| ``trajectory_shape`` | ``shape`` linear (off the chord <= 0.03), curved (>= 0.06 off, no reversal) or bounce (one reversal of the vertical or horizontal motion) |
| ``temporal_order`` | ``event`` (appears, starts_moving, stops_moving, crosses_center) happens to both, to ``object`` at least one frame before ``reference_object`` |
| ``relative_distance_change`` | ``change`` decreases / increases: distance to ``reference_object`` last over first <= 0.7 / >= 1.4 |
| ``relative_position_change`` | at the first frame ``object`` is ``from`` (left_of / right_of / above / below) ``reference_object`` and at the last ``to`` (margin 0.04) |

Strict: every temporal predicate holds, and in at least 75% of frames the scene is closed-world correct (every
present group's shape, no unrequested coloured object). Reward: mean temporal credit x mean frame score.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .predicates import MISSING, Outcome, assign, describe
from .segment import Segmentation, segment
from .spec import VisualSpec, parse_spec

TEMPORAL_TYPES = ("persistent", "moves_direction", "stationary", "velocity_range", "acceleration_trend",
                  "size_change", "count_consistency", "trajectory_shape", "temporal_order",
                  "relative_distance_change", "relative_position_change")
PAIRWISE = ("temporal_order", "relative_distance_change", "relative_position_change")
CHOICES = {"direction": ("left", "right", "up", "down"), "trend": ("accelerating", "decelerating", "constant"),
           "change": ("grows", "shrinks", "constant", "decreases", "increases"), "shape": ("linear", "curved", "bounce"),
           "event": ("appears", "starts_moving", "stops_moving", "crosses_center"),
           "from": ("left_of", "right_of", "above", "below"), "to": ("left_of", "right_of", "above", "below")}
FRAME_SHARE = 0.75
MOVING = 0.012  # speed (image sides per frame) above which an object counts as moving


def validate_temporal(spec: VisualSpec) -> list[str]:
    """Problems of a video spec's temporal list (empty when valid)."""
    problems = []
    ids = {g.id for g in spec.groups}
    colours = [g.color for g in spec.groups]
    if len(set(colours)) != len(colours):
        problems.append("objects: video groups need distinct colours (a track follows a group by its colour)")
    if not spec.temporal:
        problems.append("temporal: a video spec needs at least one temporal predicate")
    for k, t in enumerate(spec.temporal):
        where = f"temporal[{k}]"
        kind = t.get("type")
        if kind not in TEMPORAL_TYPES:
            problems.append(f"{where}.type: unknown temporal predicate {kind!r}; known: {', '.join(TEMPORAL_TYPES)}")
            continue
        if t.get("object") not in ids:
            problems.append(f"{where}.object: no object group with id {t.get('object')!r}")
        if kind in PAIRWISE and t.get("reference_object") not in ids:
            problems.append(f"{where}.reference_object: no object group with id {t.get('reference_object')!r}")
        for key, options in CHOICES.items():
            if key in t and t[key] not in options:
                problems.append(f"{where}.{key}: {t[key]!r} is not one of {', '.join(options)}")
        need = {"moves_direction": "direction", "acceleration_trend": "trend", "size_change": "change",
                "trajectory_shape": "shape", "temporal_order": "event", "relative_distance_change": "change",
                "relative_position_change": "to"}.get(kind)
        if need and need not in t:
            problems.append(f"{where}.{need}: missing")
    return problems


def parse_video_spec(raw: dict[str, Any] | str, where: str = "") -> VisualSpec:
    """Read and validate a video spec (:func:`parse_spec` plus the temporal checks)."""
    from .spec import SpecError

    spec = parse_spec(raw, where)
    if spec.modality != "video":
        raise SpecError(["modality: a video spec needs modality 'video'"], where)
    problems = validate_temporal(spec)
    if problems:
        raise SpecError(problems, where)
    return spec


@dataclass
class Track:
    """Per frame: mean centroid (x, y), mean size and object count of one group (None where absent)."""

    xy: list[tuple[float, float] | None]
    size: list[float | None]
    count: list[int]

    def present(self) -> list[int]:
        return [t for t, p in enumerate(self.xy) if p is not None]

    def speeds(self) -> list[float]:
        idx = self.present()
        return [math.dist(self.xy[a], self.xy[b]) / (b - a) for a, b in zip(idx, idx[1:])]  # type: ignore[arg-type]


def tracks(frames: Sequence[Segmentation], spec: VisualSpec) -> dict[str, Track]:
    out = {}
    for g in spec.groups:
        xy: list[tuple[float, float] | None] = []
        size: list[float | None] = []
        count = []
        for seg in frames:
            comps = [c for c in seg.components if c.color == g.color]
            count.append(len(comps))
            if comps:
                xy.append((float(np.mean([c.x for c in comps])), float(np.mean([c.y for c in comps]))))
                size.append(float(np.mean([c.s for c in comps])))
            else:
                xy.append(None)
                size.append(None)
        out[g.id] = Track(xy, size, count)
    return out


def _event(tr: Track, event: str) -> float:
    """Frame index of an event of a track (inf when it never happens)."""
    idx = tr.present()
    if not idx:
        return math.inf
    if event == "appears":
        return float(idx[0])
    sp = tr.speeds()
    if event == "starts_moving":
        return next((float(idx[k]) for k, v in enumerate(sp) if v > MOVING), math.inf)
    if event == "stops_moving":
        moving = [k for k, v in enumerate(sp) if v > MOVING]
        return float(idx[moving[-1] + 1]) if moving and moving[-1] + 1 < len(idx) - 1 else math.inf
    xs = [tr.xy[t][0] for t in idx]  # type: ignore[index]
    return next((float(idx[k + 1]) for k in range(len(xs) - 1) if (xs[k] - 0.5) * (xs[k + 1] - 0.5) <= 0), math.inf)


def temporal_outcome(t: dict[str, Any], tr: dict[str, Track], spec: VisualSpec) -> Outcome:
    kind = t["type"]
    a = tr[t["object"]]
    idx = a.present()
    if kind == "persistent":
        return Outcome(len(idx) / max(len(a.xy), 1) - float(t.get("min_fraction", 1.0)), 0.25)
    if kind == "count_consistency":
        n = spec.group(t["object"]).count
        return Outcome(-float(sum(c != n for c in a.count)), 2.0)
    if len(idx) < 2:
        return Outcome(MISSING)
    first, last = a.xy[idx[0]], a.xy[idx[-1]]
    assert first is not None and last is not None
    if kind == "moves_direction":
        ux, uy = {"left": (-1, 0), "right": (1, 0), "up": (0, -1), "down": (0, 1)}[t["direction"]]
        along = (last[0] - first[0]) * ux + (last[1] - first[1]) * uy
        side = abs((last[0] - first[0]) * uy - (last[1] - first[1]) * ux)
        steps = [(a.xy[q][0] - a.xy[p][0]) * ux + (a.xy[q][1] - a.xy[p][1]) * uy for p, q in zip(idx, idx[1:])]  # type: ignore[index]
        monotone = sum(s > 0 for s in steps) / len(steps)
        return Outcome(min(along - float(t.get("min_distance", 0.15)), 0.5 * along - side, monotone - 0.6), 0.1)
    if kind == "stationary":
        pts = np.array([a.xy[i] for i in idx])
        med = np.median(pts, 0)
        return Outcome(float(t.get("max_displacement", 0.03)) - float(np.sqrt(((pts - med) ** 2).sum(1)).max()), 0.05)
    sp = a.speeds()
    if kind == "velocity_range":
        v = float(np.mean(sp))
        return Outcome(min(v - float(t.get("min_speed", 0.0)), float(t.get("max_speed", 1.0)) - v), 0.02)
    if kind == "acceleration_trend":
        h = len(sp) // 2
        v1, v2 = float(np.mean(sp[:max(h, 1)])), float(np.mean(sp[h:]))
        r = (v2 + 1e-3) / (v1 + 1e-3)
        m = {"accelerating": r - 1.3, "decelerating": 1 / r - 1.3, "constant": 1.15 - max(r, 1 / r)}[t["trend"]]
        return Outcome(m if float(np.mean(sp)) > MOVING else -1.0, 0.2)  # a still object has no trend
    if kind == "size_change":
        s0, s1 = a.size[idx[0]], a.size[idx[-1]]
        r = s1 / max(s0, 1e-6)  # type: ignore[operator]
        m = {"grows": r - 1.2, "shrinks": 1 / r - 1.2, "constant": 1.1 - max(r, 1 / r)}[t["change"]]
        return Outcome(m, 0.1)
    if kind == "trajectory_shape":
        pts = np.array([a.xy[i] for i in idx])
        chord = pts[-1] - pts[0]
        n = float(np.hypot(*chord))
        dev = float(np.abs((pts - pts[0]) @ np.array([-chord[1], chord[0]])).max() / n) if n > 1e-6 else 1.0
        d = np.diff(pts, axis=0)
        flips = [int(np.sum(np.diff(np.sign(d[:, k][np.abs(d[:, k]) > 0.004])) != 0)) for k in (0, 1)]
        if t["shape"] == "linear":
            return Outcome(min(0.03 - dev, n - 0.1, -float(max(flips))), 0.03)
        if t["shape"] == "curved":
            return Outcome(min(dev - 0.06, -float(max(flips))), 0.03)
        return Outcome(1.0 if 1 in flips else -1.0, 1.0)
    b = tr[t["reference_object"]]
    if kind == "temporal_order":
        ea, eb = _event(a, t["event"]), _event(b, t["event"])
        if math.isinf(ea) or math.isinf(eb):
            return Outcome(-1.0, 1.0)  # both events must happen, the object's first
        return Outcome(eb - ea - 1.0, 1.0)
    jdx = [i for i in idx if b.xy[i] is not None]
    if len(jdx) < 2:
        return Outcome(MISSING)
    d0, d1 = math.dist(a.xy[jdx[0]], b.xy[jdx[0]]), math.dist(a.xy[jdx[-1]], b.xy[jdx[-1]])  # type: ignore[arg-type]
    if kind == "relative_distance_change":
        r = d1 / max(d0, 1e-6)
        return Outcome(0.7 - r if t["change"] == "decreases" else r - 1.4, 0.2)

    def rel(name: str, p: tuple[float, float], q: tuple[float, float]) -> float:
        return {"left_of": q[0] - p[0], "right_of": p[0] - q[0], "above": q[1] - p[1], "below": p[1] - q[1]}[name] - 0.04

    m0 = rel(t.get("from", "left_of"), a.xy[jdx[0]], b.xy[jdx[0]]) if "from" in t else 0.0  # type: ignore[arg-type]
    return Outcome(min(m0, rel(t["to"], a.xy[jdx[-1]], b.xy[jdx[-1]])), 0.1)  # type: ignore[arg-type]


@dataclass
class VideoResult:
    spec: VisualSpec
    frames: list[Segmentation]
    temporal: list[Outcome]
    frame_ok: list[bool]
    frame_scores: list[float]

    @property
    def strict(self) -> bool:
        return all(o.passed for o in self.temporal) and np.mean(self.frame_ok) >= FRAME_SHARE

    @property
    def reward(self) -> float:
        temporal = float(np.mean([o.credit for o in self.temporal])) if self.temporal else 0.0
        return float(np.clip(temporal * float(np.mean(self.frame_scores)), 0.0, 1.0))

    def to_dict(self) -> dict[str, Any]:
        return {"strict": self.strict, "reward": round(self.reward, 4), "frames_ok": float(np.mean(self.frame_ok)),
                "temporal": [dict(type=t["type"], **describe(o)) for t, o in zip(self.spec.temporal, self.temporal)]}


def _frame_check(seg: Segmentation, spec: VisualSpec) -> tuple[bool, float]:
    """Closed world on one frame: every object belongs to a group with its colour and shape (a group may be absent
    from a frame: counts over time are the temporal predicates' business). Score 1 / (1 + 0.2 extras)."""
    if not seg.components:
        return False, 0.0
    extras = len(assign(seg, spec).extras)
    return extras == 0, 1.0 / (1.0 + 0.2 * extras)


def to_frames(video: np.ndarray) -> list[np.ndarray]:
    """``T x H x W x 3`` uint8, or ``C x T x H x W`` / ``T x C x H x W`` floats in [-1, 1] -> list of uint8 frames."""
    v = np.asarray(video)
    if v.ndim != 4:
        raise ValueError(f"a video must have 4 dimensions (T x H x W x 3 or C x T x H x W), got shape {v.shape}")
    if v.shape[-1] != 3:
        v = np.moveaxis(v, 0, -1) if v.shape[0] == 3 else np.moveaxis(v, 1, -1)
    if v.dtype != np.uint8:
        v = np.clip((v.astype(np.float32) + 1.0) * 127.5, 0, 255).round().astype(np.uint8)
    return list(v)


def verify_video(video: np.ndarray | Sequence[np.ndarray], spec: VisualSpec | dict[str, Any] | str) -> VideoResult:
    """Parse every frame and check the temporal predicates of a video spec."""
    spec = spec if isinstance(spec, VisualSpec) else parse_video_spec(spec)
    frames = to_frames(np.stack(list(video)) if not isinstance(video, np.ndarray) else video)
    segs = [segment(f) for f in frames]
    tr = tracks(segs, spec)
    checks = [_frame_check(s, spec) for s in segs]
    return VideoResult(spec, segs, [temporal_outcome(t, tr, spec) for t in spec.temporal],
                       [c[0] for c in checks], [c[1] for c in checks])
