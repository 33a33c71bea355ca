"""Analytic rewards for 2-D toys (exact tilted targets are available for both; both are differentiable)."""
from __future__ import annotations

from typing import Sequence

import torch

from ..core.reward import Reward, register_reward, require_modality
from ..core.types import Metadata, Samples


def _points(samples: Samples, reward: str = "toy") -> torch.Tensor:
    require_modality(samples, ("points",), reward)
    return samples


@register_reward("toy_linear")
class ToyLinearReward(Reward):
    """r(x) = a·x (tilt: every Gaussian shifts by s²a/β and its weight scales by exp(a·μ/β))."""

    differentiable = True

    def __init__(self, direction: Sequence[float] = (1.0, 0.0)) -> None:
        self.direction = torch.tensor(list(direction), dtype=torch.float32)

    def __call__(self, samples: Samples, prompts: Sequence[str] | None = None, metadata: Metadata | None = None) -> torch.Tensor:
        x = _points(samples, "toy_linear")
        return x @ self.direction.to(x)

    def features(self, samples: Samples) -> torch.Tensor:
        return _points(samples, "toy_linear")


@register_reward("toy_quadratic")
class ToyQuadraticReward(Reward):
    """r(x) = −scale·‖x − c‖² (tilt: a Gaussian factor centred at c with variance β/(2·scale))."""

    differentiable = True

    def __init__(self, centre: Sequence[float] = (1.0, 1.0), scale: float = 0.5) -> None:
        if scale <= 0:
            raise ValueError(f"toy_quadratic scale must be > 0, got {scale}")
        self.centre = torch.tensor(list(centre), dtype=torch.float32)
        self.scale = float(scale)

    def __call__(self, samples: Samples, prompts: Sequence[str] | None = None, metadata: Metadata | None = None) -> torch.Tensor:
        x = _points(samples, "toy_quadratic")
        return -self.scale * (x - self.centre.to(x)).pow(2).sum(1)

    def features(self, samples: Samples) -> torch.Tensor:
        return _points(samples, "toy_quadratic")
