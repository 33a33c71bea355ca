"""Policy protocol: what the trainer optimises, shared by generators (images, video, audio-video) and causal LMs."""
from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections import OrderedDict
from pathlib import Path
from typing import Any, Protocol, Sequence

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

from .config import ConfigError


class DrawHook(Protocol):
    def __call__(self, policy: "Policy", num_samples: int) -> None: ...


class Policy(nn.Module, ABC):
    """A trainable model that turns prompts into samples.

    The trainer needs exactly these members: :meth:`sample` (evaluation and previews), :meth:`trainable_module`
    (what the optimizer updates), :meth:`frozen_copy` (the reference) and :meth:`save_pretrained` (the final export).
    Every batch a policy draws is reported to the hooks added with :meth:`register_draw_hook` (sample counting).
    """

    def __init__(self) -> None:
        super().__init__()
        self._draw_hooks: OrderedDict[int, DrawHook] = OrderedDict()

    @abstractmethod
    def sample(self, prompts: Sequence[str] | None = None, *, generator: torch.Generator | None = None,
               num_samples: int = 1) -> Any:
        """``num_samples`` samples per prompt without grad (grouped: prompt ``i`` owns rows ``i*G .. i*G+G-1``)."""

    def trainable_module(self) -> nn.Module:
        """The part of the network an optimizer updates (the whole policy unless a subclass narrows it)."""
        return self

    def shard_units(self) -> list[nn.Module]:
        """Submodules FSDP shards, innermost first, that together hold every trainable parameter; each must be entered
        through its own ``forward`` by every method that uses its parameters. Empty (the default): not shardable,
        and the trainer all-reduces gradients explicitly instead."""
        return []

    def enable_gradient_checkpointing(self) -> None:
        """Recompute activations in backward instead of storing them (``trainer.gradient_checkpointing``)."""
        raise ConfigError(f"trainer.gradient_checkpointing: {type(self).__name__} does not support gradient checkpointing")

    def frozen_copy(self) -> "Policy":
        """A detached, eval-mode copy that serves as the reference (without this policy's draw hooks)."""
        ref = copy.deepcopy(self)
        ref.requires_grad_(False)
        ref.eval()
        ref._draw_hooks = OrderedDict()
        return ref

    @abstractmethod
    def save_pretrained(self, path: str | Path) -> Path:
        """Write a folder the matching loader reads back (safetensors + JSON)."""

    def register_draw_hook(self, hook: DrawHook) -> RemovableHandle:
        """Call ``hook(policy, n)`` for every batch of ``n`` samples this policy draws; ``.remove()`` the handle."""
        handle = RemovableHandle(self._draw_hooks)
        self._draw_hooks[handle.id] = hook
        return handle

    def record_draws(self, num_samples: int) -> None:
        """Report a drawn batch to the draw hooks (called by every sampling entry point)."""
        for hook in list(self._draw_hooks.values()):
            hook(self, num_samples)
