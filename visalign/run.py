"""A whole run from one YAML: generator + reward + algorithm + prompts + trainer."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from .core.config import ConfigError, apply_overrides, from_dict, load_yaml
from .trainer.config import TrainerConfig


@dataclass
class RunConfig:
    """Top-level config; each section is built by its registry (``name`` picks the class, other keys its config).

    ``policy: {type: causal_lm, path: local_folder, ...}`` trains a language model instead of ``generator``."""

    generator: dict[str, Any] = field(default_factory=lambda: {"name": "toy_one_step"})
    policy: dict[str, Any] | None = None
    reward: Any = "x0"
    eval_reward: Any = None
    algorithm: dict[str, Any] = field(default_factory=lambda: {"name": "rwr"})
    prompts: dict[str, Any] = field(default_factory=lambda: {"name": "unconditional"})
    trainer: TrainerConfig = field(default_factory=TrainerConfig)


def load_run_config(path: str | Path | None = None, overrides: Sequence[str] = ()) -> RunConfig:
    """Read a YAML run config and apply ``key.path=value`` overrides; unknown keys raise ConfigError naming them."""
    data = load_yaml(path) if path else {}
    return from_dict(RunConfig, apply_overrides(data, overrides))


def build_policy(config: dict[str, Any]):
    """A non-generator policy: ``type: causal_lm`` (any local transformers causal LM) or ``type: tiny_reflection``
    (the tiny unified reflection model; ``path`` a saved one, otherwise fresh from its config keys)."""
    config = dict(config)
    kind = config.pop("type", None)
    if kind == "tiny_reflection":
        from .core.config import from_dict
        from .reflection.tiny import TinyReflectionConfig, TinyReflectionModel

        if "path" in config:
            return TinyReflectionModel.from_pretrained(config.pop("path"))
        return TinyReflectionModel(from_dict(TinyReflectionConfig, config, prefix="policy(tiny_reflection)"))
    if kind != "causal_lm":
        raise ConfigError(f"policy.type must be 'causal_lm' or 'tiny_reflection', got {kind!r}")
    if "path" not in config:
        raise ConfigError("policy.path (a local model folder) is required")
    from .text.policy import CausalLMPolicy

    return CausalLMPolicy.from_pretrained(config.pop("path"), **config)


def build_trainer(config: RunConfig, callbacks: Sequence[Any] = ()):
    """Instantiate every part of a run and return a ready ``Trainer`` (with ``callbacks``, TrainerCallback objects)."""
    from .core.algorithm import build_algorithm
    from .core.generator import build_generator
    from .core.prompts import build_prompt_source
    from .core.reward import build_reward
    from .trainer import Trainer

    try:
        policy = build_policy(config.policy) if config.policy else build_generator(config.generator)
        reward = build_reward(config.reward)
        eval_reward = build_reward(config.eval_reward) if config.eval_reward is not None else None
        algorithm = build_algorithm(config.algorithm)
        prompts = build_prompt_source(config.prompts)
    except (KeyError, TypeError) as exc:
        raise ConfigError(str(exc).strip('"')) from exc
    return Trainer(policy, algorithm, reward, prompts, config.trainer, eval_reward=eval_reward, callbacks=callbacks)
