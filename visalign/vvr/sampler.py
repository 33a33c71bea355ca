"""Seeded task sampler: build a witness scene for a chosen constraint type, add distractors and extra
constraints that hold in it, then write the prompt. Pure integer arithmetic on ``random.Random`` so the
same seed gives the same task (and the same JSON bytes) on every machine."""
from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass
from typing import Any, Callable

from .constraints import CONSTRAINT_NAMES, holds_clearly, references, unique
from .geometry import WitnessView, circumradius, in_bounds, inradius
from .prompts import write_prompt
from .task import Constraint, Contact, Obj, Scene, Task
from .vocab import COLORS, EASY_SHAPES, REGIONS, SHAPES, SIZE_RANGES

MIN_GAP = 60  # milli: minimum free space between objects that are not meant to touch
MAX_AREA = 0.40  # total object area / image area


@dataclass(frozen=True)
class Level:
    """Complexity knob: objects per scene, constraints per task, relation depth, vocabulary."""

    n_objects: tuple[int, int]
    n_constraints: int
    depth: int
    shapes: tuple[str, ...] = SHAPES
    sizes: tuple[str, ...] = ("small", "medium", "large")
    size_ranges: tuple[tuple[str, int, int], ...] = ()  # per-level overrides of SIZE_RANGES

    def size_range(self, cls: str) -> tuple[int, int]:
        for name, lo, hi in self.size_ranges:
            if name == cls:
                return lo, hi
        return SIZE_RANGES[cls]


LEVELS: dict[int, Level] = {
    # level 0: few, big objects, so that scenes stay verifiable when rendered at 32 px
    0: Level((1, 3), 1, 1, EASY_SHAPES, ("medium", "large"), (("medium", 195, 215), ("large", 240, 275))),
    1: Level((2, 4), 1, 1),
    2: Level((3, 5), 2, 1),
    3: Level((4, 6), 3, 2),
    4: Level((5, 7), 4, 2),
    5: Level((6, 8), 5, 3),
}

#: types that stay reliable when level-0 tasks are rendered at 32 px (three-object rows and nesting need more pixels)
LOW_RES_TYPES: tuple[str, ...] = tuple(t for t in CONSTRAINT_NAMES if t not in ("between", "aligned", "inside", "ordered"))

# types that need the shape or the size of every referenced object to be read reliably
_SHAPE_OR_SIZE = {"exists_shape", "exists_shape_color", "absent", "color_binding", "same_color", "different_color",
                  "size_abs", "larger", "smaller", "same_size", "ordered"}
RELATIONAL = {"same_color", "different_color", "larger", "smaller", "same_size", "left_of", "right_of", "above",
              "below", "between", "nearest", "inside", "overlap", "touching", "separated", "aligned", "symmetric"}


class _Ctx:
    def __init__(self, rng: random.Random, level: Level) -> None:
        self.rng = rng
        self.level = level

    def spawn(self, shape: str | None = None, color: str | None = None, size: str | None = None,
              s: int | None = None, shapes: tuple[str, ...] | None = None) -> Obj:
        rng = self.rng
        shape = shape or rng.choice(shapes or self.level.shapes)
        color = color or rng.choice(COLORS)
        if s is None:
            cls = size or rng.choice(self.level.sizes)
            if shape == "star" and cls == "small":
                cls = "medium"
            lo, hi = self.level.size_range(cls)
            s = rng.randint(lo, hi)
        rot = 0 if shape == "circle" else rng.randrange(0, 360, 15)
        return Obj(shape, color, 500, 500, s, rot)

    def place(self, scene: Scene, i: int, box: tuple[int, int, int, int] = (0, 0, 1000, 1000), tries: int = 60) -> bool:
        o = scene.objects[i]
        r = int(math.ceil(circumradius(o.shape, o.s))) + 20
        x0, y0, x1, y1 = max(box[0], r), max(box[1], r), min(box[2], 1000 - r), min(box[3], 1000 - r)
        if x0 > x1 or y0 > y1:
            return False
        for _ in range(tries):
            o.x, o.y = self.rng.randint(x0, x1), self.rng.randint(y0, y1)
            if separated(scene, i):
                return True
        return False


def separated(scene: Scene, i: int) -> bool:
    """Object ``i`` keeps MIN_GAP from every object it is not in deliberate contact with."""
    a = scene.objects[i]
    for j, b in enumerate(scene.objects):
        if j == i or scene.contact(i, j):
            continue
        d = math.sqrt((a.x - b.x) ** 2 + (a.y - b.y) ** 2)
        if d - circumradius(a.shape, a.s) - circumradius(b.shape, b.s) < MIN_GAP:
            return False
    return True


def valid_scene(scene: Scene) -> bool:
    """Every object in bounds and apart from the others; total area bounded."""
    if sum((o.s / 1000.0) ** 2 for o in scene.objects) > MAX_AREA:
        return False
    return all(in_bounds(o) and separated(scene, i) for i, o in enumerate(scene.objects))


def full_ref(o: Obj, colour_only: bool = False) -> dict[str, Any]:
    return {"color": o.color} if colour_only else {"color": o.color, "shape": o.shape}


def _other(rng: random.Random, options: tuple[str, ...], *avoid: str) -> str:
    return rng.choice([x for x in options if x not in avoid])


# ---------------------------------------------------------------- builders: witness + primary constraint

Built = tuple[Scene, Constraint]


def _b_exists(kind: str) -> Callable[[_Ctx], Built | None]:
    def build(ctx: _Ctx) -> Built | None:
        sc = Scene([ctx.spawn()])
        if not ctx.place(sc, 0):
            return None
        o = sc.objects[0]
        ref = {"shape": {"shape": o.shape}, "color": {"color": o.color}, "both": full_ref(o)}[kind]
        return sc, Constraint(f"exists_{'shape_color' if kind == 'both' else kind}", {"ref": ref})
    return build


def _desc(ctx: _Ctx, kind: str | None = None) -> tuple[str, dict[str, Any]]:
    kind = kind or ctx.rng.choice(["shape", "color", "both"])
    shape, color = ctx.rng.choice(ctx.level.shapes), ctx.rng.choice(COLORS)
    return kind, {"shape": {"shape": shape}, "color": {"color": color}, "both": {"shape": shape, "color": color}}[kind]


def _spawn_matching(ctx: _Ctx, ref: dict[str, Any], avoid: dict[str, Any] | None = None) -> Obj:
    for _ in range(50):
        o = ctx.spawn(shape=ref.get("shape"), color=ref.get("color"))
        if avoid is None or not (avoid.get("shape") in (None, o.shape) and avoid.get("color") in (None, o.color)):
            return o
    return o


def _place_all(ctx: _Ctx, sc: Scene) -> bool:
    return all(ctx.place(sc, i) for i in range(len(sc.objects)))


def _b_count_exact(ctx: _Ctx) -> Built | None:
    hi = min(4, max(2, ctx.level.n_objects[1]))
    n = ctx.rng.randint(2, hi)
    _, ref = _desc(ctx)
    sc = Scene([_spawn_matching(ctx, ref) for _ in range(n)])
    return (sc, Constraint("count_exact", {"ref": ref, "n": n})) if _place_all(ctx, sc) else None


def _two_descs(ctx: _Ctx) -> tuple[dict[str, Any], dict[str, Any]]:
    kind = ctx.rng.choice(["shape", "color"])
    pool = ctx.level.shapes if kind == "shape" else COLORS
    x, y = ctx.rng.sample(list(pool), 2)
    return {kind: x}, {kind: y}


def _b_compare(name: str) -> Callable[[_Ctx], Built | None]:
    def build(ctx: _Ctx) -> Built | None:
        a, b = _two_descs(ctx)
        big_total = ctx.level.n_objects[1] >= 4
        if name == "count_equal":
            na = nb = ctx.rng.randint(1, 2 if big_total else 1)
        else:
            lo = ctx.rng.randint(1, 2 if big_total else 1)
            hi = lo + ctx.rng.randint(1, 2 if big_total else 1)
            na, nb = (hi, lo) if name == "count_more" else (lo, hi)
        objs = [_spawn_matching(ctx, a) for _ in range(na)] + [_spawn_matching(ctx, b) for _ in range(nb)]
        sc = Scene(objs)
        return (sc, Constraint(name, {"a": a, "b": b})) if _place_all(ctx, sc) else None
    return build


def _b_count_total(ctx: _Ctx) -> Built | None:
    lo, hi = ctx.level.n_objects
    n = ctx.rng.randint(max(1, lo), hi)
    sc = Scene([ctx.spawn() for _ in range(n)])
    return (sc, Constraint("count_total", {"n": n})) if _place_all(ctx, sc) else None


def _b_absent(ctx: _Ctx) -> Built | None:
    shape = ctx.rng.choice(ctx.level.shapes)
    color = ctx.rng.choice(COLORS)
    objs = [ctx.spawn(shape=shape, color=_other(ctx.rng, COLORS, color)) for _ in range(ctx.rng.randint(1, 2))]
    if ctx.rng.random() < 0.6:
        objs.append(ctx.spawn(shape=_other(ctx.rng, ctx.level.shapes, shape), color=color))
    sc = Scene(objs)
    return (sc, Constraint("absent", {"shape": shape, "color": color})) if _place_all(ctx, sc) else None


def _b_parity(ctx: _Ctx) -> Built | None:
    parity = ctx.rng.choice(["odd", "even"])
    n = ctx.rng.choice([1, 3] if parity == "odd" else [2, 4])
    n = min(n, max(2, ctx.level.n_objects[1]))
    if (n % 2 == 1) != (parity == "odd"):
        n -= 1
    _, ref = _desc(ctx)
    sc = Scene([_spawn_matching(ctx, ref) for _ in range(max(n, 1))])
    return (sc, Constraint("parity", {"ref": ref, "parity": parity})) if _place_all(ctx, sc) else None


def _b_color_binding(ctx: _Ctx) -> Built | None:
    shape, color = ctx.rng.choice(ctx.level.shapes), ctx.rng.choice(COLORS)
    objs = [ctx.spawn(shape=shape, color=color) for _ in range(ctx.rng.randint(1, 2))]
    if ctx.rng.random() < 0.5:
        objs.append(ctx.spawn(shape=_other(ctx.rng, ctx.level.shapes, shape)))
    sc = Scene(objs)
    return (sc, Constraint("color_binding", {"shape": shape, "color": color})) if _place_all(ctx, sc) else None


def _b_pair_color(name: str) -> Callable[[_Ctx], Built | None]:
    def build(ctx: _Ctx) -> Built | None:
        sa, sb = ctx.rng.sample(list(ctx.level.shapes), 2)
        ca = ctx.rng.choice(COLORS)
        cb = ca if name == "same_color" else _other(ctx.rng, COLORS, ca)
        sc = Scene([ctx.spawn(shape=sa, color=ca), ctx.spawn(shape=sb, color=cb)])
        return (sc, Constraint(name, {"a": {"shape": sa}, "b": {"shape": sb}})) if _place_all(ctx, sc) else None
    return build


def _b_all_distinct(ctx: _Ctx) -> Built | None:
    lo, hi = ctx.level.n_objects
    n = ctx.rng.randint(max(2, lo), max(2, min(6, hi)))
    cols = ctx.rng.sample(list(COLORS), n)
    sc = Scene([ctx.spawn(color=c) for c in cols])
    return (sc, Constraint("all_distinct_colors", {"n": n})) if _place_all(ctx, sc) else None


def _pair(ctx: _Ctx, **kw_a: Any) -> Scene:
    a = ctx.spawn(**kw_a)
    for _ in range(20):
        b = ctx.spawn()
        if (b.shape, b.color) != (a.shape, a.color):
            break
    return Scene([a, b])


def _b_size_abs(ctx: _Ctx) -> Built | None:
    size = ctx.rng.choice([s for s in ("small", "large") if s in ctx.level.sizes])
    sc = Scene([ctx.spawn(size=size)])
    return (sc, Constraint("size_abs", {"a": full_ref(sc.objects[0]), "size": size})) if _place_all(ctx, sc) else None


def _b_size_rel(name: str) -> Callable[[_Ctx], Built | None]:
    def build(ctx: _Ctx) -> Built | None:
        rng = ctx.rng
        shapes = tuple(s for s in ctx.level.shapes if s != "star")
        lo_s = ctx.level.size_range(ctx.level.sizes[0])[0]
        small = rng.randint(lo_s, lo_s + 30)
        if name == "same_size":
            s_a = s_b = rng.randint(lo_s, 230)
        else:
            big = min(280, small * rng.randint(145, 190) // 100)
            if big * 100 < small * 140:
                return None
            s_a, s_b = (big, small) if name == "larger" else (small, big)
        sc = _pair(ctx, shapes=shapes)
        sc.objects[0].s, sc.objects[1].s = s_a, s_b
        if not _place_all(ctx, sc):
            return None
        return sc, Constraint(name, {"a": full_ref(sc.objects[0]), "b": full_ref(sc.objects[1])})
    return build


def _b_direction(name: str) -> Callable[[_Ctx], Built | None]:
    def build(ctx: _Ctx) -> Built | None:
        sc = _pair(ctx)
        if not _place_all(ctx, sc):
            return None
        return sc, Constraint(name, {"a": full_ref(sc.objects[0]), "b": full_ref(sc.objects[1])})
    return build


def _b_region(ctx: _Ctx) -> Built | None:
    region = ctx.rng.choice(REGIONS)
    box = {"top-left": (0, 0, 420, 420), "top-right": (580, 0, 1000, 420), "bottom-left": (0, 580, 420, 1000),
           "bottom-right": (580, 580, 1000, 1000), "centre": (420, 420, 580, 580)}[region]
    sc = Scene([ctx.spawn(size="medium" if region != "centre" else None)])
    if not ctx.place(sc, 0, box):
        return None
    return sc, Constraint("region", {"a": full_ref(sc.objects[0]), "region": region})


def _distinct_objs(ctx: _Ctx, n: int, **kw: Any) -> list[Obj]:
    objs: list[Obj] = []
    while len(objs) < n:
        o = ctx.spawn(**kw)
        if all((o.shape, o.color) != (p.shape, p.color) for p in objs):
            objs.append(o)
    return objs


def _row_size(ctx: _Ctx) -> dict[str, Any]:
    """Sizes for three objects that must fit in one line."""
    if "small" in ctx.level.sizes:
        return {"size": ctx.rng.choice(["small", "medium"])}
    return {"s": ctx.rng.randint(150, 160)}


def _b_between(ctx: _Ctx) -> Built | None:
    rng = ctx.rng
    a, b, c = _distinct_objs(ctx, 3, **_row_size(ctx))
    sc = Scene([a, b, c])
    if not ctx.place(sc, 0):
        return None
    for _ in range(40):
        c.x, c.y = rng.randint(100, 900), rng.randint(100, 900)
        if (c.x - a.x) ** 2 + (c.y - a.y) ** 2 >= 500 ** 2:
            break
    else:
        return None
    t = rng.randint(40, 60)
    b.x = a.x + (c.x - a.x) * t // 100 + rng.randint(-20, 20)
    b.y = a.y + (c.y - a.y) * t // 100 + rng.randint(-20, 20)
    return sc, Constraint("between", {"a": full_ref(a), "b": full_ref(b), "c": full_ref(c)})


def _b_nearest(ctx: _Ctx) -> Built | None:
    a, b, c = _distinct_objs(ctx, 3)
    sc = Scene([a, b, c])
    if not _place_all(ctx, sc):
        return None
    return sc, Constraint("nearest", {"a": full_ref(a), "b": full_ref(b)})


def _b_inside(ctx: _Ctx) -> Built | None:
    rng = ctx.rng
    outer = ctx.spawn(shapes=("circle", "square"), s=rng.randint(260, 300))
    inner_s = rng.randint(110, 125) if "small" in ctx.level.sizes else rng.randint(150, 160)
    inner = ctx.spawn(shapes=("circle", "square"), color=_other(rng, COLORS, outer.color), s=inner_s)
    sc = Scene([inner, outer], [Contact("inside", 0, 1)])
    if not ctx.place(sc, 1):
        return None
    inner.x, inner.y = outer.x + rng.randint(-10, 10), outer.y + rng.randint(-10, 10)
    if math.sqrt((inner.x - outer.x) ** 2 + (inner.y - outer.y) ** 2) + circumradius(inner.shape, inner.s) > 0.75 * inradius(outer.shape, outer.s):
        return None
    return sc, Constraint("inside", {"a": full_ref(inner), "b": full_ref(outer)})


def _b_contact(kind: str) -> Callable[[_Ctx], Built | None]:
    def build(ctx: _Ctx) -> Built | None:
        rng = ctx.rng
        back = ctx.spawn(size="large" if kind == "overlap" else None, shapes=("circle", "square", "triangle"))
        front = ctx.spawn(color=_other(rng, COLORS, back.color), shapes=("circle", "square", "triangle"),
                          s=rng.randint(100, 130) if kind == "overlap" else None)
        sc = Scene([front, back], [Contact(kind, 0, 1)])
        if not ctx.place(sc, 1):
            return None
        ang = rng.randrange(0, 360, 5)
        ca, sa = _COS[ang], _SIN[ang]  # table lookup: no libm calls in the sampler
        if kind == "overlap":
            d = (circumradius(back.shape, back.s) + inradius(back.shape, back.s)) / 2
        else:
            d = circumradius(back.shape, back.s) + circumradius(front.shape, front.s)
        front.x, front.y = back.x + int(d * ca), back.y + int(d * sa)
        colour_only = kind == "overlap"
        name = "touching" if kind == "touch" else kind
        return sc, Constraint(name, {"a": full_ref(front, colour_only), "b": full_ref(back, colour_only)})
    return build


# cos/sin in thousandths for multiples of 5 degrees, written out so generation never depends on libm
_COS = {d: int(round(1000 * math.cos(math.radians(d)))) / 1000 for d in range(0, 360, 5)}
_SIN = {d: int(round(1000 * math.sin(math.radians(d)))) / 1000 for d in range(0, 360, 5)}


def _b_separated(ctx: _Ctx) -> Built | None:
    sc = _pair(ctx)
    if not _place_all(ctx, sc):
        return None
    return sc, Constraint("separated", {"a": full_ref(sc.objects[0]), "b": full_ref(sc.objects[1])})


def _b_aligned(ctx: _Ctx) -> Built | None:
    rng = ctx.rng
    axis = rng.choice(["row", "column"])
    objs = _distinct_objs(ctx, 3, **_row_size(ctx))
    line = rng.randint(200, 800)
    along = [220 + rng.randint(-30, 30), 500 + rng.randint(-30, 30), 780 + rng.randint(-30, 30)]
    for o, p in zip(objs, along):
        o.x, o.y = (p, line) if axis == "row" else (line, p)
    return Scene(objs), Constraint("aligned", {"objs": [full_ref(o) for o in objs], "axis": axis})


def _b_ordered(ctx: _Ctx) -> Built | None:
    rng = ctx.rng
    key = rng.choice(["color", "size"])
    n = 3
    shape = rng.choice([s for s in ctx.level.shapes if s != "star"])
    if key == "color":
        cols = rng.sample(list(COLORS), n)
        objs = [ctx.spawn(shape=shape, color=c, size=rng.choice(ctx.level.sizes[:2])) for c in cols]
    else:
        s0 = rng.randint(110, 115) if "small" in ctx.level.sizes else rng.randint(150, 160)
        sizes = [s0, s0 * 135 // 100, s0 * 135 * 135 // 10000]
        objs = [ctx.spawn(shape=shape, s=s) for s in sizes]
    xs = sorted(rng.sample(range(150, 860, 10), n))
    for o, x in zip(objs, xs):
        o.x, o.y = x, rng.randint(200, 800)
    args: dict[str, Any] = {"ref": {"shape": shape}, "key": key}
    if key == "color":
        args["colors"] = [o.color for o in objs]
    else:
        args["n"] = n
    return Scene(objs), Constraint("ordered", args)


def _b_symmetric(ctx: _Ctx) -> Built | None:
    a, b = _distinct_objs(ctx, 2)
    sc = Scene([a, b])
    if not ctx.place(sc, 0, (0, 0, 400, 1000)):
        return None
    b.x, b.y = 1000 - a.x, a.y
    return sc, Constraint("symmetric", {"a": full_ref(a), "b": full_ref(b)})


BUILDERS: dict[str, Callable[[_Ctx], Built | None]] = {
    "exists_shape": _b_exists("shape"), "exists_color": _b_exists("color"), "exists_shape_color": _b_exists("both"),
    "count_exact": _b_count_exact, "count_more": _b_compare("count_more"), "count_fewer": _b_compare("count_fewer"),
    "count_equal": _b_compare("count_equal"), "count_total": _b_count_total, "absent": _b_absent, "parity": _b_parity,
    "color_binding": _b_color_binding, "same_color": _b_pair_color("same_color"),
    "different_color": _b_pair_color("different_color"), "all_distinct_colors": _b_all_distinct,
    "size_abs": _b_size_abs, "larger": _b_size_rel("larger"), "smaller": _b_size_rel("smaller"),
    "same_size": _b_size_rel("same_size"), "left_of": _b_direction("left_of"), "right_of": _b_direction("right_of"),
    "above": _b_direction("above"), "below": _b_direction("below"), "region": _b_region, "between": _b_between,
    "nearest": _b_nearest, "inside": _b_inside, "overlap": _b_contact("overlap"), "touching": _b_contact("touch"),
    "separated": _b_separated, "aligned": _b_aligned, "ordered": _b_ordered, "symmetric": _b_symmetric,
}
assert set(BUILDERS) == set(CONSTRAINT_NAMES)


# ---------------------------------------------------------------- extra constraints that hold in a scene

def _obj_refs(scene: Scene, colour_only: bool) -> list[tuple[int, dict[str, Any]]]:
    view = WitnessView(scene)
    out = []
    for i, o in enumerate(scene.objects):
        ref = full_ref(o, colour_only)
        if unique(view, ref) == i:
            out.append((i, ref))
    return out


def _descs(scene: Scene, colour_only: bool) -> list[dict[str, Any]]:
    shapes = sorted({o.shape for o in scene.objects})
    colors = sorted({o.color for o in scene.objects})
    out: list[dict[str, Any]] = [{"color": c} for c in colors]
    if not colour_only:
        out += [{"shape": s} for s in shapes] + [{"shape": s, "color": c} for s in shapes for c in colors]
    return out


def candidates(t: str, scene: Scene, colour_only: bool) -> list[Constraint]:
    """Constraints of type ``t`` phrased about ``scene`` (true or not; the caller filters)."""
    refs = _obj_refs(scene, colour_only)
    descs = _descs(scene, colour_only)
    view = WitnessView(scene)
    n = len(scene.objects)
    C = Constraint
    if t in ("exists_shape", "exists_color", "exists_shape_color"):
        key = {"exists_shape": ("shape",), "exists_color": ("color",), "exists_shape_color": ("color", "shape")}[t]
        return [C(t, {"ref": d}) for d in descs if tuple(sorted(d)) == key]
    if t == "count_exact":
        from .constraints import count
        return [C(t, {"ref": d, "n": count(view, d)}) for d in descs if count(view, d) >= 2]
    if t in ("count_more", "count_fewer", "count_equal"):
        same_kind = [(a, b) for a, b in itertools.permutations(descs, 2) if sorted(a) == sorted(b) and len(a) == 1]
        return [C(t, {"a": a, "b": b}) for a, b in same_kind]
    if t == "count_total":
        return [C(t, {"n": n})]
    if t == "absent":
        return [C(t, {"shape": s, "color": c}) for s in sorted({o.shape for o in scene.objects}) for c in COLORS]
    if t == "parity":
        from .constraints import count
        return [C(t, {"ref": d, "parity": "odd" if count(view, d) % 2 else "even"}) for d in descs]
    if t == "color_binding":
        return [C(t, {"shape": o.shape, "color": o.color}) for o in scene.objects]
    if t in ("same_color", "different_color"):
        shape_refs = [(i, {"shape": o.shape}) for i, o in enumerate(scene.objects) if unique(view, {"shape": o.shape}) == i]
        return [C(t, {"a": a, "b": b}) for (_, a), (_, b) in itertools.permutations(shape_refs, 2)]
    if t == "all_distinct_colors":
        return [C(t, {"n": n})] if n >= 2 else []
    if t == "size_abs":
        return [C(t, {"a": r, "size": sz}) for _, r in refs for sz in ("small", "large")]
    if t in ("larger", "smaller", "same_size", "left_of", "right_of", "above", "below", "nearest", "separated"):
        return [C(t, {"a": a, "b": b}) for (_, a), (_, b) in itertools.permutations(refs, 2)]
    if t in ("touching", "overlap", "inside"):
        kind = {"touching": "touch"}.get(t, t)
        idx = dict(refs)
        return [C(t, {"a": idx[c.a], "b": idx[c.b]}) for c in scene.contacts if c.kind == kind and c.a in idx and c.b in idx]
    if t == "region":
        return [C(t, {"a": r, "region": g}) for _, r in refs for g in REGIONS]
    if t == "between":
        return [C(t, {"a": a, "b": b, "c": c}) for (_, a), (_, b), (_, c) in itertools.permutations(refs, 3)]
    if t == "aligned":
        return [C(t, {"objs": [a, b, c], "axis": ax}) for (_, a), (_, b), (_, c) in itertools.combinations(refs, 3)
                for ax in ("row", "column")]
    if t == "ordered":
        out = []
        for s in sorted({o.shape for o in scene.objects}):
            group = sorted((o for o in scene.objects if o.shape == s), key=lambda o: o.x)
            if len(group) >= 2:
                out.append(C(t, {"ref": {"shape": s}, "key": "color", "colors": [o.color for o in group]}))
            if len(group) >= 3:
                out.append(C(t, {"ref": {"shape": s}, "key": "size", "n": len(group)}))
        return out
    if t == "symmetric":
        return [C(t, {"a": a, "b": b}) for (_, a), (_, b) in itertools.permutations(refs, 2)]
    raise KeyError(t)


def _obj_ids(scene: Scene, c: Constraint) -> set[int]:
    view = WitnessView(scene)
    return {i for i in (unique(view, r) for r in references(c)) if i is not None}


def relation_depth(scene: Scene, constraints: list[Constraint]) -> int:
    """Size of the largest group of relational constraints linked through shared objects."""
    rel = [_obj_ids(scene, c) for c in constraints if c.type in RELATIONAL]
    best, seen = 0, set()
    for k in range(len(rel)):
        if k in seen:
            continue
        group, frontier = {k}, [k]
        while frontier:
            cur = frontier.pop()
            for m in range(len(rel)):
                if m not in group and rel[m] & rel[cur]:
                    group.add(m)
                    frontier.append(m)
        seen |= group
        best = max(best, len(group))
    return best


# ---------------------------------------------------------------- the sampler

def _attempt(rng: random.Random, level: Level, primary: str, task_id: str, level_id: int) -> Task | None:
    ctx = _Ctx(rng, level)
    built = BUILDERS[primary](ctx)
    if built is None:
        return None
    scene, first = built
    if not valid_scene(scene) or not holds_clearly(WitnessView(scene), first):
        return None
    constraints = [first]
    colour_only = any(c.kind == "overlap" for c in scene.contacts)
    target = rng.randint(*level.n_objects)
    fixed_total = primary in ("count_total", "all_distinct_colors")
    while not fixed_total and len(scene.objects) < target:
        for _ in range(15):
            trial = scene.copy()
            trial.objects.append(ctx.spawn())
            if ctx.place(trial, len(trial.objects) - 1, tries=20) and valid_scene(trial) \
                    and holds_clearly(WitnessView(trial), first):
                scene = trial
                break
        else:
            break
    view = WitnessView(scene)
    types = [t for t in CONSTRAINT_NAMES if not (colour_only and t in _SHAPE_OR_SIZE)]
    while len(constraints) < level.n_constraints:
        want_link = relation_depth(scene, constraints) < level.depth
        rng.shuffle(types)
        added = False
        for t in types:
            cands = [c for c in candidates(t, scene, colour_only)
                     if c.to_dict() not in [k.to_dict() for k in constraints] and holds_clearly(view, c)]
            if want_link and t in RELATIONAL:
                used = set().union(*(_obj_ids(scene, k) for k in constraints if k.type in RELATIONAL)) if constraints else set()
                linked = [c for c in cands if _obj_ids(scene, c) & used]
                cands = linked or cands
            if cands:
                constraints.append(rng.choice(cands))
                added = True
                break
        if not added:
            return None
    constraints = [_vary_refs(rng, scene, c, colour_only) for c in constraints]
    if not all(holds_clearly(view, c) for c in constraints):
        return None
    return Task(task_id, write_prompt(constraints, rng), constraints, scene, level=level_id, primary=primary,
                depth=relation_depth(scene, constraints))


def _vary_refs(rng: random.Random, scene: Scene, c: Constraint, colour_only: bool) -> Constraint:
    """Rephrase full references ("the red circle") as "the circle" / "the red object" where that is still unique."""
    if colour_only or c.type in ("same_color", "different_color") or rng.random() < 0.6:
        return c
    view = WitnessView(scene)
    args = dict(c.args)

    def vary(ref: dict[str, Any]) -> dict[str, Any]:
        i = unique(view, ref)
        if i is None or rng.random() < 0.5:
            return ref
        o = scene.objects[i]
        options = [r for r in ({"shape": o.shape}, {"color": o.color}) if unique(view, r) == i]
        return rng.choice(options) if options else ref

    for k in ("a", "b", "c"):
        if isinstance(args.get(k), dict) and c.type not in ("count_more", "count_fewer", "count_equal"):
            args[k] = vary(args[k])
    if c.type == "aligned":
        args["objs"] = [vary(r) for r in args["objs"]]
    return Constraint(c.type, args)


def generate_task(seed: int, level: int = 1, primary: str | None = None, task_id: str | None = None) -> Task:
    """One task from ``seed`` at complexity ``level`` (0-5); ``primary`` picks the first constraint's type."""
    if level not in LEVELS:
        raise ValueError(f"VVR level must be one of {sorted(LEVELS)}, got {level}")
    rng = random.Random(seed)
    if primary is None:
        primary = rng.choice(CONSTRAINT_NAMES)
    if primary not in BUILDERS:
        raise KeyError(f"unknown VVR constraint type {primary!r}")
    task_id = task_id or f"vvr-L{level}-{seed}"
    for _ in range(400):
        task = _attempt(rng, LEVELS[level], primary, task_id, level)
        if task is not None:
            return task
    raise RuntimeError(f"could not sample a VVR task of type {primary!r} at level {level} (seed {seed})")
