"""The VVR v2 predicates: group checks (grounding, counts, layouts) and one function per relation type.

Predicates read a *view* of a scene: ``view.objects`` (each with ``color``, ``shape``, ``x``, ``y`` (centroid), ``s``
(sqrt of area over image area) and ``bbox`` (x0, y0, x1, y1), normalised, y down) and the pairwise
``view.gap(i, j)`` (boundary distance), ``view.inside(i, j)`` (share of i within j's outline) and
``view.contact(i, j)`` (shared border, for the ``overlap`` extension). The parser's
:class:`~visalign.vvr.segment.Segmentation` and the witness scenes of generated tasks
(:class:`~visalign.vvr.spec_geometry.WitnessView`) are both views, so the generator checks its scenes with the same code.

Every predicate returns an :class:`Outcome`: a margin (>= 0 is satisfied; units of the predicate) and a scale for
partial credit. A group a relation needs but that has no object gives ``MISSING`` (no credit).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

from .spec import ANY, EXTREMES, Group, Relation, VisualSpec
from .tolerances import Tolerances

MISSING = -1e9


class ObjectLike(Protocol):
    color: str
    shape: str
    x: float
    y: float
    s: float
    bbox: tuple[float, float, float, float]


class SceneView(Protocol):
    objects: Sequence[ObjectLike]

    def gap(self, i: int, j: int) -> float: ...

    def inside(self, i: int, j: int) -> float: ...

    def contact(self, i: int, j: int) -> float: ...


@dataclass(frozen=True)
class Outcome:
    """Margin (>= 0: satisfied) and the margin that halves the near-miss credit."""

    margin: float
    scale: float = 1.0

    @property
    def passed(self) -> bool:
        return self.margin >= 0

    @property
    def credit(self) -> float:
        """1 when satisfied; a near miss earns up to 0.5; a missing group earns 0."""
        if self.margin >= 0:
            return 1.0
        if self.margin <= MISSING / 2:
            return 0.0
        return 0.5 * min(1.0, max(0.0, 1.0 + self.margin / self.scale))


def _missing() -> Outcome:
    return Outcome(MISSING)


# ---------------------------------------------------------------- matching objects to groups


@dataclass
class Assignment:
    """Which objects of the view belong to which group; ``extras`` are coloured objects no group lists."""

    members: dict[str, list[int]]
    extras: list[int]
    by_color: dict[str, list[int]]


def _matches(g: Group, o: ObjectLike) -> bool:
    return g.color in (ANY, o.color) and g.shape in (ANY, o.shape)


def assign(view: SceneView, spec: VisualSpec) -> Assignment:
    """Each object joins the group of its colour and shape (validation makes that group unique); objects no group
    takes (another colour, another shape, an unreadable shape) are extras."""
    members: dict[str, list[int]] = {g.id: [] for g in spec.groups}
    by_color: dict[str, list[int]] = {}
    extras = []
    for i, o in enumerate(view.objects):
        by_color.setdefault(o.color, []).append(i)
        for g in spec.groups:
            if _matches(g, o):
                members[g.id].append(i)
                break
        else:
            extras.append(i)
    return Assignment(members, extras, by_color)


# ---------------------------------------------------------------- group checks


def listed_shapes(spec: VisualSpec, color: str) -> set[str]:
    """Shapes an object of ``color`` may have: those of the groups of that colour or of any colour."""
    return {h.shape for h in spec.groups if h.color in (color, ANY)}


def group_checks(view: SceneView, spec: VisualSpec, a: Assignment) -> dict[str, dict[str, Outcome]]:
    """Per group: ``color_attribute`` (its colour is present), ``shape_attribute`` (an object of its colour has its
    shape), ``color_shape_binding`` (every object of its colour has a shape some group of that colour lists),
    ``exact_count`` and, with a layout, ``absolute_region`` / ``grid_occupancy`` (or the legacy line layouts)."""
    out: dict[str, dict[str, Outcome]] = {}
    for g in spec.groups:
        mem = a.members[g.id]
        same_colour = a.by_color.get(g.color, []) if g.color != ANY else mem
        listed = listed_shapes(spec, g.color)
        stray = [i for i in same_colour if ANY not in listed and view.objects[i].shape not in listed]
        found = len(mem)
        checks: dict[str, Outcome] = {
            "color_attribute": Outcome(len(same_colour) - 1),
            "shape_attribute": Outcome(found - 1),
            "color_shape_binding": Outcome(min(found - 1, -len(stray)), 1.0),
        }
        if g.count_mode == "exact":
            checks["exact_count"] = Outcome(-abs(found - g.count), max(1.0, g.count / 2))
        else:
            checks["exact_count"] = Outcome(min(found - 1, g.max_count - found), 1.0)
        if g.layout is not None:
            name = {"regions": "absolute_region", "grid_cells": "grid_occupancy"}.get(g.layout.type, g.layout.type)
            checks[name] = layout_check(view, g, mem)
        out[g.id] = checks
    return out


REGION_BOUNDS: dict[str, tuple[float, float, float, float]] = {  # x0, x1, y0, y1 of each zone's centroids
    "top_left": (0.0, 0.45, 0.0, 0.45), "top": (0.0, 1.0, 0.0, 0.45), "top_right": (0.55, 1.0, 0.0, 0.45),
    "left": (0.0, 0.45, 0.0, 1.0), "center": (0.30, 0.70, 0.30, 0.70), "right": (0.55, 1.0, 0.0, 1.0),
    "bottom_left": (0.0, 0.45, 0.55, 1.0), "bottom": (0.0, 1.0, 0.55, 1.0), "bottom_right": (0.55, 1.0, 0.55, 1.0),
}


def region_margin(o: ObjectLike, region: str) -> float:
    """How far the centroid lies inside a zone (negative: outside), in fractions of the image."""
    x0, x1, y0, y1 = REGION_BOUNDS[region]
    return min(o.x - x0 if x0 > 0 else 1.0, x1 - o.x if x1 < 1 else 1.0, o.y - y0 if y0 > 0 else 1.0,
               y1 - o.y if y1 < 1 else 1.0)


def cell_of(o: ObjectLike, rows: int, cols: int) -> tuple[int, int, float]:
    """Grid cell of the centroid and its distance from the cell's border (fraction of the image)."""
    c, r = min(cols - 1, max(0, int(o.x * cols))), min(rows - 1, max(0, int(o.y * rows)))
    m = min(o.x - c / cols, (c + 1) / cols - o.x, o.y - r / rows, (r + 1) / rows - o.y)
    return r, c, m


def layout_check(view: SceneView, g: Group, mem: list[int]) -> Outcome:
    lay = g.layout
    assert lay is not None
    if not mem:
        return _missing()
    objs = [view.objects[i] for i in mem]
    if lay.type == "regions":
        # every object in some listed zone, every listed zone holding an object
        inside = [max(region_margin(o, r) for r in lay.regions) for o in objs]
        covered = [max(region_margin(o, r) for o in objs) for r in lay.regions]
        return Outcome(min(inside + covered), 0.1)
    if lay.type == "grid_cells":
        cells = [cell_of(o, lay.rows, lay.cols) for o in objs]
        wanted = set(lay.cells)
        got = [(r, c) for r, c, _ in cells]
        ok = set(got) == wanted and len(got) == len(set(got))
        if not ok:
            miss = len(wanted - set(got)) + len([x for x in got if x not in wanted]) + len(got) - len(set(got))
            return Outcome(-0.05 * miss, 0.2)
        return Outcome(min(m for _, _, m in cells), 0.1)
    if len(objs) < 2:
        return Outcome(0.0)
    if lay.type == "horizontal_row":
        return Outcome(0.05 - (max(o.y for o in objs) - min(o.y for o in objs)), 0.1)
    if lay.type == "vertical_column":
        return Outcome(0.05 - (max(o.x for o in objs) - min(o.x for o in objs)), 0.1)
    seq = sorted(objs, key=lambda o: o.x)  # diagonal_down: left to right, each lower than the last
    return Outcome(min(min(q.x - p.x, q.y - p.y) for p, q in zip(seq, seq[1:])) - 0.04, 0.1)


# ---------------------------------------------------------------- relations


class Ctx:
    """What a relation predicate reads: the view, the assignment and the tolerances."""

    def __init__(self, view: SceneView, a: Assignment, tol: Tolerances) -> None:
        self.view, self.a, self.tol = view, a, tol

    def objs(self, gid: str | None) -> list[int]:
        return self.a.members.get(gid or "", [])

    def centre(self, idx: list[int]) -> tuple[float, float]:
        return (sum(self.view.objects[i].x for i in idx) / len(idx), sum(self.view.objects[i].y for i in idx) / len(idx))

    def coloured(self) -> list[int]:
        return list(range(len(self.view.objects)))


def extent(o: ObjectLike) -> float:
    x0, y0, x1, y1 = o.bbox
    return math.sqrt(max(x1 - x0, 0.0) * max(y1 - y0, 0.0))


def _counts(c: Ctx, r: Relation) -> tuple[int, int]:
    return len(c.objs(r.subject)), len(c.objs(r.object))


def _same_count(c: Ctx, r: Relation) -> Outcome:
    ns, no = _counts(c, r)
    return Outcome(min(-abs(ns - no), ns - 1, no - 1), 1.0)


def _more(c: Ctx, r: Relation) -> Outcome:
    ns, no = _counts(c, r)
    return Outcome(min(ns - no - int(r.param("min_difference", 1)), no - 1), 1.0)


def _fewer(c: Ctx, r: Relation) -> Outcome:
    ns, no = _counts(c, r)
    return Outcome(min(no - ns - int(r.param("min_difference", 1)), ns - 1), 1.0)


def _times(c: Ctx, r: Relation) -> Outcome:
    ns, no = _counts(c, r)
    m = int(r.param("multiplier", 2))
    return Outcome(min(-abs(ns - m * no), no - 1), float(m))


def _nested(c: Ctx, i: list[int], j: list[int]) -> bool:
    return any(c.view.inside(p, q) > 0.5 or c.view.inside(q, p) > 0.5 for p in i for q in j)


def _direction(dx: int, dy: int) -> Callable[[Ctx, Relation], Outcome]:
    def f(c: Ctx, r: Relation) -> Outcome:
        s, o = c.objs(r.subject), c.objs(r.object)
        if not s or not o:
            return _missing()
        (sx, sy), (ox, oy) = c.centre(s), c.centre(o)
        m = dx * (ox - sx) + dy * (oy - sy) - c.tol.direction(r)
        if _nested(c, s, o):
            m = min(m, -0.05)  # one inside the other is not beside it
        return Outcome(m, 0.3)
    return f


def _all_direction(dx: int, dy: int) -> Callable[[Ctx, Relation], Outcome]:
    def f(c: Ctx, r: Relation) -> Outcome:
        s, o = c.objs(r.subject), c.objs(r.object)
        if not s or not o:
            return _missing()
        v = c.view.objects
        m = min(dx * (v[q].x - v[p].x) + dy * (v[q].y - v[p].y) for p in s for q in o)
        return Outcome(m - c.tol.all_direction(r), 0.3)
    return f


def _extreme(side: str, size: bool = False) -> Callable[[Ctx, Relation], Outcome]:
    def f(c: Ctx, r: Relation) -> Outcome:
        s = c.objs(r.subject)
        if not s:
            return _missing()
        others = [i for g in r.references for i in c.objs(g)] if r.references is not None else \
            [i for i in c.coloured() if i not in s]
        if r.references is not None and not others:
            return _missing()
        if not others:
            return Outcome(1.0)
        v = c.view.objects
        if size:
            ratio = c.tol.larger(r)
            if side == "largest":
                return Outcome(min(v[i].s for i in s) / max(v[j].s for j in others) - ratio, 0.5)
            return Outcome(min(v[j].s for j in others) / max(v[i].s for i in s) - ratio, 0.5)
        k = {"leftmost": 0, "topmost": 1, "rightmost": 2, "bottommost": 3}[side]
        sign = 1 if k < 2 else -1
        edge = [sign * v[i].bbox[k] for i in s]
        margin = min(sign * v[j].bbox[k] for j in others) - max(edge)
        return Outcome(margin - c.tol.extreme(r, max(extent(v[i]) for i in s)), 0.1)
    return f


def _between(c: Ctx, r: Relation) -> Outcome:
    s, a, b = c.objs(r.subject), c.objs(r.anchor_a), c.objs(r.anchor_b)
    if not s or not a or not b:
        return _missing()
    (ax, ay), (bx, by) = c.centre(a), c.centre(b)
    vx, vy = bx - ax, by - ay
    n = math.hypot(vx, vy)
    if n < 1e-6:
        return Outcome(-1.0, 0.3)
    worst = math.inf
    for i in s:
        o = c.view.objects[i]
        t = ((o.x - ax) * vx + (o.y - ay) * vy) / n ** 2
        d = abs((o.x - ax) * vy - (o.y - ay) * vx) / n
        if c.tol.paper:
            score = max(0.0, 1 - d / (0.25 * n)) * (1.0 if 0.15 <= t <= 0.85 else 0.0)
            m = min(score - c.tol.between_score(r), (t - 0.15) * n, (0.85 - t) * n)
        else:
            m = min((t - 0.15) * n, (0.85 - t) * n, c.tol.between_line() - d)
        worst = min(worst, m)
    return Outcome(worst, 0.3)


def _same_line(axis: str, negate: bool = False, group: bool = False) -> Callable[[Ctx, Relation], Outcome]:
    def f(c: Ctx, r: Relation) -> Outcome:
        idx = c.objs(r.subject) + ([] if group else c.objs(r.object))
        if (group and len(idx) < 2) or (not group and (not c.objs(r.subject) or not c.objs(r.object))):
            return _missing()
        v = c.view.objects
        vals = [v[i].y if axis == "row" else v[i].x for i in idx]
        if not group:  # pair: box centres
            vals = [(v[i].bbox[1] + v[i].bbox[3]) / 2 if axis == "row" else (v[i].bbox[0] + v[i].bbox[2]) / 2 for i in idx]
        tol = c.tol.same_line(r, max(extent(v[i]) for i in idx))
        spread = max(vals) - min(vals)
        return Outcome(spread - tol - 1e-9 if negate else tol - spread, 0.1)
    return f


def _distance(closer: bool) -> Callable[[Ctx, Relation], Outcome]:
    def f(c: Ctx, r: Relation) -> Outcome:
        s, a, b = c.objs(r.subject), c.objs(r.anchor_a), c.objs(r.anchor_b)
        if not s or not a or not b:
            return _missing()
        da = min(c.view.gap(i, j) for i in s for j in a)
        db = min(c.view.gap(i, j) for i in s for j in b)
        near, far = (da, db) if closer else (db, da)
        ratio, diff = c.tol.distance(r)
        return Outcome(min(ratio * far - near, far - near - diff), 0.1)
    return f


def _size_pair(kind: str) -> Callable[[Ctx, Relation], Outcome]:
    def f(c: Ctx, r: Relation) -> Outcome:
        s, o = c.objs(r.subject), c.objs(r.object)
        if not s or not o:
            return _missing()
        v = c.view.objects
        ss, so = [v[i].s for i in s], [v[j].s for j in o]
        if kind in ("larger_than", "all_larger_than"):
            return Outcome(min(ss) / max(max(so), 1e-6) - c.tol.larger(r), 0.5)
        if kind in ("smaller_than", "all_smaller_than"):
            return Outcome(min(so) / max(max(ss), 1e-6) - c.tol.larger(r), 0.5)
        allv = ss + so  # same_size
        return Outcome(c.tol.same_size(r) - max(allv) / max(min(allv), 1e-6), 0.5)
    return f


def _all_same_size(negate: bool) -> Callable[[Ctx, Relation], Outcome]:
    def f(c: Ctx, r: Relation) -> Outcome:
        idx = c.objs(r.subject) + c.objs(r.object)
        if len(idx) < 2 or (r.object and not c.objs(r.object)):
            return _missing()
        sizes = [c.view.objects[i].s for i in idx]
        ratio = max(sizes) / max(min(sizes), 1e-6)
        tol = c.tol.same_size(r)
        return Outcome(ratio - tol - 1e-9 if negate else tol - ratio, 0.5)
    return f


def _touching(negate: bool) -> Callable[[Ctx, Relation], Outcome]:
    def f(c: Ctx, r: Relation) -> Outcome:
        s, o = c.objs(r.subject), c.objs(r.object)
        if not s or not o:
            return _missing()
        gap = min(c.view.gap(i, j) for i in s for j in o)
        tol = c.tol.touch(r)
        return Outcome(gap - tol - 1e-9 if negate else tol - gap, 0.05)
    return f


def _inside(swap: bool, each: bool) -> Callable[[Ctx, Relation], Outcome]:
    def f(c: Ctx, r: Relation) -> Outcome:
        inner, outer = (c.objs(r.object), c.objs(r.subject)) if swap else (c.objs(r.subject), c.objs(r.object))
        if not inner or not outer:
            return _missing()
        need = c.tol.inside()
        share = [[c.view.inside(i, j) for j in outer] for i in inner]
        if not each:
            return Outcome(min(max(row) for row in share) - need, 0.5)
        if len(inner) > len(outer):
            return Outcome(-1.0, 0.5)
        best = -math.inf  # one-to-one: every inner object inside a distinct outer object
        for perm in itertools.permutations(range(len(outer)), len(inner)):
            best = max(best, min(share[k][p] for k, p in enumerate(perm)))
            if best >= 1.0:
                break
        return Outcome(best - need, 0.5)
    return f


# ---- visalign extension


def _parity(c: Ctx, r: Relation) -> Outcome:
    n = len(c.objs(r.subject))
    ok = n % 2 == 1 if r.param("parity") == "odd" else (n % 2 == 0 and n >= 2)
    return Outcome(0.0 if ok else -1.0)


def _symmetric(c: Ctx, r: Relation) -> Outcome:
    s, o = c.objs(r.subject), c.objs(r.object)
    if not s or not o:
        return _missing()
    (sx, sy), (ox, oy) = c.centre(s), c.centre(o)
    return Outcome(0.05 - max(abs(sx + ox - 1.0), abs(sy - oy)), 0.1)


def _colour(same: bool) -> Callable[[Ctx, Relation], Outcome]:
    def f(c: Ctx, r: Relation) -> Outcome:
        s, o = c.objs(r.subject), c.objs(r.object)
        if not s or not o:
            return _missing()
        eq = c.view.objects[s[0]].color == c.view.objects[o[0]].color
        return Outcome(0.0 if eq == same else -1.0)
    return f


def _overlap(c: Ctx, r: Relation) -> Outcome:
    s, o = c.objs(r.subject), c.objs(r.object)
    if not s or not o:
        return _missing()
    return Outcome(max(c.view.contact(i, j) for i in s for j in o) - 0.8, 0.8)


RELATIONS: dict[str, Callable[[Ctx, Relation], Outcome]] = {
    "same_count": _same_count, "more_than_count": _more, "fewer_than_count": _fewer, "times_as_many": _times,
    "left_of": _direction(1, 0), "right_of": _direction(-1, 0), "above": _direction(0, 1), "below": _direction(0, -1),
    "all_left_of": _all_direction(1, 0), "all_right_of": _all_direction(-1, 0), "all_above": _all_direction(0, 1),
    "all_below": _all_direction(0, -1),
    "leftmost": _extreme("leftmost"), "rightmost": _extreme("rightmost"), "topmost": _extreme("topmost"),
    "bottommost": _extreme("bottommost"),
    "between": _between, "same_row": _same_line("row"), "same_column": _same_line("column"),
    "all_same_row": _same_line("row", group=True), "all_same_column": _same_line("column", group=True),
    "not_all_same_row": _same_line("row", negate=True, group=True),
    "not_all_same_column": _same_line("column", negate=True, group=True),
    "closer_than": _distance(True), "farther_than": _distance(False),
    "larger_than": _size_pair("larger_than"), "smaller_than": _size_pair("smaller_than"),
    "same_size": _size_pair("same_size"), "all_larger_than": _size_pair("all_larger_than"),
    "all_smaller_than": _size_pair("all_smaller_than"), "all_same_size": _all_same_size(False),
    "not_all_same_size": _all_same_size(True), "largest": _extreme("largest", size=True),
    "smallest": _extreme("smallest", size=True),
    "touching": _touching(False), "not_touching": _touching(True), "inside": _inside(False, False),
    "contains": _inside(True, False), "each_inside": _inside(False, True), "each_contains": _inside(True, True),
    "parity": _parity, "symmetric": _symmetric, "same_color": _colour(True), "different_color": _colour(False),
    "overlap": _overlap,
}
assert set(EXTREMES) <= set(RELATIONS)


def relation_outcome(view: SceneView, rel: Relation, a: Assignment, tol: Tolerances) -> Outcome:
    return RELATIONS[rel.type](Ctx(view, a, tol), rel)


def evaluate(view: SceneView, spec: VisualSpec, tol: Tolerances) -> tuple[Assignment, dict[str, dict[str, Outcome]],
                                                                          list[Outcome]]:
    """Assignment, per-group checks and per-relation outcomes of ``spec`` on ``view``."""
    a = assign(view, spec)
    return a, group_checks(view, spec, a), [relation_outcome(view, r, a, tol) for r in spec.relations]


def describe(o: Outcome) -> dict[str, Any]:
    return {"passed": o.passed, "margin": round(max(o.margin, -99.0), 4), "credit": round(o.credit, 4)}
