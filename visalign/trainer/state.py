"""Pickle-free training checkpoints: tensors in safetensors, everything else in JSON."""
from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, load_model, save_file, save_model
from torch import nn

from ..core.errors import CheckpointError
from ..core.integrity import publish  # noqa: F401  (a checkpoint writer of this module: the trainer calls state.publish)
from ..core.integrity import read_json, safetensors_error, verify_folder, write_manifest, write_text_atomic


def split_state(state: dict[str, Any], prefix: str = "") -> tuple[dict[str, torch.Tensor], Any]:
    """Separate a nested state dict into flat tensors (``a.b.c`` keys) and a JSON-able skeleton."""
    tensors: dict[str, torch.Tensor] = {}

    def walk(value: Any, key: str) -> Any:
        if isinstance(value, torch.Tensor):
            tensors[key] = value.detach().cpu().contiguous()
            return {"__tensor__": key}
        if isinstance(value, dict):
            return {"__dict__": [[_json_key(k), walk(v, f"{key}.{k}")] for k, v in value.items()]}
        if isinstance(value, (list, tuple)):
            return {"__list__": [walk(v, f"{key}.{i}") for i, v in enumerate(value)], "tuple": isinstance(value, tuple)}
        if isinstance(value, (np.integer, np.floating)):
            return value.item()
        return value

    return tensors, walk(state, prefix or "root")


def _json_key(key: Any) -> Any:
    if isinstance(key, (str, int, float, bool)) or key is None:
        return key
    raise TypeError(f"state dict key {key!r} is not JSON-serialisable")


def join_state(tensors: dict[str, torch.Tensor], skeleton: Any) -> Any:
    """Inverse of ``split_state``."""
    if isinstance(skeleton, dict):
        if "__tensor__" in skeleton:
            return tensors[skeleton["__tensor__"]]
        if "__dict__" in skeleton:
            return {k: join_state(tensors, v) for k, v in skeleton["__dict__"]}
        if "__list__" in skeleton:
            items = [join_state(tensors, v) for v in skeleton["__list__"]]
            return tuple(items) if skeleton.get("tuple") else items
    return skeleton


def save_state_dict(state: dict[str, Any], path: Path) -> None:
    """Write ``path.safetensors`` + ``path.json``."""
    tensors, skeleton = split_state(state)
    save_file(tensors, str(path.with_suffix(".safetensors")))
    path.with_suffix(".json").write_text(json.dumps(skeleton))


def load_state_dict(path: Path) -> dict[str, Any]:
    tensor_file, json_file = path.with_suffix(".safetensors"), path.with_suffix(".json")
    for f in (tensor_file, json_file):
        if not f.is_file():
            raise CheckpointError(f"checkpoint is missing {f}")
    skeleton = read_json(json_file, "checkpoint file")
    try:
        tensors = load_file(str(tensor_file))
    except SafetensorError as exc:
        raise safetensors_error(tensor_file, exc) from exc
    return join_state(tensors, skeleton)


def save_tensors(tensors: dict[str, torch.Tensor], path: Path) -> None:
    """A flat name -> tensor mapping (e.g. a gathered full state dict) as one safetensors file."""
    save_file({k: v.detach().cpu().contiguous() for k, v in tensors.items()}, str(path))


def load_tensors(path: Path) -> dict[str, torch.Tensor]:
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint is missing {path}")
    return load_file(str(path))


def save_module(module: nn.Module, path: Path) -> None:
    save_model(module, str(path))


def write_json(value: Any, path: Path) -> None:
    path.write_text(json.dumps(value))


def write_text(text: str, path: Path) -> None:
    path.write_text(text)


def point_latest(folder: Path, name: str) -> None:
    """Atomically make ``folder/latest`` name checkpoint ``name``."""
    write_text_atomic(folder / "latest", name)


def seal(folder: Path) -> None:
    """Record the sha256 of every file of a finished checkpoint folder (its manifest); written after the last file."""
    write_manifest(folder)


def verify(folder: Path) -> None:
    """A :class:`CheckpointError` naming the file unless ``folder`` is a complete checkpoint with intact files."""
    verify_folder(folder, required=True, what="checkpoint")


def load_module(module: nn.Module, path: Path) -> None:
    if not path.is_file():
        raise CheckpointError(f"checkpoint is missing {path}")
    try:
        missing, unexpected = load_model(module, str(path), strict=False, device=str(next(module.parameters()).device))
    except SafetensorError as exc:
        raise safetensors_error(path, exc) from exc
    if missing or unexpected:
        raise RuntimeError(f"{path} does not match the model: missing {sorted(missing)[:5]}, unexpected {sorted(unexpected)[:5]}")


def rng_state() -> dict[str, Any]:
    state: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "python": _to_json(random.getstate()),
        "numpy": _to_json(np.random.get_state()),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate(_from_json_python(state["python"]))
    np_state = state["numpy"]
    np.random.set_state((np_state[0], np.asarray(np_state[1], dtype=np.uint32), *np_state[2:]))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _to_json(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_to_json(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def _from_json_python(value: list) -> tuple:
    version, internal, gauss = value
    return version, tuple(internal), gauss
