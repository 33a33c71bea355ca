"""Prompt sources that feed VVR tasks to trainers: fresh tasks at a chosen level, or a benchmark file."""
from __future__ import annotations

import random
from pathlib import Path
from typing import Iterator, Sequence

import torch

from ..core.errors import InputError
from ..core.prompts import PromptSource, register_prompt_source
from ..core.types import PromptBatch
from .benchmark import EVAL_SEED_BASE, TRAIN_SEED_LIMIT, load_split
from .constraints import CONSTRAINT_NAMES
from .sampler import LEVELS, generate_task
from .spec_task import SpecTask
from .task import Task


def task_batch(tasks: Sequence[Task | SpecTask]) -> PromptBatch:
    """PromptBatch with ``metadata[i] = {"task": task_dict, "task_id": id}``."""
    return PromptBatch([t.prompt for t in tasks], [{"task": t.to_dict(), "task_id": t.id} for t in tasks])


@register_prompt_source("vvr")
class VVRPromptSource(PromptSource):
    """Freshly generated VVR tasks at complexity ``level`` (0 = 1-3 objects, one constraint; fits 32-64 px).
    ``types="low_res"`` keeps the 28 types that stay verifiable at 32 px.

    Training seeds come from the torch generator (below 1e9, disjoint from the benchmark splits); ``eval_batch``
    uses a separate held-out seed stream.
    """

    def __init__(self, level: int = 0, types: Sequence[str] | str | None = None) -> None:
        if types == "low_res":
            from .sampler import LOW_RES_TYPES

            types = LOW_RES_TYPES
        if level not in LEVELS:
            raise InputError(f"prompts.level: VVR level must be one of {sorted(LEVELS)}, got {level}")
        bad = [t for t in types or [] if t not in CONSTRAINT_NAMES]
        if bad:
            raise InputError(f"prompts.types: unknown VVR constraint types {bad}; known: {', '.join(CONSTRAINT_NAMES)}")
        self.level = level
        self.types = list(types) if types else list(CONSTRAINT_NAMES)

    def _task(self, seed: int, prefix: str) -> Task:
        """The task for ``seed``; a seed whose layout cannot be sampled moves deterministically to the next one."""
        for attempt in range(100):
            s = seed + attempt * 1_000_003
            try:
                return generate_task(s, self.level, self.types[s % len(self.types)], f"{prefix}-L{self.level}-{s}")
            except RuntimeError:
                continue
        raise RuntimeError(f"no VVR task could be sampled near seed {seed} at level {self.level}")

    def sample(self, n: int, generator: torch.Generator) -> PromptBatch:
        seeds = torch.randint(0, TRAIN_SEED_LIMIT, (n,), generator=generator).tolist()
        return task_batch([self._task(s, "vvr-train") for s in seeds])

    def eval_batch(self, n: int) -> PromptBatch:
        return task_batch([self._task(EVAL_SEED_BASE + i, "vvr-eval") for i in range(n)])


@register_prompt_source("vvr2")
class VVR2PromptSource(PromptSource):
    """Fresh closed-world VVR v2 tasks (the paper's format) from a training pool: ``"easy"`` (complexity <= 20) or
    ``"matched"`` (VVRBench v2's distribution), optionally only tasks of difficulty ``bins`` (1-5, complexity 3-11,
    12-20, 21-29, 30-38, 39-48; e.g. ``[1, 2]`` for easy-to-hard runs). Training draws pool indices below 1e9 from
    the torch generator; ``eval_batch`` uses indices from 3e9 (held out). An index whose task is of another bin, or
    cannot be drawn, moves deterministically on."""

    def __init__(self, pool: str = "easy", bins: Sequence[int] | None = None) -> None:
        from .spec_sampler import BINS
        from .splits import EASY_MAX, POOLS

        if pool not in POOLS:
            raise ValueError(f"vvr2 pool must be one of {POOLS}, got {pool!r}")
        self.pool = pool
        self.bins = None
        if bins is not None:
            if isinstance(bins, (str, int)) or not bins or not all(isinstance(b, int) and 1 <= b <= len(BINS) for b in bins):
                raise InputError(f"prompts.bins: a non-empty list of difficulty bins in 1-{len(BINS)}, got {bins!r}")
            reachable = [b for b in bins if pool != "easy" or BINS[b - 1][0] <= EASY_MAX]
            if len(reachable) != len(bins):
                raise InputError(f"prompts.bins: pool 'easy' has complexity <= {EASY_MAX} (bins 1-2); bins "
                                 f"{sorted(set(bins) - set(reachable))} never occur there (use pool: matched)")
            self.bins = frozenset(bins)

    def _candidates(self, index: int) -> Iterator[int]:
        """Pool indices tried for ``index``: without bins itself, then steps of 1_000_003; with bins uniform draws
        from the same range (training below 1e9, held out from 3e9) seeded by ``index``, so the tasks are independent
        draws of the pool's distribution within the bins (rejection sampling), also for consecutive eval indices."""
        if self.bins is None:
            yield from (index + attempt * 1_000_003 for attempt in range(20))
            return
        base = EVAL_SEED_BASE if index >= EVAL_SEED_BASE else 0
        rng = random.Random(index)
        for _ in range(200):
            yield base + rng.randrange(TRAIN_SEED_LIMIT)

    def _in_bins(self, index: int) -> bool:
        from .spec_sampler import difficulty_bin
        from .splits import plan

        return self.bins is None or difficulty_bin(plan(self.pool, index)[1]) in self.bins

    def _task(self, index: int) -> SpecTask:
        from .splits import split_task

        for i in self._candidates(index):
            if not self._in_bins(i):
                continue
            try:
                return split_task(self.pool, i)
            except RuntimeError:
                continue
        raise RuntimeError(f"no VVR v2 {self.pool} task (bins {sorted(self.bins or [])}) could be drawn near index {index}")

    def sample(self, n: int, generator: torch.Generator) -> PromptBatch:
        idx = torch.randint(0, TRAIN_SEED_LIMIT, (n,), generator=generator).tolist()
        return task_batch([self._task(i) for i in idx])

    def eval_batch(self, n: int) -> PromptBatch:
        return task_batch([self._task(EVAL_SEED_BASE + i) for i in range(n)])


@register_prompt_source("vvr_file")
class VVRFilePromptSource(PromptSource):
    """Tasks from a split (v2: ``bench``, ``challenge``, ``fast``, ``extension``; v1: ``bench-v1``,
    ``challenge-v1``) or a task file (JSONL or Parquet, v2 rows or v1 tasks); draws uniformly, evaluates in order."""

    def __init__(self, split_or_path: str | Path, limit: int | None = None) -> None:
        from .splits import EVAL_SPLITS, load_split_v2, read_task_file

        name = str(split_or_path)
        if name in EVAL_SPLITS:
            self.tasks = load_split_v2(name, limit)
        elif name in ("bench-v1", "challenge-v1"):
            self.tasks = load_split(name[:-3], limit)
        else:
            self.tasks = read_task_file(name)[:limit]
        if not self.tasks:
            raise ValueError(f"no VVR tasks in {name}")

    def sample(self, n: int, generator: torch.Generator) -> PromptBatch:
        idx = torch.randint(len(self.tasks), (n,), generator=generator).tolist()
        return task_batch([self.tasks[i] for i in idx])

    def eval_batch(self, n: int) -> PromptBatch:
        return task_batch([self.tasks[i % len(self.tasks)] for i in range(n)])
