"""Differentiable colour layout of VVR images: where each palette colour is, on a coarse grid.

The verifier reads scenes by palette colour and position; a frozen random encoder pooled to global statistics sees
neither positions nor which palette colour is which. ``colour_layout`` is the verifier's view made smooth: soft
nearest-palette membership per pixel, averaged over a ``grid × grid`` partition of the image.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .vocab import BACKGROUNDS, PALETTE

#: object colours first, then backgrounds, in [-1, 1] (the generators' image range)
LAYOUT_COLOURS = torch.tensor(list(PALETTE.values()) + list(BACKGROUNDS.values()), dtype=torch.float32) / 127.5 - 1.0


def colour_layout(images: torch.Tensor, grid: int = 4, temperature: float = 0.05, objects_only: bool = True) -> torch.Tensor:
    """``B × 3 × H × W`` images in [-1, 1] → ``B × K × grid × grid``: the share of each cell's pixels nearest to each
    of the K colours (softmax over ``-‖pixel - colour‖² / temperature``). ``objects_only`` drops the background
    channels (they are one minus the rest, up to the background colour). Differentiable in ``images``."""
    if images.dim() != 4 or images.shape[1] != 3:
        raise ValueError(f"colour_layout needs images B x 3 x H x W, got {tuple(images.shape)}")
    if grid < 1 or images.shape[-1] % grid or images.shape[-2] % grid:
        raise ValueError(f"colour_layout: grid {grid} must divide the image size {tuple(images.shape[-2:])}")
    if temperature <= 0:
        raise ValueError(f"colour_layout: temperature must be > 0, got {temperature}")
    colours = LAYOUT_COLOURS.to(images.device, images.dtype)
    dist = (images.unsqueeze(1) - colours.view(1, -1, 3, 1, 1)).pow(2).sum(2)
    membership = torch.softmax(-dist / temperature, dim=1)
    if objects_only:
        membership = membership[:, : len(PALETTE)]
    return F.adaptive_avg_pool2d(membership, grid)
