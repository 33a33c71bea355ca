"""Flow-model protocol: a generator that integrates a velocity field from noise to data in latent space, then decodes.

Convention (diffusers' flow matching): ``x_t = (1 - t) x_0 + t ε`` with ``t = 1`` pure noise; the network predicts
``v = ε - x_0``. A model implements :meth:`FlowModel.velocity`, its timestep schedule (:meth:`FlowModel.sigmas`) and
:meth:`FlowModel.decode`; the ODE step, the Flow-GRPO SDE step with its Gaussian log-prob, trajectory recording
and the flow-matching regression are shared here, so Flow-GRPO, DiffusionNFT, flow-RWR, DRaFT-K and the reflection
and audio-video methods drive a tiny built-in model and a diffusers adapter through the same calls.
"""
from __future__ import annotations

import math
from abc import abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Sequence

import torch

from .generator import Generator
from .types import Samples


@dataclass
class SDETrajectory:
    """A sampling path: ``latents[:, k]`` is the state before step k, ``latents[:, -1]`` the result.

    Steps in ``sde_steps`` were sampled by the SDE and carry their Gaussian log-prob; the others were deterministic
    ODE steps (log-prob 0, nothing to train)."""

    latents: torch.Tensor
    log_probs: torch.Tensor
    sigmas: torch.Tensor
    cond: Any
    noise_level: float
    sde_steps: tuple[int, ...]

    @property
    def final(self) -> torch.Tensor:
        return self.latents[:, -1]

    @property
    def num_steps(self) -> int:
        return self.log_probs.shape[1]


def flow_sigmas(num_steps: int, shift: float = 1.0) -> torch.Tensor:
    """Noise levels 1 → 0 of diffusers' ``FlowMatchEulerDiscreteScheduler`` (with its timestep shift)."""
    from diffusers import FlowMatchEulerDiscreteScheduler

    scheduler = FlowMatchEulerDiscreteScheduler(num_train_timesteps=1000, shift=shift)
    scheduler.set_timesteps(num_steps)
    return scheduler.sigmas.float()


def shift_times(t: torch.Tensor, shift: float) -> torch.Tensor:
    """SD3's timestep shift ``s·t / (1 + (s - 1)·t)`` of noise levels in [0, 1]: ``shift > 1`` moves them towards pure
    noise, where a sample commits to one of several outcomes (1: unchanged). The sampler's schedule
    (:func:`flow_sigmas`, diffusers' scheduler) shifts its noise levels by the same map."""
    if not shift > 0:
        raise ValueError(f"time shift must be > 0, got {shift}")
    return t if shift == 1.0 else shift * t / (1 + (shift - 1) * t)


def broadcast_to(value: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """A per-item ``[B]`` tensor shaped to multiply ``like`` (``[B, ...]``)."""
    return value.reshape(-1, *([1] * (like.dim() - 1)))


def noise_latents(x0: torch.Tensor, t: torch.Tensor, eps: torch.Tensor) -> torch.Tensor:
    """The flow-matching forward process ``x_t = (1 - t) x_0 + t ε`` for latents of any shape (``t``: ``[B]``)."""
    if eps.shape != x0.shape or t.shape != (x0.shape[0],):
        raise ValueError(f"noise_latents: latents {tuple(x0.shape)} need noise of the same shape and t of shape "
                         f"({x0.shape[0]},); got noise {tuple(eps.shape)} and t {tuple(t.shape)}")
    tb = broadcast_to(t.to(x0.dtype), x0)
    return (1 - tb) * x0 + tb * eps


def sde_step_stats(x: torch.Tensor, v: torch.Tensor, sigma: float, sigma_next: float, noise_level: float,
                   sigma_cap: float) -> tuple[torch.Tensor, float]:
    """Mean and std of one Flow-GRPO SDE step ``x_σ -> x_σ'`` given velocity ``v``.

    std_σ = a·sqrt(σ/(1-σ)) (σ capped at ``sigma_cap`` inside the root, so the first step at σ = 1 stays finite);
    mean = x + [v + std_σ²/(2σ)·(x + (1-σ)v)]·dt with dt = σ' - σ < 0; step std = std_σ·sqrt(-dt). The marginals
    match the ODE's for any noise level a."""
    dt = sigma_next - sigma
    std_sigma = noise_level * math.sqrt(sigma / (1 - min(sigma, sigma_cap)))
    mean = x + (v + std_sigma**2 / (2 * sigma) * (x + (1 - sigma) * v)) * dt
    return mean, std_sigma * math.sqrt(-dt)


def gaussian_log_prob(x: torch.Tensor, mean: torch.Tensor, std: float, reduce: str = "mean") -> torch.Tensor:
    """Per-item log N(x; mean, std²), averaged (``mean``: ratios stay well scaled) or summed over non-batch dims."""
    elem = -((x - mean).float() ** 2) / (2 * std**2) - math.log(std) - 0.5 * math.log(2 * math.pi)
    elem = elem.flatten(1)
    return elem.mean(1) if reduce == "mean" else elem.sum(1)


class FlowModel(Generator):
    """A generator sampled by integrating ``velocity`` from ``t = 1`` to ``0`` (latents), then ``decode``.

    Implement :meth:`velocity` (and :meth:`encode` for prompts, :meth:`decode` for latent models, :meth:`sigmas`
    for another schedule). Everything else is shared: :meth:`sample_latents` (Euler ODE, with gradients through the
    last K steps for DRaFT-K), :meth:`sample_sde` (Flow-GRPO SDE on all steps or a window, per-step log-probs),
    :meth:`transition` / :meth:`sde_log_prob` (differentiable re-scoring of a recorded step) and
    :meth:`flow_matching_loss`."""

    kind: ClassVar[str] = "few_step"

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self._sigma_cache: dict[tuple[int, float], torch.Tensor] = {}

    # ------------------------------------------------------------------ what a model provides
    @property
    def num_steps(self) -> int:
        """Default number of sampling steps."""
        return int(self.config.num_steps)

    @property
    def shift(self) -> float:
        """Timestep shift of the default schedule (1 = uniform)."""
        return float(self.config.shift)

    def sigmas(self, num_steps: int | None = None) -> torch.Tensor:
        """Noise levels ``[K + 1]`` from 1 down to 0."""
        key = (num_steps or self.num_steps, self.shift)
        if key not in self._sigma_cache:
            self._sigma_cache[key] = flow_sigmas(*key)
        return self._sigma_cache[key]

    @abstractmethod
    def velocity(self, x: torch.Tensor, t: torch.Tensor, cond: Any = None) -> torch.Tensor:
        """Predicted ``ε - x_0`` at noise level ``t`` (shape ``[B]``, in [0, 1])."""

    def decode(self, latents: torch.Tensor) -> Samples:
        """Latents -> samples (identity for pixel-space models)."""
        return latents

    # ------------------------------------------------------------------ shared sampling
    def time(self, sigma: float, like: torch.Tensor) -> torch.Tensor:
        return torch.full((like.shape[0],), sigma, device=like.device, dtype=like.dtype)

    def ode_step(self, x: torch.Tensor, v: torch.Tensor, sigma: float, sigma_next: float) -> torch.Tensor:
        return x + (sigma_next - sigma) * v

    def sample_latents(self, noise: torch.Tensor, cond: Any = None, num_steps: int | None = None,
                       grad_steps: int | None = None, stop: int | None = None) -> torch.Tensor:
        """Euler ODE from ``noise`` to clean latents; with grad enabled, gradients flow through every step, or only
        the last ``grad_steps`` (DRaFT-K). ``stop = k`` takes only the first k steps and returns the intermediate
        latent at noise level ``sigmas[k]`` (PRFL-style feedback at an intermediate timestep)."""
        sigmas = self.sigmas(num_steps).tolist()
        total = len(sigmas) - 1
        if stop is not None:
            if not 0 <= stop <= total:
                raise ValueError(f"stop must be in [0, {total}] for {total} sampling steps, got {stop}")
            sigmas, total = sigmas[: stop + 1], stop
        x = noise
        for k, (sigma, sigma_next) in enumerate(zip(sigmas[:-1], sigmas[1:])):
            keep = grad_steps is None or k >= total - grad_steps
            with torch.set_grad_enabled(keep and torch.is_grad_enabled()):
                x = self.ode_step(x, self.velocity(x, self.time(sigma, x), cond), sigma, sigma_next)
        return x

    def generate(self, noise: torch.Tensor, cond: Any = None, num_steps: int | None = None) -> Samples:
        """Euler ODE from ``t = 1`` to ``0``, then decode; differentiable through every step."""
        return self.decode(self.sample_latents(noise, cond, num_steps))

    def sample_sde(
        self,
        noise: torch.Tensor,
        prompts: Sequence[str] | None = None,
        *,
        cond: Any = None,
        generator: torch.Generator | None = None,
        num_steps: int | None = None,
        noise_level: float = 0.7,
        sde_steps: Sequence[int] | None = None,
    ) -> SDETrajectory:
        """Sample without grad, recording every state. Steps in ``sde_steps`` (default: all) use the SDE and record
        their log-prob; the rest are ODE steps."""
        sigmas = self.sigmas(num_steps)
        total = len(sigmas) - 1
        steps = tuple(range(total)) if sde_steps is None else tuple(sorted(set(sde_steps)))
        if any(not 0 <= k < total for k in steps):
            raise ValueError(f"sde_steps {steps} out of range for {total} sampling steps")
        cond = self.encode(prompts) if cond is None else cond
        self.record_draws(noise.shape[0])
        x = noise
        states, log_probs = [x], []
        cap = float(sigmas[1])
        with torch.no_grad():
            for k, (sigma, sigma_next) in enumerate(zip(sigmas[:-1].tolist(), sigmas[1:].tolist())):
                v = self.velocity(x, self.time(sigma, x), cond)
                if k in steps:
                    mean, std = sde_step_stats(x, v, sigma, sigma_next, noise_level, cap)
                    eps = torch.randn(x.shape, generator=generator).to(x.device, x.dtype)
                    x = mean + std * eps
                    log_probs.append(gaussian_log_prob(x, mean, std))
                else:
                    x = self.ode_step(x, v, sigma, sigma_next)
                    log_probs.append(torch.zeros(x.shape[0], device=x.device))
                states.append(x)
        return SDETrajectory(torch.stack(states, 1), torch.stack(log_probs, 1), sigmas, cond, noise_level, steps)

    def transition(self, trajectory: SDETrajectory, step: int, cond: Any = None) -> tuple[torch.Tensor, float]:
        """(mean, std) of recorded SDE step ``step`` under the current weights (differentiable through the velocity)."""
        sigmas = trajectory.sigmas
        sigma, sigma_next = float(sigmas[step]), float(sigmas[step + 1])
        x = trajectory.latents[:, step]
        v = self.velocity(x, self.time(sigma, x), trajectory.cond if cond is None else cond)
        return sde_step_stats(x, v, sigma, sigma_next, trajectory.noise_level, float(sigmas[1]))

    def sde_log_prob(self, trajectory: SDETrajectory, step: int, cond: Any = None) -> torch.Tensor:
        """Log-prob of recorded SDE step ``step`` under the current weights (differentiable)."""
        mean, std = self.transition(trajectory, step, cond)
        return gaussian_log_prob(trajectory.latents[:, step + 1], mean, std)

    def flow_matching_loss(self, x0: torch.Tensor, cond: Any = None, generator: torch.Generator | None = None,
                           weights: torch.Tensor | None = None, time_shift: float = 1.0,
                           noise: torch.Tensor | None = None, loss_space: str = "velocity") -> torch.Tensor:
        """Conditional flow-matching regression ``‖v(x_t, t) - (ε - x_0)‖²`` on clean latents ``x0`` (pretraining,
        SFT, reward-weighted regression with per-item ``weights``); ``t`` uniform, mapped by :func:`shift_times`
        when ``time_shift`` ≠ 1 (more training where samples commit). ``noise``: the ε paired with each item (e.g.
        by :func:`~visalign.core.coupling.ot_coupled_noise`); drawn independently when not given. ``loss_space``
        ``"sample"`` weights the error by ``t²``, which is the clean-estimate error ``‖x̂₀ − x₀‖²`` with
        ``x̂₀ = x_t − t·v`` (see :func:`flow_error_weights`)."""
        eps = flow_noise(x0, noise, generator)
        t = shift_times(torch.rand((x0.shape[0],), generator=generator), time_shift).to(x0.device, x0.dtype)
        error = (self.velocity(noise_latents(x0, t, eps), t, cond) - (eps - x0)).float() ** 2
        error = error * flow_error_weights(broadcast_to(t, error), loss_space)
        if weights is None:
            return error.mean()
        return (weights * error.flatten(1).mean(1)).sum() / weights.sum()


LOSS_SPACES = ("velocity", "sample")
#: what a flow network outputs: the velocity ε − x₀, or the clean sample x₀ (JiT-style x-prediction)
PREDICTIONS = ("velocity", "sample")
#: the smallest noise level a sample-predicting model divides by (JiT's clip): near t = 0 the velocity stays finite
SAMPLE_PREDICTION_MIN_TIME = 0.05


def velocity_from_sample(x: torch.Tensor, x0_hat: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """The velocity of a clean-sample estimate ``x̂₀`` at ``x_t = (1 − t) x₀ + t ε``: ``(x_t − x̂₀) / max(t, 0.05)``
    (``t`` broadcasts against ``x``), so a sample-predicting network plugs into every velocity-based sampler and
    loss."""
    return (x - x0_hat) / t.clamp_min(SAMPLE_PREDICTION_MIN_TIME).to(x.dtype)


def flow_error_weights(t: torch.Tensor, loss_space: str) -> torch.Tensor:
    """Weights of the squared velocity error at noise levels ``t`` (any shape that broadcasts against the error).
    ``"velocity"``: 1, the plain flow-matching loss, which is the clean-estimate error divided by ``t²`` (most of
    its weight near clean data). ``"sample"``: ``t²``, the loss in clean-sample space ``‖x̂₀ − x₀‖²``
    (``x̂₀ − x₀ = −t (v − v*)``), which weights every level's clean-estimate error alike; with x-prediction it is
    what makes the tiny audio-video model place the shape from the prompt and the frame."""
    if loss_space not in LOSS_SPACES:
        raise ValueError(f"loss_space must be one of {LOSS_SPACES}, got {loss_space!r}")
    return torch.ones((), dtype=torch.float32, device=t.device) if loss_space == "velocity" else t.float() ** 2


def flow_noise(x0: torch.Tensor, noise: torch.Tensor | None, generator: torch.Generator | None) -> torch.Tensor:
    """The ε of a flow-matching loss: ``noise`` (checked against the latents' shape) or a fresh Gaussian draw."""
    if noise is None:
        return torch.randn(x0.shape, generator=generator).to(x0.device, x0.dtype)
    if noise.shape != x0.shape:
        raise ValueError(f"noise must have the latents' shape {tuple(x0.shape)}, got {tuple(noise.shape)}")
    return noise.to(x0.device, x0.dtype)


@torch.no_grad()
def sample_from_level(model: FlowModel, x0: torch.Tensor, level: float, noise: torch.Tensor, cond: Any = None,
                      num_steps: int = 8) -> torch.Tensor:
    """Euler ODE in ``num_steps`` equal steps from ``(1 - level) x0 + level·ε`` (clean latents ``x0`` noised to
    ``level``; ε = ``noise``) to 0 (SDEdit): at level 1 a free sample, at lower levels the model only finishes what
    the noised latents already say. How well it finishes a sample from each level shows where sampling fails."""
    if not 0.0 < level <= 1.0:
        raise ValueError(f"level must be in (0, 1], got {level}")
    sigmas = torch.linspace(level, 0.0, num_steps + 1).tolist()
    x = noise_latents(x0, torch.full((x0.shape[0],), level, dtype=x0.dtype, device=x0.device), noise)
    for sigma, sigma_next in zip(sigmas[:-1], sigmas[1:]):
        x = model.ode_step(x, model.velocity(x, model.time(sigma, x), cond), sigma, sigma_next)
    return x


__all__ = ["FlowModel", "SDETrajectory", "flow_sigmas", "flow_noise", "flow_error_weights", "LOSS_SPACES",
           "shift_times", "sde_step_stats", "gaussian_log_prob", "broadcast_to", "noise_latents", "sample_from_level"]
