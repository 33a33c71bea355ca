"""Simple differentiable image rewards that need no model: colour match, brightness, redness, centre of mass, contrast."""
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


def _images(samples: torch.Tensor, reward: str = "image_stats") -> torch.Tensor:
    require_modality(samples, ("image", "video"), reward)
    if not isinstance(samples, torch.Tensor) or samples.dim() not in (4, 5) or samples.shape[1] != 3:
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


def _luminance(samples: torch.Tensor) -> torch.Tensor:
    x = _images(samples)
    return 0.299 * x[:, 0] + 0.587 * x[:, 1] + 0.114 * x[:, 2]


@register_reward("mean_redness")
class MeanRednessReward(Reward):
    """Mean of ``R − (G + B)/2`` over pixels (intensities in [0, 1]), in [-1, 1]; differentiable."""

    differentiable = True

    def __call__(self, samples: torch.Tensor, prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        x = _images(samples)
        return (x[:, 0] - 0.5 * (x[:, 1] + x[:, 2])).flatten(1).mean(1)


class _CentreOfMassReward(Reward):
    """Luminance-weighted mean pixel coordinate along one image axis, in [-1, 1] (left / top = -1); differentiable."""

    differentiable = True
    axis: int = -1

    def __call__(self, samples: torch.Tensor, prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        lum = _luminance(samples)
        if lum.dim() == 4:  # video: average the frames
            lum = lum.mean(1)
        coords = torch.linspace(-1, 1, lum.shape[self.axis], device=lum.device, dtype=lum.dtype)
        profile = lum.sum(-2 if self.axis == -1 else -1)
        return (profile * coords).sum(-1) / profile.sum(-1).clamp(min=1e-6)


@register_reward("centre_of_mass_x")
class CentreOfMassXReward(_CentreOfMassReward):
    """Horizontal luminance centre of mass in [-1, 1] (right is positive)."""

    axis = -1


@register_reward("centre_of_mass_y")
class CentreOfMassYReward(_CentreOfMassReward):
    """Vertical luminance centre of mass in [-1, 1] (bottom is positive)."""

    axis = -2


@register_reward("contrast")
class ContrastReward(Reward):
    """Standard deviation of the luminance over pixels (RMS contrast, in [0, 0.5]); differentiable."""

    differentiable = True

    def __call__(self, samples: torch.Tensor, prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        return _luminance(samples).flatten(1).std(1, unbiased=False)
