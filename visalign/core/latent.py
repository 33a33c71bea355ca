"""Capability a generator declares so a latent reward model can sit on its frozen early blocks (PAVRM style)."""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import torch


class TokenFeatures(ABC):
    """A backbone whose first blocks turn a noisy latent into tokens: ``token_features(x_t, t, cond, blocks)``
    returns ``[B, N, D]`` (N tokens over space or space-time) of width :meth:`token_dim`. Gradients flow to
    ``latents``, so a reward on these features can be backpropagated into the generator's sampler."""

    @abstractmethod
    def token_features(self, latents: torch.Tensor, t: torch.Tensor, cond: Any, blocks: int) -> torch.Tensor:
        """Tokens after the first ``blocks`` backbone blocks at noise level ``t`` (``[B]`` in [0, 1])."""

    @abstractmethod
    def token_dim(self) -> int:
        """Width D of the tokens."""

    @abstractmethod
    def num_blocks(self) -> int:
        """How many blocks the backbone has (``blocks`` must be in [1, num_blocks])."""


__all__ = ["TokenFeatures"]
