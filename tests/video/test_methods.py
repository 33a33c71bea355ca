"""One training step of every applicable method on the built-in video and audio-video generators: the policy's
parameters move, the frozen reference does not, and the run folder gets the video / audio pictures."""
from __future__ import annotations

import wave

import pytest
import torch

from visalign.core import build_algorithm, build_reward
from visalign.toys.moving_shapes import MovingShapesPrompts
from visalign.trainer import Trainer, TrainerConfig

FEATURES = {"features": "conv"}
METHODS = {
    "flow_grpo": {"name": "flow_grpo", "group_size": 3, "num_steps": 2},
    "rwr": {"name": "rwr", "num_samples": 3},
    "reward_backprop": {"name": "reward_backprop", "num_samples": 2, "anchor_weight": 0.5},
    "rwtd": {"name": "rwtd", "num_current": 3, "num_reference": 3, **FEATURES},
    "festdpo": {"name": "festdpo", "num_samples": 3, "num_pairs": 2, **FEATURES},
    "diffusion_nft": {"name": "diffusion_nft", "group_size": 3, "num_steps": 2, "kl_beta": 0.1},
}
CASES = [("video_one_step", m) for m in ("rwr", "reward_backprop", "rwtd", "festdpo")] + \
        [("video_flow", m) for m in METHODS] + [("av_flow", m) for m in METHODS]


@pytest.mark.parametrize("model,method", CASES, ids=[f"{g}-{m}" for g, m in CASES])
def test_one_step_moves_policy_not_reference(model, method, request, tmp_path):
    policy = request.getfixturevalue(model)
    audio = model == "av_flow"
    reward = build_reward([{"name": "av_sync"}, {"name": "object_color", "weight": 0.5}] if audio else "object_color")
    start = {n: p.detach().clone() for n, p in policy.named_parameters()}
    reference = policy.frozen_copy()
    cfg = TrainerConfig(steps=1, prompts_per_step=2, learning_rate=1e-2, log_with=[], progress=False,
                        output_dir=str(tmp_path), eval_batch_size=3)
    trainer = Trainer(policy, build_algorithm(METHODS[method]), reward, MovingShapesPrompts(audio=audio), cfg,
                      reference=reference)
    trainer.train()
    moved = [n for n, p in policy.named_parameters() if not torch.equal(p, start[n])]
    assert moved, f"{method} did not change {model}'s parameters"
    assert all(torch.equal(p, start[n]) for n, p in reference.named_parameters()), "the reference changed"
    samples = tmp_path / "samples"
    pngs = sorted(samples.glob("*.png"))
    assert pngs and all(p.with_suffix(".gif").is_file() for p in pngs)
    if audio:
        with wave.open(str(samples / f"{pngs[-1].stem}_0.wav")) as f:
            assert f.getframerate() == policy.config.sample_rate and f.getnframes() == policy.config.audio_length
