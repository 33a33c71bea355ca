"""Per-modality SDE sampling of an :class:`AudioVideoFlowModel`: each modality part of the flat latent is, at every
step, sampled by the Flow-GRPO SDE (``sde``, recording its own Gaussian log-prob), stepped by the Euler ODE (``ode``)
or overwritten with a supplied trajectory (``locked``, the modality anchor of AV-GRPO). The velocity is always
computed on the whole joint state, so a locked partner conditions the trained modality exactly as in the rollout,
and :func:`part_transitions` recomputes the same step means under new weights (ratio 1 at the old policy)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import torch

from ..core.audio_video import AudioVideoFlowModel
from ..core.flow import FlowModel, gaussian_log_prob, sde_step_stats

BEHAVIOURS = ("sde", "ode", "locked")


@dataclass
class AVTrajectory:
    """``latents[:, k]``: the joint state before step k (``[:, -1]`` the result). ``log_probs[m][:, k]``: the
    dimension-averaged log-prob of modality m's part at step k (SDE modalities only; 0 at an ODE step);
    ``noise_levels[m][k]``: the noise level a actually used there (lowered where the step std hit the cap).
    ``sde_steps``: the steps on which the SDE modalities took an SDE step (the others were ODE steps)."""

    latents: torch.Tensor
    log_probs: dict[str, torch.Tensor]
    noise_levels: dict[str, list[float]]
    sigmas: torch.Tensor
    cond: Any
    behaviours: dict[str, str]
    sde_steps: tuple[int, ...]

    @property
    def final(self) -> torch.Tensor:
        return self.latents[:, -1]

    @property
    def num_steps(self) -> int:
        return self.latents.shape[1] - 1

    @property
    def sde_modalities(self) -> tuple[str, ...]:
        return tuple(m for m, b in self.behaviours.items() if b == "sde")


def capped_noise_levels(sigmas: torch.Tensor, noise_level: float, std_cap: float | None) -> list[float]:
    """Per step, the SDE noise level whose step std ``std_σ·sqrt(Δσ)`` is at most ``std_cap`` (the step std is
    proportional to the level, so lowering the level caps the std and keeps the score correction consistent)."""
    levels, cap = [], float(sigmas[1])
    probe = torch.zeros(1)
    for sigma, sigma_next in zip(sigmas[:-1].tolist(), sigmas[1:].tolist()):
        _, std = sde_step_stats(probe, probe, sigma, sigma_next, noise_level, cap)
        levels.append(noise_level if std_cap is None or std <= std_cap else noise_level * std_cap / std)
    return levels


def _step_stats(model: AudioVideoFlowModel, x: torch.Tensor, v: torch.Tensor, sigmas: torch.Tensor, step: int,
                level: float) -> tuple[torch.Tensor, float]:
    return sde_step_stats(x, v, float(sigmas[step]), float(sigmas[step + 1]), level, float(sigmas[1]))


def sample_av(model: AudioVideoFlowModel, noise: torch.Tensor, cond: Any, behaviours: dict[str, str], *,
              noise_levels: dict[str, float], std_cap: float | None, generator: torch.Generator | None,
              num_steps: int | None = None, locked: torch.Tensor | None = None,
              sde_steps: Sequence[int] | None = None) -> AVTrajectory:
    """Sample without grad from ``noise`` ``[B, D]``; ``locked`` ``[B, K + 1, D]`` supplies the parts of ``locked``
    modalities at every step (its step-0 state replaces their noise). ``sde_steps`` (default: all): the steps on
    which ``sde`` modalities take an SDE step; on the others they take an ODE step."""
    slices = model.latent_slices()
    if set(behaviours) != set(slices) or any(b not in BEHAVIOURS for b in behaviours.values()):
        raise ValueError(f"behaviours must give one of {BEHAVIOURS} for each of {sorted(slices)}, got {behaviours}")
    sigmas = model.sigmas(num_steps)
    steps = len(sigmas) - 1
    has_locked = any(b == "locked" for b in behaviours.values())
    if has_locked and (locked is None or locked.shape[:2] != (noise.shape[0], steps + 1)):
        raise ValueError(f"locked modalities need a locked trajectory of shape [{noise.shape[0]}, {steps + 1}, D], got "
                         f"{None if locked is None else tuple(locked.shape)}")
    stochastic = tuple(range(steps)) if sde_steps is None else tuple(sorted(set(sde_steps)))
    if any(not 0 <= k < steps for k in stochastic):
        raise ValueError(f"sde_steps {stochastic} out of range for {steps} sampling steps")
    levels = {m: capped_noise_levels(sigmas, noise_levels[m], std_cap) for m, b in behaviours.items() if b == "sde"}
    model.record_draws(noise.shape[0])
    x = noise.clone()
    for m, s in slices.items():
        if behaviours[m] == "locked":
            x[:, s] = locked[:, 0, s]
    states, log_probs = [x], {m: [] for m in levels}
    with torch.no_grad():
        for k in range(steps):
            sigma, sigma_next = float(sigmas[k]), float(sigmas[k + 1])
            v = model.velocity(x, model.time(sigma, x), cond)
            nxt = torch.empty_like(x)
            for m, s in sorted(slices.items(), key=lambda item: item[1].start):
                if behaviours[m] == "locked":
                    nxt[:, s] = locked[:, k + 1, s]
                elif behaviours[m] == "ode" or k not in stochastic:
                    nxt[:, s] = model.ode_step(x[:, s], v[:, s], sigma, sigma_next)
                    if behaviours[m] == "sde":
                        log_probs[m].append(torch.zeros(x.shape[0], device=x.device))
                else:
                    mean, std = _step_stats(model, x[:, s], v[:, s], sigmas, k, levels[m][k])
                    eps = torch.randn(mean.shape, generator=generator).to(x.device, x.dtype)
                    nxt[:, s] = mean + std * eps
                    log_probs[m].append(gaussian_log_prob(nxt[:, s], mean, std))
            x = nxt
            states.append(x)
    return AVTrajectory(torch.stack(states, 1), {m: torch.stack(lp, 1) for m, lp in log_probs.items()}, levels, sigmas,
                        cond, dict(behaviours), stochastic)


def part_transitions(model: FlowModel, traj: AVTrajectory, step: int, cond: Any = None,
                     slices: dict[str, slice] | None = None) -> dict[str, tuple[torch.Tensor, float]]:
    """(mean, std) of step ``step`` of each SDE modality part under the current weights, the velocity computed on
    the recorded joint state (the locked partner included); differentiable through the velocity. ``slices``: the
    modality parts of the latent (default: ``model.latent_slices()``; give the policy's for a plain-FlowModel
    reference such as a LoRA adapter's base weights)."""
    x = traj.latents[:, step]
    v = model.velocity(x, model.time(float(traj.sigmas[step]), x), traj.cond if cond is None else cond)
    slices = model.latent_slices() if slices is None else slices
    return {m: _step_stats(model, x[:, slices[m]], v[:, slices[m]], traj.sigmas, step, traj.noise_levels[m][step])
            for m in traj.sde_modalities}


def joint_log_prob(model: AudioVideoFlowModel, traj: AVTrajectory, step: int, parts: tuple[str, ...],
                   transitions: dict[str, tuple[torch.Tensor, float]] | None = None) -> torch.Tensor:
    """Log-prob of step ``step`` over the union of ``parts``, averaged over their dimensions (one part: its own
    log-prob). With ``transitions`` (from :func:`part_transitions`) it is the new policy's; without, the recorded one."""
    slices = model.latent_slices()
    sizes = {m: slices[m].stop - slices[m].start for m in parts}
    total = sum(sizes.values())
    out = 0.0
    for m in parts:
        if transitions is None:
            lp = traj.log_probs[m][:, step]
        else:
            mean, std = transitions[m]
            lp = gaussian_log_prob(traj.latents[:, step + 1, slices[m]], mean, std)
        out = out + lp * (sizes[m] / total)
    return out


def time_weights(sigmas: torch.Tensor) -> torch.Tensor:
    """λ_k = sqrt(σ_k / (Δσ_k (1 − σ_k))) (σ capped at the second level inside 1 − σ), normalised to mean 1: the
    per-step policy-loss weight of AV-GRPO."""
    cap = float(sigmas[1])
    raw = [math.sqrt(s / ((s - n) * (1 - min(s, cap)))) for s, n in zip(sigmas[:-1].tolist(), sigmas[1:].tolist())]
    w = torch.tensor(raw)
    return w / w.mean()


__all__ = ["AVTrajectory", "BEHAVIOURS", "sample_av", "part_transitions", "joint_log_prob", "capped_noise_levels",
           "time_weights"]
