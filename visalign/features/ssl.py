"""SimCLR-style contrastive pretraining pieces for small image encoders: colour-preserving views and NT-Xent.

Views change geometry only (scale, shift, small rotation) plus pixel noise: colour, count and shape stay what the
scene shows, so the encoder is pushed to keep them (and to ignore the exact placement and the render noise). No
horizontal flips: left/right relations are part of what VVR scenes encode."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def geometric_views(images: torch.Tensor, generator: torch.Generator, scale: tuple[float, float] = (0.75, 1.0),
                    shift: float = 0.12, rotate_degrees: float = 15.0, noise: float = 0.06) -> torch.Tensor:
    """One random view per image: zoom in by 1/s (s ~ U(scale)), shift by up to ``shift`` of the image, rotate by up
    to ``rotate_degrees`` (borders replicated — VVR backgrounds are plain), add Gaussian pixel noise of std up to
    ``noise``; values stay in [-1, 1]."""
    b = images.shape[0]
    u = lambda lo, hi: lo + (hi - lo) * torch.rand(b, generator=generator)  # noqa: E731
    s, angle = u(*scale), u(-rotate_degrees, rotate_degrees) * math.pi / 180
    tx, ty = u(-shift, shift) * 2, u(-shift, shift) * 2
    cos, sin = torch.cos(angle) * s, torch.sin(angle) * s
    theta = torch.stack([torch.stack([cos, -sin, tx], 1), torch.stack([sin, cos, ty], 1)], 1).to(images)
    grid = F.affine_grid(theta, list(images.shape), align_corners=False)
    views = F.grid_sample(images, grid, mode="bilinear", padding_mode="border", align_corners=False)
    sigma = (u(0.0, noise)[:, None, None, None]).to(images)
    return (views + sigma * torch.randn(views.shape, generator=generator).to(images)).clamp(-1, 1)


def nt_xent(z1: torch.Tensor, z2: torch.Tensor, temperature: float = 0.2) -> torch.Tensor:
    """SimCLR's NT-Xent: each of the 2B embeddings must pick its partner view among the other 2B − 1 (cosine
    similarities / temperature, cross-entropy)."""
    if z1.shape != z2.shape:
        raise ValueError(f"the two views' embeddings differ in shape: {tuple(z1.shape)} vs {tuple(z2.shape)}")
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    logits = z @ z.T / temperature
    logits.fill_diagonal_(float("-inf"))
    b = z1.shape[0]
    partner = torch.cat([torch.arange(b, 2 * b), torch.arange(b)]).to(z.device)
    return F.cross_entropy(logits, partner)
