"""UMM-Reflection: RL on whole generate → critique → revise trajectories with one trajectory-level advantage.

Per prompt one first image is rendered (ODE, detached: no log-prob, no gradient) and shared by K siblings; each
sibling runs up to ``max_rounds`` controller turns and revisions. Its reward R and advantage A are those of
:mod:`visalign.reflection.reward` (graded quality, stall-free flat round weights, damage penalty, premature-DONE
penalty, std floor, malformed rule after normalisation). The same A goes to every sampled controller token and to
every SDE transition of every revision. Objective, each trajectory weighted equally within each channel:

    text (policy optimizer, first):  mean_τ mean_tokens max(−A ρ, −A clip(ρ, 1 ± c_text)) + β_text·bk3(log π_ref − log π)
    flow (editor optimizer, second): mean_τ mean_SDE-steps max(−A ρ, −A clip(ρ, 1 ± c_flow)) + β_flow·‖μ − μ_ref‖²/(2σ²)

with bk3(d) = bexp(d) − 1 − d, bexp = exp linearised above ``kl_linear_above`` nats (the gradient never vanishes),
and a hard stop when a token's |log π − log π_old| exceeds ``max_log_ratio``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..core.algorithm import Algorithm, Evaluation, OwnedModel, TrainContext, register_algorithm
from ..core.config import check, option
from ..core.flow import gaussian_log_prob
from ..core.reflection import ReflectionPolicy
from ..core.types import PromptBatch, Rollout
from .evaluation import best_of_n, reflection_metrics
from .reward import TrajectoryRewardConfig, group_advantages, trajectory_rewards
from .rollout import Trajectories, run_trajectories

TRAIN_PARTS = ("both", "text", "flow")


@dataclass
class ReflectionConfig:
    group_size: int = option(16, "K sibling trajectories per shared first image")
    max_rounds: int = option(3, "repair rounds per trajectory (controller turns, each possibly followed by an edit)")
    sde_window: int = option(2, "revisions sample (and train) this many consecutive SDE steps")
    window_max_start: int = option(0, "the window starts uniformly in [0, window_max_start] for each revision round")
    noise_level: float = option(1.0, "SDE noise scale η of the revision sampler")
    temperature: float = option(0.9, "controller sampling temperature in training")
    eval_temperature: float = option(0.5, "controller sampling temperature in evaluation")
    text_clip: float = option(0.2, "PPO ratio clip of controller tokens")
    flow_clip: float = option(0.1, "PPO ratio clip of editor SDE transitions")
    text_kl_beta: float = option(1e-4, "weight of the bounded k3 KL of controller tokens to the reference")
    flow_kl_beta: float = option(1e-4, "weight of the per-step Gaussian KL of the editor to the reference")
    kl_linear_above: float = option(10.0, "bexp is exp below this many nats and linear above")
    max_log_ratio: float = option(20.0, "stop training when a token's |log π − log π_old| exceeds this")
    train: str = option("both", "parts RL updates: both, text (controller only) or flow (editor only; the "
                                "controller's loss is weighted 0, keep trainer weight_decay 0)")
    flow_learning_rate: float = option(5e-6, "AdamW learning rate of the editor's optimizer")
    flow_max_grad_norm: float | None = option(1.0, "gradient-norm clip of the editor's optimizer (null: none)")
    updates_per_rollout: int = option(1, "optimizer steps of each part on each rollout (PPO reuse)")
    max_correct_roots: int | None = option(1, "at most this many first images per rollout may already be right "
                                               "(all-right groups carry no signal); extra ones are re-rendered")
    root_resample_attempts: int = option(2, "re-render attempts for first images over max_correct_roots")
    eval_best_of: int = option(4, "evaluation also reports best-of-n single-shot accuracy ranked by the model's own "
                                  "SCORE (0: skip)")
    reward: TrajectoryRewardConfig = option(factory=TrajectoryRewardConfig, help="trajectory reward and advantage")

    def __post_init__(self) -> None:
        check(self.group_size >= 2, f"reflection.group_size must be >= 2 siblings, got {self.group_size}")
        check(1 <= self.max_rounds <= len(self.reward.round_weights),
              f"reflection.max_rounds must be in [1, len(reward.round_weights)={len(self.reward.round_weights)}], "
              f"got {self.max_rounds}")
        check(self.sde_window >= 1, f"reflection.sde_window must be >= 1, got {self.sde_window}")
        check(self.window_max_start >= 0, f"reflection.window_max_start must be >= 0, got {self.window_max_start}")
        check(self.noise_level > 0, f"reflection.noise_level must be > 0, got {self.noise_level}")
        check(self.temperature > 0 and self.eval_temperature > 0, "reflection.temperature and eval_temperature must be > 0")
        check(self.text_clip > 0 and self.flow_clip > 0, "reflection.text_clip and flow_clip must be > 0")
        check(self.text_kl_beta >= 0 and self.flow_kl_beta >= 0, "reflection.text_kl_beta and flow_kl_beta must be >= 0")
        check(self.kl_linear_above > 0 and self.max_log_ratio > 0, "reflection.kl_linear_above and max_log_ratio must be > 0")
        check(self.train in TRAIN_PARTS, f"reflection.train must be one of {list(TRAIN_PARTS)}, got {self.train!r}")
        check(self.flow_learning_rate > 0, f"reflection.flow_learning_rate must be > 0, got {self.flow_learning_rate}")
        check(self.updates_per_rollout >= 1, "reflection.updates_per_rollout must be >= 1")
        check(self.max_correct_roots is None or self.max_correct_roots >= 0,
              f"reflection.max_correct_roots must be >= 0 or null, got {self.max_correct_roots}")
        check(self.root_resample_attempts >= 0, "reflection.root_resample_attempts must be >= 0")
        check(self.eval_best_of >= 0, f"reflection.eval_best_of must be >= 0, got {self.eval_best_of}")


def bounded_k3(d: torch.Tensor, linear_above: float) -> torch.Tensor:
    """k3 = bexp(d) − 1 − d with bexp(d) = exp(d) for d ≤ T and exp(T)·(1 + d − T) above (gradient never vanishes
    nor explodes)."""
    exp_t = math.exp(linear_above)
    bexp = torch.where(d <= linear_above, torch.exp(d.clamp(max=linear_above)), exp_t * (1 + d - linear_above))
    return bexp - 1 - d


def _per_trajectory_mean(values: list[torch.Tensor], rows: list[torch.Tensor], counts: torch.Tensor) -> torch.Tensor:
    """Σ over items of value / count[row], averaged over trajectories with count > 0 (equal trajectory weight)."""
    total = sum((v / counts[r]).sum() for v, r in zip(values, rows))
    return total / (counts > 0).sum().clamp(min=1)


@register_algorithm("reflection")
class Reflection(Algorithm):
    """PPO on reflection trajectories: one trajectory-level group advantage trains the controller's tokens (policy
    optimizer, first) and the editor's SDE transitions (the editor's own optimizer, second)."""

    config_class = ReflectionConfig

    def __init__(self, config: ReflectionConfig | None = None) -> None:
        super().__init__(config or ReflectionConfig())
        self.needs_reference = self.config.text_kl_beta > 0 or self.config.flow_kl_beta > 0
        self._owned: dict[str, OwnedModel] = {}

    @property
    def updates_per_rollout(self) -> int:
        return self.config.updates_per_rollout

    @property
    def samples_per_prompt(self) -> int:
        """First image plus up to ``max_rounds`` revisions for each of the K siblings (an upper bound)."""
        return 1 + self.config.group_size * self.config.max_rounds

    def setup(self, ctx: TrainContext) -> None:
        policy = _require_reflection(ctx.policy)
        cfg = self.config
        steps = policy.editor.num_steps
        check(cfg.window_max_start + cfg.sde_window <= steps,
              f"reflection: sde window [{cfg.window_max_start}, +{cfg.sde_window}) does not fit the editor's {steps} steps")
        if cfg.train != "text":
            self._owned = {"editor": OwnedModel(policy.editor_module(), learning_rate=cfg.flow_learning_rate,
                                                max_grad_norm=cfg.flow_max_grad_norm, steps=cfg.updates_per_rollout)}

    def owned_models(self) -> dict[str, OwnedModel]:
        return self._owned

    # ------------------------------------------------------------------ rollout
    def _sde_steps(self, generator: torch.Generator) -> list[int]:
        start = int(torch.randint(self.config.window_max_start + 1, (1,), generator=generator))
        return list(range(start, start + self.config.sde_window))

    def rollout(self, ctx: TrainContext, batch: PromptBatch, generator: torch.Generator) -> Rollout:
        cfg = self.config
        policy = _require_reflection(ctx.policy)
        expanded = batch.repeat_interleave(cfg.group_size)
        quality = _quality(ctx, expanded)
        first = self._first_images(policy, batch, quality, generator)
        traj = run_trajectories(policy, batch.prompts, quality=quality, group_size=cfg.group_size,
                                max_rounds=cfg.max_rounds, temperature=cfg.temperature, first_images=first,
                                sde_steps=self._sde_steps(generator), noise_level=cfg.noise_level, generator=generator)
        rewards = trajectory_rewards(traj.quality, traj.num_edits, traj.done_while_wrong, cfg.reward)
        adv = group_advantages(rewards, traj.malformed, cfg.group_size, cfg.reward)
        stats = reflection_metrics(traj, prefix="rollout/")
        return Rollout(samples=traj.final_images, batch=expanded, rewards=rewards,
                       extras={"trajectories": traj, "advantages": adv, "stats": stats})

    def _first_images(self, policy: ReflectionPolicy, batch: PromptBatch, quality, generator: torch.Generator) -> torch.Tensor:
        """One first image per prompt; right ones beyond ``max_correct_roots`` are re-rendered (up to
        ``root_resample_attempts`` times)."""
        cfg = self.config
        first = policy.render(batch.prompts, generator)
        if cfg.max_correct_roots is None:
            return first
        roots = torch.arange(len(batch), device=first.device)
        right = quality(first, roots * cfg.group_size) >= 1
        for _ in range(cfg.root_resample_attempts):
            excess = right.nonzero().squeeze(1)[cfg.max_correct_roots:]
            if excess.numel() == 0:
                break
            first[excess] = policy.render([batch.prompts[i] for i in excess.tolist()], generator).to(first.dtype)
            right[excess] = quality(first[excess], excess * cfg.group_size) >= 1
        return first

    # ------------------------------------------------------------------ text step (policy optimizer)
    def loss(self, ctx: TrainContext, rollout: Rollout) -> tuple[torch.Tensor, dict[str, float]]:
        cfg = self.config
        policy = _require_reflection(ctx.policy)
        traj: Trajectories = rollout.extras["trajectories"]
        adv = rollout.extras["advantages"].to(ctx.device)
        counts = torch.zeros(adv.shape[0], device=ctx.device)
        for rnd in traj.controller_rounds:
            counts.index_add_(0, rnd.rows, rnd.turns.mask.float().sum(1))
        terms, rows, kls, clipped, ratios = [], [], [], [], []
        for rnd in traj.controller_rounds:
            logp = policy.controller.token_log_probs(rnd.prompts, rnd.images, rnd.round_index, rnd.turns.tokens,
                                                     cfg.temperature)
            old = rnd.turns.log_probs.to(logp)
            mask = rnd.turns.mask.to(logp)
            shift = (logp.detach() - old).abs() * mask
            if float(shift.max()) > cfg.max_log_ratio:
                raise FloatingPointError(f"reflection: a controller token's |log π − log π_old| = {float(shift.max()):.1f} "
                                         f"exceeds max_log_ratio={cfg.max_log_ratio}; training stopped")
            a = adv[rnd.rows][:, None]
            ratio = torch.exp(logp - old)
            pg = torch.maximum(-a * ratio, -a * ratio.clamp(1 - cfg.text_clip, 1 + cfg.text_clip))
            kl = torch.zeros_like(pg)
            if ctx.reference is not None and cfg.text_kl_beta > 0:
                with torch.no_grad():
                    ref = _require_reflection(ctx.reference).controller.token_log_probs(
                        rnd.prompts, rnd.images, rnd.round_index, rnd.turns.tokens, cfg.temperature)
                kl = bounded_k3(ref - logp, cfg.kl_linear_above)
            terms.append(((pg + cfg.text_kl_beta * kl) * mask).sum(1))
            rows.append(rnd.rows)
            kls.append(float((kl.detach() * mask).sum() / mask.sum().clamp(min=1)))
            clipped.append(float((((ratio.detach() - 1).abs() > cfg.text_clip).float() * mask).sum() / mask.sum().clamp(min=1)))
            ratios.append(float((ratio.detach() * mask).sum() / mask.sum().clamp(min=1)))
        loss = _per_trajectory_mean(terms, rows, counts)
        if cfg.train == "flow":
            loss = loss * 0.0
        n = max(len(kls), 1)
        metrics = {"reflection/text_kl": sum(kls) / n, "reflection/text_clip_frac": sum(clipped) / n,
                   "reflection/text_ratio": sum(ratios) / n, "reflection/adv_abs": float(adv.abs().mean()),
                   **rollout.extras["stats"]}
        return loss, metrics

    # ------------------------------------------------------------------ flow step (editor optimizer)
    def refit_loss(self, ctx: TrainContext, name: str, rollouts: list[Rollout], refit_step: int) -> tuple[torch.Tensor, dict[str, float]]:
        if name != "editor":
            raise KeyError(f"reflection owns only 'editor', not {name!r}")
        losses, kls, clipped = [], [], []
        for rollout in rollouts:
            loss, kl, clip = self._flow_loss(ctx, rollout)
            losses.append(loss)
            kls.append(kl)
            clipped.append(clip)
        return sum(losses) / len(losses), {"reflection/flow_kl": sum(kls) / len(kls),
                                           "reflection/flow_clip_frac": sum(clipped) / len(clipped)}

    def _flow_loss(self, ctx: TrainContext, rollout: Rollout) -> tuple[torch.Tensor, float, float]:
        cfg = self.config
        policy = _require_reflection(ctx.policy)
        reference = _require_reflection(ctx.reference) if ctx.reference is not None and cfg.flow_kl_beta > 0 else None
        traj: Trajectories = rollout.extras["trajectories"]
        adv = rollout.extras["advantages"].to(ctx.device)
        counts = torch.zeros(adv.shape[0], device=ctx.device)
        for rnd in traj.edit_rounds:
            counts.index_add_(0, rnd.rows, torch.full((rnd.rows.numel(),), float(len(rnd.trajectory.sde_steps)), device=ctx.device))
        terms, rows, kls, clipped, n = [], [], 0.0, 0.0, 0
        for rnd in traj.edit_rounds:
            sde = rnd.trajectory
            cond = policy.edit_condition(rnd.prompts, rnd.images, rnd.instructions)
            ref_cond = reference.edit_condition(rnd.prompts, rnd.images, rnd.instructions) if reference is not None else None
            a = adv[rnd.rows]
            for k in sde.sde_steps:
                mean, std = policy.editor.transition(sde, k, cond)
                ratio = torch.exp(gaussian_log_prob(sde.latents[:, k + 1], mean, std) - sde.log_probs[:, k])
                term = torch.maximum(-a * ratio, -a * ratio.clamp(1 - cfg.flow_clip, 1 + cfg.flow_clip))
                if reference is not None:
                    with torch.no_grad():
                        ref_mean, _ = reference.editor.transition(sde, k, ref_cond)
                    kl = ((mean - ref_mean).float() ** 2).flatten(1).mean(1) / (2 * std**2)
                    term = term + cfg.flow_kl_beta * kl
                    kls += float(kl.detach().mean())
                terms.append(term)
                rows.append(rnd.rows)
                clipped += float(((ratio.detach() - 1).abs() > cfg.flow_clip).float().mean())
                n += 1
        if not terms:
            zero = sum(p.sum() for p in policy.editor_module().parameters()) * 0.0
            return zero, 0.0, 0.0
        return _per_trajectory_mean(terms, rows, counts), kls / n, clipped / n

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, ctx: TrainContext, batch: PromptBatch, generator: torch.Generator) -> Evaluation:
        cfg = self.config
        policy = _require_reflection(ctx.policy)
        traj = run_trajectories(policy, batch.prompts, quality=_quality(ctx, batch), max_rounds=cfg.max_rounds,
                                temperature=cfg.eval_temperature, generator=generator)
        metrics = reflection_metrics(traj, prefix="eval/")
        if cfg.eval_best_of:
            expanded = batch.repeat_interleave(cfg.eval_best_of)
            _, q = best_of_n(policy, batch.prompts, _quality(ctx, expanded), cfg.eval_best_of,
                             temperature=cfg.eval_temperature, generator=generator)
            metrics[f"eval/best_of_{cfg.eval_best_of}_acc"] = float((q >= 1).float().mean())
        return Evaluation(traj.final_images, traj.final_quality, metrics)


def _quality(ctx: TrainContext, batch: PromptBatch):
    """Graded quality of images that belong to rows ``rows`` of ``batch``, through the context's reward."""

    def quality(images: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        index = rows.tolist()
        sub = PromptBatch([batch.prompts[i] for i in index], [batch.metadata[i] for i in index] if batch.metadata else [])
        return ctx.score(images, sub)

    return quality


def _require_reflection(policy) -> ReflectionPolicy:
    if not isinstance(policy, ReflectionPolicy):
        raise TypeError(f"reflection needs a ReflectionPolicy (a controller and an image-conditioned flow editor), "
                        f"got {type(policy).__name__}")
    return policy


__all__ = ["Reflection", "ReflectionConfig", "bounded_k3"]
