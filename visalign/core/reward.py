"""Reward protocol, registry, plug-in loading, validation and weighted sums."""
from __future__ import annotations

import importlib.util
import sys
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from .registry import Registry
from .types import Metadata, Samples, batch_size_of, modality_of

ENTRY_POINT_GROUP = "visalign.rewards"


class Reward(ABC):
    """Scores a batch: ``reward(samples, prompts, metadata) -> Tensor[B]``.

    ``differentiable`` says whether gradients flow from the score back into the samples
    (needed by direct reward backprop); black-box verifiers leave it ``False``.
    """

    name: str = ""
    differentiable: bool = False

    @abstractmethod
    def __call__(self, samples: Samples, prompts: Sequence[str], metadata: Metadata) -> torch.Tensor: ...

    def components(self) -> dict[str, torch.Tensor]:
        """Per-component scores of the last call, by name (empty for a single reward); the trainer logs their means."""
        return {}

    def parts(self) -> list[tuple["Reward", float]]:
        """The weighted terms this reward sums (a single reward is one term of weight 1)."""
        return [(self, 1.0)]


def require_modality(samples: Samples, allowed: Sequence[str], reward: str) -> str:
    """The modality of ``samples`` (:func:`~visalign.core.types.modality_of`), or a ``ValueError`` that names it and
    the modalities ``reward`` scores."""
    modality = modality_of(samples)
    if modality not in allowed:
        raise ValueError(f"reward {reward!r} scores {' / '.join(allowed)} samples only; got {modality} samples "
                         f"({_describe(samples)})")
    return modality


def _describe(samples: Samples) -> str:
    if isinstance(samples, dict):
        return ", ".join(f"{k} {tuple(v.shape)}" for k, v in samples.items() if isinstance(v, torch.Tensor))
    return f"shape {tuple(samples.shape)}" if isinstance(samples, torch.Tensor) else f"{len(samples)} texts"


REWARDS: Registry[Reward] = Registry("reward", entry_point_group=ENTRY_POINT_GROUP)


def register_reward(name: str) -> Callable[[type[Reward]], type[Reward]]:
    """Class decorator: make a reward buildable by name (``get_reward(name)``, YAML ``reward: {name: ...}``)."""
    return REWARDS.register(name)


class FunctionReward(Reward):
    """Wraps a plain callable ``fn(samples, prompts, metadata) -> Tensor`` as a Reward (TRL-style ``reward_funcs``)."""

    def __init__(self, fn: Callable[..., torch.Tensor], name: str | None = None, differentiable: bool = False) -> None:
        self.fn = fn
        self.name = name or getattr(fn, "__name__", "function")
        self.differentiable = differentiable

    def __call__(self, samples: Samples, prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        return self.fn(samples, prompts, metadata)


def validate_rewards(rewards: Any, batch_size: int, name: str) -> torch.Tensor:
    """Check a reward's output: a float tensor of shape ``[batch_size]`` with finite values."""
    if not isinstance(rewards, torch.Tensor):
        raise TypeError(f"reward {name!r} returned {type(rewards).__name__}, expected a torch.Tensor of shape [{batch_size}]")
    if rewards.shape != (batch_size,):
        raise ValueError(f"reward {name!r} returned shape {tuple(rewards.shape)}, expected ({batch_size},)")
    if not rewards.is_floating_point():
        rewards = rewards.float()
    bad = ~torch.isfinite(rewards.detach())
    if bad.any():
        idx = bad.nonzero().flatten().tolist()
        raise ValueError(f"reward {name!r} returned non-finite values (NaN/inf) at batch indices {idx[:10]}")
    return rewards


def score(reward: Reward, samples: Samples, prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
    """Call a reward and validate its output."""
    n = batch_size_of(samples)
    if len(prompts) != n or len(metadata) != n:
        raise ValueError(f"reward {reward.name!r}: {n} samples but {len(prompts)} prompts and {len(metadata)} metadata entries")
    return validate_rewards(reward(samples, prompts, metadata), n, reward.name)


class WeightedReward(Reward):
    """Weighted sum of rewards; each component is validated and reported by name."""

    def __init__(self, components: Sequence[tuple[Reward, float]]) -> None:
        if not components:
            raise ValueError("WeightedReward needs at least one component")
        self._parts = list(components)
        self.name = "+".join(f"{w:g}*{r.name}" for r, w in self._parts)
        self.differentiable = all(r.differentiable for r, _ in self._parts)
        self.last_components: dict[str, torch.Tensor] = {}

    def components(self) -> dict[str, torch.Tensor]:
        return dict(self.last_components)

    def parts(self) -> list[tuple[Reward, float]]:
        return list(self._parts)

    def __call__(self, samples: Samples, prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        total = None
        self.last_components = {}
        for reward, weight in self._parts:
            value = score(reward, samples, prompts, metadata)
            self.last_components[reward.name] = value.detach()
            total = weight * value if total is None else total + weight * value
        return total


def load_reward_class(spec: str) -> type[Reward]:
    """Resolve a reward class from ``path/to/file.py:ClassName``, ``package.module:ClassName``,
    an entry point in group ``visalign.rewards``, or a registered name."""
    if ":" in spec:
        target, _, attr = spec.rpartition(":")
        if target.endswith(".py"):
            path = Path(target)
            if not path.is_file():
                raise FileNotFoundError(f"reward file not found: {path}")
            module_name = f"visalign_plugin_{path.stem}_{abs(hash(str(path.resolve())))}"
            module_spec = importlib.util.spec_from_file_location(module_name, path)
            if module_spec is None or module_spec.loader is None:
                raise ImportError(f"cannot import reward file {path}")
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[module_name] = module
            module_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(target)
        if not hasattr(module, attr):
            raise AttributeError(f"{target} has no attribute {attr!r}")
        cls = getattr(module, attr)
        if not (isinstance(cls, type) and issubclass(cls, Reward)) and not callable(cls):
            raise TypeError(f"{spec} is neither a Reward subclass nor a callable")
        return cls
    return REWARDS.get(spec)


def get_reward(spec: str, **kwargs: Any) -> Reward:
    """Build a reward by registered name, entry point or ``file.py:Class`` spec."""
    cls = load_reward_class(spec)
    if isinstance(cls, type) and issubclass(cls, Reward):
        return cls(**kwargs)
    result = cls(**kwargs) if kwargs else cls
    if isinstance(result, Reward):
        return result
    return FunctionReward(result, name=spec.rpartition(":")[2])


def build_reward(config: Any) -> Reward:
    """Build from a config: a name, ``{name, weight?, **kwargs}``, or a list of those (weighted sum)."""
    if isinstance(config, Reward):
        return config
    if isinstance(config, str):
        return get_reward(config)
    if isinstance(config, dict):
        config = dict(config)
        if "name" not in config:
            raise ValueError(f"reward config needs a 'name' key, got keys {sorted(config)}")
        config.pop("weight", None)
        return get_reward(config.pop("name"), **config)
    if isinstance(config, (list, tuple)):
        parts = []
        for item in config:
            weight = float(item.get("weight", 1.0)) if isinstance(item, dict) else 1.0
            parts.append((build_reward(item), weight))
        return parts[0][0] if len(parts) == 1 and parts[0][1] == 1.0 else WeightedReward(parts)
    raise TypeError(f"cannot build a reward from {type(config).__name__}")
