"""The exact categorical PoEM toy: a random reference over |Y| responses, Gaussian basis rewards, new rewards with a
controlled out-of-span part, and KL-regularised policy gradient that trains every policy (no closed form)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..core.config import check
from .categorical import kl, tilt


@dataclass
class CategoricalToy:
    """``π_ref = softmax(ref_scale · N(0, 1))`` over ``num_responses``; ``num_bases`` rewards ``r_k ~ N(0, 1)``."""

    num_responses: int = 64
    num_bases: int = 6
    beta: float = 0.1
    ref_scale: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        check(self.num_responses >= 2, f"num_responses must be >= 2, got {self.num_responses}")
        check(1 <= self.num_bases < self.num_responses - 1, "num_bases must be in [1, num_responses - 2]")
        check(self.beta > 0, f"beta must be > 0, got {self.beta}")
        g = torch.Generator().manual_seed(self.seed)
        self.ref_logp = torch.log_softmax(self.ref_scale * torch.randn(self.num_responses, generator=g, dtype=torch.float64), 0)
        self.basis_rewards = torch.randn(self.num_bases, self.num_responses, generator=g, dtype=torch.float64)
        self._generator = g

    def orthogonal_reward(self, generator: torch.Generator | None = None) -> torch.Tensor:
        """A reward orthogonal in L2(π_ref) to constants and every basis reward, with unit π_ref-standard deviation."""
        g = generator or self._generator
        w = self.ref_logp.exp()
        basis = torch.cat([torch.ones(1, self.num_responses, dtype=w.dtype), self.basis_rewards])
        v = torch.randn(self.num_responses, generator=g, dtype=w.dtype)
        q, _ = torch.linalg.qr((basis * w.sqrt()).T)  # orthonormal basis of the weighted span
        u = v * w.sqrt()
        u = u - q @ (q.T @ u)
        r = u / w.sqrt()
        return r / (w * r**2).sum().sqrt()

    def new_reward(self, coef: torch.Tensor, rho: float, generator: torch.Generator | None = None) -> torch.Tensor:
        """``r_new = Σ c_k r_k + ρ · r_⊥``."""
        coef = torch.as_tensor(coef, dtype=torch.float64)
        return coef @ self.basis_rewards + rho * self.orthogonal_reward(generator)


def kl_policy_gradient(
    ref_logp: torch.Tensor,
    reward: torch.Tensor,
    beta: float,
    steps: int = 3000,
    lr: float = 0.1,
    adam_betas: tuple[float, float] = (0.9, 0.9),
    eps: float = 1e-300,
    cosine: bool = True,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Train softmax logits θ (initialised at the reference) by exact policy gradient on the KL-regularised objective
    ``J(θ) = E_πθ r − β KL(πθ ‖ π_ref)``, ``∇_θ J = π ⊙ (A − E_π A)`` with ``A = r − β (log π − log π_ref)``, and Adam.

    The defaults (second-moment decay 0.9, a vanishing eps, cosine decay) let Adam's per-coordinate scaling keep
    moving responses whose probability has fallen to e^-50; with PyTorch's defaults (0.999, 1e-8) the logits of such
    responses freeze long before their log-ratio converges. The closed-form optimum is used only to report the gap.
    Returns the trained log-probs and ``{steps, objective, kl_to_optimum, max_log_ratio_error}``."""
    if beta <= 0:
        raise ValueError(f"beta must be > 0, got {beta}")
    if reward.shape != ref_logp.shape:
        raise ValueError(f"reward {tuple(reward.shape)} and ref_logp {tuple(ref_logp.shape)} differ in shape")
    ref_logp, reward = ref_logp.double(), reward.double()
    logits = torch.nn.Parameter(ref_logp.clone())
    opt = torch.optim.Adam([logits], lr=lr, betas=adam_betas, eps=eps)
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * s / steps)) if cosine else 1.0)
    for _ in range(steps):
        logp = torch.log_softmax(logits.detach(), 0)
        p = logp.exp()
        advantage = reward - beta * (logp - ref_logp)
        logits.grad = -(p * (advantage - (p * advantage).sum()))
        opt.step()
        schedule.step()
    logp = torch.log_softmax(logits.detach(), 0)
    p = logp.exp()
    optimum = tilt(ref_logp, reward, beta)
    error = (logp - optimum) - (logp - optimum).mean()
    return logp, {"steps": steps, "objective": float((p * reward).sum() - beta * kl(logp, ref_logp)),
                  "kl_to_optimum": float(kl(optimum, logp)), "max_log_ratio_error": float(error.abs().max())}


__all__ = ["CategoricalToy", "kl_policy_gradient"]
