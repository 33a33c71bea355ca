"""Algorithm (objective) protocol: rollout -> loss + metrics, with an optional reward-model refit hook."""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch
from torch import nn

from .registry import Registry
from .reward import Reward, score
from .types import PromptBatch, Rollout, Samples

ALGORITHMS: Registry["Algorithm"] = Registry("algorithm")
BUILTIN_ALGORITHM_MODULES = ("visalign.algorithms", "visalign.text.algorithms")


def register_algorithm(name: str):
    """Class decorator: make an algorithm selectable by ``algorithm: {name: ...}`` in a config."""
    return ALGORITHMS.register(name)


@dataclass
class TrainContext:
    """What an algorithm sees of the run: models, reward, device and the current step."""

    policy: nn.Module
    reference: nn.Module | None
    reward: Reward
    device: torch.device
    step: int = 0
    autocast: Any = None
    extras: dict[str, Any] = field(default_factory=dict)

    def score(self, samples: Samples, batch: PromptBatch) -> torch.Tensor:
        """Validated rewards for a batch (clear error on wrong shape or NaN)."""
        return score(self.reward, samples, batch.prompts, batch.metadata).to(self.device)


class Algorithm(ABC):
    """An objective. ``rollout`` collects samples and rewards without grad; ``loss`` returns a differentiable
    loss and float metrics. Algorithms that train their own models (e.g. a reward model) override ``refit``
    and expose those models through ``modules()`` so they are checkpointed."""

    name: ClassVar[str] = ""
    config_class: ClassVar[type | None] = None
    needs_reference: ClassVar[bool] = False

    def __init__(self, config: Any = None) -> None:
        self.config = config

    def setup(self, ctx: TrainContext) -> None:
        """Called once before training (e.g. to build feature encoders on the right device)."""

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

    def refit(self, ctx: TrainContext, rollout: Rollout) -> dict[str, float]:
        """Optional extra update after the policy step (co-evolving reward models)."""
        return {}

    def modules(self) -> dict[str, nn.Module]:
        """Trainable modules owned by the algorithm, saved and restored with the run."""
        return {}

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
    import importlib

    if isinstance(config, str):
        config = {"name": config}
    config = dict(config)
    if "name" not in config:
        raise ValueError(f"algorithm config needs a 'name' key, got keys {sorted(config)}")
    for module in BUILTIN_ALGORITHM_MODULES:
        importlib.import_module(module)
    return ALGORITHMS.get(config.pop("name")).from_config(config)
