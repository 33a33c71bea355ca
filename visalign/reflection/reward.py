"""Trajectory reward and trajectory-level group advantage of UMM-Reflection (exact formulas of the spec).

With per-image graded quality q_0..q_T (q = 1 exactly when the verifier passes) and Δ_t = q_{t+1} − q_t:

    R(τ) = q_T + α Σ_t w_t [Δ_t]_+ + β·(Σ of the positive Δ_t except the largest) − λ Σ_t [−Δ_t]_+
           − p·1[DONE emitted while q_T < 1]

and within the K siblings of one shared first image A_i = clip((R_i − mean R)/max(pop_std R, floor), −c, c); a
malformed trajectory then gets max(min(A_i, 0) − m, −c) (after normalisation: inside R, centering would cancel it).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..core.config import check, option


@dataclass
class TrajectoryRewardConfig:
    alpha: float = option(0.3, "α: weight of the per-round improvements Σ w_t [Δ_t]_+")
    beta: float = option(0.3, "β: bonus on the positive improvements except the largest (several repairs)")
    lam: float = option(0.5, "λ: penalty on quality drops Σ [−Δ_t]_+ (must be ≥ α·max(round_weights))")
    done_penalty: float = option(0.5, "p: penalty for emitting DONE while the image is still wrong")
    round_weights: tuple[float, ...] = option((1.0, 1.0, 1.0), "w_t per repair round (flat: a no-op then a repair "
                                                               "earns what an immediate repair earns)")
    std_floor: float = option(0.1, "advantage denominator max(pop_std, std_floor)")
    adv_clip: float = option(1.0, "advantages are clipped to ±adv_clip")
    malformed_penalty: float = option(0.5, "a malformed trajectory's advantage is max(min(A, 0) − this, −adv_clip)")

    def __post_init__(self) -> None:
        check(len(self.round_weights) >= 1 and all(w >= 0 for w in self.round_weights),
              f"reflection.reward.round_weights must be non-negative, one per round, got {self.round_weights}")
        for key in ("alpha", "beta", "lam", "done_penalty"):
            check(getattr(self, key) >= 0, f"reflection.reward.{key} must be >= 0, got {getattr(self, key)}")
        check(self.malformed_penalty > 0, f"reflection.reward.malformed_penalty must be > 0 (a malformed trajectory must "
                                          f"never get A >= 0), got {self.malformed_penalty}")
        check(self.lam >= self.alpha * max(self.round_weights),
              f"reflection.reward.lam={self.lam} must be >= alpha·max(round_weights) = "
              f"{self.alpha * max(self.round_weights)}: otherwise damaging the image and then repairing it farms the bonus")
        check(self.std_floor > 0, f"reflection.reward.std_floor must be > 0, got {self.std_floor}")
        check(self.adv_clip > 0, f"reflection.reward.adv_clip must be > 0, got {self.adv_clip}")


def trajectory_rewards(quality: torch.Tensor, num_edits: torch.Tensor, done_while_wrong: torch.Tensor,
                       cfg: TrajectoryRewardConfig) -> torch.Tensor:
    """R per trajectory. ``quality [N, T_max + 1]``: q_0..q_{T_i} in the first ``num_edits[i] + 1`` columns (the
    rest ignored); ``done_while_wrong [N]`` bool."""
    n, width = quality.shape
    rounds = width - 1
    check(rounds <= len(cfg.round_weights), f"{rounds} repair rounds but only {len(cfg.round_weights)} round_weights")
    if not torch.isfinite(quality.gather(1, num_edits.long()[:, None])).all():
        raise ValueError("trajectory quality contains NaN or inf")
    steps = torch.arange(rounds, device=quality.device)
    valid = steps[None, :] < num_edits[:, None]
    delta = torch.where(valid, quality[:, 1:] - quality[:, :-1], torch.zeros(()))
    gains, drops = delta.clamp(min=0), (-delta).clamp(min=0)
    weights = torch.tensor(cfg.round_weights[:rounds], dtype=quality.dtype, device=quality.device)
    final = quality.gather(1, num_edits.long()[:, None]).squeeze(1)
    extra_gains = gains.sum(1) - gains.max(1).values if rounds else torch.zeros_like(final)
    return (final + cfg.alpha * (weights * gains).sum(1) + cfg.beta * extra_gains - cfg.lam * drops.sum(1)
            - cfg.done_penalty * done_while_wrong.to(quality.dtype))


def group_advantages(rewards: torch.Tensor, malformed: torch.Tensor, group_size: int,
                     cfg: TrajectoryRewardConfig) -> torch.Tensor:
    """Sibling-normalised, clipped advantages ``[N]`` (groups are consecutive runs of ``group_size``), with the
    malformed-trajectory rule applied after normalisation."""
    if rewards.dim() != 1 or rewards.shape[0] % group_size:
        raise ValueError(f"rewards must be [N] with N a multiple of group_size={group_size}, got {tuple(rewards.shape)}")
    if not torch.isfinite(rewards).all():
        raise ValueError("trajectory rewards contain NaN or inf")
    r = rewards.double().view(-1, group_size)
    centered = r - r.mean(1, keepdim=True)
    constant = r.amax(1, keepdim=True) == r.amin(1, keepdim=True)  # exactly 0, whatever the mean's rounding
    centered = torch.where(constant, torch.zeros_like(centered), centered)
    std = r.std(1, unbiased=False, keepdim=True).clamp(min=cfg.std_floor)
    adv = (centered / std).clamp(-cfg.adv_clip, cfg.adv_clip).reshape(-1).float()
    penalised = (adv.clamp(max=0) - cfg.malformed_penalty).clamp(min=-cfg.adv_clip)
    return torch.where(malformed.bool(), penalised, adv)


__all__ = ["TrajectoryRewardConfig", "trajectory_rewards", "group_advantages"]
