"""A whole run from one YAML: generator + reward + algorithm + prompts + trainer."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from .core.config import ConfigError, apply_overrides, from_dict, load_yaml, option
from .trainer.config import TrainerConfig


@dataclass
class RunConfig:
    """Top-level config; each section is built by its registry (``name`` picks the class, other keys its config).

    ``policy: {type: causal_lm, path: local_folder, ...}`` trains a language model instead of ``generator``."""

    generator: dict[str, Any] = option(
        help="{name: ..., **config} of a registered generator, or {checkpoint: folder}",
        factory=lambda: {"name": "toy_one_step"})
    policy: dict[str, Any] | None = option(
        None, "{type: causal_lm, path: local folder, ...}: train a language model instead of generator")
    reward: Any = option("x0", "reward name or spec ({name, ...}, or a list for a weighted sum)")
    eval_reward: Any = option(None, "reward used for evaluation (null: reward)")
    algorithm: dict[str, Any] = option(
        help="{name: ..., **config} of a registered algorithm",
        factory=lambda: {"name": "rwr"})
    prompts: dict[str, Any] = option(
        help="{name: ..., **config} of a registered prompt source",
        factory=lambda: {"name": "unconditional"})
    trainer: TrainerConfig = option(help="the trainer section (TrainerConfig)", factory=TrainerConfig)


PATH_KEYS = (("generator", "checkpoint"), ("generator", "path"), ("policy", "path"), ("prompts", "path"),
             ("prompts", "eval_path"))


def load_run_config(path: str | Path | None = None, overrides: Sequence[str] = ()) -> RunConfig:
    """Read a YAML run config and apply ``key.path=value`` overrides; unknown keys raise ConfigError naming them.

    Relative paths written in the file are read relative to the file's folder (see :func:`resolve_config_paths`);
    paths given as overrides are relative to the working directory. Overriding ``reward`` also makes it the
    evaluation reward, unless ``eval_reward`` is overridden too (so ``reward=my.py:Cls`` is what gets reported)."""
    data = resolve_config_paths(load_yaml(path), Path(path).resolve().parent) if path else {}
    data = apply_overrides(data, overrides)
    overridden = {item.partition("=")[0].split(".")[0] for item in overrides}
    if "reward" in overridden and "eval_reward" not in overridden:
        data["eval_reward"] = None
    return from_dict(RunConfig, data)


def resolve_config_paths(data: dict[str, Any], base: Path) -> dict[str, Any]:
    """Rewrite relative paths of a config read from a file in folder ``base``: ``generator.checkpoint`` / ``path``,
    ``policy.path``, ``prompts.path`` / ``eval_path`` and reward files (``file.py:Class``) become ``base / path``
    where that exists, so a config runs from any working directory; others are left as written (relative to it)."""

    def resolve(value: Any) -> Any:
        if not isinstance(value, str) or not value or Path(value).is_absolute():
            return value
        candidate = base / value
        return str(candidate) if candidate.exists() else value

    def resolve_reward(spec: Any) -> Any:
        if isinstance(spec, str) and ".py:" in spec:
            file, _, attr = spec.rpartition(":")
            return f"{resolve(file)}:{attr}"
        if isinstance(spec, dict) and "name" in spec:
            return {**spec, "name": resolve_reward(spec["name"])}
        if isinstance(spec, list):
            return [resolve_reward(item) for item in spec]
        return spec

    data = {key: dict(value) if isinstance(value, dict) else value for key, value in data.items()}
    for section, key in PATH_KEYS:
        if isinstance(data.get(section), dict) and key in data[section]:
            data[section][key] = resolve(data[section][key])
    for key in ("reward", "eval_reward"):
        if key in data:
            data[key] = resolve_reward(data[key])
    return data


def _load_tiny_reflection(model_class, config: dict[str, Any]):
    """A saved tiny reflection model; its settings come from the saved config, except ``first_render: separate``."""
    path = config.pop("path")
    first_render = config.pop("first_render", None)
    if config:
        raise ConfigError(f"policy(tiny_reflection) with a path takes only first_render besides it (the other settings "
                          f"are the saved model's), got {sorted(config)}")
    if first_render not in (None, "shared", "separate"):
        raise ConfigError(f"policy(tiny_reflection).first_render must be 'shared' or 'separate', got {first_render!r}")
    model = model_class.from_pretrained(path)
    if first_render is not None and first_render != model.config.first_render:
        if first_render == "shared":
            raise ConfigError(f"policy(tiny_reflection).first_render=shared, but the model at {path} has a separate "
                              f"render head")
        model.isolate_first_render()
    return model


def build_policy(config: dict[str, Any]):
    """A non-generator policy: ``type: causal_lm`` (any local transformers causal LM) or ``type: tiny_reflection``
    (the tiny unified reflection model; ``path`` a saved one, otherwise fresh from its config keys; with a path,
    ``first_render: separate`` gives a shared model's first images a frozen copy of its flow head)."""
    config = dict(config)
    kind = config.pop("type", None)
    if kind == "tiny_reflection":
        from .core.config import from_dict
        from .reflection.tiny import TinyReflectionConfig, TinyReflectionModel

        if "path" in config:
            return _load_tiny_reflection(TinyReflectionModel, config)
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
    return Trainer(policy, algorithm, reward, prompts, config.trainer, eval_reward=eval_reward, callbacks=callbacks,
                   run_config=dataclasses.asdict(config))
