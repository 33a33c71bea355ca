"""The smooth-image judge as a reward (held out: used to label real pairs and to evaluate, never optimised)."""
from __future__ import annotations

from typing import Sequence

import torch

from ..core.config import from_dict
from ..core.reward import Reward, register_reward
from ..core.types import Metadata, Samples
from ..toys.smooth_images import SmoothImages, SmoothImagesConfig


@register_reward("smooth_image_judge")
class SmoothImageJudge(Reward):
    """``V(x) = γ·tanh(brightness) − ½·typicality − β·off-data energy`` on :class:`SmoothImages` (keys: its config)."""

    def __init__(self, **config) -> None:
        self.data = SmoothImages(from_dict(SmoothImagesConfig, config, prefix="reward(smooth_image_judge)"))
        self.name = "smooth_image_judge"

    def __call__(self, samples: Samples, prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        if not isinstance(samples, torch.Tensor):
            raise TypeError(f"smooth_image_judge scores image tensors, got {type(samples).__name__}")
        return self.data.judge(samples)


__all__ = ["SmoothImageJudge"]
