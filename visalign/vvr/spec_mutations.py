"""One-edit mutations of a v2 witness scene that clearly break its spec: move, recolour, reshape, resize or remove
an object, or add an unrequested one. :func:`violations` reads the mutated scene with the predicates (default
tolerances) and lists every check that fails by at least its safety margin, so a test can ask for mutations that
break exactly one constraint and check the verifier rejects their renders."""
from __future__ import annotations

import random

from .colour_model import COLOUR_NAMES
from .predicates import evaluate
from .spec import ANY, SHAPE_NAMES, VisualSpec
from .spec_geometry import WitnessView
from .spec_sampler import LAYOUT_MARGIN, SIZES, TRUTH_MARGIN, Draft
from .task import Contact, Obj, Scene
from .tolerances import Tolerances

MUTATIONS = ("move", "recolour", "reshape", "resize", "remove", "add")
_INTEGER = ("same_count", "more_than_count", "fewer_than_count", "times_as_many", "parity", "same_color",
            "different_color")
_CLEAR_GROUP = {"exact_count": -1.0, "color_attribute": -1.0, "shape_attribute": -1.0, "color_shape_binding": -1.0}


def violations(scene: Scene, spec: VisualSpec) -> list[str]:
    """Checks of ``spec`` that ``scene`` clearly fails: ``<group>:<criterion>``, ``<relation type>``, ``extras``,
    ``forbidden``."""
    view = WitnessView(scene)
    a, groups, rels = evaluate(view, spec, Tolerances("default", 256))
    out = []
    for gid, checks in groups.items():
        for name, o in checks.items():
            if o.margin <= _CLEAR_GROUP.get(name, -LAYOUT_MARGIN):
                out.append(f"{gid}:{name}")
    for r, o in zip(spec.relations, rels):
        clear = 1.0 if r.type in _INTEGER else max(TRUTH_MARGIN[r.type], 0.02)
        if o.margin <= -clear:
            out.append(r.type)
    if a.extras:
        out.append("extras")
    if any(o.color in spec.forbidden for o in view.objects):
        out.append("forbidden")
    return out


def broken_types(names: list[str]) -> list[str]:
    """Constraint types of violation names (``red_circle:exact_count`` -> ``exact_count``)."""
    return [n.split(":")[-1] for n in names]


def _draft(scene: Scene, rng: random.Random) -> Draft:
    d = Draft(rng, "white")
    d.objects = [Obj(**vars(o)) for o in scene.objects]
    d.contacts = [Contact(c.kind, c.a, c.b) for c in scene.contacts]
    return d


def _drop(d: Draft, i: int) -> None:
    d.contacts = [Contact(c.kind, c.a - (c.a > i), c.b - (c.b > i)) for c in d.contacts if i not in (c.a, c.b)]
    del d.objects[i]


def mutate_spec(scene: Scene, spec: VisualSpec, seed: int, kind: str | None = None, exactly_one: bool = True,
                focus: list[int] | None = None, want: str | None = None,
                tries: int = 80) -> tuple[Scene, str, list[str]] | None:
    """A one-edit mutation of ``scene`` that clearly breaks ``spec`` (exactly one check when ``exactly_one``; the
    check ``want`` when given), editing one of the objects ``focus`` (default: any); with its kind and the broken
    checks; ``None`` if none was found."""
    rng = random.Random(seed)
    for _ in range(tries):
        k = kind or rng.choice(MUTATIONS)
        d = _draft(scene, rng)
        if not d.objects:
            return None
        i = rng.choice(focus) if focus else rng.randrange(len(d.objects))
        o = d.objects[i]
        if k == "move":
            d.contacts = [c for c in d.contacts if i not in (c.a, c.b)]
            if any(c.b == i for c in scene.contacts) or not d.place(i):
                continue
        elif k == "recolour":
            o.color = rng.choice([c for c in COLOUR_NAMES if c != o.color])
            partners = [d.objects[c.a if c.b == i else c.b].color for c in d.contacts if i in (c.a, c.b)]
            if o.color in partners:
                continue
        elif k == "reshape":
            o.shape = rng.choice([s for s in SHAPE_NAMES if s != o.shape])
            if d.contacts and any(i in (c.a, c.b) for c in d.contacts):
                continue
        elif k == "resize":
            if any(i in (c.a, c.b) for c in d.contacts):
                continue
            o.s = rng.choice([rng.randint(*SIZES["small"]), rng.randint(*SIZES["large"])])
            if not d._clear(i, o.x, o.y):
                continue
        elif k == "remove":
            if any(c.b == i for c in d.contacts):
                continue
            _drop(d, i)
            if not d.objects:
                continue
        else:  # add an object of a colour and shape the spec does not list
            listed = {(g.color, g.shape) for g in spec.groups}
            keys = [(c, s) for c in COLOUR_NAMES for s in SHAPE_NAMES if (c, s) not in listed
                    and (c, ANY) not in listed and (ANY, s) not in listed]
            if not keys:
                continue
            c, s = rng.choice(keys)
            if d.add_objects(c, s, 1, size="small") is None:
                continue
        sc = Scene(d.objects, d.contacts)
        broken = violations(sc, spec)
        if broken and (len(broken) == 1 or not exactly_one) and (want is None or want in broken_types(broken)):
            return sc, k, broken
    return None
