"""Frozen text-encoder outputs on disk: a folder a later process loads instead of encoding a prompt pool again.

``states.safetensors`` holds each prompt's token states without padding (concatenated, float32 as computed, so a
loaded state equals a recomputed one bit for bit), the pooled vectors and the lengths; ``prompts.json`` the prompt
texts, the ``max_length`` and a fingerprint of the encoder's files; ``manifest.json`` the sha256 of both."""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Sequence

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from ..core.errors import CheckpointError
from ..core.integrity import publish, read_json, safetensors_error, sha256_file, verify_folder, write_manifest

#: files of a Hugging Face model folder whose bytes decide what it computes
_FINGERPRINTED = ("config.json", "tokenizer.json", "vocab.txt", "model.safetensors", "pytorch_model.bin")


def encoder_fingerprint(model_folder: Path) -> str:
    """sha256 over the config, tokenizer and weight files of a local model folder (what its outputs depend on)."""
    files = {name: sha256_file(Path(model_folder) / name) for name in _FINGERPRINTED
             if (Path(model_folder) / name).is_file()}
    return hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()


def write_encoded_prompts(folder: Path, prompts: Sequence[str], outputs: Sequence[tuple[torch.Tensor, torch.Tensor]],
                          max_length: int, fingerprint: str) -> None:
    """Write ``outputs[i] = (states without padding, pooled)`` of ``prompts[i]``; the folder appears complete or not
    at all (written beside it, sealed, then renamed into place)."""
    folder = Path(folder)
    if len(prompts) != len(outputs):
        raise ValueError(f"{len(prompts)} prompts but {len(outputs)} encoder outputs")
    tmp = folder.with_name(f".{folder.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    save_file({"states": torch.cat([s for s, _ in outputs]).float().contiguous(),
               "pooled": torch.stack([q for _, q in outputs]).float().contiguous(),
               "lengths": torch.tensor([s.shape[0] for s, _ in outputs], dtype=torch.int64)},
              str(tmp / "states.safetensors"))
    (tmp / "prompts.json").write_text(json.dumps({"max_length": max_length, "encoder": fingerprint,
                                                  "prompts": list(prompts)}))
    write_manifest(tmp)
    publish(tmp, folder)


def read_encoded_prompts(folder: Path, max_length: int, fingerprint: str
                         ) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """prompt -> (states, pooled) from a folder :func:`write_encoded_prompts` wrote. A folder written for another
    ``max_length`` or another encoder, or with a changed or missing file, is a :class:`CheckpointError` naming why."""
    folder = Path(folder)
    verify_folder(folder, required=True, what="encoded prompts")
    info = read_json(folder / "prompts.json", "encoded prompts file")
    if info.get("max_length") != max_length:
        raise CheckpointError(f"{folder} holds prompts encoded at max_length {info.get('max_length')}, not {max_length}")
    if info.get("encoder") != fingerprint:
        raise CheckpointError(f"{folder} was encoded by another text encoder (its files differ); delete the folder to "
                              "encode again")
    try:
        tensors = load_file(str(folder / "states.safetensors"))
    except SafetensorError as exc:
        raise safetensors_error(folder / "states.safetensors", exc) from exc
    prompts, lengths = info["prompts"], tensors["lengths"].tolist()
    if len(prompts) != len(lengths) or sum(lengths) != tensors["states"].shape[0]:
        raise CheckpointError(f"{folder}: {len(prompts)} prompts do not match the stored states")
    states = torch.split(tensors["states"], lengths)
    return {p: (s, q) for p, s, q in zip(prompts, states, tensors["pooled"])}
