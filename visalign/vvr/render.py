"""Renderer: draw a task's scene (anti-aliased by supersampling) at any resolution, with optional noise."""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np
from PIL import Image, ImageDraw

from .constraints import holds_clearly
from .geometry import WitnessView, circumradius, outline
from .sampler import valid_scene
from .task import Scene, Task
from .vocab import BACKGROUNDS, PALETTE

TOUCH_DEPTH = 8.0  # milli: how far touching objects are pushed into each other


def _convex_intersect(p: np.ndarray, q: np.ndarray) -> bool:
    """Separating-axis test for two convex polygons."""
    for poly in (p, q):
        edges = np.roll(poly, -1, 0) - poly
        normals = np.stack([-edges[:, 1], edges[:, 0]], 1)
        pp, qq = p @ normals.T, q @ normals.T
        if np.any((pp.max(0) < qq.min(0)) | (qq.max(0) < pp.min(0))):
            return False
    return True


def _inside_convex(pt: np.ndarray, poly: np.ndarray) -> bool:
    edges = np.roll(poly, -1, 0) - poly
    rel = pt[None, :] - poly
    cross = edges[:, 0] * rel[:, 1] - edges[:, 1] * rel[:, 0]
    return bool(np.all(cross >= 0) or np.all(cross <= 0))


def _settle_contacts(scene: Scene) -> None:
    """Move each contact's front object along the line between centres so touch / overlap is exact."""
    for c in scene.contacts:
        if c.kind == "inside":
            continue
        a, b = scene.objects[c.a], scene.objects[c.b]
        u = np.array([a.x - b.x, a.y - b.y], float)
        norm = float(np.hypot(*u))
        u = u / norm if norm > 1e-6 else np.array([1.0, 0.0])
        pb = outline(b.shape, b.x, b.y, b.s, b.rot)
        lo, hi = 0.0, circumradius(a.shape, a.s) + circumradius(b.shape, b.s) + 5
        for _ in range(30):
            mid = (lo + hi) / 2
            cx, cy = b.x + mid * u[0], b.y + mid * u[1]
            if c.kind == "touch":
                hit = _convex_intersect(outline(a.shape, cx, cy, a.s, a.rot), pb)
            else:
                hit = _inside_convex(np.array([cx, cy]), pb)
            lo, hi = (mid, hi) if hit else (lo, mid)
        t = hi - TOUCH_DEPTH if c.kind == "touch" else hi
        a.x, a.y = b.x + t * u[0], b.y + t * u[1]


def layout(task: Task | Scene, seed: int = 0, jitter: float = 25.0, tries: int = 30) -> Scene:
    """A concrete layout for ``task``: its witness scene moved and rotated at random (seeded), kept only if every
    constraint still holds with its safety margin; falls back to the witness itself."""
    if isinstance(task, Task):
        base, constraints = task.scene, task.constraints
    else:
        base, constraints = task, []
    rng = np.random.default_rng(seed)
    front = {c.a: c.b for c in base.contacts}
    for k in range(tries + 1):
        sc = base.copy()
        if k < tries:
            sigma = jitter * (1.0 - k / tries)
            for i, o in enumerate(sc.objects):
                if o.shape != "circle":
                    o.rot = float(rng.integers(0, 360))
                if i not in front:
                    o.x += float(rng.normal(0, sigma))
                    o.y += float(rng.normal(0, sigma))
            for i, j in front.items():  # contact partners move together
                sc.objects[i].x += sc.objects[j].x - base.objects[j].x
                sc.objects[i].y += sc.objects[j].y - base.objects[j].y
        _settle_contacts(sc)
        view = WitnessView(sc)
        if valid_scene(sc) and all(holds_clearly(view, c) for c in constraints):
            return sc
    sc = base.copy()
    _settle_contacts(sc)
    return sc


def _draw_order(scene: Scene) -> list[int]:
    fronts = [c.a for c in scene.contacts]
    rest = sorted((i for i in range(len(scene.objects)) if i not in fronts), key=lambda i: -scene.objects[i].s)
    return rest + fronts


def _rgb(background: str | Sequence[int], backgrounds: Mapping[str, tuple[int, int, int]] = BACKGROUNDS) -> tuple[int, int, int]:
    if isinstance(background, str):
        if background not in backgrounds:
            raise ValueError(f"unknown background {background!r}; choose from {sorted(backgrounds)} or give an RGB triple")
        return backgrounds[background]
    r, g, b = (int(v) for v in background)
    return r, g, b


def render_scene(scene: Scene, size: int = 256, background: str | Sequence[int] = "white", noise_std: float = 0.0,
                 seed: int = 0, supersample: int | None = None, colours: Mapping[str, tuple[int, int, int]] = PALETTE,
                 backgrounds: Mapping[str, tuple[int, int, int]] = BACKGROUNDS) -> np.ndarray:
    """Draw ``scene`` as an ``size x size x 3`` uint8 array (anti-aliased by drawing ``supersample`` times larger).
    ``colours`` / ``backgrounds`` name the RGB of object colours and backgrounds (v1 vocabulary by default)."""
    if size < 8:
        raise ValueError(f"render size must be >= 8 px, got {size}")
    ss = supersample or max(2, min(8, int(math.ceil(1024 / size))))
    big = size * ss
    img = Image.new("RGB", (big, big), _rgb(background, backgrounds))
    draw = ImageDraw.Draw(img)
    k = big / 1000.0
    for i in _draw_order(scene):
        o = scene.objects[i]
        pts = outline(o.shape, o.x * k, o.y * k, o.s * k, o.rot)
        draw.polygon([tuple(p) for p in pts], fill=tuple(colours[o.color]))
    img = img.reduce(ss) if ss > 1 else img
    arr = np.asarray(img, dtype=np.uint8).copy()
    if noise_std > 0:
        rng = np.random.default_rng(seed + 7919)
        arr = np.clip(arr.astype(np.float32) + rng.normal(0, noise_std, arr.shape), 0, 255).round().astype(np.uint8)
    return arr


def render_task(task: Task | dict[str, Any], size: int = 256, seed: int = 0, background: str | Sequence[int] = "white",
                noise_std: float = 0.0, jitter: bool = True, supersample: int | None = None) -> np.ndarray:
    """Render an image (``H x W x 3`` uint8) that satisfies ``task``; ``seed`` varies layout, rotation and noise."""
    task = Task.from_dict(task) if isinstance(task, dict) else task
    scene = layout(task, seed) if jitter else layout(task, seed, jitter=0.0, tries=0)
    return render_scene(scene, size, background, noise_std, seed, supersample)


def to_tensor(images: Sequence[np.ndarray]) -> "Any":
    """Stack uint8 ``H x W x 3`` arrays into a float tensor ``B x 3 x H x W`` in [-1, 1] (the generators' range)."""
    import torch

    arr = np.stack(list(images)).astype(np.float32) / 127.5 - 1.0
    return torch.from_numpy(arr).permute(0, 3, 1, 2).contiguous()


def write_renders(tasks: Sequence[Task], folder: str, size: int = 256, seed: int = 0, fmt: str = "png") -> list[str]:
    """Render each task to ``folder/<task_id>.<fmt>`` (reference solutions, e.g. to test the bench runner)."""
    from pathlib import Path

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for t in tasks:
        p = out / f"{t.id}.{fmt}"
        Image.fromarray(render_task(t, size, seed)).save(p)
        paths.append(str(p))
    return paths
