"""LoRA on a built-in generator's denoiser (peft, any ``nn.Module``): the options, adding the adapter on checked targets,
switching it off (the reference of a LoRA run: the same weights, adapter off, no second copy) and the adapter's own
safetensors file.

A LoRA layer adds ``(alpha / rank) · B A x`` to a frozen linear (or conv) layer; ``B`` starts at zero, so a fresh
adapter leaves every output unchanged and the policy starts equal to its reference.
"""
from __future__ import annotations

import json
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import torch
from torch import nn

from ..core.config import ConfigError, check, option
from ..core.errors import CheckpointError

LORA_WEIGHTS_FILE = "pytorch_lora_weights.safetensors"
"""The adapter alone (peft keys; rank, alpha and targets in the file's metadata), next to the full ``model.safetensors``."""
DEFAULT_TARGETS = ("to_q", "to_k", "to_v", "to_out.0")


@dataclass
class LoraOptions:
    """LoRA fields of a generator config (the same keys as the diffusers adapters'): ``lora_rank > 0`` freezes the
    whole generator and trains only a LoRA adapter on the denoiser's ``lora_targets``."""

    lora_rank: int = option(0, "LoRA rank on the denoiser; 0 trains the whole generator (text encoder included)")
    lora_alpha: float | None = option(None, "LoRA alpha: the update is scaled by alpha / rank (null: the rank, scale 1)")
    lora_targets: list[str] = option(
        help="denoiser layers that get LoRA (a layer matches when its module name is, or ends in '.' + , a target)",
        factory=lambda: list(DEFAULT_TARGETS))

    def __post_init__(self) -> None:
        check(self.lora_rank >= 0, f"lora_rank must be >= 0 (0: no LoRA), got {self.lora_rank}")
        check(self.lora_alpha is None or self.lora_alpha > 0, f"lora_alpha must be > 0 (or null), got {self.lora_alpha}")
        check(bool(self.lora_targets) and all(isinstance(t, str) and t.strip() for t in self.lora_targets),
              f"lora_targets must be a non-empty list of module names, got {self.lora_targets!r}")
        check(len(set(self.lora_targets)) == len(self.lora_targets), f"lora_targets lists a name twice: {self.lora_targets}")

    @property
    def uses_lora(self) -> bool:
        return self.lora_rank > 0


def _layer_names(module: nn.Module) -> list[str]:
    return [name for name, m in module.named_modules() if isinstance(m, (nn.Linear, nn.Conv2d)) and name]


def check_targets(denoiser: nn.Module, targets: Sequence[str]) -> None:
    """Every target must name at least one linear or conv layer of ``denoiser`` (peft's suffix match); the error
    lists the layer names there are."""
    names = _layer_names(denoiser)
    missing = [t for t in targets if not any(n == t or n.endswith("." + t) for n in names)]
    if missing:
        tails = sorted({".".join(n.split(".")[-2:]) if n.split(".")[-1].isdigit() else n.split(".")[-1] for n in names})
        raise ConfigError(f"generator.lora_targets: {missing} match no linear or conv layer of the "
                          f"{type(denoiser).__name__} denoiser; its layers are named {tails}")


def add_denoiser_lora(denoiser: nn.Module, options: LoraOptions) -> None:
    """A peft adapter (``default``) on ``denoiser``'s checked targets; only its A and B matrices require grad
    afterwards. B starts at zero, so outputs are unchanged."""
    from peft import LoraConfig, inject_adapter_in_model

    check_targets(denoiser, options.lora_targets)
    inject_adapter_in_model(LoraConfig(r=options.lora_rank, lora_alpha=options.lora_alpha or options.lora_rank,
                                       target_modules=list(options.lora_targets), init_lora_weights=True), denoiser)
    for name, p in denoiser.named_parameters():
        p.requires_grad_("lora_" in name)


@contextmanager
def adapter_disabled(denoiser: nn.Module) -> Iterator[None]:
    """The base weights: the denoiser's LoRA layers switched off inside the block (peft restores their
    ``requires_grad`` when they are switched back on)."""
    from peft.tuners.tuners_utils import BaseTunerLayer

    layers = [m for m in denoiser.modules() if isinstance(m, BaseTunerLayer)]
    for layer in layers:
        layer.enable_adapters(False)
    try:
        yield
    finally:
        for layer in layers:
            layer.enable_adapters(True)


def lora_state(denoiser: nn.Module) -> dict[str, torch.Tensor]:
    """The adapter's weights (``<module>.lora_A.default.weight`` ...), detached on CPU."""
    return {k: v.detach().contiguous().cpu() for k, v in denoiser.state_dict().items() if ".lora_" in k}


def save_lora_file(denoiser: nn.Module, options: LoraOptions, file: Path) -> Path:
    """Write the adapter alone to ``file`` with its rank, alpha and targets as metadata."""
    from safetensors.torch import save_file

    meta = {"lora_rank": str(options.lora_rank), "lora_alpha": json.dumps(options.lora_alpha),
            "lora_targets": json.dumps(list(options.lora_targets))}
    save_file(lora_state(denoiser), str(file), metadata=meta)
    return file


def load_lora_file(denoiser: nn.Module, file: str | Path) -> None:
    """Load an adapter written by :func:`save_lora_file` into ``denoiser`` (which carries an adapter of the same
    rank and targets); a missing file, missing or unexpected keys and mismatched shapes are errors naming them."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    file = Path(file)
    if not file.is_file():
        raise CheckpointError(f"no LoRA weights at {file}")
    try:
        state = load_file(str(file))
    except SafetensorError as exc:
        raise CheckpointError(f"{file}: not a readable safetensors file ({exc})") from exc
    expected = lora_state(denoiser)
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    if missing or unexpected:
        raise CheckpointError(f"{file}: missing LoRA keys {missing[:5]}, unexpected {unexpected[:5]} (rank or "
                              "lora_targets differ from the generator's?)")
    shapes = [k for k in expected if expected[k].shape != state[k].shape]
    if shapes:
        raise CheckpointError(f"{file}: LoRA shapes differ from the generator's at {shapes[:3]} "
                              f"({tuple(state[shapes[0]].shape)} vs {tuple(expected[shapes[0]].shape)}: another lora_rank?)")
    denoiser.load_state_dict(state, strict=False)
