"""Generator protocol: noise (+ condition) -> samples, with a frozen reference copy and safetensors checkpoints."""
from __future__ import annotations

import copy
import json
from abc import ABC, abstractmethod
from dataclasses import asdict, fields, is_dataclass
from pathlib import Path
from typing import Any, ClassVar, Sequence

import torch
from torch import nn

from .registry import Registry
from .types import Samples

GENERATORS: Registry["Generator"] = Registry("generator")
CONFIG_FILE = "generator.json"
WEIGHTS_FILE = "model.safetensors"


def register_generator(name: str):
    """Class decorator: make a generator buildable by name and loadable from a checkpoint folder."""
    return GENERATORS.register(name)


class Generator(nn.Module, ABC):
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
        return self.generate(noise, self.encode(prompts))

    def sample(
        self,
        n: int | None = None,
        prompts: Sequence[str] | None = None,
        *,
        generator: torch.Generator | None = None,
        noise: torch.Tensor | None = None,
        grad: bool = False,
    ) -> Samples:
        """Draw samples; ``grad=True`` keeps the graph for objectives that backpropagate through sampling."""
        if noise is None:
            if n is None:
                n = len(prompts) if prompts is not None else None
            if n is None:
                raise ValueError("sample() needs n, prompts or noise")
            noise = self.make_noise(n, generator)
        if prompts is not None and len(prompts) != noise.shape[0]:
            raise ValueError(f"{noise.shape[0]} noise items but {len(prompts)} prompts")
        with torch.set_grad_enabled(grad):
            return self(noise, prompts)

    def trainable_module(self) -> nn.Module:
        """The part of the network an optimizer updates (the whole generator unless a subclass narrows it)."""
        return self

    def frozen_copy(self) -> "Generator":
        """A detached, eval-mode copy to serve as the reference distribution."""
        ref = copy.deepcopy(self)
        ref.requires_grad_(False)
        ref.eval()
        return ref

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
        return path

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
    """Load any registered generator from a folder written by ``save_pretrained`` (safetensors only, no pickle)."""
    from safetensors.torch import load_model

    path = Path(path)
    config_path = path / CONFIG_FILE
    if not config_path.is_file():
        raise FileNotFoundError(f"no generator checkpoint at {path} (missing {CONFIG_FILE})")
    meta = json.loads(config_path.read_text())
    _import_builtin_generators()
    cls = GENERATORS.get(meta["type"])
    if hasattr(cls, "load_checkpoint"):
        return cls.load_checkpoint(path, meta, map_location)
    model = cls.from_config(meta.get("config") or {})
    weights = path / WEIGHTS_FILE
    if not weights.is_file():
        raise FileNotFoundError(f"generator checkpoint {path} has no {WEIGHTS_FILE}")
    load_model(model, str(weights), device=str(map_location))
    return model


def build_generator(config: dict[str, Any]) -> Generator:
    """Build from ``{name, checkpoint?, **config}``; a checkpoint folder wins over a fresh initialisation."""
    config = dict(config)
    checkpoint = config.pop("checkpoint", None)
    if checkpoint:
        if config.get("name") == "diffusers" and not (Path(checkpoint) / CONFIG_FILE).exists():
            config["path"] = checkpoint
        else:
            return load_generator(checkpoint)
    if "name" not in config:
        raise ValueError(f"generator config needs 'name' or 'checkpoint', got keys {sorted(config)}")
    _import_builtin_generators()
    cls = GENERATORS.get(config.pop("name"))
    return cls.from_config(config)


BUILTIN_GENERATOR_MODULES = ("visalign.generators", "visalign.poem.flow")


def _import_builtin_generators() -> None:
    import importlib

    for module in BUILTIN_GENERATOR_MODULES:
        importlib.import_module(module)
