"""Flow-GRPO and DiffusionNFT with a saved latent reward model as the reward (``reward: {name: latent_rm, path}``):
each runs from its example config through the Trainer on the tiny 8 px flow generator and raises the LRM's score of
its ODE samples (the eval reward, fixed eval noise)."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from visalign.generators.tiny import TinyFlowConfig, TinyFlowGenerator
from visalign.rewards.latent import LRMTrainingConfig, LatentPairs, LatentRewardConfig, build_lrm, save_lrm, train_lrm
from visalign.run import build_trainer, load_run_config
from visalign.toys.smooth_images import SmoothImages

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A tiny flow generator and an LRM fitted to judge-ranked smooth-image pairs, both saved."""
    root = tmp_path_factory.mktemp("lrm_reward")
    data = SmoothImages()
    winners, losers = data.ranked_pairs(256, torch.Generator().manual_seed(0))
    assert (data.judge(winners) >= data.judge(losers)).all()
    pairs = LatentPairs(winners, losers, [""] * 256, "smooth_image_judge")
    torch.manual_seed(0)
    lrm = build_lrm(LatentRewardConfig(latent_shape=[3, 8, 8], hidden=16, layers=1))
    metrics = train_lrm(lrm, pairs, LRMTrainingConfig(steps=60, batch_size=32, holdout=64), progress=False)
    assert metrics["heldout_accuracy_t0"] > 0.8
    save_lrm(lrm, root / "lrm")
    torch.manual_seed(0)
    TinyFlowGenerator(TinyFlowConfig(image_size=8, patch_size=2, layers=1, heads=2, head_dim=8, text_hidden=16,
                                     text_layers=1, vocab_buckets=64, num_steps=4)).save_pretrained(root / "gen")
    return root


@pytest.mark.parametrize("config,overrides", [
    ("lrm_flow_grpo_images", ["trainer.steps=8"]),
    ("lrm_diffusion_nft_images", ["trainer.steps=12", "algorithm.group_size=32", "algorithm.adv_clip=1.0", "algorithm.kl_beta=0"]),
])
def test_policy_gradient_methods_raise_the_latent_reward(saved, tmp_path, config, overrides):
    """Measured (seed 0): Flow-GRPO 0.11 -> 0.61 in 8 steps, DiffusionNFT 0.08 -> 0.79 in 12 (initial sd ≈ 0.21)."""
    torch.manual_seed(0)
    # overriding reward makes it the eval reward too: eval/reward_mean is the LRM's mean score of ODE samples
    run = load_run_config(ROOT / "configs" / f"{config}.yaml", [
        f"generator.checkpoint={saved / 'gen'}", f"reward.path={saved / 'lrm'}", "trainer.eval_every=0",
        "trainer.eval_batch_size=64", "trainer.learning_rate=3e-3", "trainer.progress=false",
        f"trainer.output_dir={tmp_path}", *overrides])
    trainer = build_trainer(run)
    assert run.algorithm["name"] in {"flow_grpo", "diffusion_nft"} and trainer.reward.name == "latent_rm"
    trainer.train()
    evals = [h for h in trainer.history if "eval/reward_mean" in h]
    before, after = evals[0], evals[-1]
    gain = after["eval/reward_mean"] - before["eval/reward_mean"]
    assert gain > 1.5 * before["eval/reward_std"], (before, after)
    assert all(not p.requires_grad for p in trainer.reward.model.parameters())  # the reward's weights stay frozen
