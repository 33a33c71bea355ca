"""PoEM coefficient fit: centre within prompt groups (removes log Z(x)), regress the new reward on the basis
log-ratios or basis rewards by OLS or non-negative least squares, and report the regression's R² as *coverage*.

With KL strength β the basis optima satisfy ``ℓ_k = log π_k − log π_ref = r_k/β − log Z_k(x)``; if
``r_new = Σ c_k r_k`` then ``r_new/β = Σ c_k ℓ_k + const(x)``. Centring within each prompt's group of samples removes
the constants, so ``c`` is the least-squares solution on centred data and the share of the target's variance it
explains (coverage) says how far the bases span the new reward.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal, Sequence

import torch

Method = Literal["ols", "nnls"]
METHODS = ("ols", "nnls")


@dataclass
class PoemFit:
    """Fitted composition coefficients ``coef`` ``[K]`` (or ``[S, K]`` for per-step fits) and the fit's coverage (R²).

    ``features``: what was regressed on (``log_ratios`` or ``rewards``); ``beta``: the KL strength the target was
    scaled by (1 for reward features, where it cancels); ``scale``: the target / feature standard deviations when
    ``standardize`` was used (the coefficients are then those of the z-scores)."""

    coef: torch.Tensor
    coverage: float
    method: str
    features: str
    beta: float
    num_samples: int
    names: list[str] = field(default_factory=list)
    standardized: bool = False

    def to_dict(self) -> dict:
        out = asdict(self)
        out["coef"] = self.coef.tolist()
        return out


def _as_float64(x: torch.Tensor | Sequence, name: str) -> torch.Tensor:
    t = torch.as_tensor(x).detach().to("cpu", torch.float64)
    if not torch.isfinite(t).all():
        bad = (~torch.isfinite(t)).nonzero()[:5].tolist()
        raise ValueError(f"{name} has non-finite values (NaN/inf) at indices {bad}")
    return t


def centre(values: torch.Tensor, groups: torch.Tensor | Sequence[int] | None = None) -> torch.Tensor:
    """Subtract the mean of each group (rows sharing a ``groups`` id, e.g. samples of one prompt) from ``values``
    ``[N]`` or ``[N, K]``; one global group when ``groups`` is None. Removes any per-group constant such as log Z(x)."""
    v = _as_float64(values, "values")
    if v.dim() not in (1, 2) or v.shape[0] < 2:
        raise ValueError(f"centre needs values of shape [N] or [N, K] with N >= 2, got {tuple(v.shape)}")
    if groups is None:
        return v - v.mean(0, keepdim=True)
    g = torch.as_tensor(groups).reshape(-1).long()
    if g.shape[0] != v.shape[0]:
        raise ValueError(f"groups has {g.shape[0]} entries but values has {v.shape[0]} rows")
    ids, inverse, counts = torch.unique(g, return_inverse=True, return_counts=True)
    if (counts < 2).any():
        lonely = ids[counts < 2][:5].tolist()
        raise ValueError(f"groups {lonely} have a single sample, which centring reduces to zero; draw >= 2 samples per prompt")
    flat = v.reshape(v.shape[0], -1)
    sums = torch.zeros(len(ids), flat.shape[1], dtype=flat.dtype).index_add_(0, inverse, flat)
    means = sums / counts[:, None].to(flat.dtype)
    return (flat - means[inverse]).reshape(v.shape)


def ols(features: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Least-squares ``argmin_c ‖target − features·c‖²`` (minimum-norm when features are collinear)."""
    return torch.linalg.lstsq(features, target[:, None], driver="gelsd").solution[:, 0]


def nnls(features: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Non-negative least squares ``argmin_{c >= 0} ‖target − features·c‖²`` (scipy's active-set solver)."""
    from scipy.optimize import nnls as scipy_nnls

    coef, _ = scipy_nnls(features.numpy(), target.numpy(), maxiter=50 * max(1, features.shape[1]))
    return torch.from_numpy(coef).to(features.dtype)


def coverage(features: torch.Tensor, target: torch.Tensor, coef: torch.Tensor) -> float:
    """R² of centred data: ``1 − ‖target − features·coef‖² / ‖target‖²`` (the share of target variance explained)."""
    total = float((target**2).sum())
    if total <= 0:
        raise ValueError("the centred target has zero variance: the new reward is constant on the calibration set")
    resid = target - features @ coef.to(features.dtype)
    return 1.0 - float((resid**2).sum()) / total


def regress(
    target: torch.Tensor,
    features: torch.Tensor,
    groups: torch.Tensor | Sequence[int] | None = None,
    method: Method = "ols",
    standardize: bool = False,
) -> tuple[torch.Tensor, float]:
    """Centre ``target`` ``[N]`` and ``features`` ``[N, K]`` within groups, then fit ``coef`` ``[K]``; returns
    ``(coef, R²)``. ``standardize`` divides the centred target and each feature by its standard deviation first."""
    if method not in METHODS:
        raise ValueError(f"unknown fit method {method!r}; use one of {list(METHODS)}")
    y, x = _as_float64(target, "target"), _as_float64(features, "features")
    if y.dim() != 1:
        raise ValueError(f"target must have shape [N], got {tuple(y.shape)}")
    if x.dim() != 2 or x.shape[0] != y.shape[0]:
        raise ValueError(f"features must have shape [N={y.shape[0]}, K], got {tuple(x.shape)}")
    yc, xc = centre(y, groups), centre(x, groups)
    if standardize:
        y_std, x_std = yc.pow(2).mean().sqrt(), xc.pow(2).mean(0).sqrt()
        if y_std == 0 or (x_std == 0).any():
            raise ValueError("standardize: the target or a feature has zero variance after centring")
        yc, xc = yc / y_std, xc / x_std
    coef = ols(xc, yc) if method == "ols" else nnls(xc, yc)
    return coef, coverage(xc, yc, coef)


def fit_log_ratios(
    new_reward: torch.Tensor,
    log_ratios: torch.Tensor,
    beta: float,
    groups: torch.Tensor | Sequence[int] | None = None,
    method: Method = "ols",
    names: Sequence[str] | None = None,
) -> PoemFit:
    """ĉ from ``r_new/β ≈ Σ ĉ_k ℓ_k + const(x)`` on calibration samples, ``log_ratios[:, k] = log π_k − log π_ref``."""
    if beta <= 0:
        raise ValueError(f"beta must be > 0, got {beta}")
    y = _as_float64(new_reward, "new_reward") / beta
    coef, r2 = regress(y, log_ratios, groups, method)
    return PoemFit(coef.float(), r2, method, "log_ratios", float(beta), int(y.shape[0]), list(names or []))


def fit_rewards(
    new_reward: torch.Tensor,
    basis_rewards: torch.Tensor,
    groups: torch.Tensor | Sequence[int] | None = None,
    method: Method = "ols",
    standardize: bool = False,
    names: Sequence[str] | None = None,
) -> PoemFit:
    """ĉ from ``r_new ≈ Σ ĉ_k r_k + const(x)`` when the basis rewards can be evaluated (β cancels).

    ``standardize`` fits z-scores: use it when the bases were trained with group-normalised advantages (GRPO,
    Flow-GRPO), which make each basis tilt by ``r_k / σ_k`` instead of ``r_k``."""
    coef, r2 = regress(new_reward, basis_rewards, groups, method, standardize)
    return PoemFit(coef.float(), r2, method, "rewards", 1.0, int(torch.as_tensor(new_reward).shape[0]), list(names or []),
                   standardized=standardize)


__all__ = ["METHODS", "PoemFit", "centre", "coverage", "fit_log_ratios", "fit_rewards", "nnls", "ols", "regress"]
