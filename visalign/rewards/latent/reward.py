"""A trained latent reward model as an ordinary :class:`Reward` (clean samples at t = 0) and on noisy latents."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import torch

from ...core.reward import Reward, register_reward
from ...core.types import Metadata, Samples
from .io import load_lrm
from .models import LatentRewardModel


@register_reward("latent_rm")
class LatentReward(Reward):
    """Scores with a latent reward model: ``reward(samples)`` reads clean samples as latents at ``t = 0`` (pixel-space
    generators, whose latents are the samples); :meth:`score_latents` scores noisy latents ``(x_t, t)``. Differentiable,
    so reward backprop can use it."""

    differentiable = True

    def __init__(self, path: str | Path | None = None, model: LatentRewardModel | None = None) -> None:
        if (path is None) == (model is None):
            raise ValueError("latent_rm needs exactly one of path (a saved latent reward model) or model")
        # a model loaded here is frozen: the reward passes gradients to samples, never into its own weights
        self.model = load_lrm(path).requires_grad_(False) if model is None else model
        self.name = "latent_rm"

    def score_latents(self, latents: torch.Tensor, t: torch.Tensor | float, prompts: Sequence[str] | None = None) -> torch.Tensor:
        if not isinstance(t, torch.Tensor):
            t = torch.full((latents.shape[0],), float(t), device=latents.device)
        return self.model(latents, t.to(latents.device), prompts)

    def __call__(self, samples: Samples, prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        if not isinstance(samples, torch.Tensor):
            raise TypeError(f"latent_rm scores tensor latents, got {type(samples).__name__}")
        return self.score_latents(samples, 0.0, prompts)


__all__ = ["LatentReward"]
