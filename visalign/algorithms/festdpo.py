"""FestDPO — DPO for implicit few-step / one-step generators with kernel density log-likelihoods.

log p_θ(x) and log p_ref(x) are Gaussian KDEs (``kde.py``) in a feature space φ, centred on N fresh samples of the
policy (differentiable through them) and N of the frozen reference. For a pair (a, b) with P(a ≻ b) = q:

    Δ = β·[(log p̂_θ(a) − log p̂_ref(a)) − (log p̂_θ(b) − log p̂_ref(b))],   loss = −[q·log σ(Δ) + (1−q)·log σ(−Δ)].

With online labels q = σ((r_a − r_b)/τ) (``soft``) or a Bernoulli draw of it (``sampled``) the population optimum
is p_θ ∝ p_ref·exp(r/(τβ)) — the reward-tilted reference. ``hard`` labels rank the pair deterministically.
Any sampler works (one-step, few-step Euler, consistency): only ``policy(noise, prompts)`` is used.

Bandwidth and transport between modes. The KDE gradient reaches a policy sample only through kernels of width h
around the pair points, so with a small h mass moves between well-separated modes only by slow diffusion (a
one-step MLP on an 8-mode ring stalls at a fraction of the target reward). A large h gives long-range forces but
biases the optimum: the population fixed point matches the *smoothed* densities, p_θ*K_h ∝ (p_ref*K_h)·exp(r/β),
which for a linear reward r = a·x keeps the exact mode weights but shifts every mode by an extra h²·a/β.
``bandwidth_anneal`` = A > 1 starts every bandwidth at A·h and decays the factor geometrically to 1 over
``bandwidth_anneal_steps`` updates: mass is transported while h is large, the small final h removes most of the bias.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Sequence

import torch
import torch.nn.functional as F

from ..core.algorithm import Algorithm, TrainContext, register_algorithm
from ..core.config import ConfigError, check, option
from ..core.prompts import PromptSource
from ..core.types import PromptBatch, Rollout, Samples, index_samples
from ..features import FeatureSpace
from ..features.blocks import BlockLayout
from .common import FeatureCache, group_slices, require_reference, sample_group
from .kde import BANDWIDTH_RULES, bandwidth, multi_bandwidth_log_prob


def dpo_loss(log_ratio_a: torch.Tensor, log_ratio_b: torch.Tensor, beta: float, prob_a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-pair −[q log σ(Δ) + (1−q) log σ(−Δ)], Δ = β(log_ratio_a − log_ratio_b); returns (loss, Δ)."""
    delta = beta * (log_ratio_a - log_ratio_b)
    q = prob_a.to(delta)
    return -(q * F.logsigmoid(delta) + (1 - q) * F.logsigmoid(-delta)), delta


def preference_labels(r_a: torch.Tensor, r_b: torch.Tensor, mode: str, temperature: float, generator: torch.Generator | None = None) -> torch.Tensor:
    """q = P(a ≻ b): ``soft`` σ((r_a − r_b)/τ) (Bradley–Terry), ``sampled`` a Bernoulli draw of it, ``hard`` 1[r_a > r_b]
    (ties 0.5)."""
    diff = (r_a - r_b).float()
    if mode == "hard":
        return (diff > 0).float() + 0.5 * (diff == 0).float()
    q = torch.sigmoid(diff / temperature)
    if mode == "soft":
        return q
    if mode == "sampled":
        return (torch.rand(q.shape, generator=generator) < q.cpu()).float().to(q.device)
    raise ConfigError(f"unknown label mode {mode!r}; use soft, sampled or hard")


def kernel_features(phi: FeatureSpace, samples: Samples) -> torch.Tensor:
    """φ(x) scaled block-wise so the kernels' squared distance is the transport cost: per-block mean square for a
    block feature space (``core.features.BlockFeatures``), the plain ‖·‖² otherwise."""
    f = phi(samples)
    return BlockLayout.of(phi, f.shape[1]).scaled(f)


@dataclass
class FestDPOConfig:
    """β: DPO strength (the optimum is p_ref·exp(r/(τβ)) with soft labels); N = ``num_samples`` KDE centres per
    prompt for both models; ``num_pairs`` online pairs per prompt from ``pair_source``."""

    beta: float = option(1.0, "DPO strength β (with soft labels the optimum is p_ref·exp(r/(τβ)))")
    num_samples: int = option(64, "KDE centres per prompt, for the policy and for the reference")
    num_pairs: int = option(32, "online preference pairs per prompt")
    pair_source: Literal["reference", "policy", "dataset"] = option(
        "reference", "where pair candidates come from: reference samples, policy samples, or the prompt source's dataset")
    labels: Literal["soft", "sampled", "hard"] = option(
        "soft", "P(a ≻ b): soft σ(Δr/τ), sampled (a Bernoulli draw of it) or hard (1[r_a > r_b])")
    label_temperature: float = option(1.0, "τ of the Bradley–Terry labels σ((r_a − r_b)/τ)")
    bandwidth: Any = option("scott", "KDE bandwidth: a rule (scott, silverman, median, ...) or a positive number")
    bandwidth_scales: list[float] = option(
        help="multiply the bandwidth by each factor and average the KDE log-densities (multi-scale)",
        factory=lambda: [1.0])
    features: Any = option("identity", "feature space φ of the KDE: a registered name (identity, pixels, random_projection, conv, open_clip, reward, dinov2, ssl_encoder) or a {name: ...} spec; block spaces use the per-block mean-square distance")
    updates_per_rollout: int = option(1, "optimizer steps on each rollout")
    bandwidth_anneal: float = option(
        1.0, "start every bandwidth at this factor × h and decay it geometrically to 1 (>= 1; 1: off)")
    bandwidth_anneal_steps: int = option(0, "updates over which bandwidth_anneal decays to 1")

    def __post_init__(self) -> None:
        check(self.beta > 0, f"festdpo.beta must be > 0, got {self.beta}")
        check(self.num_samples >= 2, f"festdpo.num_samples must be >= 2 KDE centres per prompt, got {self.num_samples}")
        check(self.num_pairs >= 1, f"festdpo.num_pairs must be >= 1, got {self.num_pairs}")
        check(self.label_temperature > 0, f"festdpo.label_temperature must be > 0, got {self.label_temperature}")
        check(isinstance(self.bandwidth, (int, float)) and self.bandwidth > 0 or self.bandwidth in BANDWIDTH_RULES,
              f"festdpo.bandwidth must be one of {BANDWIDTH_RULES} or a positive number, got {self.bandwidth!r}")
        check(len(self.bandwidth_scales) >= 1 and all(s > 0 for s in self.bandwidth_scales),
              f"festdpo.bandwidth_scales must be a non-empty list of positive factors, got {self.bandwidth_scales}")
        check(self.updates_per_rollout >= 1, "festdpo.updates_per_rollout must be >= 1")
        check(self.bandwidth_anneal >= 1.0, f"festdpo.bandwidth_anneal (initial bandwidth factor) must be >= 1, got {self.bandwidth_anneal}")
        check(self.bandwidth_anneal_steps >= 0, f"festdpo.bandwidth_anneal_steps must be >= 0, got {self.bandwidth_anneal_steps}")

    @property
    def samples_per_prompt(self) -> int:
        """Generator samples one rollout draws per prompt: 2 x ``num_pairs`` pair candidates (none for
        ``dataset`` pairs) and ``num_samples`` KDE centres from the reference, plus ``num_samples`` from the policy
        unless the policy's pair candidates already supply its logged rewards."""
        pairs = 0 if self.pair_source == "dataset" else 2 * self.num_pairs
        policy = 0 if self.pair_source == "policy" else self.num_samples
        return pairs + self.num_samples + policy


class PreferencePairs(PromptSource):
    """Offline pairs for ``pair_source: dataset``: winners[i] ≻ losers[i] under prompts[i] (sample tensors)."""

    def __init__(self, winners: torch.Tensor, losers: torch.Tensor, prompts: Sequence[str] | None = None) -> None:
        if winners.shape != losers.shape:
            raise ValueError(f"winners {tuple(winners.shape)} and losers {tuple(losers.shape)} must have the same shape")
        self.winners, self.losers = winners, losers
        self.prompts = list(prompts) if prompts is not None else [""] * winners.shape[0]
        if len(self.prompts) != winners.shape[0]:
            raise ValueError(f"{winners.shape[0]} pairs but {len(self.prompts)} prompts")

    def sample(self, n: int, generator: torch.Generator) -> PromptBatch:
        idx = torch.randint(len(self.prompts), (n,), generator=generator).tolist()
        return PromptBatch([self.prompts[i] for i in idx], [{"winner": self.winners[i], "loser": self.losers[i]} for i in idx])


@register_algorithm("festdpo")
class FestDPO(Algorithm):
    """Few-step DPO with KDE likelihoods (see module docstring)."""

    config_class = FestDPOConfig
    needs_reference = True

    def __init__(self, config: FestDPOConfig | None = None) -> None:
        super().__init__(config or FestDPOConfig())
        self.features = FeatureCache(self.config.features)
        self.num_updates = 0  # loss evaluations so far (drives the bandwidth annealing; saved with checkpoints)

    def state_dict(self) -> dict[str, Any]:
        return {"num_updates": self.num_updates}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.num_updates = int(state.get("num_updates", 0))

    def bandwidth_factor(self) -> float:
        """A^(1 − t/T) for update t < T = ``bandwidth_anneal_steps``, then 1."""
        cfg = self.config
        if cfg.bandwidth_anneal_steps <= 0 or self.num_updates >= cfg.bandwidth_anneal_steps:
            return 1.0
        return cfg.bandwidth_anneal ** (1.0 - self.num_updates / cfg.bandwidth_anneal_steps)

    @property
    def updates_per_rollout(self) -> int:
        return self.config.updates_per_rollout

    @property
    def samples_per_prompt(self) -> int:
        return self.config.samples_per_prompt

    def setup(self, ctx: TrainContext) -> None:
        self.features.get(ctx)

    def _pairs(self, ctx: TrainContext, batch: PromptBatch, generator: torch.Generator):
        """Pair points (a, b) per prompt, stacked as [a_0..a_{P-1}, b_0..b_{P-1}] for each group, and q = P(a ≻ b)."""
        cfg = self.config
        if cfg.pair_source == "dataset":
            try:
                a = torch.stack([m["winner"] for m in batch.metadata]).to(ctx.device)
                b = torch.stack([m["loser"] for m in batch.metadata]).to(ctx.device)
            except KeyError as exc:
                raise ConfigError("festdpo pair_source=dataset needs batch metadata with 'winner' and 'loser' samples "
                                  "(use festdpo.PreferencePairs as the prompt source)") from exc
            return a, b, torch.ones(len(batch), device=ctx.device), 1, None
        model = ctx.policy if cfg.pair_source == "policy" else require_reference(ctx, "festdpo")
        p = cfg.num_pairs
        cand, cand_batch, _ = sample_group(model, batch, 2 * p, generator)
        rewards = ctx.score(cand, cand_batch)
        idx = torch.arange(len(cand_batch)).reshape(len(batch), 2, p)
        a, b = idx[:, 0].reshape(-1), idx[:, 1].reshape(-1)
        q = preference_labels(rewards[a], rewards[b], cfg.labels, cfg.label_temperature, generator)
        scored = (cand, cand_batch, rewards) if cfg.pair_source == "policy" else None
        return index_samples(cand, a), index_samples(cand, b), q, p, scored

    def rollout(self, ctx: TrainContext, batch: PromptBatch, generator: torch.Generator) -> Rollout:
        cfg = self.config
        phi = self.features.get(ctx)
        ref = require_reference(ctx, "festdpo")
        a, b, q, per_prompt, scored = self._pairs(ctx, batch, generator)
        ref_samples, _, _ = sample_group(ref, batch, cfg.num_samples, generator)
        expanded = batch.repeat_interleave(cfg.num_samples)
        noise = ctx.policy.make_noise(len(expanded), generator)
        if scored is None:  # log the policy's reward on the KDE-centre noise
            with torch.no_grad():
                samples = ctx.policy(noise, expanded.prompts)
            rewards = ctx.score(samples, expanded)
        else:
            samples, expanded_pairs, rewards = scored
        with torch.no_grad():
            extras = {"fa": kernel_features(phi, a), "fb": kernel_features(phi, b), "q": q, "per_prompt": per_prompt,
                      "fref": kernel_features(phi, ref_samples),
                      "prompts": expanded.prompts}
        return Rollout(samples=samples, batch=expanded if scored is None else expanded_pairs, rewards=rewards, noise=noise, extras=extras)

    def loss(self, ctx: TrainContext, rollout: Rollout) -> tuple[torch.Tensor, dict[str, float]]:
        cfg, ex = self.config, rollout.extras
        phi = self.features.get(ctx)
        centres = kernel_features(phi, ctx.policy(rollout.noise, ex["prompts"]))
        groups = ex["fref"].shape[0] // cfg.num_samples
        pair_slices = group_slices(groups, ex["per_prompt"])
        losses, deltas, hs = [], [], []
        factor = self.bandwidth_factor()
        self.num_updates += 1
        for gs, gp in zip(group_slices(groups, cfg.num_samples), pair_slices):
            ref_c = ex["fref"][gs]
            base = bandwidth(ref_c, cfg.bandwidth) * factor
            widths = [base * s for s in cfg.bandwidth_scales]
            points = torch.cat([ex["fa"][gp], ex["fb"][gp]])
            ratio = multi_bandwidth_log_prob(points, centres[gs], widths) - multi_bandwidth_log_prob(points, ref_c, widths)
            k = ex["fa"][gp].shape[0]
            loss, delta = dpo_loss(ratio[:k], ratio[k:], cfg.beta, ex["q"][gp])
            losses.append(loss)
            deltas.append(delta.detach())
            hs.append(base)
        loss = torch.cat(losses).mean()
        delta, q = torch.cat(deltas), ex["q"].to(ctx.device)
        agree = ((delta > 0).float() == (q > 0.5).float()).float()[q != 0.5]
        return loss, {
            "festdpo/accuracy": float(agree.mean()) if agree.numel() else float("nan"),
            "festdpo/margin": float(delta.mean()),
            "festdpo/bandwidth": sum(hs) / len(hs),
        }


__all__ = ["FestDPO", "FestDPOConfig", "PreferencePairs", "dpo_loss", "preference_labels"]
