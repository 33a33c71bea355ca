"""The ``vvr`` reward and the VVR prompt sources."""
from __future__ import annotations

import pytest
import torch

from visalign.core import get_reward, score
from visalign.vvr.render import render_task, to_tensor
from visalign.vvr.source import VVRFilePromptSource, VVRPromptSource


def test_reward_batched_soft_and_strict():
    src = VVRPromptSource(level=1)
    batch = src.sample(6, torch.Generator().manual_seed(0))
    tasks = [m["task"] for m in batch.metadata]
    good = to_tensor([render_task(t, 64) for t in tasks])
    blank = torch.ones_like(good)
    reward = get_reward("vvr")
    assert reward.name == "vvr" and not reward.differentiable
    r_good = score(reward, good, batch.prompts, batch.metadata)
    assert len(reward.last_details) == 6 and reward.last_details[0]["all_satisfied"]
    r_blank = score(reward, blank, batch.prompts, batch.metadata)
    assert r_good.shape == (6,) and torch.all(r_good == 1.0)
    assert torch.all(r_blank == 0.0)
    strict = get_reward("vvr", strict=True)
    assert torch.equal(strict(good, batch.prompts, batch.metadata), torch.ones(6))


def test_partial_credit_between_zero_and_one():
    src = VVRPromptSource(level=3)
    batch = src.sample(8, torch.Generator().manual_seed(1))
    # render each task's image for the *next* task: mostly wrong scenes, still valid images
    imgs = to_tensor([render_task(batch.metadata[(i + 1) % 8]["task"], 64) for i in range(8)])
    r = get_reward("vvr")(imgs, batch.prompts, batch.metadata)
    assert torch.all((r >= 0) & (r <= 1)) and r.max() > 0 and r.min() < 1


def test_reward_errors_name_the_problem():
    reward = get_reward("vvr")
    imgs = torch.zeros(2, 3, 32, 32)
    with pytest.raises(ValueError, match=r"metadata\[1\].*t-9"):
        reward(imgs, ["", ""], [VVRPromptSource(0).eval_batch(1).metadata[0], {"task_id": "t-9"}])
    with pytest.raises(ValueError, match=r"shape \(2, 32, 32\) follow no layout"):
        reward(torch.zeros(2, 32, 32), ["", ""], [{}, {}])


def test_prompt_source_seeded_and_held_out():
    src = VVRPromptSource(level=0)
    a = src.sample(4, torch.Generator().manual_seed(3))
    b = src.sample(4, torch.Generator().manual_seed(3))
    assert a.prompts == b.prompts and a.metadata == b.metadata
    ev = src.eval_batch(4)
    assert ev.prompts == src.eval_batch(4).prompts
    assert not {m["task_id"] for m in ev.metadata} & {m["task_id"] for m in a.metadata}
    assert all(m["task"]["level"] == 0 for m in a.metadata)
    with pytest.raises(ValueError, match="level"):
        VVRPromptSource(level=7)
    with pytest.raises(ValueError, match="bogus"):
        VVRPromptSource(types=["bogus"])


def test_file_prompt_source(tmp_path):
    from visalign.vvr.benchmark import generate_split, jsonl_bytes

    p = tmp_path / "t.jsonl"
    p.write_bytes(jsonl_bytes(generate_split("challenge", 5)))
    src = VVRFilePromptSource(p)
    ev = src.eval_batch(7)
    assert [m["task_id"] for m in ev.metadata][:5] == [f"vvrchallenge-{i:05d}" for i in range(5)]
    assert len(src.sample(3, torch.Generator().manual_seed(0))) == 3
