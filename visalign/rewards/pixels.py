"""The published CLIP / BLIP image preprocessing, as differentiable tensor ops on samples in [-1, 1].

Every reward model here was trained on ``Resize(size, bicubic)`` (shortest side) → ``CenterCrop(size)`` →
``ToTensor`` → ``Normalize(mean, std)`` applied to PIL images. The same steps on tensors (antialiased bicubic,
clamped to [0, 1] like an 8-bit image) keep gradients flowing for reward backprop; tests pin them against PIL.
"""
from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F

OPENAI_CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
OPENAI_CLIP_STD = (0.26862954, 0.26130258, 0.27577711)


def resize_shortest_side(x: torch.Tensor, size: int, mode: str = "bicubic") -> torch.Tensor:
    """Scale ``x`` (N×C×H×W) so that its shorter side is ``size``, as ``torchvision.transforms.Resize(size)``."""
    h, w = x.shape[-2:]
    short, long = (h, w) if h <= w else (w, h)
    new_short, new_long = size, int(size * long / short)
    new_h, new_w = (new_short, new_long) if h <= w else (new_long, new_short)
    if (new_h, new_w) == (h, w):
        return x
    return F.interpolate(x, size=(new_h, new_w), mode=mode, align_corners=False, antialias=mode in ("bilinear", "bicubic"))


def center_crop(x: torch.Tensor, size: int) -> torch.Tensor:
    """The central ``size``×``size`` window, with torchvision's rounding of the offsets."""
    h, w = x.shape[-2:]
    if h < size or w < size:
        raise ValueError(f"cannot center-crop {h}×{w} to {size}×{size}")
    top, left = int(round((h - size) / 2.0)), int(round((w - size) / 2.0))
    return x[..., top:top + size, left:left + size]


def published_pixels(images: torch.Tensor, size: int, mean: Sequence[float] = OPENAI_CLIP_MEAN,
                     std: Sequence[float] = OPENAI_CLIP_STD, mode: str = "bicubic") -> torch.Tensor:
    """Images N×3×H×W in [-1, 1] -> model input: resize shortest side, center crop, normalise (differentiable)."""
    if images.dim() != 4 or images.shape[1] != 3:
        raise ValueError(f"expected RGB images N×3×H×W, got {tuple(images.shape)}")
    x = (images.float().clamp(-1, 1) + 1) / 2
    x = center_crop(resize_shortest_side(x, size, mode), size).clamp(0, 1)
    mean_t = torch.tensor(mean, device=x.device, dtype=x.dtype).view(1, 3, 1, 1)
    std_t = torch.tensor(std, device=x.device, dtype=x.dtype).view(1, 3, 1, 1)
    return (x - mean_t) / std_t
