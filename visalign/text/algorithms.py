"""Text algorithms on the shared trainer: ``text_grpo`` (GRPO / Dr.GRPO / RLOO / MaPP advantages, PPO-clip, KL),
``text_distill`` (on-policy distillation, optionally hybrid with a reward) and ``text_multi_reward`` (ORPG).

All expect ``ctx.policy`` to be a :class:`~visalign.text.policy.CausalLMPolicy`. Each prompt of the trainer's batch
gets ``group_size`` completions; ``Rollout.samples`` is the list of completion strings and ``Rollout.batch`` the
prompt batch repeated per completion.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch
from torch import nn

from ..core.algorithm import Algorithm, Evaluation, TrainContext, register_algorithm
from ..core.config import check, option
from ..core.reward import Reward, build_reward, score
from ..core.types import PromptBatch, Rollout
from ..rewards.multi import gdpo_advantages
from .advantages import ESTIMATORS, BetaPosteriorTable, group_rewards, mapp_advantages
from .losses import distillation_loss, hybrid_loss, ppo_clip_loss
from .policy import CausalLMPolicy, TextSamples
from .credit import combine_credit, graph_credit, progress_credit
from .multiturn import TextEnvironment, load_environment, multiturn_rollout, turn_batch
from .reconcile import reconcile


def _policy(ctx: TrainContext) -> CausalLMPolicy:
    if not isinstance(ctx.policy, CausalLMPolicy):
        raise TypeError(f"text algorithms need a CausalLMPolicy, got {type(ctx.policy).__name__}")
    return ctx.policy


def _args(s: TextSamples) -> tuple[torch.Tensor, ...]:
    return s.prompt_ids, s.prompt_mask, s.completion_ids, s.completion_mask


def _trainable(module: nn.Module) -> list[nn.Parameter]:
    return [p for p in module.parameters() if p.requires_grad]


def _length_metrics(s: TextSamples) -> dict[str, float]:
    return {"completion_len": float(s.completion_mask.sum(1).float().mean())}


@dataclass
class TextRLConfig:
    """Fields shared by the text RL algorithms."""

    group_size: int = option(8, "completions per prompt (the group whose rewards are normalised)")
    clip_eps: float = option(0.2, "PPO ratio clip ε (lower side, and upper side unless clip_eps_high is set)")
    clip_eps_high: float | None = option(None, "upper PPO clip (DAPO clip-higher); null: clip_eps")
    kl_coef: float = option(0.0, "weight of the per-token KL to the frozen reference (0: no reference needed)")
    kl_estimator: Literal["k1", "k3"] = option(
        "k3", "per-token KL estimator: k1 (log-ratio) or k3 (unbiased, non-negative)")
    aggregation: Literal["auto", "token", "sequence", "constant"] = option(
        "auto", "loss normaliser: mean over tokens (token), per sequence (sequence), a constant length (constant); auto picks per method")
    updates_per_rollout: int = option(1, "optimizer steps on each rollout (PPO reuse; >1 records old log-probs)")
    max_new_tokens: int | None = option(None, "completion length cap (null: the policy's default)")

    def __post_init__(self) -> None:
        check(self.group_size >= 1, f"group_size must be >= 1, got {self.group_size}")
        check(self.clip_eps > 0, f"clip_eps must be > 0, got {self.clip_eps}")
        check(self.kl_coef >= 0, f"kl_coef must be >= 0, got {self.kl_coef}")
        check(self.updates_per_rollout >= 1, f"updates_per_rollout must be >= 1, got {self.updates_per_rollout}")
        check(self.max_new_tokens is None or self.max_new_tokens >= 1, "max_new_tokens must be >= 1 or null")


@dataclass
class TextGRPOConfig(TextRLConfig):
    """``advantage``: grpo | dr_grpo | rloo | mapp. ``aggregation: auto`` is ``constant`` for dr_grpo, else ``token``.
    MaPP's Beta prior ``(mapp_alpha0, mapp_beta0)`` and per-prompt discount ``mapp_discount`` (lambda).
    ``multi_reward: gdpo`` (with ``advantage: grpo``) normalises each component of a weighted reward within its group
    before summing (GDPO)."""

    advantage: Literal["grpo", "dr_grpo", "rloo", "mapp"] = option(
        "grpo", "advantage estimator: grpo, dr_grpo (no std division), rloo (leave-one-out) or mapp (Beta-posterior prior)")
    multi_reward: Literal["sum", "gdpo"] = option(
        "sum", "several reward components: sum (advantages of the weighted sum) or gdpo (each component normalised "
               "within its group, then summed; needs advantage: grpo)")
    mapp_alpha0: float = option(1.0, "MaPP: Beta prior α0 of each prompt's success rate")
    mapp_beta0: float = option(1.0, "MaPP: Beta prior β0 of each prompt's success rate")
    mapp_discount: float = option(0.5, "MaPP: per-prompt discount λ of old evidence, in [0, 1]")

    def __post_init__(self) -> None:
        super().__post_init__()
        check(self.advantage not in ("rloo", "mapp") or self.group_size >= 2, f"{self.advantage} needs group_size >= 2")
        check(self.multi_reward in ("sum", "gdpo"), f"multi_reward must be sum or gdpo, got {self.multi_reward!r}")
        check(self.multi_reward == "sum" or self.advantage == "grpo",
              f"multi_reward: gdpo normalises each reward component GRPO-style; it needs advantage: grpo, got {self.advantage!r}")
        check(self.mapp_alpha0 > 0 and self.mapp_beta0 > 0, "mapp_alpha0 and mapp_beta0 must be > 0")
        check(0.0 <= self.mapp_discount <= 1.0, f"mapp_discount must be in [0, 1], got {self.mapp_discount}")


class _TextRL(Algorithm):
    """Shared rollout / PPO machinery: sample G completions per prompt, score them, keep token tensors."""

    config: TextRLConfig

    def __init__(self, config: TextRLConfig | None = None) -> None:
        super().__init__(config or self.config_class())
        self.needs_reference = self.config.kl_coef > 0

    @property
    def updates_per_rollout(self) -> int:
        return self.config.updates_per_rollout

    @property
    def samples_per_prompt(self) -> int:
        """Completions one rollout draws per prompt."""
        return self.config.group_size

    @property
    def aggregation(self) -> str:
        return "token" if self.config.aggregation == "auto" else self.config.aggregation

    def _sample(self, ctx: TrainContext, batch: PromptBatch, generator: torch.Generator) -> tuple[TextSamples, PromptBatch]:
        policy = _policy(ctx)
        s = policy.sample(batch.prompts, generator, num_samples=self.config.group_size, max_new_tokens=self.config.max_new_tokens)
        return s, batch.repeat_interleave(self.config.group_size)

    def _logprob_extras(self, ctx: TrainContext, s: TextSamples) -> dict[str, torch.Tensor]:
        extras: dict[str, torch.Tensor] = {}
        with torch.no_grad():
            if self.config.updates_per_rollout > 1:
                extras["old_logprobs"] = _policy(ctx).token_logprobs(*_args(s))
            if self.config.kl_coef > 0:
                if ctx.reference is None:
                    raise ValueError(f"{self.name}: kl_coef > 0 but the trainer gave no reference policy")
                extras["ref_logprobs"] = ctx.reference.token_logprobs(*_args(s))
        return extras

    def _ppo(self, ctx: TrainContext, rollout: Rollout, logp: torch.Tensor, advantages: torch.Tensor) -> tuple[torch.Tensor, dict[str, float]]:
        s: TextSamples = rollout.extras["text"]
        old = rollout.extras.get("old_logprobs", logp.detach())
        return ppo_clip_loss(
            logp, old, advantages, s.completion_mask, self.config.clip_eps, self.config.clip_eps_high, self.aggregation,
            rollout.extras.get("ref_logprobs"), self.config.kl_coef, self.config.kl_estimator,
            max_len=self.config.max_new_tokens or _policy(ctx).max_new_tokens,
        )

    def evaluate(self, ctx: TrainContext, batch: PromptBatch, generator: torch.Generator) -> Evaluation:
        """Greedy completions on the held-out batch: mean reward (exact-match accuracy for 0/1 rewards)."""
        s = _policy(ctx).sample(batch.prompts, None, num_samples=1, max_new_tokens=self.config.max_new_tokens, greedy=True)
        return Evaluation(s.texts, ctx.score(s.texts, batch).float(),
                          {"eval/completion_len": float(s.completion_mask.sum(1).float().mean())})


@register_algorithm("text_grpo")
class TextGRPO(_TextRL):
    """Group-relative policy optimisation for causal LMs with a choice of advantage estimator."""

    config_class = TextGRPOConfig
    config: TextGRPOConfig

    def __init__(self, config: TextGRPOConfig | None = None) -> None:
        super().__init__(config)
        c = self.config
        self.posterior = BetaPosteriorTable(c.mapp_alpha0, c.mapp_beta0, c.mapp_discount)

    @property
    def aggregation(self) -> str:
        if self.config.aggregation == "auto":
            return "constant" if self.config.advantage == "dr_grpo" else "token"
        return self.config.aggregation

    def advantages(self, prompts: list[str], rewards: torch.Tensor) -> torch.Tensor:
        """Flat advantages ``[P*G]`` for flat rewards; MaPP reads and then updates the per-prompt posterior."""
        grouped = group_rewards(rewards.detach().float().cpu(), self.config.group_size)
        if self.config.advantage == "mapp":
            alpha, beta = self.posterior.leave_one_out(prompts, grouped)
            adv = mapp_advantages(grouped, alpha, beta)
            self.posterior.update(prompts, grouped)
        else:
            adv = ESTIMATORS[self.config.advantage](grouped)
        return adv.reshape(-1)

    def rollout(self, ctx: TrainContext, batch: PromptBatch, generator: torch.Generator) -> Rollout:
        s, rep = self._sample(ctx, batch, generator)
        rewards = ctx.score(s.texts, rep)
        if self.config.multi_reward == "gdpo":
            adv = gdpo_advantages(ctx.reward, self.config.group_size).to(ctx.device)
        else:
            adv = self.advantages(batch.prompts, rewards).to(ctx.device)
        grouped = group_rewards(rewards.detach().float(), self.config.group_size)
        same = (grouped.max(1).values == grouped.min(1).values).float().mean()
        extras = {"text": s, "advantages": adv, "frac_uniform_groups": float(same), **self._logprob_extras(ctx, s)}
        return Rollout(samples=s.texts, batch=rep, rewards=rewards, extras=extras)

    def loss(self, ctx: TrainContext, rollout: Rollout) -> tuple[torch.Tensor, dict[str, float]]:
        s: TextSamples = rollout.extras["text"]
        logp = _policy(ctx).token_logprobs(*_args(s))
        loss, metrics = self._ppo(ctx, rollout, logp, rollout.extras["advantages"])
        adv = rollout.extras["advantages"]
        metrics.update({"adv/abs_mean": float(adv.abs().mean()), "frac_uniform_groups": rollout.extras["frac_uniform_groups"],
                        **_length_metrics(s)})
        return loss, metrics

    def state_dict(self) -> dict[str, Any]:
        return {"posterior": self.posterior.state_dict()} if self.config.advantage == "mapp" else {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if "posterior" in state:
            self.posterior.load_state_dict(state["posterior"])


# ---------------------------------------------------------------------------------------------- distillation


@dataclass
class TextDistillConfig(TextRLConfig):
    """On-policy distillation to ``teacher`` (a local causal-LM folder with the student's vocabulary).

    ``kind``: reverse (``KL(student || teacher)``) or forward KL, exact over the vocabulary at each completion
    position of student samples. ``reward_weight > 0`` adds a GRPO reward loss (hybrid); with ``normalize_grads``
    the distillation term is rescaled to ``distill_weight`` times the reward gradient's norm."""

    teacher: str = option("", "local causal-LM folder of the teacher (same vocabulary as the student)")
    kind: Literal["reverse", "forward"] = option(
        "reverse", "reverse KL(student || teacher) or forward KL, exact over the vocabulary")
    distill_weight: float = option(1.0, "weight of the distillation term")
    reward_weight: float = option(0.0, "weight of a GRPO reward loss added to the distillation (0: pure distillation)")
    normalize_grads: bool = option(
        True, "rescale the distillation gradient to distill_weight × the reward gradient's norm (hybrid only)")
    advantage: Literal["grpo", "dr_grpo", "rloo"] = option(
        "grpo", "advantage estimator of the reward term: grpo, dr_grpo or rloo")
    group_size: int = option(4, "completions per prompt")

    def __post_init__(self) -> None:
        super().__post_init__()
        check(self.distill_weight >= 0 and self.reward_weight >= 0, "distill_weight and reward_weight must be >= 0")
        check(self.distill_weight > 0 or self.reward_weight > 0, "one of distill_weight, reward_weight must be > 0")
        check(self.advantage != "rloo" or self.group_size >= 2, "rloo needs group_size >= 2")


@register_algorithm("text_distill")
class TextDistill(_TextRL):
    """Student samples, teacher scores every next-token distribution; optional reward term (hybrid)."""

    config_class = TextDistillConfig
    config: TextDistillConfig

    def __init__(self, config: TextDistillConfig | None = None, teacher: CausalLMPolicy | None = None) -> None:
        super().__init__(config)
        self.teacher = teacher

    def setup(self, ctx: TrainContext) -> None:
        if self.teacher is None:
            if not self.config.teacher:
                raise ValueError("text_distill needs algorithm.teacher (a local causal-LM folder) or a teacher= policy")
            self.teacher = CausalLMPolicy.from_pretrained(Path(self.config.teacher))
        self.teacher.requires_grad_(False).eval().to(ctx.device)
        student = _policy(ctx)
        if len(self.teacher.tokenizer) != len(student.tokenizer) or self.teacher.tokenizer.get_vocab() != student.tokenizer.get_vocab():
            raise ValueError("text_distill: teacher and student tokenizers differ; token-level KL needs one vocabulary")

    def rollout(self, ctx: TrainContext, batch: PromptBatch, generator: torch.Generator) -> Rollout:
        if self.teacher is None:
            self.setup(ctx)
        s, rep = self._sample(ctx, batch, generator)
        rewards = ctx.score(s.texts, rep)
        extras: dict[str, Any] = {"text": s, **self._logprob_extras(ctx, s)}
        with torch.no_grad():
            extras["teacher_logits"] = self.teacher.completion_logits(*_args(s))
        if self.config.reward_weight > 0:
            extras["advantages"] = ESTIMATORS[self.config.advantage](group_rewards(rewards.float(), self.config.group_size)).reshape(-1)
        return Rollout(samples=s.texts, batch=rep, rewards=rewards, extras=extras)

    def loss(self, ctx: TrainContext, rollout: Rollout) -> tuple[torch.Tensor, dict[str, float]]:
        c, policy = self.config, _policy(ctx)
        s: TextSamples = rollout.extras["text"]
        logits = policy.completion_logits(*_args(s))
        d_loss, metrics = distillation_loss(logits, rollout.extras["teacher_logits"], s.completion_mask, c.kind, self.aggregation)
        metrics["distill_loss"] = float(d_loss.detach())
        metrics.update(_length_metrics(s))
        if c.reward_weight <= 0:
            return c.distill_weight * d_loss, metrics
        logp = torch.log_softmax(logits.float() / policy.temperature, -1).gather(-1, s.completion_ids[..., None]).squeeze(-1)
        logp = logp * s.completion_mask
        r_loss, m = self._ppo(ctx, rollout, logp, rollout.extras["advantages"])
        metrics.update(m)
        if c.normalize_grads:
            loss, m = hybrid_loss(c.reward_weight * r_loss, d_loss, _trainable(policy), c.distill_weight)
            metrics.update(m)
            return loss, metrics
        return c.reward_weight * r_loss + c.distill_weight * d_loss, metrics


# -------------------------------------------------------------------------------------------- multi-reward


@dataclass
class TextMultiRewardConfig(TextRLConfig):
    """One clipped objective per reward; gradients combined by ``combine``: sum (weighted), orpg, pcgrad, priority.

    ``rewards``: reward specs (names / ``{name, weight, ...}``); empty means the components of the trainer's
    reward (a weighted sum). ``priority``: order of reward indices, most important first."""

    rewards: list[Any] = option(
        help="reward specs (names or {name, weight, ...}); empty: the components of the trainer's weighted reward",
        factory=list)
    combine: Literal["sum", "orpg", "pcgrad", "priority"] = option(
        "orpg", "how per-reward gradients combine: sum (weighted), orpg, pcgrad or priority")
    priority: list[int] | None = option(None, "priority: reward indices, most important first")
    normalize_power: float = option(0.5, "orpg: each gradient is divided by its norm to this power before blending")
    advantage: Literal["grpo", "dr_grpo", "rloo"] = option(
        "grpo", "advantage estimator per reward: grpo, dr_grpo or rloo")

    def __post_init__(self) -> None:
        super().__post_init__()
        check(self.combine != "priority" or self.priority is not None, "combine=priority needs a priority order")
        check(self.advantage != "rloo" or self.group_size >= 2, "rloo needs group_size >= 2")


@register_algorithm("text_multi_reward")
class TextMultiReward(_TextRL):
    """ORPG-style multi-reward policy optimisation; ``loss`` returns a surrogate whose gradient is the reconciled
    update and whose value is the weighted sum of the per-reward losses."""

    config_class = TextMultiRewardConfig
    config: TextMultiRewardConfig

    def __init__(self, config: TextMultiRewardConfig | None = None) -> None:
        super().__init__(config)
        self._built: list[tuple[Reward, float]] | None = None

    def _components(self, ctx: TrainContext) -> list[tuple[Reward, float]]:
        if self.config.rewards:
            if self._built is None:
                self._built = []
                for spec in self.config.rewards:
                    weight = float(spec.get("weight", 1.0)) if isinstance(spec, dict) else 1.0
                    self._built.append((build_reward(spec), weight))
            return self._built
        parts = ctx.reward.parts()
        if len(parts) < 2:
            raise ValueError("text_multi_reward needs algorithm.rewards or a weighted-sum (list) reward with >= 2 components")
        return parts

    def rollout(self, ctx: TrainContext, batch: PromptBatch, generator: torch.Generator) -> Rollout:
        s, rep = self._sample(ctx, batch, generator)
        comps = self._components(ctx)
        per = torch.stack([score(r, s.texts, rep.prompts, rep.metadata).float() for r, _ in comps]).to(ctx.device)
        weights = torch.tensor([w for _, w in comps], device=ctx.device)
        est = ESTIMATORS[self.config.advantage]
        adv = torch.stack([est(group_rewards(r.cpu(), self.config.group_size)).reshape(-1) for r in per]).to(ctx.device)
        extras = {"text": s, "component_rewards": per, "weights": weights, "advantages": adv,
                  "names": [r.name for r, _ in comps], **self._logprob_extras(ctx, s)}
        return Rollout(samples=s.texts, batch=rep, rewards=(weights[:, None] * per).sum(0), extras=extras)

    def loss(self, ctx: TrainContext, rollout: Rollout) -> tuple[torch.Tensor, dict[str, float]]:
        policy = _policy(ctx)
        s: TextSamples = rollout.extras["text"]
        params = _trainable(policy)
        logp = policy.token_logprobs(*_args(s))
        weights = rollout.extras["weights"].tolist()
        losses, flats, metrics = [], [], {}
        for k, (adv, name) in enumerate(zip(rollout.extras["advantages"], rollout.extras["names"])):
            l_k, _ = self._ppo(ctx, rollout, logp, adv)
            grads = torch.autograd.grad(l_k, params, retain_graph=True, allow_unused=True)
            flats.append(torch.cat([(g if g is not None else torch.zeros_like(p)).reshape(-1) for g, p in zip(grads, params)]))
            losses.append(l_k)
            metrics[f"loss/{name}"] = float(l_k.detach())
            metrics[f"reward/{name}"] = float(rollout.extras["component_rewards"][k].mean())
        update, info = reconcile(flats, self.config.combine, weights=weights, priority=self.config.priority,
                                 normalize_power=self.config.normalize_power)
        metrics.update({f"reconcile/{k}": v for k, v in info.items()})
        surrogate, offset = torch.zeros((), device=logp.device), 0
        for p in params:
            n = p.numel()
            surrogate = surrogate + (p * update[offset : offset + n].view_as(p).to(p.dtype)).sum()
            offset += n
        value = sum(w * l.detach() for w, l in zip(weights, losses))
        return surrogate - surrogate.detach() + value, metrics


# ----------------------------------------------------------------------------------------------- multi-turn


@dataclass
class TextMultiTurnConfig(TextRLConfig):
    """Multi-turn RL against an environment (``env``: ``file.py:Class`` or ``module:Class``, built with
    ``env_kwargs``). Trajectory reward = sum of step rewards; success = reward >= ``success_threshold``.

    ``credit``: ``none`` (trajectory advantage on every turn), ``graph`` (CRBC: ``w_group * A_group + w_step *
    (Q - V) / max(sigma, sigma_min)``) or ``progress`` (``w_group * A_group + w_step * (p_t - p_{t-1})``)."""

    env: str = option("", "environment class: file.py:Class or module:Class")
    env_kwargs: dict[str, Any] = option(help="keyword arguments for the environment", factory=dict)
    max_turns: int = option(4, "turns per trajectory at most")
    credit: Literal["none", "graph", "progress"] = option(
        "graph", "per-turn credit: none (trajectory advantage), graph (CRBC) or progress")
    advantage: Literal["grpo", "dr_grpo", "rloo"] = option(
        "grpo", "trajectory advantage estimator: grpo, dr_grpo or rloo")
    w_group: float = option(1.0, "weight of the group (trajectory) advantage in the per-turn credit")
    w_step: float = option(1.0, "weight of the step term (graph: (Q − V)/σ, progress: p_t − p_{t−1})")
    gamma: float = option(1.0, "discount of later step rewards in the graph credit, in (0, 1]")
    sigma_min: float = option(0.1, "graph credit: floor on σ in (Q − V)/max(σ, sigma_min)")
    success_threshold: float = option(0.5, "a trajectory succeeds when its reward is at least this")
    group_size: int = option(4, "trajectories per prompt")

    def __post_init__(self) -> None:
        super().__post_init__()
        check(self.max_turns >= 1, f"max_turns must be >= 1, got {self.max_turns}")
        check(0 < self.gamma <= 1, f"gamma must be in (0, 1], got {self.gamma}")
        check(self.advantage != "rloo" or self.group_size >= 2, "rloo needs group_size >= 2")


@register_algorithm("text_multiturn")
class TextMultiTurn(_TextRL):
    """PPO-clip over every turn of multi-turn rollouts with per-turn advantages from step-level credit."""

    config_class = TextMultiTurnConfig
    config: TextMultiTurnConfig

    def __init__(self, config: TextMultiTurnConfig | None = None, env: TextEnvironment | None = None) -> None:
        super().__init__(config)
        self.env = env

    def setup(self, ctx: TrainContext) -> None:
        if self.env is None:
            if not self.config.env:
                raise ValueError("text_multiturn needs algorithm.env ('file.py:Class') or an env= object")
            self.env = load_environment(self.config.env, **self.config.env_kwargs)

    def turn_advantages(self, trajectories: list, rewards: torch.Tensor) -> list[list[float]]:
        """Per-turn advantages for grouped trajectories (see the config docstring)."""
        c, g = self.config, self.config.group_size
        group_adv = ESTIMATORS[c.advantage](group_rewards(rewards.float().cpu(), g)).reshape(-1).tolist()
        out: list[list[float]] = []
        for start in range(0, len(trajectories), g):
            group, adv = trajectories[start : start + g], group_adv[start : start + g]
            if c.credit == "graph":
                credit = graph_credit([t.states for t in group], [t.reward >= c.success_threshold for t in group],
                                      gamma=c.gamma, sigma_min=c.sigma_min)
                step = credit.step_advantages
            elif c.credit == "progress":
                step = [progress_credit(t.progress, t.initial_progress) for t in group]
            else:
                step = [[0.0] * len(t.turns) for t in group]
            out.extend(combine_credit(adv, step, c.w_group, c.w_step))
        return out

    def rollout(self, ctx: TrainContext, batch: PromptBatch, generator: torch.Generator) -> Rollout:
        if self.env is None:
            self.setup(ctx)
        c, policy = self.config, _policy(ctx)
        trajs = multiturn_rollout(policy, self.env, batch.prompts, batch.metadata, generator, c.group_size, c.max_turns,
                                  c.max_new_tokens)
        rewards = torch.tensor([t.reward for t in trajs], device=ctx.device)
        per_turn = self.turn_advantages(trajs, rewards)
        s, index = turn_batch(policy, trajs)
        adv = torch.tensor([per_turn[k][t] for k, t in index], device=ctx.device)
        transcripts = [t.turns[-1].context + t.turns[-1].action + t.turns[-1].result.observation for t in trajs]
        extras = {"text": s, "advantages": adv, "trajectories": trajs, **self._logprob_extras(ctx, s)}
        return Rollout(samples=transcripts, batch=batch.repeat_interleave(c.group_size), rewards=rewards, extras=extras)

    def loss(self, ctx: TrainContext, rollout: Rollout) -> tuple[torch.Tensor, dict[str, float]]:
        s: TextSamples = rollout.extras["text"]
        logp = _policy(ctx).token_logprobs(*_args(s))
        loss, metrics = self._ppo(ctx, rollout, logp, rollout.extras["advantages"])
        trajs = rollout.extras["trajectories"]
        metrics.update({"turns_mean": sum(len(t.turns) for t in trajs) / len(trajs),
                        "adv/abs_mean": float(rollout.extras["advantages"].abs().mean())})
        return loss, metrics

    def evaluate(self, ctx: TrainContext, batch: PromptBatch, generator: torch.Generator) -> Evaluation:
        """Greedy multi-turn episodes: mean trajectory reward and success rate."""
        if self.env is None:
            self.setup(ctx)
        c = self.config
        trajs = multiturn_rollout(_policy(ctx), self.env, batch.prompts, batch.metadata, None, 1, c.max_turns,
                                  c.max_new_tokens, greedy=True)
        rewards = torch.tensor([t.reward for t in trajs])
        texts = [t.turns[-1].context + t.turns[-1].action for t in trajs]
        return Evaluation(texts, rewards, {"eval/success": float((rewards >= c.success_threshold).float().mean()),
                                           "eval/turns_mean": sum(len(t.turns) for t in trajs) / len(trajs)})
