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
from ..core.types import Metadata, Samples, batch_size_of


def _keys(samples: Samples) -> tuple[list[bytes], torch.device]:
    """Per sample, the bytes its score is keyed by (its tensors' float32 bytes, a dict's under their sorted names, or
    its text), and the device the scores go to. The tensors are moved to the CPU once for the whole batch."""
    if isinstance(samples, (list, tuple)):
        return [text.encode() for text in samples], torch.device("cpu")
    parts = {"": samples} if isinstance(samples, torch.Tensor) else {
        k: v for k, v in sorted(samples.items()) if isinstance(v, torch.Tensor)}
    host = {k: v.detach().float().cpu() for k, v in parts.items()}
    keys = [b"".join(k.encode() + t[i].contiguous().numpy().tobytes() for k, t in host.items())
            for i in range(batch_size_of(samples))]
    return keys, next(iter(parts.values())).device


@register_reward("null_score")
class NullScore(Reward):
    """A pseudo-random N(0, 1) score keyed by each sample's content (``salt`` picks another draw)."""

    def __init__(self, salt: int = 0) -> None:
        self.salt = int(salt)

    def __call__(self, samples: Samples, prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        keys, device = _keys(samples)
        scores = []
        for key in keys:
            digest = hashlib.blake2b(key, digest_size=8, key=str(self.salt).encode()).digest()
            generator = torch.Generator().manual_seed(int.from_bytes(digest, "little") & (2**63 - 1))
            scores.append(float(torch.randn((), generator=generator)))
        return torch.tensor(scores, device=device)


__all__ = ["NullScore"]
