"""The ``vvr`` reward on v2 tasks (the paper's RL reward shape), the ``vvr2`` prompt source, and VVR for video:
the 11 temporal predicates, the video renderer and the ``vvr_video`` reward."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from visalign.core import get_reward
from visalign.vvr.floors import floor_image
from visalign.vvr.render import to_tensor
from visalign.vvr.source import VVR2PromptSource
from visalign.vvr.spec_render import render_spec_task
from visalign.vvr.spec_task import SpecTask
from visalign.vvr.spec_verifier import verify_spec
from visalign.vvr.video import TEMPORAL_TYPES, verify_video
from visalign.vvr.video_tasks import generate_video_task, render_video, to_video_tensor


@pytest.fixture(scope="module")
def batch():
    return VVR2PromptSource("easy").sample(6, torch.Generator().manual_seed(0))


def test_reward_on_v2_rows(batch):
    tasks = [SpecTask.from_row(m["task"]) for m in batch.metadata]
    good = to_tensor([render_spec_task(t, 96) for t in tasks])
    reward, strict = get_reward("vvr"), get_reward("vvr", strict=True)
    assert torch.allclose(reward(good, batch.prompts, batch.metadata), torch.ones(6))
    assert torch.equal(strict(good, batch.prompts, batch.metadata), torch.ones(6))
    assert reward.last_details[0]["all_satisfied"]
    blank = torch.ones_like(good)
    assert torch.all(reward(blank, batch.prompts, batch.metadata) == 0)
    clutter = to_tensor([floor_image("clutter", 96)] * 6)
    r = reward(clutter, batch.prompts, batch.metadata)
    assert torch.all(r < 0.2) and torch.all(strict(clutter, batch.prompts, batch.metadata) == 0)
    with pytest.raises(ValueError, match="tolerances"):
        get_reward("vvr", tolerances="loose")


def test_reward_is_partial_credit_times_soft_gates(batch):
    """One unrequested object costs the extras gate 1 / 1.2 and the extras term of the dense score."""
    task = SpecTask.from_row(batch.metadata[0]["task"])
    from visalign.vvr.spec_mutations import mutate_spec

    scene, kind, broken = mutate_spec(task.witness, task.spec, 0, kind="add")
    res = verify_spec(render_spec_task(task, 128, scene=scene), task.spec)
    assert broken == ["extras"] and res.extras == 1 and not res.strict
    assert res.reward == pytest.approx(res.dense / 1.2, rel=1e-6)
    assert res.scores["extras"] == pytest.approx(0.5)


def test_prompt_source_is_seeded_and_held_out():
    src = VVR2PromptSource("easy")
    a, b = (src.sample(3, torch.Generator().manual_seed(4)) for _ in range(2))
    assert a.prompts == b.prompts
    ev = src.eval_batch(3)
    assert not {m["task_id"] for m in ev.metadata} & {m["task_id"] for m in a.metadata}
    assert all("nothing else" in p or "no other objects" in p for p in a.prompts + ev.prompts)
    with pytest.raises(ValueError, match="pool"):
        VVR2PromptSource("hard")


def test_prompt_source_bins_keep_only_those_bins_and_are_checked():
    from collections import Counter

    from visalign.core import build_prompt_source
    from visalign.core.errors import InputError

    easy = build_prompt_source({"name": "vvr2", "pool": "matched", "bins": [1, 2]})
    drawn = easy.sample(40, torch.Generator().manual_seed(0))
    held_out = easy.eval_batch(40)
    assert {m["task"]["difficulty_bin"] for m in drawn.metadata + held_out.metadata} == {1, 2}
    assert not {m["task_id"] for m in drawn.metadata} & {m["task_id"] for m in held_out.metadata}
    assert easy.sample(5, torch.Generator().manual_seed(1)).prompts == easy.sample(5, torch.Generator().manual_seed(1)).prompts
    hard = Counter(m["task"]["difficulty_bin"] for m in VVR2PromptSource("matched", bins=[3, 4, 5]).eval_batch(60).metadata)
    assert set(hard) == {3, 4, 5} and min(hard.values()) >= 8  # independent draws, not one block of consecutive indices
    # no bins: the pool's tasks exactly as before (same indices)
    assert VVR2PromptSource("easy").eval_batch(2).metadata[0]["task_id"] == "vvreasy2-3000000000"
    for bad, match in (([6], "bins in 1-5"), ([], "non-empty"), ("12", "non-empty"), ([3], "bins \\[3\\] never occur")):
        with pytest.raises(InputError, match=match):
            VVR2PromptSource("easy", bins=bad)


@pytest.mark.parametrize("kind", TEMPORAL_TYPES)
def test_video_predicate_on_rendered_videos(kind):
    task = generate_video_task(77, kind, frames=8)
    for size in (32, 64):
        res = verify_video(render_video(task, size), task.spec)
        assert res.strict, (kind, size, res.to_dict())
    frozen = np.repeat(render_video(task, 32)[:1], task.frames, axis=0)  # the first frame held still
    if kind not in ("persistent", "stationary", "count_consistency", "size_change", "velocity_range"):
        assert not verify_video(frozen, task.spec).strict, kind


def test_video_reward_and_errors():
    tasks = [generate_video_task(5 + i, k, frames=12) for i, k in enumerate(TEMPORAL_TYPES)]
    videos = to_video_tensor([render_video(t, 32) for t in tasks])
    assert videos.shape == (11, 3, 12, 32, 32)
    meta = [{"task": t.to_row()} for t in tasks]
    reward = get_reward("vvr_video")
    r = reward(videos, [t.prompt for t in tasks], meta)
    assert torch.all(r > 0.9), r
    assert torch.all(reward(torch.ones_like(videos), [t.prompt for t in tasks], meta) == 0)
    with pytest.raises(ValueError, match="vvr_video. scores video samples only"):
        reward(videos[:, :, 0], [t.prompt for t in tasks], meta)
    with pytest.raises(ValueError, match="metadata"):
        reward(videos[:2], ["", ""], [{}, {}])


@pytest.mark.parametrize("version", ["v2", "v1"])
def test_vvr_scores_gives_both_rewards_from_one_verification(batch, version):
    """``vvr_scores``: the strict bits and RL rewards of the two ``vvr`` rewards, on v2 rows and v1 tasks, for a
    mix of renders (which pass) and noise (which does not)."""
    from visalign.rewards.vvr import vvr_scores
    from visalign.vvr.render import render_task
    from visalign.vvr.source import VVRPromptSource

    if version == "v2":
        prompts, meta = batch.prompts, batch.metadata
        good = to_tensor([render_spec_task(SpecTask.from_row(m["task"]), 96) for m in meta[:3]])
    else:
        v1 = VVRPromptSource(level=1).sample(6, torch.Generator().manual_seed(0))
        prompts, meta = v1.prompts, v1.metadata
        good = to_tensor([render_task(m["task"], 96) for m in meta[:3]])
    images = torch.cat([good, torch.rand(3, 3, 96, 96, generator=torch.Generator().manual_seed(1)) * 2 - 1])
    scored = vvr_scores(images, prompts, meta)
    assert torch.equal(scored["strict"], get_reward("vvr", strict=True)(images, prompts, meta))
    assert torch.equal(scored["soft"], get_reward("vvr")(images, prompts, meta))
    assert scored["strict"][:3].tolist() == [1.0, 1.0, 1.0] and scored["strict"][3:].sum() == 0
