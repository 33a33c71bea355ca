"""Task sampler: determinism, complexity knob, prompts, JSON round trip."""
from __future__ import annotations

import json
import random

import pytest

from visalign.vvr.constraints import CONSTRAINT_NAMES, holds_clearly
from visalign.vvr.geometry import WitnessView
from visalign.vvr.prompts import sentence
from visalign.vvr.sampler import LEVELS, generate_task
from visalign.vvr.task import Task


def test_same_seed_same_bytes():
    a = generate_task(123, 3).to_json()
    b = generate_task(123, 3).to_json()
    assert a == b
    assert generate_task(124, 3).to_json() != a
    assert '"version":"vvr-1"' in a and "." not in json.dumps(json.loads(a)["objects"])  # integers only


def test_json_round_trip():
    t = generate_task(5, 4)
    assert Task.from_json(t.to_json()).to_json() == t.to_json()


@pytest.mark.parametrize("level", sorted(LEVELS))
def test_complexity_knob(level):
    lv = LEVELS[level]
    tasks = [generate_task(1000 + i, level, CONSTRAINT_NAMES[i % 32]) for i in range(64)]
    for t in tasks:
        assert len(t.constraints) == lv.n_constraints
        view = WitnessView(t.scene)
        assert all(holds_clearly(view, c) for c in t.constraints), t.prompt
        assert all(o.shape in lv.shapes for o in t.scene.objects) or level > 0
    sizes = [len(t.scene.objects) for t in tasks]
    # distractors stop at the level's maximum; a count constraint may itself need up to six objects
    assert max(sizes) <= max(lv.n_objects[1], 6)
    assert sum(sizes) / len(sizes) >= lv.n_objects[0]
    if level >= 3:
        assert max(t.depth for t in tasks) >= 2


def test_level0_is_small_and_easy():
    for i in range(64):
        t = generate_task(i, 0, CONSTRAINT_NAMES[i % 32])
        assert len(t.scene.objects) <= 3 and len(t.constraints) == 1
        assert all(o.s >= 150 for o in t.scene.objects if t.primary != "overlap")


def test_prompt_states_each_constraint_once():
    t = generate_task(99, 5)
    for c in t.constraints:
        # every constraint sentence (any paraphrase) shares its key nouns with the prompt
        s = sentence(c, random.Random(0))
        assert s.split()[0].lower() in t.prompt.lower()
    assert t.prompt.count(".") == len(t.constraints)


def test_bad_level_and_type():
    with pytest.raises(ValueError, match="level"):
        generate_task(1, 9)
    with pytest.raises(KeyError, match="nope"):
        generate_task(1, 1, "nope")


def test_prompt_source_skips_seeds_whose_layout_cannot_be_sampled():
    from visalign.vvr.sampler import generate_task
    from visalign.vvr.source import VVRPromptSource

    with pytest.raises(RuntimeError):
        generate_task(597254723, 0, "nearest")
    source = VVRPromptSource(level=0, types=["nearest"])
    task = source._task(597254723, "vvr-train")
    assert task.constraints[0].type == "nearest" and task.id != "vvr-train-L0-597254723"
