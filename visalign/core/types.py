"""Shared value types: samples of any modality and the rollout passed from sampling to the objective."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

import torch

Samples = Union[torch.Tensor, dict[str, torch.Tensor], list[str]]
"""Image ``B×C×H×W``, video ``B×C×T×H×W``, a dict of tensors (e.g. audio-video), or texts."""

Metadata = list[dict[str, Any]]


def batch_size_of(samples: Samples) -> int:
    """Leading dimension of a sample tensor or of every tensor in a sample dict (which must agree)."""
    if isinstance(samples, torch.Tensor):
        if samples.dim() == 0:
            raise ValueError("samples must have a batch dimension, got a 0-d tensor")
        return samples.shape[0]
    if isinstance(samples, (list, tuple)):
        return len(samples)
    if isinstance(samples, dict) and samples:
        sizes = {k: v.shape[0] for k, v in samples.items()}
        if len(set(sizes.values())) != 1:
            raise ValueError(f"sample dict entries disagree on batch size: {sizes}")
        return next(iter(sizes.values()))
    raise TypeError(f"samples must be a tensor or a non-empty dict of tensors, got {type(samples).__name__}")


def index_samples(samples: Samples, index: torch.Tensor | slice) -> Samples:
    if isinstance(samples, dict):
        return {k: v[index] for k, v in samples.items()}
    return samples[index]


def detach_samples(samples: Samples) -> Samples:
    if isinstance(samples, dict):
        return {k: v.detach() for k, v in samples.items()}
    return samples.detach()


@dataclass
class PromptBatch:
    """Conditions for one step: prompts (may be empty strings for unconditional models) and per-item metadata."""

    prompts: list[str]
    metadata: Metadata = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.metadata:
            self.metadata = [{} for _ in self.prompts]
        if len(self.metadata) != len(self.prompts):
            raise ValueError(f"{len(self.prompts)} prompts but {len(self.metadata)} metadata entries")

    def __len__(self) -> int:
        return len(self.prompts)

    def repeat_interleave(self, times: int) -> "PromptBatch":
        """Each prompt ``times`` times in a row (groups of samples per prompt)."""
        return PromptBatch(
            [p for p in self.prompts for _ in range(times)],
            [m for m in self.metadata for _ in range(times)],
        )


@dataclass
class Rollout:
    """What sampling produced for one step: samples, their conditions, rewards, and algorithm-specific extras."""

    samples: Samples
    batch: PromptBatch
    rewards: torch.Tensor
    noise: torch.Tensor | None = None
    extras: dict[str, Any] = field(default_factory=dict)
