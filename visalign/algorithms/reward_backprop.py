"""Direct reward backprop (ReFL / DRaFT style) for differentiable rewards.

loss = −mean_i r(G_θ(z_i)) + γ·mean_i ‖G_θ(z_i) − G_ref(z_i)‖²/D (optional anchor to the reference).
For flow generators ``truncate_steps = K`` backpropagates only through the last K Euler steps (DRaFT-K).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..core.algorithm import Algorithm, TrainContext, register_algorithm
from ..core.config import ConfigError, check, option
from ..core.types import PromptBatch, Rollout, flatten_samples
from .common import require_flow_model


@dataclass
class RewardBackpropConfig:
    num_samples: int = option(1, "samples per prompt")
    anchor_weight: float = option(0.0, "weight γ of the mean-square pull to the reference's sample for the same noise")
    truncate_steps: int | None = option(None, "flow models: backpropagate through the last K ODE steps only (DRaFT-K)")

    def __post_init__(self) -> None:
        check(self.num_samples >= 1, f"reward_backprop.num_samples must be >= 1, got {self.num_samples}")
        check(self.anchor_weight >= 0, f"reward_backprop.anchor_weight must be >= 0, got {self.anchor_weight}")
        check(self.truncate_steps is None or self.truncate_steps >= 1, "reward_backprop.truncate_steps must be >= 1 or null")

    @property
    def samples_per_prompt(self) -> int:
        """Generator samples one step draws per prompt."""
        return self.num_samples


@register_algorithm("reward_backprop")
class RewardBackprop(Algorithm):
    """Maximise a differentiable reward by backpropagating through the generator."""

    config_class = RewardBackpropConfig

    def __init__(self, config: RewardBackpropConfig | None = None) -> None:
        super().__init__(config or RewardBackpropConfig())
        self.needs_reference = self.config.anchor_weight > 0

    @property
    def samples_per_prompt(self) -> int:
        return self.config.samples_per_prompt

    def setup(self, ctx: TrainContext) -> None:
        if self.config.truncate_steps is not None:
            require_flow_model(ctx.policy, "reward_backprop with truncate_steps (DRaFT-K)")
        if not ctx.reward.differentiable:
            raise ConfigError(f"reward_backprop needs a differentiable reward; {ctx.reward.name!r} is a black box "
                              "(differentiable=False) — use rwtd, festdpo, rwr or flow_grpo instead")

    def rollout(self, ctx: TrainContext, batch: PromptBatch, generator: torch.Generator) -> Rollout:
        expanded = batch.repeat_interleave(self.config.num_samples)
        noise = ctx.policy.make_noise(len(expanded), generator)
        with torch.no_grad():
            samples = ctx.policy(noise, expanded.prompts)
            rewards = ctx.score(samples, expanded)
        return Rollout(samples=samples, batch=expanded, rewards=rewards, noise=noise)

    def loss(self, ctx: TrainContext, rollout: Rollout) -> tuple[torch.Tensor, dict[str, float]]:
        cfg, policy = self.config, ctx.policy
        cond = policy.encode(rollout.batch.prompts)
        if cfg.truncate_steps is not None:
            flow = require_flow_model(policy, "reward_backprop with truncate_steps (DRaFT-K)")
            out = flow.decode(flow.sample_latents(rollout.noise, cond, grad_steps=cfg.truncate_steps))
        else:
            out = policy.generate(rollout.noise, cond)
        reward = ctx.score(out, rollout.batch)
        loss = -reward.mean()
        metrics = {"reward_backprop/reward": float(reward.detach().mean())}
        if cfg.anchor_weight > 0:
            if ctx.reference is None:
                raise ConfigError("reward_backprop.anchor_weight > 0 needs a reference generator")
            with torch.no_grad():
                ref_out = ctx.reference(rollout.noise, rollout.batch.prompts)
            anchor = (flatten_samples(out) - flatten_samples(ref_out)).pow(2).mean(1).mean()
            loss = loss + cfg.anchor_weight * anchor
            metrics["reward_backprop/anchor"] = float(anchor.detach())
        return loss, metrics


__all__ = ["RewardBackprop", "RewardBackpropConfig"]
