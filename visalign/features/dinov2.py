"""DINOv2 block features from a local transformers folder: [CLS, patch-token mean, patch-token std] (frozen)."""
from __future__ import annotations

import json
from pathlib import Path

import torch
import torch.nn.functional as F

from ..core.config import ConfigError
from ..core.features import BlockFeatures
from ..core.types import Samples, modality_of
from .base import FeatureSpace, register_features
from .blocks import token_blocks

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def imagenet_pixels(images: torch.Tensor, size: int) -> torch.Tensor:
    """Images in [-1, 1] -> bilinearly resized to ``size``×``size``, ImageNet-normalised (differentiable)."""
    x = (images + 1.0) / 2.0
    if x.shape[-2:] != (size, size):
        x = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False, antialias=x.shape[-1] > size)
    mean = torch.tensor(IMAGENET_MEAN, dtype=x.dtype, device=x.device)[None, :, None, None]
    std = torch.tensor(IMAGENET_STD, dtype=x.dtype, device=x.device)[None, :, None, None]
    return (x - mean) / std


def _crop_size(folder: Path) -> int | None:
    """The crop size of an image-processor config in ``folder`` (224 for the published DINOv2 folders), if any."""
    path = folder / "preprocessor_config.json"
    if not path.is_file():
        return None
    crop = json.loads(path.read_text()).get("crop_size")
    return int(crop["height"]) if isinstance(crop, dict) else (int(crop) if crop else None)


@register_features("dinov2")
class DINOv2Features(FeatureSpace, BlockFeatures):
    """A frozen ``transformers.Dinov2Model`` loaded from a local folder (never downloads). Images in [-1, 1] are
    resized to ``size`` (default: the folder's preprocessor crop size, 224 for the published checkpoints, else the
    model config's ``image_size``) and ImageNet-normalised; the output is three blocks of the last hidden state
    (after the final layer norm): the CLS token, the mean and the standard deviation of the patch tokens."""

    def __init__(self, path: str | None = None, size: int | None = None) -> None:
        super().__init__()
        if path is None:
            raise ConfigError("feature space 'dinov2' needs path: a local folder with a Dinov2Model (config.json + weights)")
        folder = Path(path)
        if not (folder / "config.json").is_file():
            raise ConfigError(f"feature space 'dinov2': {folder} is not a transformers model folder (no config.json)")
        from transformers import Dinov2Model

        self.model = Dinov2Model.from_pretrained(str(folder), local_files_only=True)
        cfg = self.model.config
        self.size = int(size or _crop_size(folder) or cfg.image_size)
        if self.size % cfg.patch_size or self.size < 2 * cfg.patch_size:
            raise ConfigError(f"feature space 'dinov2': size {self.size} must be a multiple of the patch size "
                              f"{cfg.patch_size} and at least 2 patches wide (the patch std needs several patches)")
        self.width = int(cfg.hidden_size)

    def block_sizes(self) -> dict[str, int]:
        return {"cls": self.width, "patch_mean": self.width, "patch_std": self.width}

    def forward(self, samples: Samples) -> torch.Tensor:
        if modality_of(samples) != "image":
            raise ValueError(f"feature space 'dinov2' encodes images B×C×H×W; got {modality_of(samples)} samples")
        if samples.shape[1] != 3:
            raise ValueError(f"feature space 'dinov2' needs RGB images B×3×H×W in [-1, 1], got shape {tuple(samples.shape)}")
        pixels = imagenet_pixels(samples.to(self.model.dtype), self.size)
        return token_blocks(self.model(pixel_values=pixels).last_hidden_state)
