"""Flow-matching generators: Euler ODE sampling (few / multi-step) and the Flow-GRPO SDE with per-step log-probs.

Convention: ``x_t = (1 - t) x_0 + t ε`` with ``t = 1`` pure noise; the network predicts ``v = ε - x_0``.
"""
from __future__ import annotations

import math
from abc import abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from ..core.generator import Generator


@dataclass
class SDETrajectory:
    """A stochastic sampling path: ``latents[:, k]`` is the state before step k, ``latents[:, -1]`` the result."""

    latents: torch.Tensor
    log_probs: torch.Tensor
    sigmas: torch.Tensor
    cond: Any
    noise_level: float

    @property
    def final(self) -> torch.Tensor:
        return self.latents[:, -1]

    @property
    def num_steps(self) -> int:
        return self.log_probs.shape[1]


def flow_sigmas(num_steps: int, shift: float = 1.0) -> torch.Tensor:
    """Noise levels 1 → 0 from diffusers' ``FlowMatchEulerDiscreteScheduler`` (with its timestep shift)."""
    from diffusers import FlowMatchEulerDiscreteScheduler

    scheduler = FlowMatchEulerDiscreteScheduler(num_train_timesteps=1000, shift=shift)
    scheduler.set_timesteps(num_steps)
    return scheduler.sigmas.float()


def _broadcast(value: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return value.reshape(-1, *([1] * (like.dim() - 1)))


def sde_step_stats(x: torch.Tensor, v: torch.Tensor, sigma: float, sigma_next: float, noise_level: float, sigma_cap: float):
    """Mean and std of one Flow-GRPO SDE step ``x_σ -> x_σ'`` given velocity ``v``.

    std_σ = a·sqrt(σ/(1-σ)); mean = x + [v + std_σ²/(2σ)·(x + (1-σ)v)]·dt with dt = σ' - σ < 0;
    step std = std_σ·sqrt(-dt). The marginals match the ODE's for any noise level a.
    """
    dt = sigma_next - sigma
    std_sigma = noise_level * math.sqrt(sigma / (1 - min(sigma, sigma_cap)))
    mean = x + (v + std_sigma**2 / (2 * sigma) * (x + (1 - sigma) * v)) * dt
    return mean, std_sigma * math.sqrt(-dt)


def gaussian_log_prob(x: torch.Tensor, mean: torch.Tensor, std: float, reduce: str = "mean") -> torch.Tensor:
    """Per-item log N(x; mean, std²), averaged (``mean``, stable ratios) or summed over non-batch dims."""
    elem = -((x - mean) ** 2) / (2 * std**2) - math.log(std) - 0.5 * math.log(2 * math.pi)
    elem = elem.flatten(1)
    return elem.mean(1) if reduce == "mean" else elem.sum(1)


class FlowMatchingGenerator(Generator):
    """Base for velocity-field generators; subclasses implement ``velocity(x, t, cond)``."""

    kind: ClassVar[str] = "few_step"

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self._sigma_cache: dict[tuple[int, float], torch.Tensor] = {}

    @property
    def num_steps(self) -> int:
        return int(getattr(self.config, "num_steps", 4))

    @property
    def shift(self) -> float:
        return float(getattr(self.config, "shift", 1.0))

    def sigmas(self, num_steps: int | None = None) -> torch.Tensor:
        key = (num_steps or self.num_steps, self.shift)
        if key not in self._sigma_cache:
            self._sigma_cache[key] = flow_sigmas(*key)
        return self._sigma_cache[key]

    @abstractmethod
    def velocity(self, x: torch.Tensor, t: torch.Tensor, cond: Any = None) -> torch.Tensor:
        """Predicted ``ε - x_0`` at noise level ``t`` (shape ``[B]``, in [0, 1])."""

    def decode(self, latents: torch.Tensor) -> Any:
        """Latents -> samples (identity for pixel-space models)."""
        return latents

    def generate(self, noise: torch.Tensor, cond: Any = None, num_steps: int | None = None) -> Any:
        """Euler ODE from ``t=1`` to ``0``; differentiable through every step."""
        sigmas = self.sigmas(num_steps)
        x = noise
        for sigma, sigma_next in zip(sigmas[:-1].tolist(), sigmas[1:].tolist()):
            t = torch.full((x.shape[0],), sigma, device=x.device, dtype=x.dtype)
            x = x + (sigma_next - sigma) * self.velocity(x, t, cond)
        return self.decode(x)

    def sample_sde(
        self,
        noise: torch.Tensor,
        prompts=None,
        *,
        generator: torch.Generator | None = None,
        num_steps: int | None = None,
        noise_level: float = 0.7,
        cond: Any = None,
    ) -> SDETrajectory:
        """Sample with the SDE (no grad), recording every state and each step's log-prob."""
        sigmas = self.sigmas(num_steps)
        cond = self.encode(prompts) if cond is None else cond
        x = noise
        states, log_probs = [x], []
        cap = float(sigmas[1])
        with torch.no_grad():
            for sigma, sigma_next in zip(sigmas[:-1].tolist(), sigmas[1:].tolist()):
                t = torch.full((x.shape[0],), sigma, device=x.device, dtype=x.dtype)
                mean, std = sde_step_stats(x, self.velocity(x, t, cond), sigma, sigma_next, noise_level, cap)
                eps = torch.randn(x.shape, generator=generator).to(x.device, x.dtype)
                x = mean + std * eps
                states.append(x)
                log_probs.append(gaussian_log_prob(x, mean, std))
        return SDETrajectory(torch.stack(states, 1), torch.stack(log_probs, 1), sigmas, cond, noise_level)

    def sde_log_prob(self, trajectory: SDETrajectory, step: int, cond: Any = None) -> torch.Tensor:
        """Log-prob of the recorded transition ``step`` under the current weights (differentiable)."""
        sigmas = trajectory.sigmas
        sigma, sigma_next = float(sigmas[step]), float(sigmas[step + 1])
        x, x_next = trajectory.latents[:, step], trajectory.latents[:, step + 1]
        t = torch.full((x.shape[0],), sigma, device=x.device, dtype=x.dtype)
        cond = trajectory.cond if cond is None else cond
        mean, std = sde_step_stats(x, self.velocity(x, t, cond), sigma, sigma_next, trajectory.noise_level, float(sigmas[1]))
        return gaussian_log_prob(x_next, mean, std)

    def flow_matching_loss(self, x0: torch.Tensor, cond: Any = None, generator: torch.Generator | None = None) -> torch.Tensor:
        """Conditional flow-matching regression ``‖v(x_t, t) - (ε - x_0)‖²`` (pretraining and SFT)."""
        eps = torch.randn(x0.shape, generator=generator).to(x0.device, x0.dtype)
        t = torch.rand((x0.shape[0],), generator=generator).to(x0.device, x0.dtype)
        xt = (1 - _broadcast(t, x0)) * x0 + _broadcast(t, x0) * eps
        return ((self.velocity(xt, t, cond) - (eps - x0)) ** 2).mean()
