"""Calibration sets for PoEM: draw samples from the reference in groups per prompt, score them with the new reward,
and compute the regression features (basis rewards, or basis log-ratios when the basis rewards are unknown)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from ..core.prompts import PromptSource
from ..core.reward import Reward, score
from ..core.types import PromptBatch
from ..core.flow import FlowModel
from ..text.policy import CausalLMPolicy
from .fit import Method, PoemFit, fit_log_ratios, fit_rewards
from .flow import path_log_ratios
from .text import sequence_log_ratios


@dataclass
class Calibration:
    """``new_reward`` ``[N]``; ``features`` ``[N, K]`` (or ``[N, K, S]`` per-step flow log-ratios); ``groups`` ``[N]``
    (prompt index of each sample); ``kind``: ``rewards`` or ``log_ratios``; ``times``: the noise level of each step."""

    new_reward: torch.Tensor
    features: torch.Tensor
    groups: torch.Tensor
    kind: str
    times: list[float] | None = None


def _prompt_batch(prompts: PromptSource, num_samples: int, group_size: int, generator: torch.Generator) -> PromptBatch:
    if group_size < 2:
        raise ValueError(f"group_size must be >= 2 (centring within a prompt needs two samples), got {group_size}")
    if num_samples < 2 * group_size or num_samples % group_size:
        raise ValueError(f"calibration size {num_samples} must be a multiple of group_size {group_size} and >= 2 groups")
    return prompts.sample(num_samples // group_size, generator)


def _groups(num_prompts: int, group_size: int) -> torch.Tensor:
    return torch.arange(num_prompts).repeat_interleave(group_size)


def _basis_scores(basis_rewards: Sequence[Reward], samples, batch: PromptBatch) -> torch.Tensor:
    return torch.stack([score(r, samples, batch.prompts, batch.metadata).detach().float().cpu() for r in basis_rewards], 1)


@torch.no_grad()
def calibrate_text(
    reference: CausalLMPolicy,
    bases: Sequence[CausalLMPolicy],
    new_reward: Reward,
    prompts: PromptSource,
    num_samples: int = 256,
    group_size: int = 4,
    generator: torch.Generator | None = None,
    basis_rewards: Sequence[Reward] | None = None,
) -> Calibration:
    """``group_size`` reference completions per prompt; features are basis rewards if given, else sequence log-ratios."""
    generator = generator or torch.Generator().manual_seed(0)
    batch = _prompt_batch(prompts, num_samples, group_size, generator)
    s = reference.sample(batch.prompts, generator, num_samples=group_size)
    rep = batch.repeat_interleave(group_size)
    target = score(new_reward, s.texts, rep.prompts, rep.metadata).float().cpu()
    if basis_rewards:
        return Calibration(target, _basis_scores(basis_rewards, s.texts, rep), _groups(len(batch), group_size), "rewards")
    return Calibration(target, sequence_log_ratios(reference, bases, s).cpu(), _groups(len(batch), group_size), "log_ratios")


@torch.no_grad()
def calibrate_flow(
    reference: FlowModel,
    bases: Sequence[FlowModel],
    new_reward: Reward,
    prompts: PromptSource,
    num_samples: int = 256,
    group_size: int = 4,
    generator: torch.Generator | None = None,
    basis_rewards: Sequence[Reward] | None = None,
    noise_level: float = 0.7,
    num_steps: int | None = None,
) -> Calibration:
    """Reference samples per prompt group. With ``basis_rewards``: ODE samples scored by every reward. Without: SDE
    trajectories and per-step path log-ratios ``[N, K, S]`` (see :func:`~visalign.poem.flow.path_log_ratios`)."""
    generator = generator or torch.Generator().manual_seed(0)
    batch = _prompt_batch(prompts, num_samples, group_size, generator)
    rep = batch.repeat_interleave(group_size)
    noise = reference.make_noise(len(rep), generator)
    groups = _groups(len(batch), group_size)
    if basis_rewards:
        samples = reference.sample(noise=noise, prompts=rep.prompts)
        target = score(new_reward, samples, rep.prompts, rep.metadata).float().cpu()
        return Calibration(target, _basis_scores(basis_rewards, samples, rep), groups, "rewards")
    traj = reference.sample_sde(noise, rep.prompts, generator=generator, num_steps=num_steps, noise_level=noise_level)
    samples = reference.decode(traj.final)
    target = score(new_reward, samples, rep.prompts, rep.metadata).float().cpu()
    ratios = path_log_ratios(reference, bases, traj, rep.prompts)
    return Calibration(target, ratios, groups, "log_ratios", times=traj.sigmas[:-1].tolist())


def fit_calibration(
    cal: Calibration,
    beta: float | None = None,
    method: Method = "ols",
    standardize: bool = False,
    per_step: bool = False,
    names: Sequence[str] | None = None,
) -> tuple[PoemFit, list[float] | None]:
    """Fit ĉ on a calibration set. Returns the fit and, for per-step flow fits, the increasing noise levels of the
    rows of ``fit.coef`` ``[S, K]`` (else None). Log-ratio features need ``beta``, the bases' KL strength."""
    if cal.kind == "rewards":
        if per_step:
            raise ValueError("per-step coefficients need path log-ratios; drop the basis rewards or per_step")
        return fit_rewards(cal.new_reward, cal.features, cal.groups, method, standardize, names), None
    if beta is None:
        raise ValueError("fitting on log-ratios needs beta, the KL strength the bases were trained with")
    if standardize:
        raise ValueError("standardize applies to reward features; log-ratios are fitted against r_new / beta")
    feats = cal.features
    if feats.dim() == 2:
        return fit_log_ratios(cal.new_reward, feats, beta, cal.groups, method, names), None
    n, k, s = feats.shape
    if not per_step:
        return fit_log_ratios(cal.new_reward, feats.sum(2), beta, cal.groups, method, names), None
    fit = fit_log_ratios(cal.new_reward, feats.permute(0, 2, 1).reshape(n, s * k), beta, cal.groups, method)
    coef = fit.coef.reshape(s, k).flip(0)  # steps run from t = 1 down; the generator wants increasing noise levels
    fit.coef, fit.names = coef, list(names or [])
    return fit, list(reversed(cal.times or []))


__all__ = ["Calibration", "calibrate_flow", "calibrate_text", "fit_calibration"]
