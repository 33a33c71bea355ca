"""Reward protocol, registry, plug-in loading, validation and weighted sums."""
from __future__ import annotations

import hashlib
import importlib.util
import sys
from abc import ABC, abstractmethod
from types import ModuleType
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from .config import ConfigError
from .errors import InputError
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
_PLUGIN_FILES: dict[Path, tuple[int, ModuleType]] = {}  # resolved path -> (mtime, module): each file runs once


class RewardOutputError(InputError, TypeError):
    """A reward returned something other than a finite float tensor of shape [batch] (names the reward)."""


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
        raise RewardOutputError(f"reward {name!r} returned {type(rewards).__name__}, expected a torch.Tensor of shape [{batch_size}]")
    if rewards.shape != (batch_size,):
        raise RewardOutputError(f"reward {name!r} returned shape {tuple(rewards.shape)}, expected ({batch_size},)")
    if not rewards.is_floating_point():
        rewards = rewards.float()
    bad = ~torch.isfinite(rewards.detach())
    if bad.any():
        idx = bad.nonzero().flatten().tolist()
        raise RewardOutputError(f"reward {name!r} returned non-finite values (NaN/inf) at batch indices {idx[:10]}")
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
            if total is not None:
                value = value.to(total.device)  # a component computed on the CPU sums with one on the GPU
            self.last_components[reward.name] = value.detach()
            total = weight * value if total is None else total + weight * value
        return total


def load_reward_class(spec: str) -> type[Reward]:
    """Resolve a reward class from ``path/to/file.py:ClassName``, ``package.module:ClassName``,
    an entry point in group ``visalign.rewards``, or a registered name."""
    if ":" in spec:
        target, _, attr = spec.rpartition(":")
        module = _plugin_file(Path(target)) if target.endswith(".py") else _plugin_module(target, spec)
        if attr not in vars(module):
            raise ConfigError(f"reward {spec!r}: {target} has no attribute {attr!r}")
        cls = vars(module)[attr]
        if not (isinstance(cls, type) and issubclass(cls, Reward)) and not callable(cls):
            raise ConfigError(f"reward {spec!r} is neither a Reward subclass nor a callable")
        return cls
    return REWARDS.get(spec)


def _plugin_file(path: Path) -> ModuleType:
    """Import a reward file once per resolved path (again only after it changed), under a name fixed by its path,
    so a reward used twice (``reward`` and ``eval_reward``) is one class and its ``@register_reward`` runs once."""
    if not path.is_file():
        raise FileNotFoundError(f"reward file not found: {path}")
    resolved = path.resolve()
    mtime = resolved.stat().st_mtime_ns
    cached = _PLUGIN_FILES.get(resolved)
    if cached is not None and cached[0] == mtime:
        return cached[1]
    digest = hashlib.sha1(str(resolved).encode()).hexdigest()[:12]
    module_name = f"visalign_plugin_{path.stem}_{digest}"
    module_spec = importlib.util.spec_from_file_location(module_name, resolved)
    if module_spec is None or module_spec.loader is None:
        raise ConfigError(f"cannot import reward file {path}")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_name] = module
    module_spec.loader.exec_module(module)
    _PLUGIN_FILES[resolved] = (mtime, module)
    return module


def _plugin_module(target: str, spec: str) -> ModuleType:
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as exc:
        if exc.name and (target == exc.name or target.startswith(exc.name + ".")):
            raise ConfigError(f"reward {spec!r}: no module named {exc.name!r}") from exc
        raise


def get_reward(spec: str, **kwargs: Any) -> Reward:
    """Build a reward by registered name, entry point or ``file.py:Class`` spec."""
    cls = load_reward_class(spec)
    if isinstance(cls, type) and issubclass(cls, Reward):
        reward = cls(**kwargs)
        if not reward.name:
            reward.name = cls.__name__  # a plug-in class without @register_reward is named after itself
        return reward
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
            raise ConfigError(f"reward config needs a 'name' key, got keys {sorted(config)}")
        config.pop("weight", None)
        return get_reward(config.pop("name"), **config)
    if isinstance(config, (list, tuple)):
        parts = []
        for item in config:
            weight = float(item.get("weight", 1.0)) if isinstance(item, dict) else 1.0
            parts.append((build_reward(item), weight))
        return parts[0][0] if len(parts) == 1 and parts[0][1] == 1.0 else WeightedReward(parts)
    raise ConfigError(f"cannot build a reward from {type(config).__name__} {config!r}")
