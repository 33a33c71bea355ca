"""The 32 constraint types: one margin function each (``margin >= 0`` means satisfied) plus tolerances.

Evaluators see a *view* of a scene: ``view.objects`` (each with ``shape``, ``color``, ``x``, ``y``, ``s`` in
normalised units, y pointing down) and pairwise ``view.gap(i, j)``, ``view.contact(i, j)``, ``view.inside(i, j)``.
The same code checks witness scenes (symbolically, with an extra safety margin) and parsed images.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

from .task import Constraint
from .vocab import LARGE_MIN, SMALL_MAX

MISSING = -1e9  # margin when a referenced object is missing or ambiguous


class ObjectLike(Protocol):
    shape: str
    color: str
    x: float
    y: float
    s: float


class SceneLike(Protocol):
    objects: Sequence[ObjectLike]

    def gap(self, i: int, j: int) -> float: ...

    def contact(self, i: int, j: int) -> float: ...

    def inside(self, i: int, j: int) -> float: ...


# ---------------------------------------------------------------- references

def matches(obj: ObjectLike, ref: dict[str, Any]) -> bool:
    """Does ``obj`` fit a reference like ``{"shape": "circle", "color": "red"}`` (missing keys match anything)?"""
    return ref.get("shape") in (None, obj.shape) and ref.get("color") in (None, obj.color)


def count(view: SceneLike, ref: dict[str, Any]) -> int:
    return sum(matches(o, ref) for o in view.objects)


def unique(view: SceneLike, ref: dict[str, Any]) -> int | None:
    """Index of the single object fitting ``ref`` ("the red circle"), or ``None`` when there are zero or several."""
    hits = [i for i, o in enumerate(view.objects) if matches(o, ref)]
    return hits[0] if len(hits) == 1 else None


def _uniques(view: SceneLike, *refs: dict[str, Any]) -> list[int] | None:
    idx = [unique(view, r) for r in refs]
    if any(i is None for i in idx) or len(set(idx)) != len(idx):
        return None
    return idx  # type: ignore[return-value]


def _dist(a: ObjectLike, b: ObjectLike) -> float:
    return math.sqrt((a.x - b.x) ** 2 + (a.y - b.y) ** 2)


# ---------------------------------------------------------------- evaluators

def _exists(v: SceneLike, a: dict) -> float:
    return count(v, a["ref"]) - 1


def _count_exact(v, a):
    return -abs(count(v, a["ref"]) - a["n"])


def _count_more(v, a):
    return count(v, a["a"]) - count(v, a["b"]) - 1


def _count_fewer(v, a):
    return count(v, a["b"]) - count(v, a["a"]) - 1


def _count_equal(v, a):
    ca, cb = count(v, a["a"]), count(v, a["b"])
    return min(-abs(ca - cb), ca - 1)


def _count_total(v, a):
    return -abs(len(v.objects) - a["n"])


def _absent(v, a):
    return min(count(v, {"shape": a["shape"]}) - 1, -count(v, {"shape": a["shape"], "color": a["color"]}))


def _parity(v, a):
    c = count(v, a["ref"])
    ok = c % 2 == 1 if a["parity"] == "odd" else (c % 2 == 0 and c >= 2)
    return 0.0 if ok else -1.0


def _color_binding(v, a):
    c = count(v, {"shape": a["shape"]})
    return min(c - 1, -(c - count(v, {"shape": a["shape"], "color": a["color"]})))


def _same_color(v, a):
    idx = _uniques(v, a["a"], a["b"])
    if idx is None:
        return MISSING
    return 0.0 if v.objects[idx[0]].color == v.objects[idx[1]].color else -1.0


def _different_color(v, a):
    idx = _uniques(v, a["a"], a["b"])
    if idx is None:
        return MISSING
    return 0.0 if v.objects[idx[0]].color != v.objects[idx[1]].color else -1.0


def _all_distinct_colors(v, a):
    n = len(v.objects)
    return min(-abs(n - a["n"]), len({o.color for o in v.objects}) - n)


def _size_abs(v, a):
    i = unique(v, a["a"])
    if i is None:
        return MISSING
    s = v.objects[i].s
    return SMALL_MAX - s if a["size"] == "small" else s - LARGE_MIN


def _ratio(v, a, b):
    idx = _uniques(v, a, b)
    if idx is None:
        return None
    return v.objects[idx[0]].s / max(v.objects[idx[1]].s, 1e-6)


def _larger(v, a):
    r = _ratio(v, a["a"], a["b"])
    return MISSING if r is None else r - 1.2


def _smaller(v, a):
    r = _ratio(v, a["b"], a["a"])
    return MISSING if r is None else r - 1.2


def _same_size(v, a):
    r = _ratio(v, a["a"], a["b"])
    return MISSING if r is None else 1.15 - max(r, 1.0 / max(r, 1e-6))


def _direction(dx_sign: int, dy_sign: int) -> Callable[[SceneLike, dict], float]:
    def f(v, a):
        idx = _uniques(v, a["a"], a["b"])
        if idx is None:
            return MISSING
        oa, ob = v.objects[idx[0]], v.objects[idx[1]]
        return dx_sign * (ob.x - oa.x) + dy_sign * (ob.y - oa.y) - 0.04
    return f


def _region(v, a):
    i = unique(v, a["a"])
    if i is None:
        return MISSING
    o = v.objects[i]
    r = a["region"]
    if r == "centre":
        return 0.16 - max(abs(o.x - 0.5), abs(o.y - 0.5))
    dx = 0.5 - o.x if "left" in r else o.x - 0.5
    dy = 0.5 - o.y if "top" in r else o.y - 0.5
    return min(dx, dy) - 0.02


def _between(v, a):
    idx = _uniques(v, a["a"], a["b"], a["c"])
    if idx is None:
        return MISSING
    oa, ob, oc = (v.objects[i] for i in idx)
    vx, vy = oc.x - oa.x, oc.y - oa.y
    n2 = vx * vx + vy * vy
    if n2 < 1e-9:
        return -1.0
    t = ((ob.x - oa.x) * vx + (ob.y - oa.y) * vy) / n2
    d = abs((ob.x - oa.x) * vy - (ob.y - oa.y) * vx) / math.sqrt(n2)
    return min(t - 0.15, 0.85 - t, 0.12 - d)


def _nearest(v, a):
    idx = _uniques(v, a["a"], a["b"])
    if idx is None:
        return MISSING
    oa, ob = v.objects[idx[0]], v.objects[idx[1]]
    d_ab = _dist(oa, ob)
    others = [_dist(oa, o) for k, o in enumerate(v.objects) if k not in idx]
    if not others:
        return 1.0
    return min(others) / max(d_ab, 1e-6) - 1.15


def _inside(v, a):
    idx = _uniques(v, a["a"], a["b"])
    return MISSING if idx is None else v.inside(idx[0], idx[1]) - 0.85


def _overlap(v, a):
    idx = _uniques(v, a["a"], a["b"])
    return MISSING if idx is None else v.contact(idx[0], idx[1]) - 0.8


def _touching(v, a):
    idx = _uniques(v, a["a"], a["b"])
    return MISSING if idx is None else 0.012 - v.gap(idx[0], idx[1])


def _separated(v, a):
    idx = _uniques(v, a["a"], a["b"])
    return MISSING if idx is None else v.gap(idx[0], idx[1]) - 0.04


def _aligned(v, a):
    idx = _uniques(v, *a["objs"])
    if idx is None:
        return MISSING
    vals = [v.objects[i].y if a["axis"] == "row" else v.objects[i].x for i in idx]
    return 0.05 - (max(vals) - min(vals))


def _ordered(v, a):
    group = sorted((o for o in v.objects if matches(o, a["ref"])), key=lambda o: o.x)
    want = a["colors"] if a["key"] == "color" else [None] * a["n"]
    if len(group) != len(want) or len(group) < 2:
        return -1.0
    dx = min(q.x - p.x for p, q in zip(group, group[1:])) - 0.04
    if a["key"] == "color":
        return dx if [o.color for o in group] == list(want) else -1.0
    return min(dx, min(q.s / max(p.s, 1e-6) for p, q in zip(group, group[1:])) - 1.12)


def _symmetric(v, a):
    idx = _uniques(v, a["a"], a["b"])
    if idx is None:
        return MISSING
    oa, ob = v.objects[idx[0]], v.objects[idx[1]]
    return 0.05 - max(abs(oa.x + ob.x - 1.0), abs(oa.y - ob.y))


# ---------------------------------------------------------------- registry

@dataclass(frozen=True)
class ConstraintType:
    """Metadata of one constraint type: evaluator, tolerances and documentation."""

    name: str
    group: str
    fn: Callable[[SceneLike, dict], float]
    truth_margin: float  # witness scenes must satisfy margin >= truth_margin (safety margin for rendering noise)
    scale: float  # margin units per half of partial credit
    definition: str
    tolerance: str
    integer: bool = False


def _t(name, group, fn, tm, scale, definition, tolerance, integer=False):
    return ConstraintType(name, group, fn, tm, scale, definition, tolerance, integer)


CONSTRAINT_TYPES: dict[str, ConstraintType] = {t.name: t for t in [
    _t("exists_shape", "existence", _exists, 0, 1, "At least one object of the given shape.", "exact count >= 1", True),
    _t("exists_color", "existence", _exists, 0, 1, "At least one object of the given colour.", "exact count >= 1", True),
    _t("exists_shape_color", "existence", _exists, 0, 1, "At least one object of the given colour and shape.", "exact count >= 1", True),
    _t("count_exact", "count", _count_exact, 0, 2, "Exactly n objects fit the description.", "exact", True),
    _t("count_more", "count", _count_more, 0, 2, "More objects fit description A than description B.", "exact counts", True),
    _t("count_fewer", "count", _count_fewer, 0, 2, "Fewer objects fit description A than description B.", "exact counts", True),
    _t("count_equal", "count", _count_equal, 0, 2, "As many objects fit A as fit B, at least one of each.", "exact counts", True),
    _t("count_total", "count", _count_total, 0, 2, "Exactly n objects in the whole image.", "exact", True),
    _t("absent", "count", _absent, 0, 1, "At least one object of a shape, none of them in a given colour.", "exact counts", True),
    _t("parity", "count", _parity, 0, 1, "The number of objects fitting a description is odd (or even and >= 2).", "exact", True),
    _t("color_binding", "attribute", _color_binding, 0, 1, "Every object of a shape has the given colour (and there is one).", "exact", True),
    _t("same_color", "attribute", _same_color, 0, 1, "The (unique) objects of two shapes share a colour.", "palette match", True),
    _t("different_color", "attribute", _different_color, 0, 1, "The (unique) objects of two shapes differ in colour.", "palette match", True),
    _t("all_distinct_colors", "attribute", _all_distinct_colors, 0, 1, "Exactly n objects, no two of the same colour.", "exact", True),
    _t("size_abs", "size", _size_abs, 0.015, 0.05, "The object is small or large.",
       f"size = sqrt(area/image area); small < {SMALL_MAX}, large > {LARGE_MIN}"),
    _t("larger", "size", _larger, 0.15, 0.5, "Object A is larger than object B.", "size ratio sA/sB >= 1.2 (area ratio 1.44)"),
    _t("smaller", "size", _smaller, 0.15, 0.5, "Object A is smaller than object B.", "size ratio sB/sA >= 1.2"),
    _t("same_size", "size", _same_size, 0.1, 0.5, "Objects A and B have the same size.", "size ratio <= 1.15"),
    _t("left_of", "position", _direction(1, 0), 0.08, 0.3, "A's centroid is left of B's.", "x_B - x_A >= 0.04 of the image width"),
    _t("right_of", "position", _direction(-1, 0), 0.08, 0.3, "A's centroid is right of B's.", "x_A - x_B >= 0.04"),
    _t("above", "position", _direction(0, 1), 0.08, 0.3, "A's centroid is above B's.", "y_B - y_A >= 0.04 of the image height"),
    _t("below", "position", _direction(0, -1), 0.08, 0.3, "A's centroid is below B's.", "y_A - y_B >= 0.04"),
    _t("region", "position", _region, 0.06, 0.3, "A lies in a quadrant or in the centre of the image.",
       "quadrant: centroid >= 0.02 past both mid-lines; centre: within 0.16 of the middle in x and y"),
    _t("between", "position", _between, 0.08, 0.3, "B lies between A and C.",
       "projection of B on segment AC in [0.15, 0.85], distance from the line <= 0.12"),
    _t("nearest", "position", _nearest, 0.35, 0.5, "Of all other objects, B is the closest to A.",
       "next-closest centroid >= 1.15x farther than B"),
    _t("inside", "topology", _inside, 0.1, 0.5, "A lies inside B.", ">= 85% of A's pixels inside B's filled outline"),
    _t("overlap", "topology", _overlap, 0.3, 0.8, "A overlaps B (one partly covers the other).",
       "shared border >= 0.8x the smaller object's equivalent diameter"),
    _t("touching", "topology", _touching, 0.01, 0.05, "A and B touch.", "gap <= 0.012 of the image side (+1.5 px)"),
    _t("separated", "topology", _separated, 0.04, 0.05, "A and B are apart (do not touch).", "gap >= 0.04 of the image side"),
    _t("aligned", "arrangement", _aligned, 0.035, 0.1, "Three objects in a horizontal row or vertical column.",
       "centroid spread across the line <= 0.05"),
    _t("ordered", "arrangement", _ordered, 0.08, 0.2,
       "The objects of a group, read left to right, have the given colours or grow in size.",
       "exact group count; neighbours >= 0.04 apart in x; size ratio >= 1.12 per step"),
    _t("symmetric", "arrangement", _symmetric, 0.035, 0.1, "A and B are mirror images across the vertical centre line.",
       "|x_A + x_B - 1| <= 0.05 and |y_A - y_B| <= 0.05"),
]}
CONSTRAINT_NAMES: tuple[str, ...] = tuple(CONSTRAINT_TYPES)
assert len(CONSTRAINT_NAMES) == 32


@dataclass
class Check:
    """Outcome of one constraint on one scene."""

    passed: bool
    margin: float
    credit: float  # 1 when passed, partial credit in [0, 0.5] otherwise


def spec(name: str) -> ConstraintType:
    if name not in CONSTRAINT_TYPES:
        raise KeyError(f"unknown VVR constraint type {name!r}; known: {', '.join(CONSTRAINT_NAMES)}")
    return CONSTRAINT_TYPES[name]


def margin(view: SceneLike, c: Constraint) -> float:
    return float(spec(c.type).fn(view, c.args))


def check(view: SceneLike, c: Constraint) -> Check:
    """Evaluate one constraint: pass/fail, raw margin and partial credit (near misses earn up to 0.5)."""
    m = margin(view, c)
    if m >= 0:
        return Check(True, m, 1.0)
    if m <= MISSING / 2:
        return Check(False, m, 0.0)
    return Check(False, m, 0.5 * min(1.0, max(0.0, 1.0 + m / spec(c.type).scale)))


def holds_clearly(view: SceneLike, c: Constraint) -> bool:
    """True when the constraint holds with the type's safety margin (used for witness scenes)."""
    return margin(view, c) >= spec(c.type).truth_margin


def broken_clearly(view: SceneLike, c: Constraint) -> bool:
    """True when the constraint fails by at least the safety margin (used for mutations)."""
    t = spec(c.type)
    return margin(view, c) <= -(t.truth_margin if t.truth_margin > 0 else 1)


def references(c: Constraint) -> list[dict[str, Any]]:
    """Descriptions of the particular objects a constraint talks about ("the red circle")."""
    a = c.args
    if c.type == "aligned":
        return list(a["objs"])
    return [a[k] for k in ("a", "b", "c") if isinstance(a.get(k), dict)]
