"""MaPP prompt selection: draw training prompts in proportion to the posterior probability of a mixed group."""
from __future__ import annotations

import torch

from ..core.prompts import PromptList, PromptSource
from ..core.types import PromptBatch
from .advantages import BetaPosteriorTable


class PosteriorPromptSource(PromptSource):
    """Wraps a :class:`PromptList`: each draw takes ``pool_factor * n`` uniform candidates and keeps ``n`` of them
    without replacement with probability ``∝ 1 - B(a+G, b)/B(a, b) - B(a, b+G)/B(a, b)`` (the chance that a group of
    ``G`` is neither all-correct nor all-wrong under the prompt's Beta posterior), plus ``floor`` for exploration.
    Share ``posterior`` with a ``text_grpo`` algorithm using ``advantage: mapp`` (``algorithm.posterior``)."""

    def __init__(self, base: PromptList, posterior: BetaPosteriorTable, group_size: int, pool_factor: int = 4,
                 floor: float = 1e-3) -> None:
        if pool_factor < 1:
            raise ValueError(f"pool_factor must be >= 1, got {pool_factor}")
        if group_size < 1:
            raise ValueError(f"group_size must be >= 1, got {group_size}")
        self.base, self.posterior = base, posterior
        self.group_size, self.pool_factor, self.floor = group_size, pool_factor, floor

    def sample(self, n: int, generator: torch.Generator) -> PromptBatch:
        pool = self.base.sample(n * self.pool_factor, generator)
        if self.pool_factor == 1:
            return pool
        weights = self.posterior.scores(pool.prompts, self.group_size).float().clamp(min=0) + self.floor
        keep = torch.multinomial(weights, n, replacement=False, generator=generator).tolist()
        return PromptBatch([pool.prompts[i] for i in keep], [pool.metadata[i] for i in keep])

    def eval_batch(self, n: int) -> PromptBatch:
        return self.base.eval_batch(n)
