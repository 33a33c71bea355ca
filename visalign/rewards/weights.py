"""Reward-model weights from local files: safetensors, or a legacy ``.pt`` / ``.pth`` / ``.bin`` read with
``torch.load(weights_only=True)`` (never unpickled), and strict loading that names missing / unexpected keys."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

import torch

LEGACY_SUFFIXES = (".pt", ".pth", ".bin", ".ckpt")


def load_state_dict(path: str | Path, unwrap: tuple[str, ...] = ("state_dict",)) -> dict[str, torch.Tensor]:
    """Tensors of a local checkpoint; a top-level ``unwrap`` key (e.g. ``state_dict``) is opened if present."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"reward weights not found: {path}")
    try:
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            data = load_file(str(path))
        elif path.suffix in LEGACY_SUFFIXES:
            data = torch.load(str(path), map_location="cpu", weights_only=True)
        else:
            raise ValueError(f"reward weights {path}: unknown format {path.suffix!r} "
                             f"(expected .safetensors or one of {LEGACY_SUFFIXES})")
    except (ValueError, FileNotFoundError):
        raise
    except Exception as exc:  # corrupt file, or a pickle that weights_only refuses
        raise ValueError(f"cannot read reward weights {path}: {type(exc).__name__}: {exc}") from exc
    for key in unwrap:
        if isinstance(data, Mapping) and key in data and isinstance(data[key], Mapping):
            data = data[key]
    if not isinstance(data, Mapping) or not all(isinstance(v, torch.Tensor) for v in data.values()):
        raise ValueError(f"reward weights {path} do not hold a flat name -> tensor mapping")
    return {str(k): v for k, v in data.items()}


def strip_prefix(state: Mapping[str, torch.Tensor], prefix: str) -> dict[str, torch.Tensor]:
    """The entries under ``prefix`` with the prefix removed."""
    return {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}


def load_strict(module: torch.nn.Module, state: Mapping[str, torch.Tensor], source: str) -> None:
    """``load_state_dict(strict=True)`` with an error that names the file and the first mismatching keys."""
    expected = module.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    shapes = [f"{k}: {tuple(state[k].shape)} vs {tuple(expected[k].shape)}" for k in expected
              if k in state and state[k].shape != expected[k].shape]
    if missing or unexpected or shapes:
        parts = [f"missing {missing[:5]}" if missing else "", f"unexpected {unexpected[:5]}" if unexpected else "",
                 f"shape mismatch {shapes[:3]}" if shapes else ""]
        raise ValueError(f"{source} does not match the {type(module).__name__} architecture: "
                         + "; ".join(p for p in parts if p))
    module.load_state_dict(dict(state), strict=True)
