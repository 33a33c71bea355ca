"""Algorithm (objective) protocol: rollout -> loss + metrics, evaluation, and models an algorithm trains itself."""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

import torch
from torch import nn

from .config import ConfigError, check
from .policy import Policy
from .registry import Registry
from .reward import Reward, score
from .types import PromptBatch, Rollout, Samples

ALGORITHMS: Registry["Algorithm"] = Registry("algorithm", entry_point_group="visalign.algorithms")


def local_flag(flag: bool) -> bool:
    """``TrainContext.any_rank`` of a single process: the flag itself."""
    return flag


def register_algorithm(name: str):
    """Class decorator: make an algorithm selectable by ``algorithm: {name: ...}`` in a config."""
    return ALGORITHMS.register(name)


@dataclass
class TrainContext:
    """What an algorithm sees of the run: models, reward, device and the current step.

    ``reward_components`` collects, per reward component, every score computed through :meth:`score` since the
    trainer last cleared it (the trainer logs their means); ``num_scored`` counts the samples scored so far.
    ``any_rank(flag)`` is True when ``flag`` is True on any rank (the trainer reduces across processes), so that
    decisions taken from one rank's data (skip a step on a non-finite advantage) agree everywhere."""

    policy: Policy
    reference: Policy | None
    reward: Reward
    device: torch.device
    step: int = 0
    autocast: Any = None
    extras: dict[str, Any] = field(default_factory=dict)
    reward_components: dict[str, list[torch.Tensor]] = field(default_factory=dict)
    num_scored: int = 0
    any_rank: Callable[[bool], bool] = local_flag

    def score(self, samples: Samples, batch: PromptBatch) -> torch.Tensor:
        """Validated rewards for a batch (clear error on wrong shape or NaN)."""
        rewards = score(self.reward, samples, batch.prompts, batch.metadata).to(self.device)
        self.num_scored += rewards.shape[0]
        for name, value in self.reward.components().items():
            self.reward_components.setdefault(name, []).append(value.detach().float().cpu())
        return rewards


@dataclass
class Evaluation:
    """What an evaluation produced: the samples (for pictures), one eval reward per sample (the trainer gathers them
    across ranks) and extra already-reduced metrics."""

    samples: Samples
    rewards: torch.Tensor
    metrics: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class UpdatePlan:
    """How the trainer applies one step's update (:meth:`Algorithm.update_plan`).

    ``frozen``: names in ``policy.trainable_module().named_parameters()`` whose gradients are dropped before the
    optimizer step (after the cross-rank sync), so neither those weights nor their AdamW moments move this step.
    ``reset_optimizer``: clear the policy optimizer's state (moments, step counts) before this step's update.
    ``skip``: compute no loss and take no optimizer step (the LR schedule and the step counter still advance)."""

    frozen: frozenset[str] = frozenset()
    reset_optimizer: bool = False
    skip: bool = False


@dataclass
class OwnedModel:
    """A model an algorithm trains itself (a reward model, a critic). The trainer gives it its own AdamW optimizer
    and LR schedule, gradient sync across ranks, gradient clipping, optional EMA and checkpoints; every ``every``
    policy steps it runs ``steps`` optimizer steps on :meth:`Algorithm.refit_loss`."""

    module: nn.Module
    learning_rate: float = 1e-4
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    max_grad_norm: float | None = 1.0
    ema_decay: float | None = None
    every: int = 1
    steps: int = 1

    def __post_init__(self) -> None:
        check(self.learning_rate > 0, f"owned model learning_rate must be > 0, got {self.learning_rate}")
        check(self.every >= 1 and self.steps >= 1, f"owned model every and steps must be >= 1, got {self.every}, {self.steps}")
        check(self.ema_decay is None or 0 < self.ema_decay < 1, f"owned model ema_decay must be in (0, 1), got {self.ema_decay}")
        check(any(p.requires_grad for p in self.module.parameters()), "an owned model needs trainable parameters")


class Algorithm(ABC):
    """An objective. ``rollout`` collects samples and rewards without grad; ``loss`` returns a differentiable
    loss and float metrics; ``evaluate`` scores the policy on a held-out batch.

    Members the trainer reads: ``needs_reference`` (build a frozen reference), ``updates_per_rollout`` (optimizer
    steps per rollout), ``samples_per_prompt`` (generator samples one rollout draws per prompt; the budget methods are
    compared under), ``owned_models`` (models the algorithm trains itself through :meth:`refit_loss`) and
    ``update_plan`` (which parameters a step updates, whether it clears the optimizer state or is skipped)."""

    name: ClassVar[str] = ""
    config_class: ClassVar[type | None] = None
    needs_reference: bool = False

    def __init__(self, config: Any = None) -> None:
        self.config = config

    @property
    def updates_per_rollout(self) -> int:
        """Optimizer steps taken on each rollout (PPO-style reuse); 1 unless the algorithm says otherwise."""
        return 1

    @property
    def samples_per_prompt(self) -> int:
        """Generator samples one rollout draws per prompt (policy and reference together)."""
        return 1

    def setup(self, ctx: TrainContext) -> None:
        """Called once before training (e.g. to build feature encoders on the right device, or check the policy)."""

    def rollout(self, ctx: TrainContext, batch: PromptBatch, generator: torch.Generator) -> Rollout:
        """Default: one policy sample per prompt, drawn without grad, scored by the reward."""
        policy = ctx.policy
        noise = policy.make_noise(len(batch), generator)
        with torch.no_grad():
            samples = policy(noise, batch.prompts)
        return Rollout(samples=samples, batch=batch, rewards=ctx.score(samples, batch), noise=noise)

    @abstractmethod
    def loss(self, ctx: TrainContext, rollout: Rollout) -> tuple[torch.Tensor, dict[str, float]]:
        """Differentiable loss for this rollout and scalar metrics to log."""

    def evaluate(self, ctx: TrainContext, batch: PromptBatch, generator: torch.Generator) -> Evaluation:
        """Default: one policy sample per prompt (noise from ``generator``), scored by the context's reward."""
        samples = ctx.policy.sample(batch.prompts, generator=generator)
        return Evaluation(samples, ctx.score(samples, batch))

    def update_plan(self, ctx: TrainContext, rollouts: list[Rollout]) -> UpdatePlan:
        """Called once per step after the rollouts, before any loss: every parameter updated, nothing reset, by
        default. Algorithms that train parts of the policy in turn return the frozen names and reset points here."""
        return UpdatePlan()

    def owned_models(self) -> dict[str, OwnedModel]:
        """Models this algorithm trains itself, by name (built in :meth:`setup`); none by default."""
        return {}

    def refit_loss(self, ctx: TrainContext, name: str, rollouts: list[Rollout], refit_step: int) -> tuple[torch.Tensor, dict[str, float]]:
        """Loss of owned model ``name`` for optimizer step ``refit_step`` of a refit, on this step's rollouts."""
        raise NotImplementedError(f"{self.name} owns model {name!r} but does not implement refit_loss")

    def state_dict(self) -> dict[str, Any]:
        """Non-module state (running statistics, posteriors) as tensors / JSON-able values."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass

    @classmethod
    def from_config(cls, config: Any = None, **overrides: Any) -> "Algorithm":
        if cls.config_class is None:
            return cls()
        from .config import from_dict

        if config is None or isinstance(config, dict):
            config = from_dict(cls.config_class, {**(config or {}), **overrides}, prefix=f"algorithm({cls.name})")
        return cls(config)


def build_algorithm(config: dict[str, Any] | str) -> Algorithm:
    if isinstance(config, str):
        config = {"name": config}
    config = dict(config)
    if "name" not in config:
        raise ConfigError(f"algorithm config needs a 'name' key, got keys {sorted(config)}")
    return ALGORITHMS.get(config.pop("name")).from_config(config)
