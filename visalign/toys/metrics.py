"""Distances between sample sets: multi-bandwidth RBF MMD, sliced W2, and the noise floor of a distance."""
from __future__ import annotations

from typing import Callable, Sequence

import torch

DEFAULT_BANDWIDTHS = (0.1, 0.2, 0.5, 1.0, 2.0)


def mmd_rbf(x: torch.Tensor, y: torch.Tensor, bandwidths: Sequence[float] = DEFAULT_BANDWIDTHS) -> float:
    """sqrt of the biased (V-statistic) MMD² with k(a, b) = mean_h exp(−‖a − b‖²/(2h²)) — never negative."""
    x, y = x.detach().double().flatten(1), y.detach().double().flatten(1)
    xx, yy, xy = torch.cdist(x, x).pow(2), torch.cdist(y, y).pow(2), torch.cdist(x, y).pow(2)
    def k(sq: torch.Tensor) -> torch.Tensor:
        return torch.stack([torch.exp(-sq / (2 * h * h)) for h in bandwidths]).mean(0)
    value = k(xx).mean() + k(yy).mean() - 2 * k(xy).mean()
    return float(value.clamp_min(0).sqrt())


def sliced_w2(x: torch.Tensor, y: torch.Tensor, num_projections: int = 256, seed: int = 0) -> float:
    """sqrt(mean over random unit directions θ of W2²(θ·x, θ·y)); 1-D W2 from sorted quantiles (equal sizes
    compare sorted values, unequal sizes interpolate quantiles)."""
    x, y = x.detach().double().flatten(1), y.detach().double().flatten(1)
    g = torch.Generator().manual_seed(seed)
    theta = torch.randn(x.shape[1], num_projections, generator=g, dtype=torch.float64)
    theta = theta / theta.norm(dim=0, keepdim=True)
    px, py = (x @ theta).sort(0).values, (y @ theta).sort(0).values
    if px.shape[0] != py.shape[0]:
        q = torch.linspace(0, 1, max(px.shape[0], py.shape[0]), dtype=torch.float64)
        px, py = torch.quantile(px, q, dim=0), torch.quantile(py, q, dim=0)
    return float((px - py).pow(2).mean().sqrt())


def noise_floor(
    sampler: Callable[[int, torch.Generator], torch.Tensor],
    n: int,
    distance: Callable[[torch.Tensor, torch.Tensor], float] = mmd_rbf,
    repeats: int = 5,
    seed: int = 1000,
) -> tuple[float, float]:
    """Mean and std of ``distance`` between two *independent* target sample sets of size ``n`` — the value a
    perfect generator would get; distances near it mean "indistinguishable at this sample size"."""
    values = []
    for r in range(repeats):
        g = torch.Generator().manual_seed(seed + r)
        values.append(distance(sampler(n, g), sampler(n, g)))
    t = torch.tensor(values)
    return float(t.mean()), float(t.std()) if repeats > 1 else 0.0
