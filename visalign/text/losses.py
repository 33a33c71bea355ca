"""Token-level policy losses: PPO-clip surrogate with KL to a reference, on-policy distillation (reverse / forward
KL to a teacher) and the gradient-normalised hybrid of a reward loss and a distillation loss.

Shapes: per-token tensors are ``[B, T]`` over completion positions with a 0/1 ``mask`` of the same shape.
"""
from __future__ import annotations

from typing import Iterable, Literal

import torch
from torch import nn

Aggregation = Literal["token", "sequence", "constant"]
KLEstimator = Literal["k1", "k3"]


def aggregate(values: torch.Tensor, mask: torch.Tensor, mode: Aggregation = "token", max_len: int | None = None) -> torch.Tensor:
    """Reduce per-token ``values [B, T]`` to a scalar.

    - ``token``: ``sum_{i,t} m*v / sum_{i,t} m`` (every token weighs the same; DAPO)
    - ``sequence``: ``mean_i (sum_t m*v / sum_t m)`` (each sequence weighs the same; original GRPO)
    - ``constant``: ``sum_{i,t} m*v / (B * max_len)`` (no length normalisation; Dr.GRPO), ``max_len`` defaults to ``T``
    """
    if values.shape != mask.shape:
        raise ValueError(f"values {tuple(values.shape)} and mask {tuple(mask.shape)} differ in shape")
    m = mask.to(values.dtype)
    if mode == "token":
        return (values * m).sum() / m.sum().clamp(min=1.0)
    if mode == "sequence":
        per_seq = (values * m).sum(dim=1) / m.sum(dim=1).clamp(min=1.0)
        return per_seq.mean()
    if mode == "constant":
        denom = values.shape[0] * (max_len if max_len is not None else values.shape[1])
        return (values * m).sum() / max(denom, 1)
    raise ValueError(f"unknown aggregation {mode!r}; use 'token', 'sequence' or 'constant'")


def kl_penalty(logp: torch.Tensor, ref_logp: torch.Tensor, estimator: KLEstimator = "k3") -> torch.Tensor:
    """Per-token estimate of ``KL(pi || pi_ref)`` from sampled tokens (Schulman's estimators), ``d = ref_logp - logp``:
    ``k1 = -d`` (unbiased, can be negative), ``k3 = exp(d) - d - 1`` (unbiased, always >= 0)."""
    d = ref_logp - logp
    if estimator == "k1":
        return -d
    if estimator == "k3":
        return torch.exp(d) - d - 1.0
    raise ValueError(f"unknown KL estimator {estimator!r}; use 'k1' or 'k3'")


def ppo_clip_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_eps: float = 0.2,
    clip_eps_high: float | None = None,
    aggregation: Aggregation = "token",
    ref_logp: torch.Tensor | None = None,
    kl_coef: float = 0.0,
    kl_estimator: KLEstimator = "k3",
    max_len: int | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """PPO clipped surrogate per token, ``rho = exp(logp - old_logp)``:
    ``l_t = -min(rho*A, clip(rho, 1-eps, 1+eps_high)*A) + kl_coef * KL_t``, aggregated by :func:`aggregate`.

    ``advantages`` is ``[B]`` (one per sequence, broadcast over tokens) or ``[B, T]`` (per token).
    """
    if advantages.dim() == 1:
        advantages = advantages[:, None].expand_as(logp)
    if advantages.shape != logp.shape or old_logp.shape != logp.shape:
        raise ValueError(f"shape mismatch: logp {tuple(logp.shape)}, old_logp {tuple(old_logp.shape)}, advantages {tuple(advantages.shape)}")
    hi = clip_eps if clip_eps_high is None else clip_eps_high
    advantages = advantages.detach().to(logp.dtype)
    ratio = torch.exp(logp - old_logp.detach())
    unclipped = ratio * advantages
    clipped = ratio.clamp(1.0 - clip_eps, 1.0 + hi) * advantages
    per_token = -torch.minimum(unclipped, clipped)
    m = mask.to(logp.dtype)
    metrics: dict[str, float] = {}
    with torch.no_grad():
        n = m.sum().clamp(min=1.0)
        metrics["clip_frac"] = float(((clipped < unclipped).to(m.dtype) * m).sum() / n)
        metrics["ratio_mean"] = float((ratio * m).sum() / n)
        metrics["policy_loss"] = float(aggregate(per_token, mask, aggregation, max_len))
    if kl_coef:
        if ref_logp is None:
            raise ValueError("kl_coef > 0 needs reference log-probs (ref_logp)")
        kl = kl_penalty(logp, ref_logp.detach(), kl_estimator)
        per_token = per_token + kl_coef * kl
        metrics["kl"] = float(aggregate(kl.detach(), mask, "token"))
    elif ref_logp is not None:
        metrics["kl"] = float(aggregate(kl_penalty(logp.detach(), ref_logp, kl_estimator), mask, "token"))
    return aggregate(per_token, mask, aggregation, max_len), metrics


# ------------------------------------------------------------------------------------------------- distillation


def reverse_kl(student_logp: torch.Tensor, teacher_logp: torch.Tensor) -> torch.Tensor:
    """Exact per-position ``KL(p_s || p_t) = sum_v p_s(v) (log p_s(v) - log p_t(v))`` over the last (vocab) axis.
    Mode-seeking; on student rollouts this is on-policy distillation's objective."""
    return (student_logp.exp() * (student_logp - teacher_logp)).sum(dim=-1)


def forward_kl(student_logp: torch.Tensor, teacher_logp: torch.Tensor) -> torch.Tensor:
    """Exact per-position ``KL(p_t || p_s) = sum_v p_t(v) (log p_t(v) - log p_s(v))`` (mass-covering)."""
    return (teacher_logp.exp() * (teacher_logp - student_logp)).sum(dim=-1)


def distillation_loss(
    student_logits: torch.Tensor,
    teacher_logits: torch.Tensor,
    mask: torch.Tensor,
    kind: Literal["reverse", "forward"] = "reverse",
    aggregation: Aggregation = "token",
    temperature: float = 1.0,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Token-level KL between student and teacher next-token distributions ``[B, T, V]`` at completion positions
    of student rollouts (teacher detached), aggregated with :func:`aggregate`."""
    if student_logits.shape != teacher_logits.shape:
        raise ValueError(
            f"student logits {tuple(student_logits.shape)} and teacher logits {tuple(teacher_logits.shape)} differ; "
            "student and teacher must share the tokenizer / vocabulary"
        )
    s = torch.log_softmax(student_logits.float() / temperature, dim=-1)
    t = torch.log_softmax(teacher_logits.detach().float() / temperature, dim=-1)
    if kind == "reverse":
        per_token = reverse_kl(s, t)
    elif kind == "forward":
        per_token = forward_kl(s, t)
    else:
        raise ValueError(f"unknown distillation kind {kind!r}; use 'reverse' or 'forward'")
    loss = aggregate(per_token, mask, aggregation)
    return loss, {f"{kind}_kl": float(aggregate(per_token.detach(), mask, "token"))}


def grad_norm(loss: torch.Tensor, params: Iterable[nn.Parameter], retain_graph: bool = True) -> torch.Tensor:
    """``||d loss / d params||_2`` without touching ``.grad`` (unused parameters count as zero)."""
    params = [p for p in params if p.requires_grad]
    grads = torch.autograd.grad(loss, params, retain_graph=retain_graph, allow_unused=True)
    sq = sum((g.detach().float() ** 2).sum() for g in grads if g is not None)
    return torch.sqrt(torch.as_tensor(sq, dtype=torch.float32))


def hybrid_loss(
    reward_loss: torch.Tensor,
    distill_loss: torch.Tensor,
    params: Iterable[nn.Parameter],
    distill_weight: float = 1.0,
    eps: float = 1e-8,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Reward + distillation with gradient-magnitude normalisation:
    ``L = L_R + w * (||g_R|| / ||g_D||) * L_D`` (scale detached), so the distillation gradient enters with
    ``w`` times the reward gradient's norm. Reports ``grad_norm_ratio = ||g_R|| / ||g_D||``.
    If the reward gradient vanishes (e.g. an all-equal group) the distillation term keeps its raw scale."""
    params = [p for p in params if p.requires_grad]
    g_r = grad_norm(reward_loss, params)
    g_d = grad_norm(distill_loss, params)
    ratio = g_r / (g_d + eps)
    scale = ratio if float(g_r) > eps else torch.ones_like(ratio)
    loss = reward_loss + distill_weight * scale.detach() * distill_loss
    return loss, {
        "grad_norm_reward": float(g_r),
        "grad_norm_distill": float(g_d),
        "grad_norm_ratio": float(ratio),
        "distill_scale": float(scale),
    }
