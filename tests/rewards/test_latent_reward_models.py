"""Latent reward models: pair losses against hand-computed values, shared-t noising, both model kinds, training from
pairs, safetensors round trip, use as an ordinary Reward, and the train-reward command."""
from __future__ import annotations

import pytest
import torch

from visalign.core.config import ConfigError
from visalign.core.reward import build_reward
from visalign.generators.tiny import TinyFlowConfig, TinyFlowGenerator
from visalign.rewards.latent import (LRMTrainingConfig, LatentReward, LatentRewardConfig, LatentPairs, bradley_terry_loss,
                                     build_lrm, load_lrm, load_pairs, noise_pair, pair_accuracy, save_lrm, save_pairs,
                                     thurstone_loss, train_lrm)
from visalign.toys.smooth_images import SmoothImages


def smooth_pairs(n: int, seed: int = 0) -> LatentPairs:
    winners, losers = SmoothImages().ranked_pairs(n, torch.Generator().manual_seed(seed))
    return LatentPairs(winners, losers, [""] * n, "smooth_image_judge")


def test_pair_losses_match_hand_computed_values():
    win, lose = torch.tensor([2.0, 0.0]), torch.tensor([0.0, 1.0])
    # (-log σ(2) - log σ(-1)) / 2 = (log(1 + e^-2) + log(1 + e)) / 2
    assert bradley_terry_loss(win, lose).item() == pytest.approx(0.7200948, abs=1e-6)
    # (-log Φ(2/√2) - log Φ(-1/√2)) / 2
    assert thurstone_loss(win, lose).item() == pytest.approx(0.7550366, abs=1e-6)
    assert bradley_terry_loss(torch.zeros(3), torch.zeros(3)).item() == pytest.approx(0.6931472, abs=1e-6)  # log 2


@pytest.mark.parametrize("shape", [(4, 3, 8, 8), (4, 3, 2, 4, 4)])  # images and videos
def test_noise_pair_shares_t_and_noise(shape):
    g = torch.Generator().manual_seed(0)
    win, lose, eps = torch.randn(shape, generator=g), torch.randn(shape, generator=g), torch.randn(shape, generator=g)
    t = torch.tensor([0.0, 0.25, 0.5, 1.0])
    w_t, l_t = noise_pair(win, lose, t, eps)
    tb = t.reshape(-1, *[1] * (len(shape) - 1))
    torch.testing.assert_close(w_t, (1 - tb) * win + tb * eps)
    torch.testing.assert_close(w_t - l_t, (1 - tb) * (win - lose))  # only the content differs
    torch.testing.assert_close(w_t[3], l_t[3])  # t = 1: both are the shared noise
    with pytest.raises(ValueError, match="one shape"):
        noise_pair(win, lose[:2], t, eps)
    with pytest.raises(ValueError, match="t of shape"):
        noise_pair(win, lose, t[:2], eps)


def tiny_flow() -> TinyFlowGenerator:
    torch.manual_seed(0)
    return TinyFlowGenerator(TinyFlowConfig(image_size=8, patch_size=2, layers=2, heads=2, head_dim=8, text_hidden=16,
                                            text_layers=1, vocab_buckets=64, num_steps=2))


@pytest.mark.parametrize("kind", ["standalone", "backbone"])
def test_models_score_noisy_latents_with_gradient_to_latents_only_through_the_head(kind, tmp_path):
    gen = tiny_flow()
    model = build_lrm(LatentRewardConfig(kind=kind, latent_shape=[3, 8, 8], hidden=16), generator=gen if kind == "backbone" else None)
    x = torch.randn(5, 3, 8, 8, requires_grad=True)
    scores = model(x, torch.rand(5), [""] * 5)
    assert scores.shape == (5,)
    scores.sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all(n.startswith("head.") for n in trainable)  # a backbone model keeps its blocks frozen
    # safetensors round trip gives the same scores
    save_lrm(model, tmp_path / "lrm")
    again = load_lrm(tmp_path / "lrm", generator=gen if kind == "backbone" else None)
    t = torch.full((5,), 0.3)
    torch.testing.assert_close(again(x.detach(), t), model(x.detach(), t))


def test_bad_inputs_have_clear_errors(tmp_path):
    model = build_lrm(LatentRewardConfig(latent_shape=[3, 8, 8], hidden=8))
    with pytest.raises(ValueError, match=r"shape \[B, 3, 8, 8\]"):
        model(torch.randn(2, 3, 4, 4), torch.rand(2))
    with pytest.raises(ValueError, match="t must have shape"):
        model(torch.randn(2, 3, 8, 8), torch.rand(3))
    with pytest.raises(ConfigError, match="latent_shape"):
        LatentRewardConfig(kind="standalone")
    with pytest.raises(FileNotFoundError, match="lrm.json"):
        load_lrm(tmp_path)
    with pytest.raises(FileNotFoundError, match="pairs file not found"):
        load_pairs(tmp_path / "none.safetensors")
    (tmp_path / "bad.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(ValueError, match="not a readable safetensors"):
        load_pairs(tmp_path / "bad.safetensors")
    with pytest.raises(ValueError, match="NaN"):
        LatentPairs(torch.full((2, 3), float("nan")), torch.zeros(2, 3), ["", ""])


def test_training_from_judge_labelled_pairs_ranks_held_out_pairs(tmp_path):
    pairs = smooth_pairs(768)
    save_pairs(pairs, tmp_path / "pairs.safetensors")
    pairs = load_pairs(tmp_path / "pairs.safetensors")
    assert pairs.judge == "smooth_image_judge" and len(pairs) == 768
    torch.manual_seed(0)
    model = build_lrm(LatentRewardConfig(latent_shape=pairs.latent_shape, hidden=32, layers=1))
    _, held = pairs.split(256)
    before = pair_accuracy(model, held, 0.0)
    metrics = train_lrm(model, pairs, LRMTrainingConfig(steps=150, batch_size=64, holdout=256), progress=False)
    assert metrics["heldout_accuracy_t0"] > 0.8 > before + 0.15
    assert metrics["heldout_accuracy_t0.5"] > 0.7  # still ranks at half noise
    # as an ordinary Reward: clean samples are latents at t = 0
    save_lrm(model, tmp_path / "lrm")
    reward = build_reward({"name": "latent_rm", "path": str(tmp_path / "lrm")})
    assert isinstance(reward, LatentReward) and reward.differentiable
    x = pairs.winners[:4]
    torch.testing.assert_close(reward(x, [""] * 4, [{}] * 4), reward.score_latents(x, 0.0))


def test_train_reward_command(tmp_path):
    from visalign.cli import main

    save_pairs(smooth_pairs(96), tmp_path / "pairs.safetensors")
    config = tmp_path / "lrm.yaml"
    config.write_text(f"pairs: {tmp_path / 'pairs.safetensors'}\noutput_dir: {tmp_path / 'out'}\n"
                      "lrm: {hidden: 8, layers: 1}\ntraining: {steps: 3, batch_size: 8, holdout: 16, loss: thurstone}\n")
    assert main(["train-reward", str(config)]) == 0
    model = load_lrm(tmp_path / "out")
    assert model.config.latent_shape == [3, 8, 8] and model.config.hidden == 8
    assert main(["train-reward", str(config), "training.loss=hinge"]) == 2  # bad key value -> clear error, exit 2
