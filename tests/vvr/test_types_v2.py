"""Every v2 type (the paper's 46 and visalign's extension): a generated task's witness passes after rendering and
parsing, and a one-edit mutation that breaks that type is rejected."""
from __future__ import annotations

import pytest

from visalign.vvr.spec import EXTENSION_TYPES, IMAGE_TYPES
from visalign.vvr.spec_mutations import broken_types, mutate_spec
from visalign.vvr.spec_render import render_spec_task
from visalign.vvr.spec_sampler import minimum_complexity
from visalign.vvr.spec_task import make_task
from visalign.vvr.spec_verifier import verify_spec

TYPES = list(IMAGE_TYPES) + list(EXTENSION_TYPES)


@pytest.mark.parametrize("ctype", TYPES)
def test_satisfying_and_violating_scene(ctype):
    task = make_task(4242, ctype, minimum_complexity(ctype), f"t-{ctype}")
    assert ctype in task.active_criteria
    good = verify_spec(render_spec_task(task, 128), task.spec)
    assert good.strict and good.reward == pytest.approx(1.0), (task.prompt, good.to_dict())
    mutated = None
    for seed in range(8):
        mutated = mutate_spec(task.witness, task.spec, seed, want=ctype, exactly_one=False)
        if mutated:
            break
    assert mutated is not None, f"no mutation breaks {ctype} in: {task.prompt}"
    scene, kind, broken = mutated
    assert ctype in broken_types(broken)
    bad = verify_spec(render_spec_task(task, 128, scene=scene), task.spec)
    assert not bad.strict, (ctype, kind, broken, task.prompt)
    assert not bad.criteria().get(ctype, True) or bad.extras or not bad.background_ok, (ctype, kind, bad.to_dict())
    assert bad.reward < 1.0
