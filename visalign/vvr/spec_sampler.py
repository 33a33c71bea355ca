"""Seeded generator of VVR v2 tasks: a closed-world visual spec, a witness scene that satisfies it and a prompt
that states the whole scene.

A task starts from a *primary* type (one of the 46, or an extension type): its builder adds the groups the type
needs, placed so the relation holds with a safety margin. Then random additions (more patterns, relations between
existing groups that hold, layouts, forbidden colours, objects) raise the *complexity* to an exact target:

    complexity = sum over groups (2 + objects) + layouts (regions 2, grid 3) + relations (3-5 each, RELATION_WEIGHT)
                 + forbidden colours + 1 for a background other than white

Every relation and layout is checked on the witness with the predicates the verifier uses, under both tolerance
modes (default, and the paper's pixel tolerances at 256 px) with a safety margin (``TRUTH_MARGIN``), so renders
stay correct under JPEG, noise, 64 px and at the paper's tolerances from 256 px up. Only ``random.Random`` integer
draws decide what is generated, so a seed gives the same bytes on every machine.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Callable

from .colour_model import BACKGROUND_NAMES, COLOUR_NAMES
from .geometry import circumradius, inradius
from .predicates import REGION_BOUNDS, cell_of, layout_check, assign, relation_outcome
from .render import _settle_contacts
from .spec import (ANY, EXTENSION_TYPES, EXTENSION_VERSION, IMAGE_TYPES, PAPER_VERSION, SHAPE_NAMES, Group, Layout,
                   Relation, VisualSpec, parse_spec)
from .spec_geometry import WitnessView
from .task import Contact, Obj, Scene
from .tolerances import Tolerances

SIZES: dict[str, tuple[int, int]] = {"small": (115, 130), "medium": (140, 165), "large": (195, 230)}
MIN_GAP = 45  # milli: free space between objects not meant to touch
PAD = 20
MAX_OBJECTS = 16
MAX_AREA = 0.42

RELATION_WEIGHT: dict[str, int] = {
    "same_count": 3, "more_than_count": 3, "fewer_than_count": 3, "times_as_many": 4,
    "left_of": 3, "right_of": 3, "above": 3, "below": 3, "all_left_of": 4, "all_right_of": 4, "all_above": 4,
    "all_below": 4, "leftmost": 4, "rightmost": 4, "topmost": 4, "bottommost": 4, "between": 5, "same_row": 3,
    "same_column": 3, "all_same_row": 4, "all_same_column": 4, "not_all_same_row": 4, "not_all_same_column": 4,
    "closer_than": 5, "farther_than": 5, "larger_than": 3, "smaller_than": 3, "same_size": 3, "all_larger_than": 4,
    "all_smaller_than": 4, "all_same_size": 4, "not_all_same_size": 4, "largest": 4, "smallest": 4,
    "touching": 4, "not_touching": 3, "inside": 4, "contains": 4, "each_inside": 5, "each_contains": 5,
    "parity": 3, "symmetric": 4, "same_color": 3, "different_color": 3, "overlap": 4,
}
#: witness margins beyond each predicate's tolerance (in the predicate's units), so renders pass robustly
TRUTH_MARGIN: dict[str, float] = {
    **{t: 0.0 for t in ("same_count", "more_than_count", "fewer_than_count", "times_as_many", "parity",
                        "same_color", "different_color", "touching", "overlap")},
    **{t: 0.04 for t in ("left_of", "right_of", "above", "below", "all_left_of", "all_right_of", "all_above",
                         "all_below")},
    **{t: 0.03 for t in ("leftmost", "rightmost", "topmost", "bottommost", "between", "closer_than", "farther_than",
                         "symmetric")},
    "same_row": 0.02, "same_column": 0.02, "all_same_row": 0.02, "all_same_column": 0.02,
    "not_all_same_row": 0.08, "not_all_same_column": 0.08,
    **{t: 0.12 for t in ("larger_than", "smaller_than", "all_larger_than", "all_smaller_than", "largest", "smallest",
                         "not_all_same_size")},
    "same_size": 0.05, "all_same_size": 0.05, "not_touching": 0.035, "inside": 0.0, "contains": 0.0,
    "each_inside": 0.0, "each_contains": 0.0,
}
LAYOUT_MARGIN = 0.05
TOLERANCES = (Tolerances("default", 256), Tolerances("paper", 256))
#: complexity bins of VVRBench (difficulty_bin 1-5) and the range of VVRBench-Challenge
BINS: tuple[tuple[int, int], ...] = ((3, 11), (12, 20), (21, 29), (30, 38), (39, 48))
CHALLENGE_RANGE = (45, 80)


def difficulty_bin(complexity: int) -> int:
    """1-5 for complexities 3-48 (equal widths), 5 above."""
    for k, (lo, hi) in enumerate(BINS, start=1):
        if complexity <= hi:
            return k
    return len(BINS)


@dataclass
class GroupDraft:
    color: str
    shape: str
    members: list[int]
    count_mode: str = "exact"
    max_count: int = 0
    layout: Layout | None = None

    @property
    def id(self) -> str:
        return f"{self.color}_{self.shape}"

    def group(self) -> Group:
        return Group(self.id, self.color, self.shape, len(self.members) if self.count_mode == "exact" else 0,
                     self.count_mode, self.max_count, self.layout)


class Draft:
    """A scene under construction: witness objects, groups, relations, forbidden colours and background."""

    def __init__(self, rng: random.Random, background: str, extension: bool = False) -> None:
        self.rng = rng
        self.background = background
        self.extension = extension
        self.objects: list[Obj] = []
        self.contacts: list[Contact] = []
        self.groups: list[GroupDraft] = []
        self.relations: list[Relation] = []
        self.forbidden: list[str] = []

    def copy(self) -> "Draft":
        d = Draft(self.rng, self.background, self.extension)
        d.objects = [Obj(**vars(o)) for o in self.objects]
        d.contacts = [Contact(c.kind, c.a, c.b) for c in self.contacts]
        d.groups = [GroupDraft(g.color, g.shape, list(g.members), g.count_mode, g.max_count, g.layout) for g in self.groups]
        d.relations = list(self.relations)
        d.forbidden = list(self.forbidden)
        return d

    # ---- views
    def scene(self) -> Scene:
        return Scene(self.objects, self.contacts)

    def spec(self) -> VisualSpec:
        return VisualSpec(EXTENSION_VERSION if self.extension else PAPER_VERSION, "image", self.background,
                          [g.group() for g in self.groups], list(self.relations), list(self.forbidden))

    def complexity(self) -> int:
        c = sum(2 + len(g.members) for g in self.groups)
        c += sum({"regions": 2, "grid_cells": 3}.get(g.layout.type, 2) for g in self.groups if g.layout is not None)
        c += sum(RELATION_WEIGHT[r.type] for r in self.relations) + len(self.forbidden)
        return c + (self.background != "white")

    def group(self, gid: str) -> GroupDraft:
        return next(g for g in self.groups if g.id == gid)

    # ---- drawing objects
    def used_keys(self) -> set[tuple[str, str]]:
        return {(g.color, g.shape) for g in self.groups}

    def free_key(self, colours: tuple[str, ...] = COLOUR_NAMES, shapes: tuple[str, ...] = SHAPE_NAMES,
                 avoid_colours: tuple[str, ...] = ()) -> tuple[str, str] | None:
        used = self.used_keys()
        taken = {c for c, s in used if s == ANY} | set(self.forbidden) | set(avoid_colours)
        any_shapes = {s for c, s in used if c == ANY}
        options = [(c, s) for c in colours for s in shapes if (c, s) not in used and c not in taken
                   and s not in any_shapes]
        return self.rng.choice(options) if options else None

    def spawn(self, color: str, shape: str, size: str | None = None, s: int | None = None) -> Obj:
        if s is None:
            lo, hi = SIZES[size or self.rng.choice(["small", "medium", "medium"])]
            s = self.rng.randint(lo, hi)
        rot = 0 if shape == "circle" else self.rng.randrange(0, 360)
        return Obj(shape, color, 500, 500, s, rot)

    def _clear(self, i: int, x: float, y: float) -> bool:
        o = self.objects[i]
        r = circumradius(o.shape, o.s)
        if not (PAD + r <= x <= 1000 - PAD - r and PAD + r <= y <= 1000 - PAD - r):
            return False
        for j, p in enumerate(self.objects):
            if j == i or self._linked(i, j):
                continue
            if math.hypot(x - p.x, y - p.y) - r - circumradius(p.shape, p.s) < MIN_GAP:
                return False
        return True

    def _linked(self, i: int, j: int) -> bool:
        """Objects in contact through a chain (a nested pair's partners are exempt from each other's gap)."""
        return any({c.a, c.b} == {i, j} for c in self.contacts)

    def place(self, i: int, box: tuple[int, int, int, int] = (0, 0, 1000, 1000), tries: int = 40) -> bool:
        """Move object ``i`` to a random free spot (centroid inside ``box``)."""
        for _ in range(tries):
            x, y = self.rng.randint(box[0], box[2]), self.rng.randint(box[1], box[3])
            if self._clear(i, x, y):
                self.objects[i].x, self.objects[i].y = x, y
                return True
        return False

    def add_objects(self, color: str, shape: str, n: int, size: str | None = None, s: int | None = None,
                    box: tuple[int, int, int, int] = (0, 0, 1000, 1000)) -> list[int] | None:
        """Spawn and place ``n`` objects; ``None`` (draft unchanged) when they do not fit."""
        start = len(self.objects)
        if start + n > MAX_OBJECTS:
            return None
        for _ in range(n):
            self.objects.append(self.spawn(color, shape, size, s))
            if not self.place(len(self.objects) - 1, box):
                del self.objects[start:]
                return None
        return list(range(start, start + n))

    def new_group(self, n: int = 1, size: str | None = None, s: int | None = None,
                  box: tuple[int, int, int, int] = (0, 0, 1000, 1000), colours: tuple[str, ...] = COLOUR_NAMES,
                  shapes: tuple[str, ...] = SHAPE_NAMES, avoid_colours: tuple[str, ...] = ()) -> GroupDraft | None:
        key = self.free_key(colours, shapes, avoid_colours)
        if key is None:
            return None
        idx = self.add_objects(key[0], key[1], n, size, s, box)
        if idx is None:
            return None
        g = GroupDraft(key[0], key[1], idx)
        self.groups.append(g)
        return g

    # ---- checks
    def holds(self, rel: Relation, view: WitnessView | None = None) -> bool:
        view = view or WitnessView(self.scene())
        a = assign(view, self.spec())
        need = TRUTH_MARGIN[rel.type]
        return all(relation_outcome(view, rel, a, tol).margin >= need for tol in TOLERANCES)

    def valid(self) -> bool:
        """Objects in bounds and apart, area bounded, every relation and layout holding with its margin, and the
        spec valid."""
        if not self.objects or len(self.objects) > MAX_OBJECTS:
            return False
        if sum((o.s / 1000) ** 2 for o in self.objects) > MAX_AREA:
            return False
        if not all(self._clear(i, o.x, o.y) for i, o in enumerate(self.objects)):
            return False
        try:
            spec = parse_spec(self.spec().to_dict())
        except ValueError:
            return False
        view = WitnessView(self.scene())
        a = assign(view, spec)
        if a.extras or any(len(a.members[g.id]) != len(g.members) for g in self.groups):
            return False
        for g in spec.groups:
            if g.layout is not None and layout_check(view, g, a.members[g.id]).margin < LAYOUT_MARGIN:
                return False
        return all(relation_outcome(view, r, a, tol).margin >= TRUTH_MARGIN[r.type]
                   for r in spec.relations for tol in TOLERANCES)



# ---------------------------------------------------------------- builders: add a pattern for one type

Builder = Callable[[Draft], bool]


def _rel(t: str, subject: str, obj: str | None = None, **kw) -> Relation:
    params = tuple(sorted((k, v) for k, v in kw.items() if k not in ("anchor_a", "anchor_b", "references")))
    refs = kw.get("references")
    return Relation(t, subject, obj, kw.get("anchor_a"), kw.get("anchor_b"), tuple(refs) if refs else None, params)


def _b_grounding(d: Draft) -> bool:
    return d.new_group(1) is not None


def _b_exact_count(d: Draft) -> bool:
    return d.new_group(d.rng.randint(2, 5), size="small") is not None


def _b_counts(kind: str) -> Builder:
    def build(d: Draft) -> bool:
        rng = d.rng
        if kind == "same_count":
            ns = no = rng.randint(1, 3)
        elif kind == "times_as_many":
            no = rng.randint(1, 2)
            m = 2 if rng.random() < 0.7 else 3
            ns = m * no
            if ns > 6:
                ns, no = 2 * no, no
                m = 2
        else:
            lo, diff = rng.randint(1, 3), rng.randint(1, 2)
            ns, no = (lo + diff, lo) if kind == "more_than_count" else (lo, lo + diff)
        a = d.new_group(ns, size="small")
        b = d.new_group(no, size="small") if a else None
        if not b:
            return False
        kw = {"multiplier": m} if kind == "times_as_many" and m != 2 else {}
        d.relations.append(_rel(kind, a.id, b.id, **kw))
        return True
    return build


def _b_region(d: Draft) -> bool:
    rng = d.rng
    region = rng.choice(list(REGION_BOUNDS))
    x0, x1, y0, y1 = REGION_BOUNDS[region]
    m = 60
    box = (int(x0 * 1000) + m, int(y0 * 1000) + m, int(x1 * 1000) - m, int(y1 * 1000) - m)
    n = rng.randint(1, 2) if region in ("top", "bottom", "left", "right") else 1
    g = d.new_group(n, size="small", box=box)
    if g is None:
        return False
    g.layout = Layout("regions", regions=(region,))
    return True


def _b_grid(d: Draft) -> bool:
    rng = d.rng
    rows, cols = rng.choice([(2, 2), (2, 3), (3, 2), (3, 3)])
    n = rng.randint(2, min(4, rows * cols))
    cells = rng.sample([(r, c) for r in range(rows) for c in range(cols)], n)
    key = d.free_key()
    if key is None:
        return False
    start = len(d.objects)
    for r, c in cells:
        cw, ch = 1000 // cols, 1000 // rows
        box = (c * cw + cw // 2 - 40, r * ch + ch // 2 - 40, c * cw + cw // 2 + 40, r * ch + ch // 2 + 40)
        if d.add_objects(key[0], key[1], 1, size="small", box=box) is None:
            del d.objects[start:]
            return False
    d.groups.append(GroupDraft(key[0], key[1], list(range(start, len(d.objects))),
                               layout=Layout("grid_cells", rows=rows, cols=cols, cells=tuple(sorted(cells)))))
    return True


_AXIS = {"left_of": (0, -1), "right_of": (0, 1), "above": (1, -1), "below": (1, 1)}


def _b_direction(kind: str, quantified: bool = False) -> Builder:
    def build(d: Draft) -> bool:
        rng = d.rng
        axis, sign = _AXIS[kind.replace("all_", "")]
        cut = rng.randint(420, 580)
        near, far = (0, cut - 75), (cut + 75, 1000)
        lo_box, hi_box = (near, far) if sign < 0 else (far, near)
        boxes = []
        for span in (lo_box, hi_box):
            boxes.append((span[0], 0, span[1], 1000) if axis == 0 else (0, span[0], 1000, span[1]))
        ns, no = (rng.randint(1, 3), rng.randint(1, 3)) if quantified else (1, 1)
        a = d.new_group(ns, size="small", box=boxes[0])
        b = d.new_group(no, size="small", box=boxes[1]) if a else None
        if not b:
            return False
        d.relations.append(_rel(kind, a.id, b.id))
        return True
    return build


def _b_extreme(kind: str) -> Builder:
    def build(d: Draft) -> bool:
        rng = d.rng
        if kind in ("largest", "smallest"):
            a = d.new_group(1, size="large" if kind == "largest" else "small")
            if a is None:
                return False
            if kind == "smallest":
                d.objects[a.members[0]].s = rng.randint(108, 112)
            refs = None
            if rng.random() < 0.5:
                b = d.new_group(rng.randint(1, 2), size="small" if kind == "largest" else "large")
                if b is None:
                    return False
                refs = (b.id,)
            d.relations.append(_rel(kind, a.id, None, references=refs))
            return True
        box = {"leftmost": (0, 0, 200, 1000), "rightmost": (800, 0, 1000, 1000), "topmost": (0, 0, 1000, 200),
               "bottommost": (0, 800, 1000, 1000)}[kind]
        a = d.new_group(1, size="small", box=box)
        if a is None:
            return False
        refs = None
        if rng.random() < 0.5:
            inner = {"leftmost": (330, 0, 1000, 1000), "rightmost": (0, 0, 670, 1000), "topmost": (0, 330, 1000, 1000),
                     "bottommost": (0, 0, 1000, 670)}[kind]
            b = d.new_group(rng.randint(1, 2), size="small", box=inner)
            if b is None:
                return False
            refs = (b.id,)
        d.relations.append(_rel(kind, a.id, None, references=refs))
        return True
    return build


def _b_between(d: Draft) -> bool:
    rng = d.rng
    a = d.new_group(1, size="small")
    if a is None:
        return False
    oa = d.objects[a.members[0]]
    for _ in range(30):
        bx, by = rng.randint(120, 880), rng.randint(120, 880)
        if math.hypot(bx - oa.x, by - oa.y) >= 520:
            break
    else:
        return False
    b = d.new_group(1, size="small", box=(bx - 5, by - 5, bx + 5, by + 5))
    if b is None:
        return False
    t = rng.randint(40, 60)
    ob = d.objects[b.members[0]]
    mx, my = oa.x + (ob.x - oa.x) * t // 100, oa.y + (ob.y - oa.y) * t // 100
    s = d.new_group(1, size="small", box=(mx - 8, my - 8, mx + 8, my + 8))
    if s is None:
        return False
    d.relations.append(_rel("between", s.id, None, anchor_a=a.id, anchor_b=b.id))
    return True


def _b_same_line(kind: str) -> Builder:
    def build(d: Draft) -> bool:
        rng = d.rng
        row = "row" in kind
        line = rng.randint(180, 820)
        if kind.startswith("not_all"):
            n = rng.randint(2, 3)
            g = d.new_group(n, size="small")
            if g is None:
                return False
            vals = [d.objects[i].y if row else d.objects[i].x for i in g.members]
            if max(vals) - min(vals) < 200:
                return False
            d.relations.append(_rel(kind, g.id))
            return True
        box = (0, line - 3, 1000, line + 3) if row else (line - 3, 0, line + 3, 1000)
        if kind.startswith("all"):
            g = d.new_group(rng.randint(2, 3), size="small", box=box)
            if g is None:
                return False
            d.relations.append(_rel(kind, g.id))
            return True
        a = d.new_group(1, size="small", box=box, shapes=("circle", "square"))
        b = d.new_group(1, size="small", box=box, shapes=("circle", "square")) if a else None
        if not b:
            return False
        d.relations.append(_rel(kind, a.id, b.id))
        return True
    return build


def _b_distance(kind: str) -> Builder:
    def build(d: Draft) -> bool:
        rng = d.rng
        s = d.new_group(1, size="small")
        if s is None:
            return False
        o = d.objects[s.members[0]]
        near = d.new_group(1, size="small", box=(o.x - 260, o.y - 260, o.x + 260, o.y + 260))
        if near is None:
            return False
        far = d.new_group(1, size="small")
        if far is None:
            return False
        a, b = (near, far) if kind == "closer_than" else (far, near)
        d.relations.append(_rel(kind, s.id, None, anchor_a=a.id, anchor_b=b.id))
        return True
    return build


def _b_size(kind: str) -> Builder:
    def build(d: Draft) -> bool:
        rng = d.rng
        if kind == "same_size":
            sz = rng.randint(120, 200)
            a, b = d.new_group(1, s=sz), None
            b = d.new_group(1, s=sz) if a else None
        elif kind in ("all_same_size", "not_all_same_size"):
            if kind == "all_same_size" and rng.random() < 0.4:
                sz = rng.randint(120, 170)
                a = d.new_group(rng.randint(1, 2), s=sz)
                b = d.new_group(rng.randint(1, 2), s=sz) if a else None
                if not b:
                    return False
                d.relations.append(_rel(kind, a.id, b.id))
                return True
            n = rng.randint(2, 3)
            key = d.free_key()
            if key is None:
                return False
            if kind == "all_same_size":
                idx = d.add_objects(key[0], key[1], n, s=rng.randint(120, 170))
            else:
                idx = d.add_objects(key[0], key[1], 1, s=rng.randint(112, 125))
                more = d.add_objects(key[0], key[1], n - 1, size="large") if idx else None
                idx = idx + more if idx and more else None
            if idx is None:
                return False
            g = GroupDraft(key[0], key[1], idx)
            d.groups.append(g)
            d.relations.append(_rel(kind, g.id))
            return True
        else:
            quantified = kind.startswith("all_")
            ns, no = (rng.randint(1, 3), rng.randint(1, 2)) if quantified else (1, 1)
            big = kind in ("larger_than", "all_larger_than")
            a = d.new_group(ns, size="large" if big else "small")
            b = d.new_group(no, size="small" if big else "large") if a else None
        if not a or not b:
            return False
        d.relations.append(_rel(kind, a.id, b.id))
        return True
    return build


def _b_touching(d: Draft) -> bool:
    rng = d.rng
    back = d.new_group(1, size=rng.choice(["medium", "large"]))
    if back is None:
        return False
    key = d.free_key(avoid_colours=(back.color,))
    if key is None:
        return False
    bo = d.objects[back.members[0]]
    front = d.spawn(key[0], key[1], size="small")
    ang = math.radians(rng.randrange(0, 360, 5))
    dist = circumradius(bo.shape, bo.s) + circumradius(front.shape, front.s)
    front.x, front.y = bo.x + dist * math.cos(ang), bo.y + dist * math.sin(ang)
    d.objects.append(front)
    i = len(d.objects) - 1
    d.contacts.append(Contact("touch", i, back.members[0]))
    _settle_contacts(Scene([d.objects[i], bo], [Contact("touch", 0, 1)]))
    front.x, front.y = int(round(front.x)), int(round(front.y))
    if not d._clear(i, front.x, front.y):
        return False
    d.groups.append(GroupDraft(key[0], key[1], [i]))
    if rng.random() < 0.5:
        d.relations.append(_rel("touching", key[0] + "_" + key[1], back.id))
    else:
        d.relations.append(_rel("touching", back.id, key[0] + "_" + key[1]))
    return True


def _b_not_touching(d: Draft) -> bool:
    a = d.new_group(1)
    b = d.new_group(1) if a else None
    if not b:
        return False
    d.relations.append(_rel("not_touching", a.id, b.id))
    return True


def _nest(d: Draft, outer_key: tuple[str, str], inner_key: tuple[str, str], outer_s: int) -> tuple[int, int] | None:
    idx = d.add_objects(outer_key[0], outer_key[1], 1, s=outer_s)
    if idx is None:
        return None
    o = d.objects[idx[0]]
    room = 0.7 * inradius(o.shape, o.s)
    inner = d.spawn(inner_key[0], inner_key[1], s=100)
    inner.s = max(0, min(int(room / (circumradius(inner.shape, 1000) / 1000)), 150))
    if inner.s < 100:
        del d.objects[idx[0]]
        return None
    inner.x, inner.y = o.x, o.y
    d.objects.append(inner)
    j = len(d.objects) - 1
    d.contacts.append(Contact("inside", j, idx[0]))
    return j, idx[0]


def _b_inside(kind: str) -> Builder:
    def build(d: Draft) -> bool:
        rng = d.rng
        each = kind.startswith("each")
        n_pairs = rng.randint(2, 3) if each else 1
        outer_key = d.free_key(shapes=("circle", "square"))
        if outer_key is None:
            return False
        inner_key = d.free_key(shapes=("circle", "square"), avoid_colours=(outer_key[0],))
        if inner_key is None or inner_key == outer_key:
            return False
        outer_s = rng.randint(260, 300) if n_pairs == 1 else rng.randint(230, 260)
        inner_idx, outer_idx = [], []
        for _ in range(n_pairs):
            pair = _nest(d, outer_key, inner_key, outer_s)
            if pair is None:
                return False
            inner_idx.append(pair[0])
            outer_idx.append(pair[1])
        extra_outer = each and rng.random() < 0.3 and kind == "each_inside"
        if extra_outer:
            more = d.add_objects(outer_key[0], outer_key[1], 1, s=outer_s)
            if more is None:
                return False
            outer_idx += more
        gi, go = GroupDraft(inner_key[0], inner_key[1], inner_idx), GroupDraft(outer_key[0], outer_key[1], outer_idx)
        d.groups += [gi, go]
        if kind in ("inside", "each_inside"):
            d.relations.append(_rel(kind, gi.id, go.id))
        else:
            d.relations.append(_rel(kind, go.id, gi.id))
        return True
    return build


# ---- visalign extension


def _b_parity(d: Draft) -> bool:
    n = d.rng.randint(1, 5)
    g = d.new_group(n, size="small")
    if g is None:
        return False
    g.count_mode, g.max_count = "relative", 6
    d.relations.append(_rel("parity", g.id, parity="odd" if n % 2 else "even"))
    if n == 1:
        d.relations[-1] = _rel("parity", g.id, parity="odd")
    return True


def _b_symmetric(d: Draft) -> bool:
    a = d.new_group(1, box=(0, 0, 380, 1000))
    if a is None:
        return False
    oa = d.objects[a.members[0]]
    b = d.new_group(1, s=oa.s, box=(1000 - oa.x, oa.y, 1000 - oa.x, oa.y))
    if b is None:
        return False
    d.relations.append(_rel("symmetric", a.id, b.id))
    return True


def _b_colour(kind: str) -> Builder:
    def build(d: Draft) -> bool:
        rng = d.rng
        free_shapes = [s for s in SHAPE_NAMES if all(g.shape != s for g in d.groups)]
        if len(free_shapes) < 2 or any(g.color == ANY for g in d.groups):
            return False
        sa, sb = rng.sample(free_shapes, 2)
        ca = rng.choice([c for c in COLOUR_NAMES if c not in d.forbidden])
        cb = ca if kind == "same_color" else rng.choice([c for c in COLOUR_NAMES if c not in d.forbidden and c != ca])
        ia = d.add_objects(ca, sa, 1)
        ib = d.add_objects(cb, sb, 1) if ia else None
        if not ib:
            return False
        d.groups += [GroupDraft(ANY, sa, ia), GroupDraft(ANY, sb, ib)]
        d.relations.append(_rel(kind, f"any_{sa}", f"any_{sb}"))
        return True
    return build


def _b_overlap(d: Draft) -> bool:
    rng = d.rng
    back_key = d.free_key(shapes=("circle", "square", "triangle"))
    if back_key is None or any(g.color == back_key[0] for g in d.groups):
        return False
    idx = d.add_objects(back_key[0], back_key[1], 1, size="large")
    if idx is None:
        return False
    front_key = d.free_key(avoid_colours=(back_key[0],))
    if front_key is None:
        return False
    bo = d.objects[idx[0]]
    front = d.spawn(front_key[0], front_key[1], s=rng.randint(110, 125))
    ang = math.radians(rng.randrange(0, 360, 5))
    r = (circumradius(bo.shape, bo.s) + inradius(bo.shape, bo.s)) / 2
    front.x, front.y = int(round(bo.x + r * math.cos(ang))), int(round(bo.y + r * math.sin(ang)))
    d.objects.append(front)
    j = len(d.objects) - 1
    d.contacts.append(Contact("overlap", j, idx[0]))
    if not d._clear(j, front.x, front.y):
        return False
    d.groups += [GroupDraft(back_key[0], ANY, idx), GroupDraft(front_key[0], front_key[1], [j])]
    d.relations.append(_rel("overlap", f"{front_key[0]}_{front_key[1]}", f"{back_key[0]}_{ANY}"))
    return True


BUILDERS: dict[str, Builder] = {
    "color_attribute": _b_grounding, "shape_attribute": _b_grounding, "color_shape_binding": _b_grounding,
    "exact_count": _b_exact_count, "absolute_region": _b_region, "grid_occupancy": _b_grid,
    **{k: _b_counts(k) for k in ("same_count", "more_than_count", "fewer_than_count", "times_as_many")},
    **{k: _b_direction(k) for k in ("left_of", "right_of", "above", "below")},
    **{k: _b_direction(k, quantified=True) for k in ("all_left_of", "all_right_of", "all_above", "all_below")},
    **{k: _b_extreme(k) for k in ("leftmost", "rightmost", "topmost", "bottommost", "largest", "smallest")},
    "between": _b_between,
    **{k: _b_same_line(k) for k in ("same_row", "same_column", "all_same_row", "all_same_column",
                                    "not_all_same_row", "not_all_same_column")},
    "closer_than": _b_distance("closer_than"), "farther_than": _b_distance("farther_than"),
    **{k: _b_size(k) for k in ("larger_than", "smaller_than", "same_size", "all_larger_than", "all_smaller_than",
                               "all_same_size", "not_all_same_size")},
    "touching": _b_touching, "not_touching": _b_not_touching,
    **{k: _b_inside(k) for k in ("inside", "contains", "each_inside", "each_contains")},
    "parity": _b_parity, "symmetric": _b_symmetric, "same_color": _b_colour("same_color"),
    "different_color": _b_colour("different_color"), "overlap": _b_overlap,
}
TASK_TYPES: tuple[str, ...] = tuple(IMAGE_TYPES)
assert set(TASK_TYPES) | set(EXTENSION_TYPES) == set(BUILDERS)


# ---------------------------------------------------------------- filling up to a complexity


_SYMMETRIC = {"same_count", "same_row", "same_column", "same_size", "touching", "not_touching", "all_same_size",
              "symmetric", "same_color", "different_color"}
_INVERSE = {"right_of": "left_of", "below": "above", "smaller_than": "larger_than", "contains": "inside",
            "fewer_than_count": "more_than_count", "all_right_of": "all_left_of", "all_below": "all_above",
            "all_smaller_than": "all_larger_than", "each_contains": "each_inside"}


def relation_key(r: Relation) -> tuple:
    """Relations that state the same thing get the same key (A left of B = B right of A; A, B same row = B, A)."""
    if r.type in _INVERSE:
        return (_INVERSE[r.type], r.object, r.subject, None, None, None)
    if r.type == "farther_than":
        return ("closer_than", r.subject, None, r.anchor_b, r.anchor_a, None)
    if r.type in _SYMMETRIC and r.object is not None:
        a, b = sorted((r.subject, r.object))
        return (r.type, a, b, None, None, None)
    return (r.type, r.subject, r.object, r.anchor_a, r.anchor_b, r.references)


def _try_relation(d: Draft, t: str) -> Relation | None:
    """A relation of type ``t`` between existing groups that holds on the witness (with its margin), if any."""
    rng = d.rng
    ids = [g.id for g in d.groups if g.color != ANY and g.shape != ANY]
    single = [g.id for g in d.groups if len(g.members) == 1 and g.count_mode == "exact" and g.id in ids]
    multi = [g.id for g in d.groups if len(g.members) >= 2 and g.count_mode == "exact" and g.id in ids]
    cands: list[Relation] = []
    if t in ("same_count", "more_than_count", "fewer_than_count", "times_as_many", "left_of", "right_of", "above",
             "below", "all_left_of", "all_right_of", "all_above", "all_below", "all_larger_than", "all_smaller_than"):
        cands = [_rel(t, a, b) for a in ids for b in ids if a != b]
    elif t in ("larger_than", "smaller_than", "same_size", "same_row", "same_column", "not_touching"):
        cands = [_rel(t, a, b) for a in single for b in single if a != b]
    elif t in ("leftmost", "rightmost", "topmost", "bottommost", "largest", "smallest"):
        cands = [_rel(t, a, None) for a in single] + \
                [_rel(t, a, None, references=(b,)) for a in single for b in ids if a != b]
    elif t in ("between", "closer_than", "farther_than"):
        cands = [_rel(t, s, None, anchor_a=a, anchor_b=b) for s in single for a in single for b in single
                 if len({s, a, b}) == 3]
    elif t in ("all_same_row", "all_same_column", "not_all_same_row", "not_all_same_column", "not_all_same_size"):
        cands = [_rel(t, a) for a in multi]
    elif t == "all_same_size":
        cands = [_rel(t, a) for a in multi] + [_rel(t, a, b) for a in ids for b in ids if a != b]
    elif t in ("touching", "inside", "contains", "each_inside", "each_contains"):
        cands = [_rel(t, a, b) for a in ids for b in ids if a != b]
    if not cands:
        return None
    rng.shuffle(cands)
    view = WitnessView(d.scene())
    existing = {relation_key(r) for r in d.relations}
    for rel in cands[:12]:
        if relation_key(rel) in existing:
            continue
        if d.holds(rel, view):
            return rel
    return None


def _try_layout(d: Draft) -> bool:
    rng = d.rng
    free = [g for g in d.groups if g.layout is None and g.color != ANY and g.shape != ANY]
    if not free:
        return False
    g = rng.choice(free)
    view = WitnessView(d.scene())
    objs = [view.objects[i] for i in g.members]
    if rng.random() < 0.7:
        from .predicates import region_margin

        fits = [r for r in REGION_BOUNDS if all(region_margin(o, r) >= LAYOUT_MARGIN for o in objs)]
        if not fits:
            return False
        g.layout = Layout("regions", regions=(rng.choice(fits),))
        return True
    for rows, cols in rng.sample([(2, 2), (2, 3), (3, 2), (3, 3)], 4):
        cells = [cell_of(o, rows, cols) for o in objs]
        if len({(r, c) for r, c, _ in cells}) == len(cells) and min(m for _, _, m in cells) >= LAYOUT_MARGIN:
            g.layout = Layout("grid_cells", rows=rows, cols=cols, cells=tuple(sorted((r, c) for r, c, _ in cells)))
            return True
    return False


def _step(d: Draft, remaining: int, types: tuple[str, ...]) -> bool:
    """One random addition that fits in ``remaining`` complexity; True when it was made (validity unchecked)."""
    rng = d.rng
    roll = rng.random()
    if remaining <= 2 or roll < 0.12:
        if rng.random() < 0.6 and len(d.forbidden) < 3:
            free = [c for c in COLOUR_NAMES if c not in d.forbidden and all(o.color != c for o in d.objects)]
            if free:
                d.forbidden.append(rng.choice(free))
                return True
        growable = [g for g in d.groups if g.count_mode == "exact" and g.color != ANY and g.shape != ANY
                    and not any(g.id in r.ids() for r in d.relations) and g.layout is None]
        if growable:
            g = rng.choice(growable)
            more = d.add_objects(g.color, g.shape, 1, size="small")
            if more:
                g.members += more
                return True
        if remaining == 1:
            return False
    if roll < 0.45:
        fitting = [t for t in types if t in RELATION_WEIGHT and RELATION_WEIGHT[t] <= remaining]
        rel = _try_relation(d, rng.choice(fitting)) if fitting else None
        if rel is not None:
            d.relations.append(rel)
            return True
        return False
    if roll < 0.55:
        return remaining >= 3 and _try_layout(d)
    if roll < 0.75 and remaining >= 3:
        return d.new_group(rng.randint(1, 2) if remaining >= 4 else 1, size=rng.choice(["small", "medium"])) is not None
    patterns = [t for t in types if t not in ("color_attribute", "shape_attribute", "color_shape_binding")]
    return bool(patterns) and BUILDERS[rng.choice(patterns)](d)


@dataclass
class GeneratedTask:
    """A generated v2 task: its spec, witness scene, primary type and complexity."""

    id: str
    primary: str
    spec: VisualSpec
    scene: Scene
    complexity: int
    extension: bool = False
    criteria: list[str] = field(default_factory=list)


def _attempt(rng: random.Random, primary: str, target: int, extension: bool, types: tuple[str, ...]) -> Draft | None:
    bg = "white" if target <= 3 or rng.random() < 0.45 else rng.choice(BACKGROUND_NAMES[1:])
    d = Draft(rng, bg, extension)
    if not BUILDERS[primary](d) or not d.valid() or d.complexity() > target:
        return None
    stalls = 0
    while d.complexity() < target and stalls < 40:
        trial = d.copy()
        if _step(trial, target - d.complexity(), types) and trial.complexity() <= target and trial.valid():
            d, stalls = trial, 0
        else:
            stalls += 1
    return d if d.complexity() == target else None


#: smallest complexity of each type's pattern (measured: the minimum over 300 seeds of the builder alone)
MIN_COMPLEXITY: dict[str, int] = {
    "color_attribute": 3, "shape_attribute": 3, "color_shape_binding": 3, "exact_count": 4, "absolute_region": 5,
    "grid_occupancy": 7, "same_count": 9, "more_than_count": 10, "fewer_than_count": 10, "times_as_many": 11,
    **{t: 9 for t in ("left_of", "right_of", "above", "below", "same_row", "same_column", "larger_than",
                      "smaller_than", "same_size", "not_touching", "same_color", "different_color")},
    **{t: 10 for t in ("all_left_of", "all_right_of", "all_above", "all_below", "all_larger_than", "all_smaller_than",
                       "touching", "inside", "contains", "symmetric", "overlap")},
    **{t: 7 for t in ("leftmost", "rightmost", "topmost", "bottommost", "largest", "smallest")},
    **{t: 8 for t in ("all_same_row", "all_same_column", "not_all_same_row", "not_all_same_column", "all_same_size",
                      "not_all_same_size")},
    "between": 14, "closer_than": 14, "farther_than": 14, "each_inside": 13, "each_contains": 13, "parity": 6,
}


def minimum_complexity(primary: str) -> int:
    """Smallest complexity a task of this primary type can have (its pattern alone)."""
    return MIN_COMPLEXITY[primary]


def generate_spec_task(seed: int, primary: str, complexity: int, task_id: str | None = None,
                       types: tuple[str, ...] | None = None) -> GeneratedTask:
    """One task from ``seed``: primary type ``primary`` (its pattern comes first) at exactly ``complexity``.
    ``types``: the types additions may use (default: the 46, plus the extension for an extension primary)."""
    if primary not in BUILDERS:
        raise KeyError(f"unknown VVR v2 type {primary!r}; known: {', '.join(BUILDERS)}")
    if complexity < minimum_complexity(primary):
        raise ValueError(f"{primary} needs complexity >= {minimum_complexity(primary)}, got {complexity}")
    extension = primary in EXTENSION_TYPES
    types = types or (TASK_TYPES + tuple(EXTENSION_TYPES) if extension else TASK_TYPES)
    rng = random.Random(seed)
    for _ in range(200):
        d = _attempt(rng, primary, complexity, extension, types)
        if d is not None:
            spec = parse_spec(d.spec().to_dict())
            criteria = sorted(set(spec.criteria()) | ({primary} if primary in IMAGE_TYPES or extension else set()))
            return GeneratedTask(task_id or f"vvr2-{primary}-{complexity}-{seed}", primary, spec, d.scene(),
                                 complexity, extension, criteria)
    raise RuntimeError(f"could not generate a {primary} task at complexity {complexity} (seed {seed})")
