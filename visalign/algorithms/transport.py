"""RWTD target construction as plain functions: tilted weights, the λ-mixture target, OT and barycentric projection.

Conventions: β is a *temperature* (weights ∝ exp(r/β)); λ is the weight of the *current* component of the
target, so λ = 1 − ρ with ρ the reference share of the method notes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from ..core.config import ConfigError
from ..features.blocks import BlockLayout

Solver = Literal["emd", "sinkhorn"]


def tilted_weights(rewards: torch.Tensor, beta: float) -> torch.Tensor:
    """w_i = exp(r_i/β) / Σ_j exp(r_j/β) — self-normalised importance weights of T_β[p] on samples of p.

    β → ∞ gives uniform weights (no tilt); β → 0 puts all mass on the best sample."""
    if not beta > 0:
        raise ConfigError(f"beta must be > 0 (a temperature), got {beta}")
    if math.isinf(beta):
        return torch.full_like(rewards, 1.0 / rewards.numel(), dtype=torch.float64)
    return torch.softmax(rewards.double() / beta, dim=0)


def effective_sample_size(weights: torch.Tensor) -> float:
    """ESS = (Σw)² / Σw² (n for uniform weights, 1 for a point mass)."""
    w = weights.double()
    return float(w.sum() ** 2 / (w**2).sum())


def beta_for_ess(rewards: torch.Tensor, ess_fraction: float, iters: int = 60) -> float:
    """The temperature β whose tilted weights have ESS = ess_fraction·n (bisection in log β; ESS grows with β).

    Returns ``inf`` when the rewards are all equal (every β gives ESS = n)."""
    if not 0 < ess_fraction <= 1:
        raise ConfigError(f"target_ess must be in (0, 1], got {ess_fraction}")
    n = rewards.numel()
    spread = float(rewards.double().std()) if n > 1 else 0.0
    if spread == 0.0 or ess_fraction >= 1.0:
        return math.inf
    lo, hi = math.log(spread * 1e-4), math.log(spread * 1e4)
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        if effective_sample_size(tilted_weights(rewards, math.exp(mid))) < ess_fraction * n:
            lo = mid
        else:
            hi = mid
    return math.exp(0.5 * (lo + hi))


def mixture_target(current_rewards: torch.Tensor, reference_rewards: torch.Tensor | None, beta: float, lam: float,
                   current_floor: float = 0.0) -> torch.Tensor:
    """Weights of Q = λ·T_β[p_θ] + (1−λ)·T_β[p_ref] on the union [current samples, reference samples].

    Each group is tilted separately (its own softmax), then scaled by λ or 1−λ; the result sums to 1.
    λ = 1 uses only current samples (on-policy tilting), λ = 0 only reference samples (off-policy tilting).
    ``current_floor`` f mixes the current weights with uniform ones, (1 − f)·softmax + f/K (published: 0.1)."""
    if not 0.0 <= lam <= 1.0:
        raise ConfigError(f"lam (current share of the target) must be in [0, 1], got {lam}")
    if not 0.0 <= current_floor <= 1.0:
        raise ConfigError(f"current_floor must be in [0, 1], got {current_floor}")
    w_cur = tilted_weights(current_rewards, beta)
    w_cur = ((1.0 - current_floor) * w_cur + current_floor / w_cur.numel()) * lam
    if reference_rewards is None or reference_rewards.numel() == 0:
        if lam < 1.0:
            raise ConfigError("lam < 1 needs reference samples (num_reference >= 1)")
        return w_cur
    w_ref = tilted_weights(reference_rewards, beta) * (1.0 - lam)
    return torch.cat([w_cur, w_ref.to(w_cur)])


def systematic_resample(weights: torch.Tensor, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """``n`` indices drawn ∝ ``weights`` by systematic resampling (one uniform offset, then a stride of 1/n): each
    particle appears ⌊n·w⌋ or ⌈n·w⌉ times. With ``n`` uniform particles on both sides, the exact OT plan is a
    permutation, so every source particle is mapped onto one whole target particle (no averaging)."""
    if n < 1:
        raise ValueError(f"systematic_resample: n must be >= 1, got {n}")
    w = weights.detach().double().cpu().flatten()
    if w.numel() == 0 or not torch.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
        raise ValueError("systematic_resample: weights must be finite, non-negative and not all zero")
    cdf = torch.cumsum(w / w.sum(), 0)
    positions = (torch.rand((), generator=generator, dtype=torch.float64) + torch.arange(n, dtype=torch.float64)) / n
    return torch.searchsorted(cdf, positions, right=True).clamp_max(w.numel() - 1)


def squared_cost(source: torch.Tensor, target: torch.Tensor, layout: BlockLayout | None = None) -> torch.Tensor:
    """C_ij = ‖s_i − t_j‖² (float64); with a block ``layout`` C_ij = Σ_b w_b·‖s_ib − t_jb‖² (per-block mean square
    for a :class:`~visalign.core.features.BlockFeatures` space)."""
    return (layout or BlockLayout.single(source.flatten(1).shape[1])).cost(source, target)


def transport_plan(
    cost: torch.Tensor,
    source_weights: torch.Tensor,
    target_weights: torch.Tensor,
    solver: Solver = "sinkhorn",
    eps_scale: float = 0.1,
    max_iter: int = 2000,
    eps_floor: float = 0.0,
) -> torch.Tensor:
    """Optimal coupling P with marginals (a, b) for cost C (POT).

    ``emd``: exact network simplex. ``sinkhorn``: entropic OT with ε = max(eps_scale · median(C), eps_floor), on
    a cost divided by its median for conditioning (log-domain fallback if the plan is not finite)."""
    import ot

    a = source_weights.detach().double().cpu().numpy()
    b = target_weights.detach().double().cpu().numpy()
    a, b = a / a.sum(), b / b.sum()
    c = cost.detach().double().cpu().numpy()
    if solver == "emd":
        plan = ot.emd(a, b, c, numItermax=max(100_000, 50 * c.size))
    elif solver == "sinkhorn":
        scale = float(np.median(c)) or 1.0
        eps = max(eps_scale, eps_floor / scale)
        plan = ot.sinkhorn(a, b, c / scale, eps, numItermax=max_iter, stopThr=1e-7)
        if not np.isfinite(plan).all() or plan.sum() < 0.5:
            plan = ot.sinkhorn(a, b, c / scale, eps, method="sinkhorn_log", numItermax=max_iter, stopThr=1e-7)
    else:
        raise ConfigError(f"unknown OT solver {solver!r}; use 'emd' or 'sinkhorn'")
    return torch.from_numpy(np.asarray(plan)).to(cost.device)


def barycentric_projection(plan: torch.Tensor, target_values: torch.Tensor) -> torch.Tensor:
    """ū_i = Σ_j P_ij u_j / Σ_j P_ij, one row per source point (shape ``[n_source, *target_values.shape[1:]]``)."""
    rows = plan.sum(1, keepdim=True).clamp_min(1e-300)
    flat = target_values.detach().double().flatten(1).to(plan.device)
    out = (plan / rows) @ flat
    return out.reshape(plan.shape[0], *target_values.shape[1:]).to(target_values.dtype)


def partial_step(current: torch.Tensor, projected: torch.Tensor, eta: float) -> torch.Tensor:
    """ũ = (1−η)·u + η·ū — the regression target moves a fraction η of the way to the transported point."""
    if not 0.0 < eta <= 1.0:
        raise ConfigError(f"step_size (eta) must be in (0, 1], got {eta}")
    return (1.0 - eta) * current.detach() + eta * projected.to(current)


@dataclass
class TransportResult:
    """Barycentric targets ū for each source point, the plan, and diagnostics."""

    targets: torch.Tensor
    plan: torch.Tensor
    cost: float


def transport_targets(
    source_feats: torch.Tensor,
    target_feats: torch.Tensor,
    target_weights: torch.Tensor,
    solver: Solver = "sinkhorn",
    eps_scale: float = 0.1,
    target_values: torch.Tensor | None = None,
    eps_floor: float = 0.0,
    layout: BlockLayout | None = None,
) -> TransportResult:
    """OT from uniform source particles to the weighted target particles, then barycentric projection.

    ``target_values`` (default: ``target_feats``) are the points averaged by the projection — features when the
    regression happens in feature space, samples when it happens in sample space. ``layout``: compare the features
    block by block (see :func:`squared_cost`)."""
    n = source_feats.shape[0]
    if target_feats.shape[0] != target_weights.numel():
        raise ValueError(f"{target_feats.shape[0]} target points but {target_weights.numel()} weights")
    cost = squared_cost(source_feats, target_feats, layout)
    uniform = torch.full((n,), 1.0 / n, dtype=torch.float64)
    plan = transport_plan(cost, uniform, target_weights, solver, eps_scale, eps_floor=eps_floor)
    values = target_feats if target_values is None else target_values
    return TransportResult(barycentric_projection(plan, values), plan, float((plan * cost.to(plan)).sum()))
