"""Isotropic Gaussian mixtures with closed-form reward tilts, and exact tilted sampling by importance resampling."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch


@dataclass
class GaussianMixture:
    """p(x) = Σ_k π_k N(x; μ_k, s_k² I)."""

    means: torch.Tensor  # [K, d]
    stds: torch.Tensor  # [K]
    weights: torch.Tensor  # [K], sums to 1

    def sample(self, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        k = torch.multinomial(self.weights, n, replacement=True, generator=generator)
        eps = torch.randn(n, self.means.shape[1], generator=generator)
        return self.means[k] + self.stds[k, None] * eps

    def log_prob(self, x: torch.Tensor) -> torch.Tensor:
        d = self.means.shape[1]
        sq = torch.cdist(x, self.means).pow(2)
        comp = -sq / (2 * self.stds**2) - d * torch.log(self.stds) - 0.5 * d * math.log(2 * math.pi)
        return torch.logsumexp(comp + torch.log(self.weights), dim=1)

    def tilt_linear(self, direction: torch.Tensor, beta: float) -> "GaussianMixture":
        """Exact T_β[p] for r(x) = a·x: component k -> N(μ_k + s_k² a/β, s_k² I),
        π_k ∝ π_k exp(a·μ_k/β + s_k²‖a‖²/(2β²))."""
        a = direction.to(self.means) / beta
        s2 = self.stds**2
        logw = torch.log(self.weights) + self.means @ a + 0.5 * s2 * a.pow(2).sum()
        return GaussianMixture(self.means + s2[:, None] * a, self.stds.clone(), torch.softmax(logw, 0))

    def tilt_quadratic(self, centre: torch.Tensor, scale: float, beta: float) -> "GaussianMixture":
        """Exact T_β[p] for r(x) = −scale·‖x − c‖²: precision 1/s² + 2·scale/β, mean pulled toward c,
        π_k ∝ π_k (s'_k/s_k)^d exp(−‖μ_k − c‖² / (2(s_k² + β/(2·scale))))."""
        c = centre.to(self.means)
        d = self.means.shape[1]
        s2 = self.stds**2
        tau2 = beta / (2 * scale)  # variance of the reward "Gaussian" exp(−‖x−c‖²/(2τ²))
        new_s2 = s2 * tau2 / (s2 + tau2)
        new_mu = (self.means * tau2 + c * s2[:, None]) / (s2 + tau2)[:, None]
        logw = torch.log(self.weights) - (self.means - c).pow(2).sum(1) / (2 * (s2 + tau2)) + 0.5 * d * torch.log(new_s2 / s2)
        return GaussianMixture(new_mu, new_s2.sqrt(), torch.softmax(logw, 0))


def ring_mixture(num_modes: int = 8, radius: float = 2.0, std: float = 0.2) -> GaussianMixture:
    """``num_modes`` equal Gaussians on a circle (the usual 2-D alignment toy)."""
    angles = torch.arange(num_modes) * (2 * math.pi / num_modes)
    means = radius * torch.stack([torch.cos(angles), torch.sin(angles)], 1)
    return GaussianMixture(means, torch.full((num_modes,), std), torch.full((num_modes,), 1.0 / num_modes))


def importance_resample(samples: torch.Tensor, log_weights: torch.Tensor, n: int, generator: torch.Generator | None = None):
    """Draw ``n`` points from Σ_i w_i δ_{x_i}, w ∝ exp(log_weights); returns (points, effective sample size).

    Exact for the tilted target as the pool grows; keep ESS ≫ n so duplicates are rare."""
    w = torch.softmax(log_weights.double(), 0)
    ess = float(1.0 / (w**2).sum())
    idx = torch.multinomial(w, n, replacement=True, generator=generator)
    return samples[idx], ess


def tilted_reference_sample(
    sampler: Callable[[int, torch.Generator], torch.Tensor],
    reward: Callable[[torch.Tensor], torch.Tensor],
    beta: float,
    n: int,
    pool: int = 200_000,
    seed: int = 0,
):
    """Samples of T_β[p_ref] ∝ p_ref·exp(r/β) for any sampler (e.g. a pretrained reference generator):
    importance resampling from a large pool. Returns (points, ESS of the pool)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        x = sampler(pool, g)
        return importance_resample(x, reward(x) / beta, n, g)
