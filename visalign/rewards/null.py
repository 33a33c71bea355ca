"""``null_score``: a reward with no signal, for measuring optimiser drift.

Each sample gets a standard normal score drawn from a generator seeded by a hash of the sample's content (its
tensors' bytes, or its text), so the score is reproducible, resume-safe and carries no information about the
sample's quality. Training on it shows how far the noise of the policy gradient alone moves a model's metrics: the
control for any claim that a reward moved them.
"""
from __future__ import annotations

import hashlib
from typing import Sequence

import torch

from ..core.reward import Reward, register_reward
from ..core.types import Metadata, Samples, batch_size_of, index_samples


def _content_bytes(sample: Samples) -> bytes:
    if isinstance(sample, torch.Tensor):
        return sample.detach().float().cpu().contiguous().numpy().tobytes()
    if isinstance(sample, dict):
        return b"".join(k.encode() + _content_bytes(v) for k, v in sorted(sample.items()) if isinstance(v, torch.Tensor))
    return "\x00".join(sample).encode()  # texts


def _device(samples: Samples) -> torch.device:
    tensors = [samples] if isinstance(samples, torch.Tensor) else (
        [v for v in samples.values() if isinstance(v, torch.Tensor)] if isinstance(samples, dict) else [])
    return tensors[0].device if tensors else torch.device("cpu")


@register_reward("null_score")
class NullScore(Reward):
    """A pseudo-random N(0, 1) score keyed by each sample's content (``salt`` picks another draw)."""

    def __init__(self, salt: int = 0) -> None:
        self.salt = int(salt)

    def __call__(self, samples: Samples, prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        scores = []
        for i in range(batch_size_of(samples)):
            sample = index_samples(list(samples) if isinstance(samples, tuple) else samples, slice(i, i + 1))
            digest = hashlib.blake2b(_content_bytes(sample), digest_size=8, key=str(self.salt).encode()).digest()
            generator = torch.Generator().manual_seed(int.from_bytes(digest, "little") & (2**63 - 1))
            scores.append(float(torch.randn((), generator=generator)))
        return torch.tensor(scores, device=_device(samples))


__all__ = ["NullScore"]
