"""Exact PoEM composition of categorical policies (a finite response set): closed form, exact and SIR sampling,
and the quantities the claims are measured with (tilted optimum, expected reward, KL, reward recovery)."""
from __future__ import annotations

import torch


def _check_logp(logp: torch.Tensor, name: str) -> torch.Tensor:
    if not isinstance(logp, torch.Tensor) or logp.dim() < 1:
        raise ValueError(f"{name} must be a tensor of log-probabilities [..., Y]")
    if torch.isnan(logp).any():
        raise ValueError(f"{name} contains NaN")
    return logp


def log_ratios(basis_logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """``ℓ_k = log π_k − log π_ref`` for basis log-probs ``[K, ..., Y]`` and reference log-probs ``[..., Y]``."""
    _check_logp(basis_logp, "basis_logp")
    _check_logp(ref_logp, "ref_logp")
    if basis_logp.shape[1:] != ref_logp.shape:
        raise ValueError(f"basis log-probs {tuple(basis_logp.shape)} do not match the reference {tuple(ref_logp.shape)} after the K axis")
    return basis_logp - ref_logp


def compose_log_probs(ref_logp: torch.Tensor, basis_logp: torch.Tensor, coef: torch.Tensor, strength: float = 1.0) -> torch.Tensor:
    """``log π̂ = log π_ref + λ Σ_k ĉ_k (log π_k − log π_ref)``, renormalised over the last axis."""
    ell = log_ratios(basis_logp, ref_logp)
    coef = torch.as_tensor(coef, dtype=ref_logp.dtype)
    if coef.shape != (ell.shape[0],):
        raise ValueError(f"coef must have shape [{ell.shape[0]}] (one per basis), got {tuple(coef.shape)}")
    shift = torch.einsum("k,k...->...", coef, torch.nan_to_num(ell, neginf=0.0, posinf=0.0))
    return torch.log_softmax(ref_logp + strength * shift, dim=-1)


def tilt(ref_logp: torch.Tensor, reward: torch.Tensor, beta: float) -> torch.Tensor:
    """Closed-form optimum of KL-regularised RL, ``log π_r = log π_ref + r/β − log Z`` (used only as a check)."""
    if beta <= 0:
        raise ValueError(f"beta must be > 0, got {beta}")
    return torch.log_softmax(_check_logp(ref_logp, "ref_logp") + reward / beta, dim=-1)


def expected(logp: torch.Tensor, reward: torch.Tensor) -> torch.Tensor:
    """``E_π r`` for log-probs ``[..., Y]`` and rewards ``[Y]`` (or broadcastable)."""
    return (logp.exp() * reward).sum(-1)


def kl(p_logp: torch.Tensor, q_logp: torch.Tensor) -> torch.Tensor:
    """``KL(p ‖ q) = Σ p (log p − log q)`` over the last axis (terms with p = 0 contribute 0)."""
    p = p_logp.exp()
    return torch.where(p > 0, p * (p_logp - q_logp), torch.zeros_like(p)).sum(-1)


def recovery(e_composed: float, e_reference: float, e_direct: float) -> float:
    """Share of the direct-RL gain the composition recovers: ``(E_π̂ r − E_ref r) / (E_π* r − E_ref r)``."""
    gain = e_direct - e_reference
    if gain == 0:
        raise ValueError("the direct run gained nothing over the reference; recovery is undefined")
    return (e_composed - e_reference) / gain


def sample(logp: torch.Tensor, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """``n`` response indices drawn from ``softmax(logp)`` ``[Y]``."""
    return torch.multinomial(logp.exp(), n, replacement=True, generator=generator)


def sample_composed(
    ref_logp: torch.Tensor, basis_logp: torch.Tensor, coef: torch.Tensor, n: int, strength: float = 1.0,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Exact draws from the composed policy."""
    return sample(compose_log_probs(ref_logp, basis_logp, coef, strength), n, generator)


def sample_sir(
    proposal_logp: torch.Tensor, target_unnorm_logp: torch.Tensor, n: int, num_proposals: int,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Sampling-importance-resampling: for each of ``n`` outputs draw ``num_proposals`` candidates from the proposal
    and keep one with probability ∝ ``exp(target − proposal)``. Exact as ``num_proposals → ∞``."""
    if num_proposals < 1:
        raise ValueError(f"num_proposals must be >= 1, got {num_proposals}")
    cand = sample(proposal_logp, n * num_proposals, generator).reshape(n, num_proposals)
    logw = (target_unnorm_logp - proposal_logp)[cand]
    pick = torch.multinomial(torch.softmax(logw, dim=1), 1, generator=generator).squeeze(1)
    return cand.gather(1, pick[:, None]).squeeze(1)


__all__ = ["compose_log_probs", "expected", "kl", "log_ratios", "recovery", "sample", "sample_composed", "sample_sir", "tilt"]
