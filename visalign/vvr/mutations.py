"""Mutations of a satisfying layout (move, recolour, remove, add) that clearly break at least one constraint."""
from __future__ import annotations

import math
import random

from .constraints import broken_clearly, references, unique
from .geometry import WitnessView, circumradius
from .sampler import LEVELS, _Ctx, valid_scene
from .task import Contact, Scene, Task
from .vocab import COLORS

MUTATIONS = ("move", "recolour", "remove", "add")


def _referenced(scene: Scene, task: Task) -> list[int]:
    view = WitnessView(scene)
    idx = {unique(view, r) for c in task.constraints for r in references(c)} - {None}
    return sorted(idx) or list(range(len(scene.objects)))  # type: ignore[arg-type]


def _drop_contacts(scene: Scene, i: int) -> None:
    scene.contacts = [c for c in scene.contacts if i not in (c.a, c.b)]


def mutate(task: Task, scene: Scene, seed: int, kind: str | None = None, tries: int = 60) -> tuple[Scene, str] | None:
    """A copy of ``scene`` changed by one mutation so that some constraint of ``task`` clearly fails, or ``None``."""
    rng = random.Random(seed)
    ctx = _Ctx(rng, LEVELS[1])
    targets = _referenced(scene, task)
    for _ in range(tries):
        k = kind or rng.choice(MUTATIONS)
        sc = scene.copy()
        i = rng.choice(targets) if rng.random() < 0.8 or not sc.objects else rng.randrange(len(sc.objects))
        if k == "move":
            _drop_contacts(sc, i)
            if not ctx.place(sc, i):
                continue
        elif k == "recolour":
            o = sc.objects[i]
            o.color = rng.choice([c for c in COLORS if c != o.color])
            if any(sc.objects[j].color == o.color for c in sc.contacts for j in (c.a, c.b) if i in (c.a, c.b) and j != i):
                continue
        elif k == "remove":
            if len(sc.objects) < 1:
                continue
            _drop_contacts(sc, i)
            del sc.objects[i]
            sc.contacts = [Contact(c.kind, c.a - (c.a > i), c.b - (c.b > i)) for c in sc.contacts]
        else:
            sc.objects.append(ctx.spawn(shapes=("circle", "square", "triangle", "star")))
            if not ctx.place(sc, len(sc.objects) - 1):
                continue
        if sc.objects and not valid_scene(sc):
            continue
        view = WitnessView(sc)
        if any(broken_clearly(view, c) for c in task.constraints):
            return sc, k
    return None
