"""RWTD — reward-weighted transport distillation for one-step (or any noise -> sample) generators.

Per prompt: N current samples x_i = G_θ(z_i) and M reference samples, scored by a black-box reward. Target
Q = λ·T_β[p_θ] + (1−λ)·T_β[p_ref] with T_β[p] ∝ p·exp(r/β), as weights on the union of both sample sets.
OT (POT ``emd`` or ``sinkhorn``) in a feature space φ from the uniform current particles to Q; barycentric
projection ū_i; partial step ũ_i = (1−η)φ(x_i) + η·ū_i; loss  mean_i ‖φ(G_θ(z_i)) − sg(ũ_i)‖² / D.
A block feature space (``core.features.BlockFeatures``, e.g. DINOv2's [CLS, patch mean, patch std]) is compared per
block: cost Σ_b ‖·‖²_b / d_b, loss Σ_b mean‖φ_b(G_θ(z)) − sg(ũ_b)‖² / d_b (twice the published ½-form).
λ = 0: off-policy tilting of the reference (fixed point T_β[p_ref]); λ → 1: on-policy tilting of the current model.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Literal

import torch

from ..core.algorithm import Algorithm, TrainContext, register_algorithm
from ..core.config import check, option
from ..core.types import PromptBatch, Rollout
from ..features.blocks import BlockLayout
from .common import FeatureCache, as_tensor, group_slices, require_reference, sample_group
from .transport import (beta_for_ess, effective_sample_size, mixture_target, partial_step, systematic_resample, tilted_weights,
                        transport_targets)


@dataclass
class RWTDConfig:
    """λ (``lam``) is the current share of the target (λ = 1 − ρ); β a reward temperature, or set ``target_ess``
    (fraction of the group) to choose β per group so the tilted weights keep that effective sample size.
    ``resample_target`` draws ``num_current`` particles from the weighted target (systematic resampling) and
    transports onto those with uniform weights: with ``solver: emd`` the plan is a permutation, so each current
    sample is regressed onto one whole target sample instead of an average of several.

    The published regime: ``reward_scale`` (a run-wide σ, or the file ``visalign calibrate`` writes from base-model
    samples of the training prompts) with a fixed ``beta`` (the published τ: 0.2–0.5), ``current_floor: 0.1``,
    ``eps_floor: 1e-4``, ``lam: 0.85``, ``solver: sinkhorn``, ``step_size: 0.2``, many prompt groups per
    optimizer step via ``trainer.grad_accum``, and block features ``{name: dinov2, path: FOLDER}`` (or the shipped
    ``{name: ssl_encoder, path: assets/encoders/vvr_ssl}``) with their per-block mean-square cost."""

    lam: float = option(
        0.85, "λ: share of the current policy in the target Q = λ·T_β[p_θ] + (1−λ)·T_β[p_ref] (0: tilt the reference only)")
    beta: float = option(1.0, "reward temperature β of the tilt T_β[p] ∝ p·exp(r/β)")
    target_ess: float | None = option(
        None, "choose β per group so the tilted weights keep this effective sample size (fraction of the group); null: use beta")
    num_current: int = option(16, "policy samples per prompt (the particles that are transported)")
    num_reference: int = option(
        16, "reference samples per prompt (the reference part of the target; needed when lam < 1)")
    features: Any = option(
        "identity", "feature space φ the transport runs in: a registered name (identity, pixels, random_projection, conv, open_clip, reward, dinov2, ssl_encoder) or a {name: ...} spec; block spaces (dinov2, ssl_encoder) use a per-block mean-square cost")
    regression_space: Literal["features", "samples"] = option(
        "features", "regress φ(G_θ(z)) onto the targets (features) or the samples onto barycentric sample targets (samples)")
    solver: Literal["emd", "sinkhorn"] = option(
        "sinkhorn", "optimal-transport solver: exact emd or entropic sinkhorn (POT)")
    eps_scale: float = option(0.1, "sinkhorn: entropic regularisation as a fraction of the median transport cost")
    step_size: float = option(0.2, "η of the partial step toward the transported target, in (0, 1]")
    normalize_rewards: bool = option(False, "z-score rewards within each group before tilting")
    resample_target: bool = option(
        False, "draw num_current particles from the weighted target (systematic resampling) and transport onto them")
    updates_per_rollout: int = option(1, "optimizer steps on each rollout")
    reward_scale: float | str | None = option(
        None, "run-wide reward scale σ: rewards are divided by it before the fixed-temperature tilt (a number, or a "
              "JSON file written by `visalign calibrate` on the training prompts); null: raw rewards")
    current_floor: float = option(0.0, "uniform floor f on the current weights: (1 − f)·softmax + f/K (published 0.1)")
    eps_floor: float = option(0.0, "absolute floor on the Sinkhorn ε: max(eps_scale·median cost, eps_floor) (published 1e-4)")

    def __post_init__(self) -> None:
        check(0.0 <= self.lam <= 1.0, f"rwtd.lam (current share of the target, λ = 1 − ρ) must be in [0, 1], got {self.lam}")
        check(self.beta > 0, f"rwtd.beta (reward temperature) must be > 0, got {self.beta}")
        check(self.target_ess is None or 0 < self.target_ess <= 1, f"rwtd.target_ess must be in (0, 1], got {self.target_ess}")
        check(self.num_current >= 2, f"rwtd.num_current must be >= 2 samples per prompt for a transport plan, got {self.num_current}")
        check(self.num_reference >= (1 if self.lam < 1 else 0),
              f"rwtd.num_reference must be >= 1 when lam < 1 (the target has a reference part), got {self.num_reference}")
        check(self.eps_scale > 0, f"rwtd.eps_scale must be > 0, got {self.eps_scale}")
        check(0 < self.step_size <= 1, f"rwtd.step_size (η) must be in (0, 1], got {self.step_size}")
        check(self.updates_per_rollout >= 1, "rwtd.updates_per_rollout must be >= 1")
        check(0.0 <= self.current_floor <= 1.0, f"rwtd.current_floor must be in [0, 1], got {self.current_floor}")
        check(self.eps_floor >= 0, f"rwtd.eps_floor must be >= 0, got {self.eps_floor}")
        if self.reward_scale is not None:
            check(not self.normalize_rewards and self.target_ess is None,
                  "rwtd.reward_scale fixes one run-wide scale; it cannot be combined with normalize_rewards or "
                  "target_ess (per-group scales)")
            check(isinstance(self.reward_scale, str) or self.reward_scale > 0,
                  f"rwtd.reward_scale must be > 0 or a calibration file, got {self.reward_scale}")

    @property
    def samples_per_prompt(self) -> int:
        """Generator samples one rollout draws per prompt (policy + reference)."""
        return self.num_current + self.num_reference


def resolve_reward_scale(scale: float | str | None) -> float | None:
    """A run-wide reward scale: a number as is, or the whole reward's scale from a ``visalign calibrate`` file."""
    if scale is None or not isinstance(scale, str):
        return None if scale is None else float(scale)
    from ..rewards.multi import load_total_calibration

    return load_total_calibration(scale).scale


@register_algorithm("rwtd")
class RWTD(Algorithm):
    """Reward-weighted transport distillation (see module docstring). Needs only samples and scalar rewards."""

    config_class = RWTDConfig
    needs_reference = True

    def __init__(self, config: RWTDConfig | None = None) -> None:
        super().__init__(config or RWTDConfig())
        self.features = FeatureCache(self.config.features)
        self.reward_scale = resolve_reward_scale(self.config.reward_scale)

    @property
    def updates_per_rollout(self) -> int:
        return self.config.updates_per_rollout

    @property
    def samples_per_prompt(self) -> int:
        return self.config.samples_per_prompt

    def setup(self, ctx: TrainContext) -> None:
        self.features.get(ctx)

    def _group_beta(self, rewards: torch.Tensor) -> float:
        if self.config.target_ess is None:
            return self.config.beta
        return beta_for_ess(rewards, self.config.target_ess)

    def rollout(self, ctx: TrainContext, batch: PromptBatch, generator: torch.Generator) -> Rollout:
        cfg = self.config
        phi = self.features.get(ctx)
        n, m = cfg.num_current, (cfg.num_reference if cfg.lam < 1 else 0)
        current, cur_batch, noise = sample_group(ctx.policy, batch, n, generator)
        r_cur = ctx.score(current, cur_batch)
        with torch.no_grad():
            f_cur = phi(current)
        layout = BlockLayout.of(phi, f_cur.shape[1])
        if m:
            reference, ref_batch, _ = sample_group(require_reference(ctx, "rwtd"), batch, m, generator)
            r_ref = ctx.score(reference, ref_batch)
            with torch.no_grad():
                f_ref = phi(reference)
        in_features = cfg.regression_space == "features"
        cur_values = f_cur if in_features else as_tensor(current).flatten(1)
        targets = torch.empty_like(cur_values)
        stats: dict[str, list[float]] = {"ess": [], "beta": [], "flat_groups": [], "target_reward": [], "transport_cost": [],
                                         "shift": []}
        start = time.perf_counter()
        for gc, gr in zip(group_slices(len(batch), n), group_slices(len(batch), m)):
            rc, rr = r_cur[gc], (r_ref[gr] if m else r_cur[:0])
            all_r = torch.cat([rc, rr])
            if self.reward_scale is not None:
                rc, rr, all_r = rc / self.reward_scale, rr / self.reward_scale, all_r / self.reward_scale
            elif cfg.normalize_rewards:
                mu, sd = all_r.mean(), all_r.std().clamp_min(1e-8)
                rc, rr, all_r = (rc - mu) / sd, (rr - mu) / sd, (all_r - mu) / sd
            beta = self._group_beta(all_r)
            weights = mixture_target(rc, rr if m else None, beta, cfg.lam, cfg.current_floor)
            target_feats = torch.cat([f_cur[gc], f_ref[gr]]) if m else f_cur[gc]
            values = target_feats if in_features else torch.cat(
                [as_tensor(current)[gc].flatten(1), as_tensor(reference)[gr].flatten(1)] if m else [as_tensor(current)[gc].flatten(1)])
            plan_feats, plan_values, plan_weights = target_feats, values, weights
            if cfg.resample_target:
                idx = systematic_resample(weights, n, generator).to(target_feats.device)
                plan_feats, plan_values, plan_weights = target_feats[idx], values[idx], torch.full((n,), 1.0 / n, dtype=weights.dtype)
            result = transport_targets(f_cur[gc], plan_feats, plan_weights, cfg.solver, cfg.eps_scale, target_values=plan_values,
                                       eps_floor=cfg.eps_floor, layout=layout)
            targets[gc] = partial_step(cur_values[gc], result.targets, cfg.step_size)
            stats["ess"].append(effective_sample_size(weights) / weights.numel())
            stats["flat_groups"].append(float(not math.isfinite(beta)))
            if math.isfinite(beta):
                stats["beta"].append(beta)
            stats["target_reward"].append(float((weights * all_r.double().cpu().to(weights)).sum()))
            stats["transport_cost"].append(result.cost)
            stats["shift"].append(float((result.targets - cur_values[gc]).pow(2).sum(1).sqrt().mean()))
        ot_seconds = time.perf_counter() - start
        extras = {"targets": targets, "ot_seconds": ot_seconds, "stats": {k: sum(v) / len(v) for k, v in stats.items() if v}}
        if m:
            extras["reference_reward"] = float(r_ref.mean())
        return Rollout(samples=current, batch=cur_batch, rewards=r_cur, noise=noise, extras=extras)

    def loss(self, ctx: TrainContext, rollout: Rollout) -> tuple[torch.Tensor, dict[str, float]]:
        out = ctx.policy(rollout.noise, rollout.batch.prompts)
        if self.config.regression_space == "features":
            phi = self.features.get(ctx)
            u = phi(out)
            loss = BlockLayout.of(phi, u.shape[1]).regression_loss(u, rollout.extras["targets"])
        else:
            u = as_tensor(out).flatten(1)
            loss = (u - rollout.extras["targets"].to(u)).pow(2).mean()
        metrics = {f"rwtd/{k}": v for k, v in rollout.extras["stats"].items()}
        metrics["rwtd/ot_seconds"] = rollout.extras["ot_seconds"]
        if "reference_reward" in rollout.extras:
            metrics["rwtd/reference_reward"] = rollout.extras["reference_reward"]
        return loss, metrics


__all__ = ["RWTD", "RWTDConfig", "tilted_weights", "mixture_target", "transport_targets"]
