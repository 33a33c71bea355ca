"""Reward-weighted regression (RWR) baseline: maximise Σ_i w_i log p_θ(x_i) with w ∝ exp(r/β) per prompt group.

* Flow models (:class:`FlowModel`): the log-likelihood surrogate is the flow-matching loss on the policy's own
  clean latents, loss = Σ_i w_i ‖v_θ(x_t, t) − (ε − x_i)‖² / Σ_i w_i.
* One-step generators (no likelihood): Gaussian exploration policy x = G_θ(z) + σξ (Peters & Schaal RWR),
  loss = Σ_i w_i ‖G_θ(z_i) − x_i‖² / Σ_i w_i — a reward-weighted pull toward the better perturbations.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

from ..core.algorithm import Algorithm, TrainContext, register_algorithm
from ..core.config import check, option
from ..core.flow import FlowModel
from ..core.types import PromptBatch, Rollout
from .common import as_tensor, require_flow_model
from .transport import tilted_weights


@dataclass
class RWRConfig:
    beta: float = option(1.0, "reward temperature of the weights exp(r/β)")
    num_samples: int = option(16, "samples per prompt (the group whose rewards are weighted)")
    exploration_std: float = option(0.1, "one-step generators: std of the Gaussian exploration noise added to samples")
    normalize_rewards: bool = option(True, "z-score rewards within each group before weighting")
    likelihood: Literal["auto", "flow_matching", "gaussian_exploration"] = option(
        "auto", "log-likelihood surrogate: flow matching on the policy's latents (flow models) or Gaussian exploration "
                "around a one-step map; auto picks by the policy")

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

    def __init__(self, config: RWRConfig | None = None) -> None:
        super().__init__(config or RWRConfig())

    @property
    def samples_per_prompt(self) -> int:
        return self.config.samples_per_prompt

    def _flow(self, ctx: TrainContext) -> bool:
        mode = self.config.likelihood
        if mode == "flow_matching":
            require_flow_model(ctx.policy, "rwr (likelihood: flow_matching)")
        return mode == "flow_matching" or (mode == "auto" and isinstance(ctx.policy, FlowModel))

    def setup(self, ctx: TrainContext) -> None:
        self._flow(ctx)

    def rollout(self, ctx: TrainContext, batch: PromptBatch, generator: torch.Generator) -> Rollout:
        cfg, policy = self.config, ctx.policy
        expanded = batch.repeat_interleave(cfg.num_samples)
        noise = policy.make_noise(len(expanded), generator)
        extras = {}
        with torch.no_grad():
            if self._flow(ctx):
                policy.record_draws(noise.shape[0])
                latents = policy.sample_latents(noise, policy.encode(expanded.prompts))
                samples = policy.decode(latents)
                extras["latents"] = latents
            else:
                x = as_tensor(policy(noise, expanded.prompts))
                samples = x + cfg.exploration_std * torch.randn(x.shape, generator=generator).to(x)
        rewards = ctx.score(samples, expanded)
        r = rewards.reshape(len(batch), cfg.num_samples)
        if cfg.normalize_rewards:
            r = (r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True) + 1e-6)
        weights = torch.stack([tilted_weights(row, cfg.beta) for row in r]).reshape(-1).float() * cfg.num_samples
        extras["weights"] = weights
        return Rollout(samples=samples, batch=expanded, rewards=rewards, noise=noise, extras=extras)

    def loss(self, ctx: TrainContext, rollout: Rollout) -> tuple[torch.Tensor, dict[str, float]]:
        policy, w = ctx.policy, rollout.extras["weights"].to(ctx.device)
        if "latents" in rollout.extras:
            loss = policy.flow_matching_loss(rollout.extras["latents"].detach(), policy.encode(rollout.batch.prompts), weights=w)
        else:
            x = as_tensor(rollout.samples).detach()
            per = (as_tensor(policy(rollout.noise, rollout.batch.prompts)) - x).pow(2).flatten(1).mean(1)
            loss = (w * per).sum() / w.sum()
        return loss, {"rwr/max_weight": float(w.max() / w.sum())}


__all__ = ["RWR", "RWRConfig"]
