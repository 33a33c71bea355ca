"""Gaussian kernel density estimates (differentiable in the kernel centres) and bandwidth rules."""
from __future__ import annotations

import math
from typing import Sequence

import torch

from ..core.config import ConfigError

BANDWIDTH_RULES = ("scott", "silverman", "median")


def _scale(samples: torch.Tensor) -> float:
    """Isotropic data scale σ = sqrt(mean per-dimension variance)."""
    return float(samples.detach().double().flatten(1).var(0, unbiased=True).mean().sqrt())


def bandwidth(samples: torch.Tensor, rule: str | float = "scott") -> float:
    """Kernel std h from ``n`` samples in ``d`` dims (isotropic):

    scott:     h = σ · n^(−1/(d+4))
    silverman: h = σ · (4/(d+2))^(1/(d+4)) · n^(−1/(d+4))
    median:    h = median_{i<j} ‖x_i − x_j‖ / sqrt(2·log(n+1))   (the SVGD median trick)
    a number:  that fixed h."""
    if isinstance(rule, (int, float)):
        if rule <= 0:
            raise ConfigError(f"a fixed bandwidth must be > 0, got {rule}")
        return float(rule)
    x = samples.detach().double().flatten(1)
    n, d = x.shape
    if n < 2:
        raise ConfigError(f"a bandwidth rule needs at least 2 samples, got {n}")
    if rule == "scott":
        h = _scale(x) * n ** (-1.0 / (d + 4))
    elif rule == "silverman":
        h = _scale(x) * (4.0 / (d + 2)) ** (1.0 / (d + 4)) * n ** (-1.0 / (d + 4))
    elif rule == "median":
        dist = torch.pdist(x)
        h = float(dist.median()) / math.sqrt(2.0 * math.log(n + 1))
    else:
        raise ConfigError(f"unknown bandwidth rule {rule!r}; use one of {BANDWIDTH_RULES} or a number")
    return max(h, 1e-8)


def kde_log_prob(x: torch.Tensor, centres: torch.Tensor, h: float) -> torch.Tensor:
    """log p̂(x) = log (1/N) Σ_j N(x; y_j, h²I) for each row of ``x`` (differentiable in ``x`` and ``centres``)."""
    x2, y2 = x.flatten(1), centres.flatten(1)
    if x2.shape[1] != y2.shape[1]:
        raise ValueError(f"KDE points have dim {x2.shape[1]} but centres have dim {y2.shape[1]}")
    d, n = x2.shape[1], y2.shape[0]
    sq = (x2.pow(2).sum(1, keepdim=True) + y2.pow(2).sum(1)[None, :] - 2 * x2 @ y2.T).clamp_min(0.0)
    return torch.logsumexp(-sq / (2 * h * h), dim=1) - math.log(n) - 0.5 * d * math.log(2 * math.pi * h * h)


def multi_bandwidth_log_prob(x: torch.Tensor, centres: torch.Tensor, bandwidths: Sequence[float]) -> torch.Tensor:
    """Average of the KDE log-likelihoods over several bandwidths (robust to any single choice)."""
    return torch.stack([kde_log_prob(x, centres, h) for h in bandwidths]).mean(0)
