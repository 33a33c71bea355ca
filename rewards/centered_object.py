"""Example plug-in verifier living outside the library: is the drawn object centred?

Load it by file path — ``reward: {name: rewards/centered_object.py:CenteredObject, tolerance: 0.1}`` in a
YAML config, or ``visalign.get_reward("rewards/centered_object.py:CenteredObject")`` — or publish it under
the ``visalign.rewards`` entry-point group of your own package.
"""
from __future__ import annotations

from typing import Sequence

import torch

from visalign import Reward
from visalign.core import require_modality


class CenteredObject(Reward):
    """1 − distance of the foreground's centre of mass from the image centre (in half-widths), clipped to [0, 1].

    Foreground = pixels whose colour differs from the border's median colour by more than ``threshold``.
    Blank images (no foreground) score 0.
    """

    name = "centered_object"
    differentiable = False

    def __init__(self, threshold: float = 0.2) -> None:
        if not 0 < threshold < 2:
            raise ValueError(f"threshold must be in (0, 2) for images in [-1, 1], got {threshold}")
        self.threshold = threshold

    def __call__(self, samples: torch.Tensor, prompts: Sequence[str], metadata: Sequence[dict]) -> torch.Tensor:
        require_modality(samples, ("image",), self.name)
        x = samples.float()
        b, _, h, w = x.shape
        border = torch.cat([x[:, :, 0], x[:, :, -1], x[:, :, :, 0], x[:, :, :, -1]], dim=2)
        background = border.median(dim=2).values[:, :, None, None]
        mask = ((x - background).abs().amax(1) > self.threshold).float()
        mass = mask.flatten(1).sum(1)
        ys = torch.linspace(-1, 1, h, device=x.device)[None, :, None]
        xs = torch.linspace(-1, 1, w, device=x.device)[None, None, :]
        cy = (mask * ys).flatten(1).sum(1) / mass.clamp(min=1)
        cx = (mask * xs).flatten(1).sum(1) / mass.clamp(min=1)
        score = (1 - torch.sqrt(cx**2 + cy**2)).clamp(0, 1)
        return torch.where(mass > 0, score, torch.zeros_like(score))
