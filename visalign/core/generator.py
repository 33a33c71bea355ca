"""Generator protocol: noise (+ condition) -> samples, with a frozen reference copy and safetensors checkpoints."""
from __future__ import annotations

import json
from abc import abstractmethod
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any, ClassVar, Sequence

import torch
from safetensors import SafetensorError

from .config import ConfigError
from .errors import CheckpointError, UnknownNameError
from .integrity import read_json, safetensors_error, verify_folder, write_manifest
from .policy import Policy
from .registry import Registry
from .types import Samples

GENERATORS: Registry["Generator"] = Registry("generator", entry_point_group="visalign.generators")
CONFIG_FILE = "generator.json"
WEIGHTS_FILE = "model.safetensors"


def register_generator(name: str):
    """Class decorator: make a generator buildable by name and loadable from a checkpoint folder."""
    return GENERATORS.register(name)


class Generator(Policy):
    """Maps noise and a condition (prompts) to samples of any modality.

    ``kind`` is ``"one_step"`` (implicit map), ``"few_step"`` or ``"multi_step"`` (integrated sampler).
    ``generate`` is the differentiable map; ``sample`` draws noise and runs it with or without grad.
    """

    kind: ClassVar[str] = "one_step"
    name: ClassVar[str] = ""
    config_class: ClassVar[type | None] = None

    def __init__(self, config: Any = None) -> None:
        super().__init__()
        self.config = config

    @property
    @abstractmethod
    def noise_shape(self) -> tuple[int, ...]:
        """Shape of one item's noise (without batch dimension)."""

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    @property
    def dtype(self) -> torch.dtype:
        return next(self.parameters()).dtype

    def make_noise(self, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """Standard normal noise for ``n`` items, drawn on CPU from ``generator`` so results do not depend on the device."""
        return torch.randn((n, *self.noise_shape), generator=generator).to(self.device, self.dtype)

    def encode(self, prompts: Sequence[str] | None) -> Any:
        """Encode conditions once per batch; unconditional generators return ``None``."""
        return None

    @abstractmethod
    def generate(self, noise: torch.Tensor, cond: Any = None) -> Samples:
        """Differentiable map from noise (and encoded condition) to samples."""

    def forward(self, noise: torch.Tensor, prompts: Sequence[str] | None = None) -> Samples:
        self.record_draws(noise.shape[0])
        return self.generate(noise, self.encode(prompts))

    def sample(
        self,
        prompts: Sequence[str] | None = None,
        *,
        generator: torch.Generator | None = None,
        num_samples: int = 1,
        n: int | None = None,
        noise: torch.Tensor | None = None,
        grad: bool = False,
    ) -> Samples:
        """``num_samples`` samples per prompt (or ``n`` unconditional ones, or one per row of ``noise``);
        ``grad=True`` keeps the graph for objectives that backpropagate through sampling."""
        if num_samples < 1:
            raise ValueError(f"num_samples must be >= 1, got {num_samples}")
        if prompts is not None:
            if isinstance(prompts, str) or not isinstance(prompts, Sequence):
                raise TypeError(f"prompts must be a list of strings, got {type(prompts).__name__} (for unconditional "
                                "samples pass n=...)")
            prompts = [p for p in prompts for _ in range(num_samples)]
        if noise is None:
            count = len(prompts) if prompts is not None else (None if n is None else n * num_samples)
            if count is None:
                raise ValueError("sample() needs prompts, n or noise")
            noise = self.make_noise(count, generator)
        if prompts is not None and len(prompts) != noise.shape[0]:
            raise ValueError(f"{noise.shape[0]} noise items but {len(prompts)} prompts")
        with torch.set_grad_enabled(grad):
            return self(noise, prompts)

    def add_lora(self, rank: int, alpha: float | None = None, targets: Sequence[str] | None = None) -> None:
        """Freeze this model and train a LoRA adapter instead (reference: the adapter off). Generators that support
        it override this (``generator: {checkpoint: ..., lora_rank: r}`` calls it on a loaded checkpoint)."""
        raise ConfigError(f"generator.lora_rank: {type(self).__name__} does not support adding a LoRA adapter")

    def config_dict(self) -> dict[str, Any]:
        if self.config is None:
            return {}
        return asdict(self.config) if is_dataclass(self.config) else dict(self.config)

    def save_pretrained(self, path: str | Path) -> Path:
        """Write ``generator.json`` (type + config) and ``model.safetensors``."""
        from safetensors.torch import save_model

        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        (path / CONFIG_FILE).write_text(json.dumps({"type": self.name, "config": self.config_dict()}, indent=2))
        save_model(self, str(path / WEIGHTS_FILE))
        write_manifest(path)
        return path

    @classmethod
    def load_checkpoint(cls, path: Path, meta: dict[str, Any], map_location: str | torch.device = "cpu") -> "Generator":
        """Rebuild from a folder written by :meth:`save_pretrained` (``meta`` is its ``generator.json``)."""
        from safetensors.torch import load_model

        model = cls.from_config(meta.get("config") or {})
        weights = path / WEIGHTS_FILE
        if not weights.is_file():
            raise CheckpointError(f"generator checkpoint {path} has no {WEIGHTS_FILE}")
        try:
            load_model(model, str(weights), device=str(map_location))
        except SafetensorError as exc:
            raise safetensors_error(weights, exc) from exc
        return model

    @classmethod
    def from_config(cls, config: Any = None, **overrides: Any) -> "Generator":
        if cls.config_class is None:
            return cls()
        from .config import from_dict

        if config is None or isinstance(config, dict):
            merged = {**(config or {}), **overrides}
            config = from_dict(cls.config_class, merged, prefix=f"generator({cls.name})")
        return cls(config)


def load_generator(path: str | Path, map_location: str | torch.device = "cpu") -> Generator:
    """Load any registered generator from a folder written by ``save_pretrained`` (safetensors only, no pickle).

    Files listed in the folder's ``manifest.json`` are checked against their sha256 first (errors name the file)."""
    path = Path(path)
    config_path = path / CONFIG_FILE
    if not config_path.is_file():
        hint = " (a diffusers pipeline folder: pass it as the adapter's `path`)" if (path / "model_index.json").is_file() else ""
        raise FileNotFoundError(f"no generator checkpoint at {path} (missing {CONFIG_FILE}){hint}")
    verify_folder(path, required=False, what="generator checkpoint")
    meta = read_json(config_path, "generator config")
    if not isinstance(meta, dict) or not isinstance(meta.get("type"), str):
        raise CheckpointError(f"{config_path} has no generator 'type'")
    try:
        cls = GENERATORS.get(meta["type"])
    except UnknownNameError as exc:
        raise CheckpointError(f"{config_path}: {exc}") from exc
    return cls.load_checkpoint(path, meta, map_location)


def build_generator(config: dict[str, Any]) -> Generator:
    """Build from ``{name, checkpoint?, **config}``; a checkpoint folder wins over a fresh initialisation.
    ``lora_rank`` (with ``lora_alpha`` / ``lora_targets``) next to a checkpoint puts a fresh LoRA adapter on it."""
    config = dict(config)
    checkpoint = config.pop("checkpoint", None)
    if checkpoint:
        lora = {k: config.pop(k) for k in ("lora_rank", "lora_alpha", "lora_targets") if k in config}
        generator = load_generator(checkpoint)
        if lora.get("lora_rank"):
            generator.add_lora(lora["lora_rank"], lora.get("lora_alpha"), lora.get("lora_targets"))
        elif lora:
            raise ConfigError(f"generator: {sorted(lora)} given next to a checkpoint without lora_rank >= 1")
        return generator
    if "name" not in config:
        raise ConfigError(f"generator config needs 'name' or 'checkpoint', got keys {sorted(config)}")
    return GENERATORS.get(config.pop("name")).from_config(config)
