"""Geometry of witness scenes for VVR v2: the view the predicates read (:mod:`visalign.vvr.predicates`), computed
exactly from the drawn outlines, so a generated task is checked with the same code as a parsed image."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .geometry import outline
from .render import _convex_intersect
from .task import Scene

CIRCLE_POINTS = 48


@dataclass
class WitnessObject:
    color: str
    shape: str
    x: float
    y: float
    s: float
    bbox: tuple[float, float, float, float]
    poly: np.ndarray


def _segment_distance(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance of points ``p`` (N x 2) to every segment a[k] -> b[k] (M x 2): N x M."""
    ab = b - a
    t = np.clip(((p[:, None, :] - a[None]) * ab[None]).sum(-1) / np.maximum((ab * ab).sum(-1), 1e-12)[None], 0, 1)
    q = a[None] + t[..., None] * ab[None]
    return np.sqrt(((p[:, None, :] - q) ** 2).sum(-1))


def polygon_gap(p: np.ndarray, q: np.ndarray) -> float:
    """Boundary distance of two convex polygons (0 when they intersect)."""
    if _convex_intersect(p, q):
        return 0.0
    d1 = _segment_distance(p, q, np.roll(q, -1, 0)).min()
    d2 = _segment_distance(q, p, np.roll(p, -1, 0)).min()
    return float(min(d1, d2))


class WitnessView:
    """A :class:`~visalign.vvr.task.Scene` (milli units) as the predicates see it (normalised units)."""

    def __init__(self, scene: Scene) -> None:
        self.scene = scene
        self.objects: list[WitnessObject] = []
        for o in scene.objects:
            poly = outline(o.shape, o.x / 1000, o.y / 1000, o.s / 1000, o.rot, CIRCLE_POINTS)
            bbox = (float(poly[:, 0].min()), float(poly[:, 1].min()), float(poly[:, 0].max()), float(poly[:, 1].max()))
            self.objects.append(WitnessObject(o.color, o.shape, o.x / 1000, o.y / 1000, o.s / 1000, bbox, poly))
        self._gaps: dict[tuple[int, int], float] = {}

    def gap(self, i: int, j: int) -> float:
        key = (min(i, j), max(i, j))
        if key not in self._gaps:
            if self.scene.contact(i, j) in ("touch", "inside", "overlap"):
                self._gaps[key] = 0.0
            else:
                self._gaps[key] = polygon_gap(self.objects[i].poly, self.objects[j].poly)
        return self._gaps[key]

    def inside(self, i: int, j: int) -> float:
        """1 when ``i`` is drawn inside ``j`` (only deliberate nestings: other objects keep a gap)."""
        return 1.0 if any(c.kind == "inside" and (c.a, c.b) == (i, j) for c in self.scene.contacts) else 0.0

    def contact(self, i: int, j: int) -> float:
        return 1.5 if self.scene.contact(i, j) == "overlap" else 0.0


def bbox_of(shape: str, x: float, y: float, s: float, rot: float) -> tuple[float, float, float, float]:
    poly = outline(shape, x, y, s, rot, CIRCLE_POINTS)
    return float(poly[:, 0].min()), float(poly[:, 1].min()), float(poly[:, 0].max()), float(poly[:, 1].max())


def hypot(a: tuple[float, float], b: tuple[float, float]) -> float:
    return math.hypot(a[0] - b[0], a[1] - b[1])
