"""Simple differentiable image rewards that need no model: colour match and brightness."""
from __future__ import annotations

import re
from typing import Sequence

import torch

from ..core.reward import Reward, register_reward, require_modality
from ..core.types import Metadata

COLOURS: dict[str, tuple[float, float, float]] = {
    "red": (1.0, 0.0, 0.0), "green": (0.0, 0.8, 0.0), "blue": (0.0, 0.0, 1.0), "yellow": (1.0, 1.0, 0.0),
    "purple": (0.6, 0.0, 0.8), "orange": (1.0, 0.5, 0.0), "white": (1.0, 1.0, 1.0), "black": (0.0, 0.0, 0.0),
}


def _images(samples: torch.Tensor, reward: str) -> torch.Tensor:
    require_modality(samples, ("image", "video"), reward)
    if samples.shape[1] != 3:
        shape = tuple(samples.shape) if isinstance(samples, torch.Tensor) else type(samples).__name__
        raise ValueError(f"image rewards need RGB images B×3×H×W (or video B×3×T×H×W) in [-1, 1], got {shape}")
    return (samples.float().clamp(-1, 1) + 1) / 2


@register_reward("color_match")
class ColorMatchReward(Reward):
    """Negative distance between the image's mean colour and the first colour word in the prompt
    (or ``default``); differentiable. Items whose prompt names no known colour use ``default``."""

    differentiable = True

    def __init__(self, default: str = "red") -> None:
        if default not in COLOURS:
            raise ValueError(f"unknown colour {default!r}; known: {sorted(COLOURS)}")
        self.default = default

    def target(self, prompt: str) -> tuple[float, float, float]:
        for word in re.findall(r"[a-z]+", prompt.lower()):
            if word in COLOURS:
                return COLOURS[word]
        return COLOURS[self.default]

    def __call__(self, samples: torch.Tensor, prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        x = _images(samples, "color_match")
        mean = x.flatten(2).mean(-1)
        target = torch.tensor([self.target(p) for p in prompts], device=x.device, dtype=mean.dtype)
        return -(mean - target).norm(dim=1)


@register_reward("brightness")
class BrightnessReward(Reward):
    """Mean pixel intensity in [0, 1]; differentiable."""

    differentiable = True

    def __call__(self, samples: torch.Tensor, prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        return _images(samples, "brightness").flatten(1).mean(1)
