"""Shape geometry: circumradius, outlines as polygons, and the symbolic view of a witness scene."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .task import Obj, Scene
from .vocab import CIRCUMRADIUS, INRADIUS_FRACTION, STAR_INNER


def circumradius(shape: str, s: float) -> float:
    """Radius of the circle around a shape of size ``s`` (same units as ``s``)."""
    return s * CIRCUMRADIUS[shape]


def inradius(shape: str, s: float) -> float:
    return circumradius(shape, s) * INRADIUS_FRACTION[shape]


def outline(shape: str, x: float, y: float, s: float, rot: float = 0.0, circle_points: int = 96) -> np.ndarray:
    """Polygon (N x 2, same units as x/y/s) with area exactly ``s**2`` (a circle as a fine polygon)."""
    if shape == "circle":
        ang = np.linspace(0.0, 2 * np.pi, circle_points, endpoint=False)
        # scale so the polygon's area equals the circle's
        r = s / math.sqrt(0.5 * circle_points * math.sin(2 * math.pi / circle_points))
        return np.stack([x + r * np.cos(ang), y + r * np.sin(ang)], 1)
    theta = math.radians(rot)
    if shape == "square":
        ang = theta + np.pi / 4 + np.arange(4) * np.pi / 2
        r = s * math.sqrt(0.5)
    elif shape == "triangle":
        ang = theta - np.pi / 2 + np.arange(3) * 2 * np.pi / 3
        r = s / math.sqrt(3 * math.sqrt(3) / 4)
    elif shape == "star":
        k = np.arange(10)
        ang = theta - np.pi / 2 + k * np.pi / 5
        R = s / math.sqrt(5 * STAR_INNER * math.sin(math.pi / 5))
        rad = np.where(k % 2 == 0, R, R * STAR_INNER)
        return np.stack([x + rad * np.cos(ang), y + rad * np.sin(ang)], 1)
    else:
        raise ValueError(f"unknown shape {shape!r}")
    return np.stack([x + r * np.cos(ang), y + r * np.sin(ang)], 1)


@dataclass
class NormObj:
    shape: str
    color: str
    x: float
    y: float
    s: float


class WitnessView:
    """Symbolic view of a :class:`Scene` for the constraint evaluators (normalised units, conservative gaps)."""

    def __init__(self, scene: Scene) -> None:
        self.scene = scene
        self.objects = [NormObj(o.shape, o.color, o.x / 1000.0, o.y / 1000.0, o.s / 1000.0) for o in scene.objects]

    def _rc(self, i: int) -> float:
        o = self.objects[i]
        return circumradius(o.shape, o.s)

    def _d(self, i: int, j: int) -> float:
        a, b = self.objects[i], self.objects[j]
        return math.sqrt((a.x - b.x) ** 2 + (a.y - b.y) ** 2)

    def gap(self, i: int, j: int) -> float:
        if self.scene.contact(i, j):
            return 0.0
        return max(0.0, self._d(i, j) - self._rc(i) - self._rc(j))

    def contact(self, i: int, j: int) -> float:
        kind = self.scene.contact(i, j)
        return {"overlap": 1.5, "touch": 0.3}.get(kind or "", 0.0)

    def inside(self, i: int, j: int) -> float:
        for c in self.scene.contacts:
            if c.kind == "inside" and (c.a, c.b) == (i, j):
                return 1.0
        o = self.objects[j]
        return 1.0 if self._d(i, j) + self._rc(i) <= inradius(o.shape, o.s) else 0.0


def in_bounds(o: Obj, pad: float = 20.0) -> bool:
    """Whole object inside the image (milli units), with ``pad`` to spare."""
    r = circumradius(o.shape, o.s)
    return pad + r <= o.x <= 1000 - pad - r and pad + r <= o.y <= 1000 - pad - r
