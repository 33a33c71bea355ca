"""Reward-weighted regression (RWR) baseline: maximise Σ_i w_i log p_θ(x_i) with w ∝ exp(r/β) per prompt group.

* Flow generators: the log-likelihood surrogate is the flow-matching loss on the policy's own samples,
  loss = Σ_i w_i ‖v_θ(x_t, t) − (ε − x_i)‖² / Σ_i w_i.
* One-step generators (no likelihood): Gaussian exploration policy x = G_θ(z) + σξ (Peters & Schaal RWR),
  loss = Σ_i w_i ‖G_θ(z_i) − x_i‖² / Σ_i w_i — a reward-weighted pull toward the better perturbations.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..core.algorithm import Algorithm, TrainContext, register_algorithm
from ..core.config import check
from ..core.types import PromptBatch, Rollout
from ..generators.flow import FlowMatchingGenerator
from .common import as_tensor, sample_group
from .transport import tilted_weights


@dataclass
class RWRConfig:
    beta: float = 1.0
    num_samples: int = 16
    exploration_std: float = 0.1
    normalize_rewards: bool = True

    def __post_init__(self) -> None:
        check(self.beta > 0, f"rwr.beta (reward temperature) must be > 0, got {self.beta}")
        check(self.num_samples >= 2, f"rwr.num_samples must be >= 2 per prompt, got {self.num_samples}")
        check(self.exploration_std > 0, f"rwr.exploration_std must be > 0, got {self.exploration_std}")

    @property
    def samples_per_prompt(self) -> int:
        """Generator samples one rollout draws per prompt."""
        return self.num_samples


@register_algorithm("rwr")
class RWR(Algorithm):
    """Reward-weighted regression (see module docstring)."""

    config_class = RWRConfig

    def rollout(self, ctx: TrainContext, batch: PromptBatch, generator: torch.Generator) -> Rollout:
        cfg = self.config
        samples, expanded, noise = sample_group(ctx.policy, batch, cfg.num_samples, generator)
        x = as_tensor(samples)
        if not isinstance(ctx.policy, FlowMatchingGenerator):
            x = x + cfg.exploration_std * torch.randn(x.shape, generator=generator).to(x)
        rewards = ctx.score(x, expanded)
        r = rewards.reshape(len(batch), cfg.num_samples)
        if cfg.normalize_rewards:
            r = (r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True) + 1e-6)
        weights = torch.stack([tilted_weights(row, cfg.beta) for row in r]).reshape(-1).float() * cfg.num_samples
        return Rollout(samples=x, batch=expanded, rewards=rewards, noise=noise, extras={"weights": weights})

    def loss(self, ctx: TrainContext, rollout: Rollout) -> tuple[torch.Tensor, dict[str, float]]:
        policy, x, w = ctx.policy, as_tensor(rollout.samples).detach(), rollout.extras["weights"].to(ctx.device)
        if isinstance(policy, FlowMatchingGenerator):
            cond = policy.encode(rollout.batch.prompts)
            eps = torch.randn_like(x)
            t = torch.rand(x.shape[0], device=x.device, dtype=x.dtype)
            tb = t.reshape(-1, *([1] * (x.dim() - 1)))
            per = (policy.velocity((1 - tb) * x + tb * eps, t, cond) - (eps - x)).pow(2).flatten(1).mean(1)
        else:
            per = (as_tensor(policy(rollout.noise, rollout.batch.prompts)) - x).pow(2).flatten(1).mean(1)
        loss = (w * per).sum() / w.sum()
        return loss, {"rwr/max_weight": float(w.max() / w.sum())}


__all__ = ["RWR", "RWRConfig"]
