"""A tiny ViT image encoder with DINOv2-style block output, trained self-supervised (``pipelines/train_image_encoder.py``)
and loaded as ``features: {name: ssl_encoder, path: FOLDER}``."""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..core.config import ConfigError, check, from_dict, option
from ..core.errors import CheckpointError
from ..core.features import BlockFeatures
from ..core.integrity import read_json, safetensors_error, verify_folder, write_manifest
from ..core.types import Samples, modality_of
from .base import FeatureSpace, register_features
from .blocks import token_blocks

WEIGHTS_FILE, CONFIG_FILE = "model.safetensors", "config.json"


@dataclass
class TinyViTConfig:
    """A pre-norm ViT: ``patch_size`` patches of an ``image_size`` image, a CLS token, learned positions."""

    image_size: int = option(32, "input resolution (images are resized to it)")
    patch_size: int = option(4, "patch width in pixels")
    dim: int = option(64, "token width")
    depth: int = option(4, "transformer blocks")
    heads: int = option(4, "attention heads")
    mlp_ratio: int = option(2, "MLP hidden width as a multiple of dim")

    def __post_init__(self) -> None:
        check(self.image_size % self.patch_size == 0 and self.image_size // self.patch_size >= 2,
              f"image_size {self.image_size} must be a multiple of patch_size {self.patch_size}, at least 2 patches wide")
        check(self.dim % self.heads == 0, f"dim {self.dim} must be divisible by heads {self.heads}")
        check(self.depth >= 1 and self.mlp_ratio >= 1, f"depth and mlp_ratio must be >= 1, got {self.depth}, {self.mlp_ratio}")


class TinyViT(nn.Module):
    """Images in [-1, 1] -> tokens ``[B, 1 + N, dim]`` (CLS first) after the final layer norm."""

    def __init__(self, config: TinyViTConfig) -> None:
        super().__init__()
        self.config = config
        n = (config.image_size // config.patch_size) ** 2
        self.embed = nn.Conv2d(3, config.dim, config.patch_size, config.patch_size)
        self.cls = nn.Parameter(torch.zeros(1, 1, config.dim))
        self.pos = nn.Parameter(torch.randn(1, n + 1, config.dim) * 0.02)
        layer = nn.TransformerEncoderLayer(config.dim, config.heads, config.mlp_ratio * config.dim, dropout=0.0,
                                           activation="gelu", batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, config.depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(config.dim)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        size = self.config.image_size
        if images.shape[-2:] != (size, size):
            images = nn.functional.interpolate(images, size=(size, size), mode="bilinear", align_corners=False,
                                               antialias=images.shape[-1] > size)
        t = self.embed(images).flatten(2).transpose(1, 2)
        t = torch.cat([self.cls.expand(t.shape[0], -1, -1), t], dim=1) + self.pos
        return self.norm(self.blocks(t))


def save_encoder(model: TinyViT, folder: str | Path, extra: dict[str, Any] | None = None) -> Path:
    """``model.safetensors`` + ``config.json`` (architecture and ``extra``: training and probe figures) + manifest."""
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    save_file({k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}, str(folder / WEIGHTS_FILE))
    (folder / CONFIG_FILE).write_text(json.dumps({"type": "tiny_vit", "config": dataclasses.asdict(model.config),
                                                  **(extra or {})}, indent=1))
    write_manifest(folder)
    return folder


def load_encoder(folder: str | Path) -> TinyViT:
    """Rebuild a :class:`TinyViT` from a folder written by :func:`save_encoder` (sha256-checked, safetensors only)."""
    from safetensors.torch import load_file

    folder = Path(folder)
    if not (folder / CONFIG_FILE).is_file():
        raise CheckpointError(f"no image encoder at {folder} (missing {CONFIG_FILE}; write one with "
                              "pipelines/train_image_encoder.py)")
    verify_folder(folder, required=False, what="image encoder")
    meta = read_json(folder / CONFIG_FILE, "image encoder config")
    if not isinstance(meta, dict) or meta.get("type") != "tiny_vit":
        raise CheckpointError(f"{folder / CONFIG_FILE} is not a tiny_vit encoder config (type {meta.get('type') if isinstance(meta, dict) else None!r})")
    model = TinyViT(from_dict(TinyViTConfig, meta.get("config"), prefix="config."))
    try:
        state = load_file(str(folder / WEIGHTS_FILE))
    except Exception as exc:  # safetensors raises several error types for unreadable files
        raise safetensors_error(folder / WEIGHTS_FILE, exc) from exc
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise CheckpointError(f"{folder / WEIGHTS_FILE} does not match its config: missing {missing}, unexpected {unexpected}")
    return model


@register_features("ssl_encoder")
class SSLEncoderFeatures(FeatureSpace, BlockFeatures):
    """A frozen self-supervised :class:`TinyViT` from ``path``: [CLS, patch mean, patch std] of its last layer, like
    ``dinov2``; images in [-1, 1] (resized to the encoder's resolution, differentiably)."""

    def __init__(self, path: str | None = None) -> None:
        super().__init__()
        if path is None:
            raise ConfigError("feature space 'ssl_encoder' needs path: a folder written by "
                                  "pipelines/train_image_encoder.py (shipped: assets/encoders/vvr_ssl)")
        self.encoder = load_encoder(path)

    def block_sizes(self) -> dict[str, int]:
        d = self.encoder.config.dim
        return {"cls": d, "patch_mean": d, "patch_std": d}

    def forward(self, samples: Samples) -> torch.Tensor:
        if modality_of(samples) != "image":
            raise ValueError(f"feature space 'ssl_encoder' encodes images B×C×H×W; got {modality_of(samples)} samples")
        return token_blocks(self.encoder(samples))
