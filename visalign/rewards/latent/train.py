"""Fit a latent reward model to preference pairs at random noise levels; the ``visalign train-reward`` command."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import torch
from tqdm.auto import tqdm

from ...core.config import apply_overrides, check, from_dict, load_yaml, option
from .io import LatentPairs, load_pairs, save_lrm
from .losses import PAIR_LOSSES, draw_noise_level, noise_pair, pair_loss
from .models import LatentRewardConfig, LatentRewardModel, build_lrm


@dataclass
class LRMTrainingConfig:
    """How a latent reward model is fitted: ``steps`` AdamW steps on batches of pairs, each pair noised to one
    ``t ~ U(0, t_max)`` with one shared ε."""

    steps: int = option(600, "optimizer steps")
    batch_size: int = option(128, "pairs per step")
    learning_rate: float = option(1e-3, "AdamW learning rate")
    weight_decay: float = option(1e-4, "AdamW weight decay")
    loss: str = option("bradley_terry", "pair loss: bradley_terry or thurstone")
    t_max: float = option(1.0, "largest noise level drawn")
    holdout: int = option(256, "pairs held out to report accuracy")
    seed: int = option(0, "seed of the batches, noise levels and noise")

    def __post_init__(self) -> None:
        check(self.steps >= 1 and self.batch_size >= 1, "lrm training steps and batch_size must be >= 1")
        check(self.learning_rate > 0, f"lrm training learning_rate must be > 0, got {self.learning_rate}")
        check(self.loss in PAIR_LOSSES, f"lrm training loss must be one of {list(PAIR_LOSSES)}, got {self.loss!r}")
        check(0 < self.t_max <= 1, f"lrm training t_max must be in (0, 1], got {self.t_max}")
        check(self.holdout >= 0, f"lrm training holdout must be >= 0, got {self.holdout}")


def pair_accuracy(model: LatentRewardModel, pairs: LatentPairs, t: float, seed: int = 0) -> float:
    """Fraction of pairs ranked right when both members are noised to ``t`` with one shared ε."""
    g = torch.Generator().manual_seed(seed)
    device = next(model.head.parameters()).device
    eps = torch.randn(pairs.winners.shape, generator=g).to(device)
    tt = torch.full((len(pairs),), float(t), device=device)
    w, l = noise_pair(pairs.winners.to(device), pairs.losers.to(device), tt, eps)
    with torch.no_grad():
        return float((model(w, tt, pairs.prompts) > model(l, tt, pairs.prompts)).float().mean())


def train_lrm(model: LatentRewardModel, pairs: LatentPairs, config: LRMTrainingConfig | None = None,
              progress: bool = True) -> dict[str, float]:
    """Fit ``model`` in place; returns the final loss and held-out accuracy at t = 0, 0.25 and 0.5."""
    cfg = config or LRMTrainingConfig()
    train, held = pairs.split(cfg.holdout) if cfg.holdout else (pairs, None)
    g = torch.Generator().manual_seed(cfg.seed)
    device = next(model.head.parameters()).device
    opt = torch.optim.AdamW(model.head.parameters(), lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, cfg.steps)
    model.train()
    losses = []
    for _ in tqdm(range(cfg.steps), disable=not progress, desc="train latent reward"):
        idx = torch.randint(len(train), (min(cfg.batch_size, len(train)),), generator=g)
        t = draw_noise_level(len(idx), g, cfg.t_max).to(device)
        eps = torch.randn((len(idx), *train.latent_shape), generator=g).to(device)
        w, l = noise_pair(train.winners[idx].to(device), train.losers[idx].to(device), t, eps)
        prompts = [train.prompts[i] for i in idx.tolist()]
        loss = pair_loss(cfg.loss, model(w, t, prompts), model(l, t, prompts))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
    model.eval()
    out = {"final_loss": float(sum(losses[-20:]) / len(losses[-20:]))}
    if held is not None:
        out.update({f"heldout_accuracy_t{t:g}": pair_accuracy(model, held, t) for t in (0.0, 0.25, 0.5)})
    return out


@dataclass
class TrainRewardConfig:
    """``visalign train-reward CONFIG``: a preference-pairs file, the model's shape and how to fit it."""

    pairs: str = option(help="safetensors file of preference pairs (winners, losers latents)", factory=str)
    output_dir: str = option("runs/latent_reward", "folder the fitted model is saved to")
    lrm: dict[str, Any] = option(help="the model: LatentRewardConfig keys (kind, hidden, ...); latent_shape defaults "
                                      "to the pairs'", factory=dict)
    training: LRMTrainingConfig = option(help="optimisation", factory=LRMTrainingConfig)

    def __post_init__(self) -> None:
        check(bool(self.pairs), "train-reward needs pairs (a safetensors file of preference pairs)")


def main(config_path: str | Path, overrides: Sequence[str] = ()) -> dict[str, float]:
    """Read the config, fit, save to ``output_dir`` and return the metrics."""
    cfg = from_dict(TrainRewardConfig, apply_overrides(load_yaml(config_path), overrides))
    pairs = load_pairs(cfg.pairs)
    model = build_lrm(from_dict(LatentRewardConfig, {"latent_shape": pairs.latent_shape, **cfg.lrm}, prefix="lrm"))
    metrics = train_lrm(model, pairs, cfg.training)
    save_lrm(model, cfg.output_dir, {"training": metrics, "judge": pairs.judge, "pairs": cfg.pairs})
    (Path(cfg.output_dir) / "metrics.json").write_text(json.dumps(metrics, indent=2))
    return metrics


__all__ = ["LRMTrainingConfig", "TrainRewardConfig", "train_lrm", "pair_accuracy", "main"]
