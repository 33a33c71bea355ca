"""The remote-reward wire format: a small JSON header and safetensors bytes, never pickle.

A message is ``b"VAR1"`` + 8-byte little-endian header length + UTF-8 JSON header + safetensors bytes. A request
carries the samples as tensors (``samples``, or ``video`` / ``audio`` for audio-video) and ``prompts`` /
``metadata`` / shared numbers in the header; a response carries ``rewards`` and ``component/<name>`` tensors.
Anything else — wrong magic, sizes, keys, dtypes, shapes, NaN — is a ``WireError`` naming the problem.
"""
from __future__ import annotations

import json
import struct
from typing import Any, Sequence

import torch

MAGIC = b"VAR1"
MAX_HEADER_BYTES = 1 << 20
FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
SAMPLE_KEYS = {"image": ("samples",), "video": ("samples",), "audio_video": ("video", "audio")}


class WireError(ValueError):
    """A malformed remote-reward message."""


def pack(header: dict[str, Any], tensors: dict[str, torch.Tensor]) -> bytes:
    from safetensors.torch import save

    try:
        head = json.dumps(header, allow_nan=False).encode()
    except (TypeError, ValueError) as exc:
        raise WireError(f"header is not plain JSON (numbers, strings, lists, dicts): {exc}") from exc
    body = save({k: v.detach().contiguous().cpu() for k, v in tensors.items()})
    return MAGIC + struct.pack("<Q", len(head)) + head + body


def unpack(data: bytes) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    from safetensors.torch import load

    if len(data) < 12 or data[:4] != MAGIC:
        raise WireError("not a visalign reward message (bad magic bytes)")
    (size,) = struct.unpack("<Q", data[4:12])
    if size > MAX_HEADER_BYTES or 12 + size > len(data):
        raise WireError(f"header length {size} is out of range for a {len(data)}-byte message")
    try:
        header = json.loads(data[12:12 + size].decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WireError(f"header is not valid JSON: {exc}") from exc
    if not isinstance(header, dict):
        raise WireError(f"header must be a JSON object, got {type(header).__name__}")
    try:
        tensors = load(bytes(data[12 + size:]))
    except Exception as exc:  # safetensors raises its own error types on bad bytes
        raise WireError(f"tensor payload is not valid safetensors: {exc}") from exc
    return header, tensors


def encode_request(samples: Any, prompts: Sequence[str], metadata: Sequence[dict[str, Any]]) -> bytes:
    from ..core.types import modality_of

    kind = modality_of(samples)
    if kind not in SAMPLE_KEYS:
        raise WireError(f"remote rewards take image, video or audio-video samples, got {kind}")
    if kind == "audio_video":
        tensors = {k: samples[k] for k in SAMPLE_KEYS[kind]}
        shared = {k: v for k, v in samples.items() if k not in tensors}
    else:
        tensors, shared = {"samples": samples}, {}
    header = {"kind": kind, "prompts": list(prompts), "metadata": list(metadata), "shared": shared}
    return pack(header, tensors)


def decode_request(data: bytes) -> tuple[Any, list[str], list[dict[str, Any]]]:
    """``(samples, prompts, metadata)`` of a request, validated."""
    header, tensors = unpack(data)
    if set(header) != {"kind", "prompts", "metadata", "shared"}:
        raise WireError(f"request header keys must be kind, prompts, metadata, shared; got {sorted(header)}")
    kind = header["kind"]
    if kind not in SAMPLE_KEYS:
        raise WireError(f"unknown sample kind {kind!r}; expected one of {sorted(SAMPLE_KEYS)}")
    if set(tensors) != set(SAMPLE_KEYS[kind]):
        raise WireError(f"{kind} requests carry tensors {list(SAMPLE_KEYS[kind])}, got {sorted(tensors)}")
    for name, tensor in tensors.items():
        if tensor.dtype not in FLOAT_DTYPES:
            raise WireError(f"tensor {name!r} has dtype {tensor.dtype}; expected a floating dtype")
        if not torch.isfinite(tensor).all():
            raise WireError(f"tensor {name!r} contains NaN or inf")
    prompts, metadata, shared = header["prompts"], header["metadata"], header["shared"]
    if not isinstance(prompts, list) or not all(isinstance(p, str) for p in prompts):
        raise WireError("prompts must be a list of strings")
    if not isinstance(metadata, list) or not all(isinstance(m, dict) for m in metadata):
        raise WireError("metadata must be a list of objects")
    if not isinstance(shared, dict) or not all(isinstance(v, (int, float)) for v in shared.values()):
        raise WireError("shared must map names to numbers")
    expected_dims = {"image": {"samples": 4}, "video": {"samples": 5}, "audio_video": {"video": 5, "audio": 3}}[kind]
    for name, dims in expected_dims.items():
        if tensors[name].dim() != dims:
            raise WireError(f"{kind} tensor {name!r} must have {dims} dims, got shape {tuple(tensors[name].shape)}")
    sizes = {t.shape[0] for t in tensors.values()}
    if sizes != {len(prompts)} or len(metadata) != len(prompts):
        raise WireError(f"batch sizes disagree: tensors {sorted(sizes)}, {len(prompts)} prompts, {len(metadata)} metadata")
    samples = tensors["samples"] if kind != "audio_video" else {**tensors, **shared}
    return samples, prompts, metadata


def encode_response(rewards: torch.Tensor, components: dict[str, torch.Tensor], name: str,
                    weights: dict[str, float] | None = None) -> bytes:
    tensors = {"rewards": rewards.float()}
    tensors.update({f"component/{k}": v.float() for k, v in components.items()})
    return pack({"name": name, "weights": dict(weights or {})}, tensors)


def decode_response(data: bytes, batch_size: int) -> tuple[torch.Tensor, dict[str, torch.Tensor], dict[str, float]]:
    """``(rewards, component scores, component weights)`` of a response, validated."""
    header, tensors = unpack(data)
    weights = header.get("weights", {})
    if not isinstance(weights, dict) or not all(isinstance(v, (int, float)) for v in weights.values()):
        raise WireError("response weights must map component names to numbers")
    if "rewards" not in tensors:
        raise WireError(f"response carries no 'rewards' tensor (got {sorted(tensors)})")
    extra = [k for k in tensors if k != "rewards" and not k.startswith("component/")]
    if extra:
        raise WireError(f"response carries unknown tensors {extra}")
    for key, tensor in tensors.items():
        if tensor.shape != (batch_size,) or tensor.dtype not in FLOAT_DTYPES:
            raise WireError(f"response tensor {key!r} has shape {tuple(tensor.shape)} / {tensor.dtype}; "
                            f"expected ({batch_size},) floats")
    components = {k[len("component/"):]: v for k, v in tensors.items() if k.startswith("component/")}
    return tensors["rewards"], components, {str(k): float(v) for k, v in weights.items()}


def error_body(message: str) -> bytes:
    return json.dumps({"error": message}).encode()
