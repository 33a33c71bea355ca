"""Flow-GRPO baseline: policy gradient on the SDE version of a flow sampler.

Rollout: G samples per prompt with ``sample_sde`` (per-step Gaussian log-probs), group-relative advantages
A_i = (r_i − mean_g)/(std_g + ε), clipped to ±``adv_clip``. Loss per step k (averaged over steps and samples):

    max(−A·ρ_k, −A·clip(ρ_k, 1 − c, 1 + c)) + β_KL·‖μ_θ,k − μ_ref,k‖² / (2σ_k²),   ρ_k = exp(log π_θ − log π_old),

the KL being the exact per-step Gaussian KL to the frozen reference (dimension-averaged like the log-probs).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..core.algorithm import Algorithm, TrainContext, register_algorithm
from ..core.config import ConfigError, check
from ..core.types import PromptBatch, Rollout
from ..generators.flow import FlowMatchingGenerator, gaussian_log_prob, sde_step_stats
from .common import group_advantages


@dataclass
class FlowGRPOConfig:
    group_size: int = 8
    num_steps: int = 10
    noise_level: float = 0.7
    clip_range: float = 0.2
    kl_beta: float = 0.04
    adv_clip: float = 5.0
    updates_per_rollout: int = 1

    def __post_init__(self) -> None:
        check(self.group_size >= 2, f"flow_grpo.group_size must be >= 2 samples per prompt for group advantages, got {self.group_size}")
        check(self.num_steps >= 1, f"flow_grpo.num_steps must be >= 1, got {self.num_steps}")
        check(self.noise_level > 0, f"flow_grpo.noise_level must be > 0, got {self.noise_level}")
        check(self.clip_range > 0, f"flow_grpo.clip_range must be > 0, got {self.clip_range}")
        check(self.kl_beta >= 0, f"flow_grpo.kl_beta must be >= 0, got {self.kl_beta}")
        check(self.updates_per_rollout >= 1, "flow_grpo.updates_per_rollout must be >= 1")

    @property
    def samples_per_prompt(self) -> int:
        """SDE trajectories one rollout draws per prompt."""
        return self.group_size


def step_stats(model: FlowMatchingGenerator, latents: torch.Tensor, sigmas: torch.Tensor, step: int, cond, noise_level: float):
    """(mean, std) of SDE transition ``step`` under ``model`` (differentiable through the velocity)."""
    sigma, sigma_next = float(sigmas[step]), float(sigmas[step + 1])
    x = latents[:, step]
    t = torch.full((x.shape[0],), sigma, device=x.device, dtype=x.dtype)
    return sde_step_stats(x, model.velocity(x, t, cond), sigma, sigma_next, noise_level, float(sigmas[1]))


@register_algorithm("flow_grpo")
class FlowGRPO(Algorithm):
    """Group-relative PPO on a flow model's SDE sampler, with a KL anchor to the reference."""

    config_class = FlowGRPOConfig
    needs_reference = True

    def __init__(self, config: FlowGRPOConfig | None = None) -> None:
        super().__init__(config or FlowGRPOConfig())
        self.updates_per_rollout = self.config.updates_per_rollout

    def setup(self, ctx: TrainContext) -> None:
        if not isinstance(ctx.policy, FlowMatchingGenerator):
            raise ConfigError(f"flow_grpo needs a flow-matching generator with an SDE sampler; got {type(ctx.policy).__name__} "
                              "(use rwtd or festdpo for one-step generators)")

    def rollout(self, ctx: TrainContext, batch: PromptBatch, generator: torch.Generator) -> Rollout:
        self.setup(ctx)
        cfg = self.config
        expanded = batch.repeat_interleave(cfg.group_size)
        noise = ctx.policy.make_noise(len(expanded), generator)
        with torch.no_grad():
            traj = ctx.policy.sample_sde(noise, expanded.prompts, generator=generator, num_steps=cfg.num_steps, noise_level=cfg.noise_level)
            samples = ctx.policy.decode(traj.final)
        rewards = ctx.score(samples, expanded)
        adv = group_advantages(rewards, cfg.group_size).clamp(-cfg.adv_clip, cfg.adv_clip)
        extras = {"latents": traj.latents, "old_log_probs": traj.log_probs, "sigmas": traj.sigmas, "advantages": adv}
        return Rollout(samples=samples, batch=expanded, rewards=rewards, noise=noise, extras=extras)

    def loss(self, ctx: TrainContext, rollout: Rollout) -> tuple[torch.Tensor, dict[str, float]]:
        cfg, ex = self.config, rollout.extras
        policy, ref = ctx.policy, ctx.reference
        cond = policy.encode(rollout.batch.prompts)
        ref_cond = ref.encode(rollout.batch.prompts) if ref is not None and cfg.kl_beta > 0 else None
        adv = ex["advantages"].to(ctx.device)
        total, kls, clipped, ratios = 0.0, [], [], []
        steps = ex["old_log_probs"].shape[1]
        for k in range(steps):
            mean, std = step_stats(policy, ex["latents"], ex["sigmas"], k, cond, cfg.noise_level)
            log_prob = gaussian_log_prob(ex["latents"][:, k + 1], mean, std)
            ratio = torch.exp(log_prob - ex["old_log_probs"][:, k])
            pg = torch.maximum(-adv * ratio, -adv * ratio.clamp(1 - cfg.clip_range, 1 + cfg.clip_range)).mean()
            kl = torch.zeros((), device=ctx.device)
            if ref_cond is not None:
                with torch.no_grad():
                    ref_mean, _ = step_stats(ref, ex["latents"], ex["sigmas"], k, ref_cond, cfg.noise_level)
                kl = ((mean - ref_mean) ** 2).flatten(1).mean(1).mean() / (2 * std**2)
            total = total + (pg + cfg.kl_beta * kl) / steps
            kls.append(float(kl.detach()))
            clipped.append(float(((ratio - 1).abs() > cfg.clip_range).float().mean()))
            ratios.append(float(ratio.detach().mean()))
        return total, {"flow_grpo/kl": sum(kls) / steps, "flow_grpo/clip_frac": sum(clipped) / steps, "flow_grpo/ratio": sum(ratios) / steps}


__all__ = ["FlowGRPO", "FlowGRPOConfig"]
