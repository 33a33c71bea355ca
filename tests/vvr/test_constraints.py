"""Each of the 32 constraint types: a satisfying scene passes and a violating scene fails, symbolically and
after rendering + parsing."""
from __future__ import annotations

import pytest

from visalign.vvr.constraints import CONSTRAINT_NAMES, CONSTRAINT_TYPES, broken_clearly, check, holds_clearly
from visalign.vvr.geometry import WitnessView
from visalign.vvr.mutations import mutate
from visalign.vvr.render import layout, render_scene
from visalign.vvr.sampler import generate_task
from visalign.vvr.task import Scene
from visalign.vvr.verifier import verify


def test_there_are_32_types_with_docs():
    assert len(CONSTRAINT_NAMES) == 32 == len(set(CONSTRAINT_NAMES))
    for t in CONSTRAINT_TYPES.values():
        assert t.definition and t.tolerance


@pytest.mark.parametrize("ctype", CONSTRAINT_NAMES)
def test_satisfying_and_violating_scene(ctype):
    task = generate_task(4242, level=1, primary=ctype)
    assert [c.type for c in task.constraints] == [ctype]
    scene = layout(task, seed=1)
    assert holds_clearly(WitnessView(scene), task.constraints[0])
    good = verify(render_scene(scene, 128), task)
    assert good.all_satisfied, (task.prompt, good.to_dict())
    assert good.reward() == pytest.approx(1.0)

    bad_scene, kind = _violate(task, scene)
    assert not check(WitnessView(bad_scene), task.constraints[0]).passed
    bad = verify(render_scene(bad_scene, 128), task)
    assert not bad.all_satisfied, (ctype, kind, task.prompt, bad.to_dict())
    assert bad.reward() < 1.0


def _violate(task, scene):
    """One mutation that breaks the constraint, or (e.g. "there is a square" with two squares) several removals."""
    for seed in range(20):
        mutated = mutate(task, scene, seed)
        if mutated is not None:
            return mutated
    sc = scene.copy()
    while sc.objects:
        sc.objects.pop(0)
        sc.contacts = []
        if broken_clearly(WitnessView(sc), task.constraints[0]):
            return sc, "remove-several"
    raise AssertionError(f"cannot violate {task.prompt}")


def test_partial_credit_grows_with_the_margin():
    task = generate_task(7, level=1, primary="left_of")
    scene = layout(task, 0)
    a, b = scene.objects[0], scene.objects[1]
    near, far = scene.copy(), scene.copy()
    for sc, shift in ((near, 60), (far, 400)):
        sc.objects[0].x, sc.objects[1].x = 500 + shift / 2, 500 - shift / 2
        sc.objects[0].y, sc.objects[1].y = 250, 750
    c = task.constraints[0]
    assert check(WitnessView(near), c).credit > check(WitnessView(far), c).credit >= 0.0
    assert check(WitnessView(near), c).credit < 0.5


def test_empty_scene_fails_every_type():
    empty = WitnessView(Scene([]))
    for ctype in CONSTRAINT_NAMES:
        task = generate_task(11, level=2, primary=ctype)
        assert not check(empty, task.constraints[0]).passed, ctype
