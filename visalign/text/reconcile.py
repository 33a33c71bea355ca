"""Multi-reward gradient reconciliation (ORPG style) next to plain weighted sums.

Each reward has its own objective and gradient ``g_k`` (a flat vector). :func:`reconcile` turns them into one
update: compatible gradients are blended with a balanced reference at the plain sum's norm, conflicting ones are
resolved by PCGrad (equal objectives) or by projecting lower-priority gradients off higher-priority ones.
"""
from __future__ import annotations

from typing import Literal, Sequence

import torch

Mode = Literal["sum", "orpg", "pcgrad", "priority"]


def _stack(grads: Sequence[torch.Tensor]) -> torch.Tensor:
    if len(grads) == 0:
        raise ValueError("need at least one gradient")
    shapes = {tuple(g.shape) for g in grads}
    if len(shapes) != 1 or grads[0].dim() != 1:
        raise ValueError(f"gradients must be flat vectors of one length, got shapes {sorted(shapes)}")
    return torch.stack([g.double() for g in grads])


def weighted_sum(grads: Sequence[torch.Tensor], weights: Sequence[float] | None = None) -> torch.Tensor:
    """Plain combination ``sum_k w_k g_k`` (weights default to 1)."""
    g = _stack(grads)
    w = torch.ones(len(grads), dtype=g.dtype) if weights is None else torch.as_tensor(weights, dtype=g.dtype)
    if w.shape != (len(grads),):
        raise ValueError(f"{len(grads)} gradients but {w.numel()} weights")
    return (w[:, None] * g).sum(0).to(grads[0].dtype)


def cosine_matrix(grads: Sequence[torch.Tensor], eps: float = 1e-12) -> torch.Tensor:
    """Pairwise cosine similarities ``[K, K]`` (zero gradients count as orthogonal)."""
    g = _stack(grads)
    unit = g / g.norm(dim=1, keepdim=True).clamp(min=eps)
    return unit @ unit.T


def pcgrad(grads: Sequence[torch.Tensor], eps: float = 1e-12) -> torch.Tensor:
    """PCGrad (fixed order): each ``g_i`` is projected off every other ``g_j`` it conflicts with,
    ``g_i <- g_i - min(0, g_i.g_j)/||g_j||^2 g_j``, then the projected gradients are summed."""
    g = _stack(grads)
    out = g.clone()
    for i in range(len(g)):
        for j in range(len(g)):
            if i == j:
                continue
            dot = out[i] @ g[j]
            if dot < 0:
                out[i] = out[i] - dot / (g[j] @ g[j]).clamp(min=eps) * g[j]
    return out.sum(0).to(grads[0].dtype)


def priority_projection(grads: Sequence[torch.Tensor], order: Sequence[int] | None = None, eps: float = 1e-12) -> torch.Tensor:
    """Priority order (``order[0]`` most important): each gradient is projected off every higher-priority gradient
    it conflicts with, ``g <- g - min(0, g.g_h)/||g_h||^2 g_h``, then all are summed. The primary gradient is
    never altered, so ``update . g_primary >= ||g_primary||^2`` whenever the others were made non-conflicting."""
    g = _stack(grads)
    order = list(range(len(g))) if order is None else list(order)
    if sorted(order) != list(range(len(g))):
        raise ValueError(f"priority order {order} is not a permutation of 0..{len(g) - 1}")
    total = torch.zeros_like(g[0])
    kept: list[torch.Tensor] = []
    for k in order:
        cur = g[k].clone()
        for h in kept:
            dot = cur @ h
            if dot < 0:
                cur = cur - dot / (h @ h).clamp(min=eps) * h
        kept.append(g[k])
        total = total + cur
    return total.to(grads[0].dtype)


def orpg_blend(grads: Sequence[torch.Tensor], normalize_power: float = 0.5, eps: float = 1e-12) -> torch.Tensor:
    """Compatible gradients (min pairwise cosine ``c >= 0``): with the plain sum ``s = sum_k g_k`` and the partially
    normalised reference ``b = sum_k g_k / ||g_k||^p`` rescaled to ``||s||``, return
    ``u = ||s|| * d / ||d||`` with ``d = c*s + (1-c)*b``. Aligned gradients (``c = 1``) give ``u = s``; the norm
    of the plain sum is always kept (``||u|| = ||s||``)."""
    g = _stack(grads)
    norms = g.norm(dim=1)
    s = g.sum(0)
    s_norm = s.norm()
    if s_norm < eps:
        return s.to(grads[0].dtype)
    live = norms > eps
    b = (g[live] / norms[live, None] ** normalize_power).sum(0)
    b = b * s_norm / b.norm().clamp(min=eps)
    c = cosine_matrix(list(g[live])).min().clamp(0.0, 1.0) if live.sum() > 1 else torch.tensor(1.0, dtype=g.dtype)
    d = c * s + (1 - c) * b
    return (d * s_norm / d.norm().clamp(min=eps)).to(grads[0].dtype)


def reconcile(
    grads: Sequence[torch.Tensor],
    mode: Mode = "orpg",
    weights: Sequence[float] | None = None,
    priority: Sequence[int] | None = None,
    normalize_power: float = 0.5,
) -> tuple[torch.Tensor, dict[str, float]]:
    """One update from per-reward gradients.

    ``sum``: :func:`weighted_sum`. ``pcgrad`` / ``priority``: always that projection. ``orpg``: if every pair is
    compatible (cosine >= 0) use :func:`orpg_blend`, otherwise :func:`priority_projection` when a ``priority``
    order is given, else :func:`pcgrad`. ``weights`` scale each gradient first (all modes)."""
    if weights is not None:
        if len(weights) != len(grads):
            raise ValueError(f"{len(grads)} gradients but {len(weights)} weights")
        grads = [w * g for w, g in zip(weights, grads)]
    cos = cosine_matrix(grads)
    k = len(grads)
    min_cos = float(cos[~torch.eye(k, dtype=torch.bool)].min()) if k > 1 else 1.0
    info = {"min_cosine": min_cos, "conflict": float(min_cos < 0)}
    if mode == "sum":
        out = weighted_sum(grads)
    elif mode == "pcgrad":
        out = pcgrad(grads)
    elif mode == "priority":
        out = priority_projection(grads, priority)
    elif mode == "orpg":
        if min_cos >= 0:
            out = orpg_blend(grads, normalize_power)
        elif priority is not None:
            out = priority_projection(grads, priority)
        else:
            out = pcgrad(grads)
    else:
        raise ValueError(f"unknown reconciliation mode {mode!r}; use sum, orpg, pcgrad or priority")
    info["update_norm"] = float(out.norm())
    info["sum_norm"] = float(weighted_sum(grads).norm())
    return out, info
