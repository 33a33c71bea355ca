"""DiffusionNFT baseline (Zheng et al. 2025, arXiv 2509.16117): online RL on the forward (noising) process of any
:class:`FlowModel`, with no likelihoods and no sampler trajectories.

Rollout: G samples per prompt drawn with the deterministic ODE sampler of the *old* policy v_old, a slow copy of the
trainable weights updated before each rollout as θ_old ← d_k·θ_old + (1 − d_k)·θ with
d_k = min(decay_rate·max(0, k − decay_delay), decay_max) at optimizer step k (d = 0: the rollout-time copy).
Rewards become optimality probabilities r = clip(A, ±c)/(2c) + ½ ∈ [0, 1] from group advantages A.

Loss on the clean latents x_0 of those samples, at x_t = (1 − t)x_0 + tε, with the implicit policies

    v⁺ = (1 − β)·v_old + β·v_θ,    v⁻ = (1 + β)·v_old − β·v_θ,
    L = E[ r·‖x̂_0(v⁺) − x_0‖²/w⁺ + (1 − r)·‖x̂_0(v⁻) − x_0‖²/w⁻ ] / β + β_KL·E‖v_θ − v_ref‖²,

where x̂_0(v) = x_t − t·v and w± = mean|x̂_0(v±) − x_0| (stop-gradient; the paper's adaptive weighting, or 1 when
``adaptive_weight`` is off). Positives pull v⁺ onto the data, negatives pull v⁻, which moves v_θ away from them.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Iterator, Literal

import torch
from torch.distributed.tensor import DTensor

from ..core.algorithm import Algorithm, TrainContext, register_algorithm
from ..core.config import ConfigError, check, option
from ..core.flow import FlowModel, broadcast_to
from ..core.types import PromptBatch, Rollout
from .common import group_advantages, require_flow_model, require_reference


@dataclass
class DiffusionNFTConfig:
    group_size: int = option(8, "ODE samples per prompt (the group whose rewards are normalised)")
    num_steps: int | None = option(None, "ODE sampling steps of a rollout (null: the generator's default)")
    beta: float = option(1.0, "strength β of the implicit policies v± = (1 ∓ β)·v_old ± β·v_θ")
    adv_clip: float = option(5.0, "group advantages are clipped to ±adv_clip, then mapped to r = A/(2·adv_clip) + ½")
    timesteps: Literal["schedule", "uniform"] = option(
        "schedule", "noise levels t of the loss: drawn from the sampler's schedule (the paper) or uniform in (0, 1)")
    timesteps_per_sample: int = option(1, "(t, ε) draws per sample in one loss evaluation")
    adaptive_weight: bool = option(True, "divide each error by its stop-gradient mean absolute x_0 error (the paper's "
                                         "adaptive weighting)")
    decay_rate: float = option(0.001, "growth per optimizer step of the old policy's EMA decay d")
    decay_max: float = option(0.5, "cap on the old policy's EMA decay d (0: old = the weights at rollout time)")
    decay_delay: int = option(0, "optimizer steps with d = 0 before d starts to grow")
    kl_beta: float = option(0.0, "weight of ‖v_θ − v_ref‖² to the frozen reference (0: no reference needed)")
    updates_per_rollout: int = option(1, "optimizer steps on each rollout")

    def __post_init__(self) -> None:
        check(self.group_size >= 2, f"diffusion_nft.group_size must be >= 2 samples per prompt, got {self.group_size}")
        check(self.num_steps is None or self.num_steps >= 1, f"diffusion_nft.num_steps must be >= 1 or null, got {self.num_steps}")
        check(self.beta > 0, f"diffusion_nft.beta must be > 0, got {self.beta}")
        check(self.adv_clip > 0, f"diffusion_nft.adv_clip must be > 0, got {self.adv_clip}")
        check(self.timesteps_per_sample >= 1, f"diffusion_nft.timesteps_per_sample must be >= 1, got {self.timesteps_per_sample}")
        check(self.decay_rate >= 0, f"diffusion_nft.decay_rate must be >= 0, got {self.decay_rate}")
        check(0 <= self.decay_max < 1, f"diffusion_nft.decay_max must be in [0, 1), got {self.decay_max}")
        check(self.decay_delay >= 0, f"diffusion_nft.decay_delay must be >= 0, got {self.decay_delay}")
        check(self.kl_beta >= 0, f"diffusion_nft.kl_beta must be >= 0, got {self.kl_beta}")
        check(self.updates_per_rollout >= 1, f"diffusion_nft.updates_per_rollout must be >= 1, got {self.updates_per_rollout}")

    @property
    def samples_per_prompt(self) -> int:
        """ODE samples one rollout draws per prompt."""
        return self.group_size

    def decay(self, step: int) -> float:
        """EMA decay of the old policy applied before the rollout of optimizer step ``step``."""
        return min(self.decay_rate * max(0, step - self.decay_delay), self.decay_max)


class SlowWeights:
    """A slow copy of a module's trainable parameters, swapped in place (no second model in memory).

    Swap only while no autograd graph that saved the parameters is alive: the swap exchanges ``param.data``."""

    def __init__(self, params: list[torch.nn.Parameter]) -> None:
        self.params = params
        self.tensors = [p.detach().clone() for p in params]

    @torch.no_grad()
    def update(self, decay: float) -> None:
        for slow, p in zip(self.tensors, self.params):
            slow.mul_(decay).add_(p.detach(), alpha=1 - decay)

    @contextlib.contextmanager
    def swapped(self) -> Iterator[None]:
        self._exchange()
        try:
            yield
        finally:
            self._exchange()

    def _exchange(self) -> None:
        for i, p in enumerate(self.params):
            p.data, self.tensors[i] = self.tensors[i], p.data


@register_algorithm("diffusion_nft")
class DiffusionNFT(Algorithm):
    """Negative-aware fine-tuning on the forward process (see module docstring)."""

    config_class = DiffusionNFTConfig

    def __init__(self, config: DiffusionNFTConfig | None = None) -> None:
        super().__init__(config or DiffusionNFTConfig())
        self.needs_reference = self.config.kl_beta > 0
        self.old: SlowWeights | None = None
        self.synced_step = 0

    @property
    def updates_per_rollout(self) -> int:
        return self.config.updates_per_rollout

    @property
    def samples_per_prompt(self) -> int:
        return self.config.samples_per_prompt

    def setup(self, ctx: TrainContext) -> None:
        policy = require_flow_model(ctx.policy, "diffusion_nft")
        if self.config.kl_beta > 0:
            require_reference(ctx, "diffusion_nft with kl_beta > 0")
        params = [p for p in policy.trainable_module().parameters() if p.requires_grad]
        if any(isinstance(p, DTensor) for p in params):
            raise ConfigError("diffusion_nft does not support a sharded policy yet (trainer.sharding=fsdp): its old-policy "
                              "copy is checkpointed unsharded; use trainer.sharding=none")
        self.old = SlowWeights(params)
        self.synced_step = 0

    def _old(self) -> SlowWeights:
        if self.old is None:
            raise RuntimeError("diffusion_nft: setup() was not called before rollout/loss")
        return self.old

    def rollout(self, ctx: TrainContext, batch: PromptBatch, generator: torch.Generator) -> Rollout:
        cfg = self.config
        policy = require_flow_model(ctx.policy, "diffusion_nft")
        old = self._old()
        if ctx.step > self.synced_step:
            old.update(cfg.decay(ctx.step))
            self.synced_step = ctx.step
        expanded = batch.repeat_interleave(cfg.group_size)
        noise = policy.make_noise(len(expanded), generator)
        policy.record_draws(noise.shape[0])
        with torch.no_grad(), old.swapped():
            latents = policy.sample_latents(noise, policy.encode(expanded.prompts), cfg.num_steps)
        samples = policy.decode(latents)
        rewards = ctx.score(samples, expanded)
        adv = group_advantages(rewards, cfg.group_size).clamp(-cfg.adv_clip, cfg.adv_clip)
        optimality = adv / (2 * cfg.adv_clip) + 0.5
        return Rollout(samples=samples, batch=expanded, rewards=rewards, noise=noise,
                       extras={"latents": latents, "optimality": optimality})

    def _noise_levels(self, policy: FlowModel, n: int, like: torch.Tensor) -> torch.Tensor:
        if self.config.timesteps == "uniform":
            return torch.rand(n).to(like.device, like.dtype)
        sigmas = policy.sigmas(self.config.num_steps)[:-1]
        return sigmas[torch.randint(len(sigmas), (n,))].to(like.device, like.dtype)

    def _x0_error(self, x_t: torch.Tensor, t: torch.Tensor, v: torch.Tensor, x0: torch.Tensor) -> torch.Tensor:
        diff = (x_t - t * v - x0).float().flatten(1)
        error = diff.pow(2).mean(1)
        if self.config.adaptive_weight:
            error = error / diff.detach().abs().mean(1).clamp_min(1e-5)
        return error

    def loss(self, ctx: TrainContext, rollout: Rollout) -> tuple[torch.Tensor, dict[str, float]]:
        cfg, policy, old = self.config, require_flow_model(ctx.policy, "diffusion_nft"), self._old()
        x0 = rollout.extras["latents"].detach()
        r = rollout.extras["optimality"].to(ctx.device).float()
        prompts = rollout.batch.prompts
        total: Any = 0.0
        deviation, kls = 0.0, 0.0
        for _ in range(cfg.timesteps_per_sample):
            t = self._noise_levels(policy, x0.shape[0], x0)
            eps = torch.randn(x0.shape).to(x0.device, x0.dtype)
            tb = broadcast_to(t, x0)
            x_t = (1 - tb) * x0 + tb * eps
            with torch.no_grad():
                with old.swapped():  # before v_θ's graph exists, so the swap cannot corrupt it
                    v_old = policy.velocity(x_t, t, policy.encode(prompts))
                v_ref = None
                if cfg.kl_beta > 0:
                    ref = require_flow_model(require_reference(ctx, "diffusion_nft with kl_beta > 0"), "diffusion_nft")
                    v_ref = ref.velocity(x_t, t, ref.encode(prompts))
            v = policy.velocity(x_t, t, policy.encode(prompts))
            positive = (1 - cfg.beta) * v_old + cfg.beta * v
            negative = (1 + cfg.beta) * v_old - cfg.beta * v
            nft = (r * self._x0_error(x_t, tb, positive, x0) + (1 - r) * self._x0_error(x_t, tb, negative, x0)).mean() / cfg.beta
            term = nft
            if v_ref is not None:
                kl = (v - v_ref).float().pow(2).flatten(1).mean(1).mean()
                term = term + cfg.kl_beta * kl
                kls += float(kl.detach())
            total = total + term / cfg.timesteps_per_sample
            deviation += float((v.detach() - v_old).float().pow(2).mean())
        n = cfg.timesteps_per_sample
        metrics = {"diffusion_nft/old_deviation": deviation / n, "diffusion_nft/decay": cfg.decay(self.synced_step),
                   "diffusion_nft/optimality": float(r.detach().mean())}
        if cfg.kl_beta > 0:
            metrics["diffusion_nft/kl"] = kls / n
        return total, metrics

    def state_dict(self) -> dict[str, Any]:
        return {"old": [t.detach().cpu() for t in self._old().tensors], "synced_step": self.synced_step}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        old = self._old()
        tensors = state.get("old")
        if tensors is None or len(tensors) != len(old.tensors):
            raise ValueError(f"diffusion_nft state has {0 if tensors is None else len(tensors)} old-policy tensors, "
                             f"the policy has {len(old.tensors)} trainable parameters")
        for slow, saved in zip(old.tensors, tensors):
            if slow.shape != saved.shape:
                raise ValueError(f"diffusion_nft old-policy tensor of shape {tuple(saved.shape)} does not match {tuple(slow.shape)}")
            slow.copy_(saved)
        self.synced_step = int(state["synced_step"])


__all__ = ["DiffusionNFT", "DiffusionNFTConfig", "SlowWeights"]
