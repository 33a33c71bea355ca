"""Flow-GRPO baseline: policy gradient on the SDE version of a flow sampler (any :class:`FlowModel`).

Rollout: G samples per prompt with ``sample_sde`` (per-step Gaussian log-probs on all steps, or on a window of
``sde_window`` consecutive steps starting at a random step below ``window_max_start``; the other steps are ODE
steps), group-relative advantages A_i = (r_i − mean_g)/(std_g + ε) (``multi_reward: gdpo``: per reward component,
then summed), clipped to ±``adv_clip``. Loss per SDE step k
(averaged over the SDE steps and samples):

    max(−A·ρ_k, −A·clip(ρ_k, 1 − c, 1 + c)) + β_KL·‖μ_θ,k − μ_ref,k‖² / (2σ_k²),   ρ_k = exp(log π_θ − log π_old),

the KL being the exact per-step Gaussian KL to the frozen reference (dimension-averaged like the log-probs).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..core.algorithm import Algorithm, TrainContext, register_algorithm
from ..core.config import check, option
from ..core.flow import gaussian_log_prob
from ..core.types import PromptBatch, Rollout
from .common import MULTI_REWARD_MODES, require_flow_model, reward_advantages


@dataclass
class FlowGRPOConfig:
    group_size: int = option(8, "SDE trajectories per prompt (the group whose rewards are normalised)")
    num_steps: int = option(10, "sampling steps of each trajectory")
    noise_level: float = option(0.7, "SDE noise scale a (std_t = a·sqrt(t/(1-t)))")
    sde_window: int | None = option(None, "SDE (and train) only this many consecutive steps; null: all steps")
    window_max_start: int | None = option(None, "the window starts uniformly in [0, window_max_start] (default: the "
                                                "last start that fits)")
    clip_range: float = option(0.2, "PPO ratio clip c")
    kl_beta: float = option(0.04, "weight of the per-step Gaussian KL to the reference")
    adv_clip: float = option(5.0, "advantages are clipped to ±adv_clip")
    multi_reward: str = option("sum", "several reward components: sum (GRPO on the weighted sum) or gdpo (normalise "
                                      "each component within its group, then sum)")
    updates_per_rollout: int = option(1, "optimizer steps on each rollout (PPO reuse)")

    def __post_init__(self) -> None:
        check(self.group_size >= 2, f"flow_grpo.group_size must be >= 2 samples per prompt for group advantages, got {self.group_size}")
        check(self.num_steps >= 1, f"flow_grpo.num_steps must be >= 1, got {self.num_steps}")
        check(self.noise_level > 0, f"flow_grpo.noise_level must be > 0, got {self.noise_level}")
        check(self.sde_window is None or 1 <= self.sde_window <= self.num_steps,
              f"flow_grpo.sde_window must be in [1, num_steps={self.num_steps}] or null, got {self.sde_window}")
        last_start = self.num_steps - (self.sde_window or self.num_steps)
        check(self.window_max_start is None or 0 <= self.window_max_start <= last_start,
              f"flow_grpo.window_max_start must be in [0, {last_start}], got {self.window_max_start}")
        check(self.clip_range > 0, f"flow_grpo.clip_range must be > 0, got {self.clip_range}")
        check(self.multi_reward in MULTI_REWARD_MODES,
              f"flow_grpo.multi_reward must be one of {list(MULTI_REWARD_MODES)}, got {self.multi_reward!r}")
        check(self.kl_beta >= 0, f"flow_grpo.kl_beta must be >= 0, got {self.kl_beta}")
        check(self.updates_per_rollout >= 1, "flow_grpo.updates_per_rollout must be >= 1")

    @property
    def samples_per_prompt(self) -> int:
        """SDE trajectories one rollout draws per prompt."""
        return self.group_size

    def sde_steps(self, generator: torch.Generator) -> list[int] | None:
        """The steps sampled by the SDE in one rollout (None: all)."""
        if self.sde_window is None:
            return None
        last = self.num_steps - self.sde_window if self.window_max_start is None else self.window_max_start
        start = int(torch.randint(last + 1, (1,), generator=generator))
        return list(range(start, start + self.sde_window))


@register_algorithm("flow_grpo")
class FlowGRPO(Algorithm):
    """Group-relative PPO on a flow model's SDE sampler, with a KL anchor to the reference."""

    config_class = FlowGRPOConfig
    needs_reference = True

    def __init__(self, config: FlowGRPOConfig | None = None) -> None:
        super().__init__(config or FlowGRPOConfig())

    @property
    def updates_per_rollout(self) -> int:
        return self.config.updates_per_rollout

    @property
    def samples_per_prompt(self) -> int:
        return self.config.samples_per_prompt

    def setup(self, ctx: TrainContext) -> None:
        require_flow_model(ctx.policy, "flow_grpo")

    def rollout(self, ctx: TrainContext, batch: PromptBatch, generator: torch.Generator) -> Rollout:
        cfg = self.config
        policy = require_flow_model(ctx.policy, "flow_grpo")
        expanded = batch.repeat_interleave(cfg.group_size)
        noise = policy.make_noise(len(expanded), generator)
        with torch.no_grad():
            traj = policy.sample_sde(noise, expanded.prompts, generator=generator, num_steps=cfg.num_steps,
                                     noise_level=cfg.noise_level, sde_steps=cfg.sde_steps(generator))
            samples = policy.decode(traj.final)
        rewards = ctx.score(samples, expanded)
        adv = reward_advantages(ctx.reward, rewards, cfg.group_size, cfg.multi_reward).clamp(-cfg.adv_clip, cfg.adv_clip)
        return Rollout(samples=samples, batch=expanded, rewards=rewards, noise=noise,
                       extras={"trajectory": traj, "advantages": adv})

    def loss(self, ctx: TrainContext, rollout: Rollout) -> tuple[torch.Tensor, dict[str, float]]:
        cfg, traj = self.config, rollout.extras["trajectory"]
        policy, ref = ctx.policy, ctx.reference
        cond = policy.encode(rollout.batch.prompts)
        ref_cond = ref.encode(rollout.batch.prompts) if ref is not None and cfg.kl_beta > 0 else None
        adv = rollout.extras["advantages"].to(ctx.device)
        total, kls, clipped, ratios = 0.0, [], [], []
        steps = traj.sde_steps
        for k in steps:
            mean, std = policy.transition(traj, k, cond)
            log_prob = gaussian_log_prob(traj.latents[:, k + 1], mean, std)
            ratio = torch.exp(log_prob - traj.log_probs[:, k])
            pg = torch.maximum(-adv * ratio, -adv * ratio.clamp(1 - cfg.clip_range, 1 + cfg.clip_range)).mean()
            kl = torch.zeros((), device=ctx.device)
            if ref_cond is not None:
                with torch.no_grad():
                    ref_mean, _ = ref.transition(traj, k, ref_cond)
                kl = ((mean - ref_mean).float() ** 2).flatten(1).mean(1).mean() / (2 * std**2)
            total = total + (pg + cfg.kl_beta * kl) / len(steps)
            kls.append(float(kl.detach()))
            clipped.append(float(((ratio - 1).abs() > cfg.clip_range).float().mean()))
            ratios.append(float(ratio.detach().mean()))
        n = len(steps)
        return total, {"flow_grpo/kl": sum(kls) / n, "flow_grpo/clip_frac": sum(clipped) / n, "flow_grpo/ratio": sum(ratios) / n}


__all__ = ["FlowGRPO", "FlowGRPOConfig"]
