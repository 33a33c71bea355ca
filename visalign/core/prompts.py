"""Prompt sources: where each step's conditions (prompts + metadata) come from."""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Sequence

import torch

from .registry import Registry
from .types import PromptBatch


class PromptSource(ABC):
    """Draws training batches from a seeded ``torch.Generator`` and gives a fixed held-out batch for evaluation."""

    @abstractmethod
    def sample(self, n: int, generator: torch.Generator) -> PromptBatch: ...

    def eval_batch(self, n: int) -> PromptBatch:
        """A fixed batch for evaluation (default: drawn with seed 12345; override to hold prompts out)."""
        return self.sample(n, torch.Generator().manual_seed(12345))


class PromptList(PromptSource):
    """Uniform draws from a list of prompts (with optional per-prompt metadata); ``eval_prompts`` held out."""

    def __init__(
        self,
        prompts: Sequence[str],
        metadata: Sequence[dict[str, Any]] | None = None,
        eval_prompts: Sequence[str] | None = None,
        eval_metadata: Sequence[dict[str, Any]] | None = None,
    ) -> None:
        if not prompts:
            raise ValueError("PromptList needs at least one prompt")
        self.prompts = list(prompts)
        self.metadata = list(metadata) if metadata is not None else [{} for _ in self.prompts]
        if len(self.metadata) != len(self.prompts):
            raise ValueError(f"{len(self.prompts)} prompts but {len(self.metadata)} metadata entries")
        self.eval_prompts = list(eval_prompts) if eval_prompts else None
        self.eval_metadata = list(eval_metadata) if eval_metadata else None

    def sample(self, n: int, generator: torch.Generator) -> PromptBatch:
        idx = torch.randint(len(self.prompts), (n,), generator=generator).tolist()
        return PromptBatch([self.prompts[i] for i in idx], [dict(self.metadata[i]) for i in idx])

    def eval_batch(self, n: int) -> PromptBatch:
        if self.eval_prompts is None:
            return super().eval_batch(n)
        prompts = (self.eval_prompts * (n // len(self.eval_prompts) + 1))[:n]
        meta = self.eval_metadata or [{} for _ in self.eval_prompts]
        meta = (meta * (n // len(meta) + 1))[:n]
        return PromptBatch(prompts, [dict(m) for m in meta])


class Unconditional(PromptSource):
    """Empty prompts for unconditional generators (toys)."""

    def sample(self, n: int, generator: torch.Generator) -> PromptBatch:
        return PromptBatch([""] * n)


PROMPT_SOURCES: Registry[PromptSource] = Registry("prompt source", entry_point_group="visalign.prompt_sources")


def _read_prompt_file(path: str) -> tuple[list[str], list[dict[str, Any]]]:
    import json
    from pathlib import Path

    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"prompt file not found: {file}")
    prompts, metadata = [], []
    for i, line in enumerate(file.read_text().splitlines()):
        if not line.strip():
            continue
        if file.suffix == ".jsonl":
            record = json.loads(line)
            if "prompt" not in record:
                raise ValueError(f"{file}:{i + 1}: JSONL prompt records need a 'prompt' field")
            prompts.append(record.pop("prompt"))
            metadata.append(record)
        else:
            prompts.append(line.strip())
            metadata.append({})
    return prompts, metadata


def build_prompt_source(config: dict[str, Any] | None) -> PromptSource:
    """``{name: unconditional}``, ``{name: list, prompts: [...], eval_prompts: [...]}``,
    ``{name: file, path: prompts.txt|.jsonl, eval_path: ...}`` or any registered source (e.g. ``vvr``)."""

    config = dict(config or {"name": "unconditional"})
    name = config.pop("name", None)
    if name is None:
        raise ValueError(f"prompts config needs a 'name' key, got keys {sorted(config)}")
    if name == "unconditional":
        return Unconditional()
    if name == "list":
        return PromptList(**config)
    if name == "file":
        prompts, meta = _read_prompt_file(config.pop("path"))
        eval_prompts, eval_meta = _read_prompt_file(config.pop("eval_path")) if "eval_path" in config else (None, None)
        if config:
            raise ValueError(f"unknown prompts.file key(s) {sorted(config)}")
        return PromptList(prompts, meta, eval_prompts, eval_meta)
    return PROMPT_SOURCES.build(name, **config)


def register_prompt_source(name: str):
    """Class decorator: make a prompt source buildable from ``prompts: {name: ...}``."""
    return PROMPT_SOURCES.register(name)

