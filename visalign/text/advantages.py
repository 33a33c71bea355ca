"""Group advantage estimators for G completions per prompt (GRPO, Dr.GRPO, RLOO, MaPP posterior-predictive).

Every estimator takes rewards shaped ``[num_prompts, G]`` (one row per prompt group) and returns advantages of
the same shape. ``group_rewards`` reshapes the flat ``[num_prompts * G]`` vector a rollout produces.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Hashable, Sequence

import torch


def group_rewards(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """Reshape flat rewards ``[P*G]`` (groups contiguous) to ``[P, G]``; clear error if the size does not divide."""
    if rewards.dim() != 1:
        raise ValueError(f"rewards must be 1-d, got shape {tuple(rewards.shape)}")
    if group_size < 1 or rewards.numel() % group_size:
        raise ValueError(f"{rewards.numel()} rewards cannot be split into groups of {group_size}")
    return rewards.reshape(-1, group_size)


def _check_groups(rewards: torch.Tensor, min_size: int = 1) -> torch.Tensor:
    if rewards.dim() != 2:
        raise ValueError(f"grouped rewards must be [num_prompts, G], got shape {tuple(rewards.shape)}")
    if rewards.shape[1] < min_size:
        raise ValueError(f"group size {rewards.shape[1]} < {min_size} needed by this estimator")
    return rewards.float()


def grpo_advantages(rewards: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """GRPO: ``A_i = (r_i - mean_g r) / (std_g r + eps)`` with the population std of the group.

    An all-equal group (all correct / all wrong) gets ``A = 0``; for binary rewards with ``S`` of ``G``
    correct this is ``+sqrt((G-S)/S)`` for a success and ``-sqrt(S/(G-S))`` for a failure (up to eps).
    """
    r = _check_groups(rewards)
    mean = r.mean(dim=1, keepdim=True)
    std = r.std(dim=1, keepdim=True, unbiased=False)
    return (r - mean) / (std + eps)


def dr_grpo_advantages(rewards: torch.Tensor) -> torch.Tensor:
    """Dr.GRPO: ``A_i = r_i - mean_g r`` (no std division; pair with the constant-normaliser loss aggregation)."""
    r = _check_groups(rewards)
    return r - r.mean(dim=1, keepdim=True)


def rloo_advantages(rewards: torch.Tensor) -> torch.Tensor:
    """RLOO: ``A_i = r_i - (1/(G-1)) * sum_{j != i} r_j``  (equals ``G/(G-1) * (r_i - mean)``); needs ``G >= 2``."""
    r = _check_groups(rewards, min_size=2)
    g = r.shape[1]
    others = (r.sum(dim=1, keepdim=True) - r) / (g - 1)
    return r - others


# ----------------------------------------------------------------------------------------------- MaPP (Beta posterior)


def _log_beta(a: torch.Tensor | float, b: torch.Tensor | float) -> torch.Tensor:
    a = torch.as_tensor(a, dtype=torch.float64)
    b = torch.as_tensor(b, dtype=torch.float64)
    return torch.lgamma(a) + torch.lgamma(b) - torch.lgamma(a + b)


def beta_binomial_pmf(k: torch.Tensor, n: int, alpha: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """``P(K = k) = C(n, k) B(k + alpha, n - k + beta) / B(alpha, beta)`` (broadcasting over k, alpha, beta)."""
    k = torch.as_tensor(k, dtype=torch.float64)
    alpha = torch.as_tensor(alpha, dtype=torch.float64)
    beta = torch.as_tensor(beta, dtype=torch.float64)
    log_choose = torch.lgamma(torch.tensor(n + 1.0, dtype=torch.float64)) - torch.lgamma(k + 1) - torch.lgamma(n - k + 1)
    return torch.exp(log_choose + _log_beta(k + alpha, n - k + beta) - _log_beta(alpha, beta))


def mapp_success_advantage(group_size: int, alpha: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """Posterior-predictive GRPO advantage of a success:
    ``A+ = sum_{S=1}^{G-1} w_S sqrt((G-S)/S)``, ``w_S = BetaBinomial(S-1; G-1, alpha, beta)``.

    ``sqrt((G-S)/S)`` is GRPO's advantage for a success in a group with ``S`` successes; ``w_S`` is the
    posterior-predictive probability that the other ``G-1`` samples hold ``S-1`` successes."""
    g = group_size
    if g < 2:
        raise ValueError(f"MaPP needs group size >= 2, got {g}")
    alpha = torch.as_tensor(alpha, dtype=torch.float64)
    beta = torch.as_tensor(beta, dtype=torch.float64)
    s = torch.arange(1, g, dtype=torch.float64)  # S = 1..G-1
    shape = (-1,) + (1,) * alpha.dim()
    s_b = s.reshape(shape)
    w = beta_binomial_pmf(s_b - 1, g - 1, alpha.unsqueeze(0), beta.unsqueeze(0))
    return (w * torch.sqrt((g - s_b) / s_b)).sum(dim=0)


def mapp_advantages(rewards: torch.Tensor, alpha: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """MaPP advantages for binary rewards ``[P, G]`` given per-sample leave-one-out posteriors ``alpha, beta`` ``[P, G]``.

    ``r=1``: ``+sum_{S=1}^{G-1} BB(S-1; G-1, a, b) sqrt((G-S)/S)``;
    ``r=0``: the mirror image, ``-sum_{F=1}^{G-1} BB(F-1; G-1, b, a) sqrt((G-F)/F)`` (a, b swapped).
    Unlike GRPO this is non-zero for all-correct / all-wrong groups (the posterior still expects mixed groups).
    """
    r = _check_groups(rewards, min_size=2)
    if not torch.all((r == 0) | (r == 1)):
        raise ValueError("MaPP advantages need binary rewards in {0, 1}; threshold or use grpo/rloo for graded rewards")
    alpha = torch.as_tensor(alpha, dtype=torch.float64).expand(r.shape)
    beta = torch.as_tensor(beta, dtype=torch.float64).expand(r.shape)
    g = r.shape[1]
    pos = mapp_success_advantage(g, alpha, beta)
    neg = -mapp_success_advantage(g, beta, alpha)
    return torch.where(r > 0.5, pos, neg).to(torch.float32)


def mapp_selection_score(alpha: torch.Tensor | float, beta: torch.Tensor | float, group_size: int) -> torch.Tensor:
    """Probability that a fresh group of ``G`` is mixed under ``Beta(alpha, beta)``:
    ``1 - B(alpha+G, beta)/B(alpha, beta) - B(alpha, beta+G)/B(alpha, beta)`` (prompt-selection score)."""
    lb = _log_beta(alpha, beta)
    return 1.0 - torch.exp(_log_beta(torch.as_tensor(alpha, dtype=torch.float64) + group_size, beta) - lb) - torch.exp(
        _log_beta(alpha, torch.as_tensor(beta, dtype=torch.float64) + group_size) - lb
    )


@dataclass
class BetaPosteriorTable:
    """Per-prompt discounted Beta posterior over the success rate (MaPP).

    After a group with ``S`` successes of ``G``:
    ``alpha <- lam*alpha + (1-lam)*alpha0 + S``, ``beta <- lam*beta + (1-lam)*beta0 + G - S``.
    Unseen prompts start at ``(alpha0, beta0)``. The leave-one-out posterior for sample ``i`` is the same
    update with sample ``i``'s own outcome removed (``S - r_i`` successes, ``G - S - (1 - r_i)`` failures).
    """

    alpha0: float = 1.0
    beta0: float = 1.0
    discount: float = 0.5

    def __post_init__(self) -> None:
        if self.alpha0 <= 0 or self.beta0 <= 0:
            raise ValueError(f"Beta prior must be positive, got alpha0={self.alpha0}, beta0={self.beta0}")
        if not 0.0 <= self.discount <= 1.0:
            raise ValueError(f"discount must be in [0, 1], got {self.discount}")
        self.table: dict[Hashable, tuple[float, float]] = {}

    def get(self, key: Hashable) -> tuple[float, float]:
        return self.table.get(key, (self.alpha0, self.beta0))

    def _decayed(self, key: Hashable) -> tuple[float, float]:
        a, b = self.get(key)
        lam = self.discount
        return lam * a + (1 - lam) * self.alpha0, lam * b + (1 - lam) * self.beta0

    def leave_one_out(self, keys: Sequence[Hashable], rewards: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-sample ``(alpha_i, beta_i)`` ``[P, G]`` for grouped binary rewards, before this group is recorded."""
        r = _check_groups(rewards).double()
        if len(keys) != r.shape[0]:
            raise ValueError(f"{len(keys)} prompt keys for {r.shape[0]} groups")
        g = r.shape[1]
        base = torch.tensor([self._decayed(k) for k in keys], dtype=torch.float64)  # [P, 2]
        s = r.sum(dim=1, keepdim=True)
        alpha = base[:, :1] + s - r
        beta = base[:, 1:] + (g - s) - (1 - r)
        return alpha, beta

    def update(self, keys: Sequence[Hashable], rewards: torch.Tensor) -> None:
        """Record grouped binary rewards ``[P, G]``; repeated keys are applied in order."""
        r = _check_groups(rewards)
        g = r.shape[1]
        for key, row in zip(keys, r):
            s = float(row.sum())
            a, b = self._decayed(key)
            self.table[key] = (a + s, b + g - s)

    def scores(self, keys: Sequence[Hashable], group_size: int) -> torch.Tensor:
        """Prompt-selection score (:func:`mapp_selection_score`) for each key."""
        params = torch.tensor([self.get(k) for k in keys], dtype=torch.float64).reshape(-1, 2)
        return mapp_selection_score(params[:, 0], params[:, 1], group_size)

    def state_dict(self) -> dict[str, Any]:
        keys = list(self.table)
        if not all(isinstance(k, str) for k in keys):
            raise TypeError("only string prompt keys can be checkpointed")
        return {"keys": keys, "params": torch.tensor([self.table[k] for k in keys], dtype=torch.float64).reshape(-1, 2)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        params = torch.as_tensor(state["params"]).reshape(-1, 2).tolist()
        self.table = {k: (float(a), float(b)) for k, (a, b) in zip(state["keys"], params)}


ESTIMATORS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "grpo": grpo_advantages,
    "dr_grpo": dr_grpo_advantages,
    "rloo": rloo_advantages,
}
"""Stateless estimators by name; ``mapp`` needs a :class:`BetaPosteriorTable` and is handled by the algorithm."""
