"""Base for rewards that score RGB frames: images directly, videos frame by frame then pooled, in chunks.

Subclasses implement ``score_frames(frames N×3×H×W in [-1, 1], prompts, metadata) -> Tensor[N]``; this class checks the
layout, moves the frames to the model's device, splits the batch into chunks of ``batch_size`` frames, pools the
``T`` frame scores of a video (``video_pool``: mean or min) and keeps them in ``last_frame_scores`` (B×T).
"""
from __future__ import annotations

from abc import abstractmethod
from typing import Literal, Sequence

import torch

from ..core.reward import Reward
from ..core.types import Metadata, Samples, modality_of

VideoPool = Literal["mean", "min"]


class FrameReward(Reward):
    """An image reward that also scores video (per frame, pooled); other layouts raise a ValueError."""

    batch_size: int = 32
    video_pool: VideoPool = "mean"
    device: torch.device = torch.device("cpu")

    def configure_frames(self, batch_size: int, video_pool: str, device: str | torch.device | None) -> None:
        if batch_size < 1:
            raise ValueError(f"{self.name}: batch_size must be >= 1, got {batch_size}")
        if video_pool not in ("mean", "min"):
            raise ValueError(f"{self.name}: video_pool must be 'mean' or 'min', got {video_pool!r}")
        self.batch_size = batch_size
        self.video_pool = video_pool  # type: ignore[assignment]
        self.device = torch.device(device) if device else torch.device("cpu")
        self.last_frame_scores: torch.Tensor | None = None

    @abstractmethod
    def score_frames(self, frames: torch.Tensor, prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        """Scores ``[N]`` of RGB frames ``N×3×H×W`` in [-1, 1] (on ``self.device``) against their prompts."""

    def __call__(self, samples: Samples, prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        frames, per_sample = self._frames(samples)
        out_device = frames.device
        frame_prompts = [p for p in prompts for _ in range(per_sample)]
        frame_meta = [m for m in metadata for _ in range(per_sample)]
        frames = frames.to(self.device)
        size = self.batch_size
        chunks = [self.score_frames(frames[i:i + size], frame_prompts[i:i + size], frame_meta[i:i + size])
                  for i in range(0, frames.shape[0], size)]
        scores = torch.cat(chunks).float().view(-1, per_sample)
        self.last_frame_scores = scores.detach()
        pooled = scores.mean(1) if self.video_pool == "mean" else scores.amin(1)
        return pooled.to(out_device)

    def _frames(self, samples: Samples) -> tuple[torch.Tensor, int]:
        kind = modality_of(samples)
        if kind not in ("image", "video") or samples.shape[1] != 3:  # type: ignore[union-attr]
            shape = tuple(samples.shape) if isinstance(samples, torch.Tensor) else type(samples).__name__
            raise ValueError(f"reward {self.name!r} scores RGB images B×3×H×W or videos B×3×T×H×W in [-1, 1]; "
                             f"got {kind} samples {shape}")
        if kind == "image":
            return samples, 1  # type: ignore[return-value]
        b, c, t, h, w = samples.shape  # type: ignore[union-attr]
        return samples.permute(0, 2, 1, 3, 4).reshape(b * t, c, h, w), t  # type: ignore[union-attr]
