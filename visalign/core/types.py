"""Shared value types: samples of any modality and the rollout passed from sampling to the objective."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Union

import torch

Samples = Union[torch.Tensor, dict[str, Any], list[str]]
"""One layout per modality, all in [-1, 1]: image ``B×C×H×W``, video ``B×C×T×H×W``, audio-video a dict
``{"video": B×C×T×H×W, "audio": B×C×L, "sample_rate": int, "fps": float}`` (plain numbers are shared by the
batch), 2-D toy points ``B×D``, or a list of texts. Conversions to other layouts happen only at the diffusers
boundary."""

Metadata = list[dict[str, Any]]

Modality = Literal["points", "image", "video", "audio_video", "text"]
AUDIO_VIDEO_KEYS = ("video", "audio")


def modality_of(samples: Samples) -> Modality:
    """Which of the layouts above ``samples`` follows; anything else is a ``ValueError`` naming the shape."""
    if isinstance(samples, (list, tuple)):
        return "text"
    if isinstance(samples, dict):
        missing = [k for k in AUDIO_VIDEO_KEYS if not isinstance(samples.get(k), torch.Tensor)]
        if missing:
            raise ValueError(f"audio-video samples need tensors under {list(AUDIO_VIDEO_KEYS)}; missing {missing} "
                             f"(got keys {sorted(samples)})")
        if samples["video"].dim() != 5 or samples["audio"].dim() != 3:
            raise ValueError(f"audio-video samples need video B×C×T×H×W and audio B×C×L, got video "
                             f"{tuple(samples['video'].shape)} and audio {tuple(samples['audio'].shape)}")
        return "audio_video"
    if not isinstance(samples, torch.Tensor):
        raise TypeError(f"samples must be a tensor, an audio-video dict or a list of texts, got {type(samples).__name__}")
    kinds: dict[int, Modality] = {2: "points", 4: "image", 5: "video"}
    if samples.dim() not in kinds:
        raise ValueError(f"samples of shape {tuple(samples.shape)} follow no layout (B×D points, B×C×H×W image, "
                         "B×C×T×H×W video)")
    return kinds[samples.dim()]


def batch_size_of(samples: Samples) -> int:
    """Leading dimension of a sample tensor or of every tensor in a sample dict (which must agree)."""
    if isinstance(samples, torch.Tensor):
        if samples.dim() == 0:
            raise ValueError("samples must have a batch dimension, got a 0-d tensor")
        return samples.shape[0]
    if isinstance(samples, (list, tuple)):
        return len(samples)
    if isinstance(samples, dict):
        sizes = {k: v.shape[0] for k, v in samples.items() if isinstance(v, torch.Tensor)}
        if not sizes:
            raise TypeError(f"a sample dict needs at least one tensor, got keys {sorted(samples)}")
        if len(set(sizes.values())) != 1:
            raise ValueError(f"sample dict entries disagree on batch size: {sizes}")
        return next(iter(sizes.values()))
    raise TypeError(f"samples must be a tensor or a non-empty dict of tensors, got {type(samples).__name__}")


def index_samples(samples: Samples, index: torch.Tensor | slice) -> Samples:
    """Rows ``index`` of any layout (shared plain numbers of a dict are kept as they are)."""
    if isinstance(samples, dict):
        return {k: v[index] if isinstance(v, torch.Tensor) else v for k, v in samples.items()}
    if isinstance(samples, list):
        rows = range(len(samples))[index] if isinstance(index, slice) else index.tolist()
        return [samples[i] for i in rows] if not isinstance(rows, int) else samples[rows]
    return samples[index]


def cat_samples(parts: list[Samples]) -> Samples:
    """Concatenate batches of one layout along the batch dimension."""
    first = parts[0]
    if isinstance(first, dict):
        return {k: torch.cat([p[k] for p in parts]) if isinstance(v, torch.Tensor) else v for k, v in first.items()}
    if isinstance(first, list):
        return [x for p in parts for x in p]
    return torch.cat(parts)


def flatten_samples(samples: Samples) -> torch.Tensor:
    """``B×D``: a tensor sample flattened, or a dict's tensors (e.g. audio-video) flattened and joined in key order
    (shared plain numbers such as ``sample_rate`` are left out)."""
    if isinstance(samples, dict):
        parts = [v.flatten(1) for _, v in sorted(samples.items()) if isinstance(v, torch.Tensor)]
        if not parts:
            raise TypeError(f"a sample dict needs at least one tensor, got keys {sorted(samples)}")
        return torch.cat(parts, dim=1)
    if not isinstance(samples, torch.Tensor):
        raise TypeError(f"cannot flatten {type(samples).__name__} samples into a tensor")
    return samples.flatten(1)


def detach_samples(samples: Samples) -> Samples:
    if isinstance(samples, dict):
        return {k: v.detach() if isinstance(v, torch.Tensor) else v for k, v in samples.items()}
    if isinstance(samples, list):
        return samples
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
