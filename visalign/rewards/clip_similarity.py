"""``scale · cos(image, prompt)`` on a CLIP backend: the common form of CLIP score, PickScore and HPS."""
from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F

from .clip_backends import ClipBackend
from ..core.types import Metadata
from .frames import FrameReward
from .pixels import OPENAI_CLIP_MEAN, OPENAI_CLIP_STD, published_pixels


class ClipSimilarityReward(FrameReward):
    """Cosine similarity of CLIP image and prompt embeddings times ``scale`` (``"logit_scale"`` uses the
    model's learned temperature, as PickScore does); differentiable in the images."""

    differentiable = True
    mean: tuple[float, float, float] = OPENAI_CLIP_MEAN
    std: tuple[float, float, float] = OPENAI_CLIP_STD

    def setup(self, backend: ClipBackend, scale: float | str, device: str | None, batch_size: int,
              video_pool: str) -> None:
        if not (isinstance(scale, (int, float)) or scale == "logit_scale"):
            raise ValueError(f"{self.name}: scale must be a number or 'logit_scale', got {scale!r}")
        self.configure_frames(batch_size, video_pool, device)
        self.backend = backend.to(self.device)
        self.scale = float(backend.logit_scale()) if scale == "logit_scale" else float(scale)

    def embed_images(self, frames: torch.Tensor) -> torch.Tensor:
        """Image embeddings of frames in [-1, 1] after the published preprocessing."""
        return self.backend.encode_image(published_pixels(frames, self.backend.image_size, self.mean, self.std))

    def score_frames(self, frames: torch.Tensor, prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        image = self.embed_images(frames)
        text = self.backend.encode_text(prompts).to(image.dtype)
        return self.scale * F.cosine_similarity(image, text, dim=-1)
