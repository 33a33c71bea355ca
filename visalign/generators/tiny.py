"""Tiny prompt-conditioned image generators: a tiny SD3 transformer conditioned on a tiny CLIP text encoder.

Both run on CPU in tens of milliseconds at batch 64 and need no downloaded files.
``tiny_one_step`` maps noise to an image in one pass (``tanh`` output in [-1, 1]);
``tiny_flow`` is a few-step flow-matching model whose samples are clamped to [-1, 1].
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Sequence

import torch
from torch import nn

from ..core.config import check
from ..core.generator import Generator, register_generator
from .flow import FlowMatchingGenerator
from .text_encoder import TinyTextEncoder

TextCond = tuple[torch.Tensor, torch.Tensor]
"""``(token_states [B, L, D], pooled [B, D])`` from :class:`TinyTextEncoder`."""


@dataclass
class TinyImageConfig:
    """Sizes of the tiny image transformer and its text encoder."""

    image_size: int = 32
    channels: int = 3
    patch_size: int = 4
    layers: int = 2
    heads: int = 2
    head_dim: int = 16
    text_hidden: int = 32
    text_layers: int = 2
    text_heads: int = 2
    vocab_buckets: int = 1024
    max_length: int = 16

    def __post_init__(self) -> None:
        check(self.image_size >= 1 and self.channels >= 1, "image_size and channels must be >= 1")
        check(self.patch_size >= 1, f"patch_size must be >= 1, got {self.patch_size}")
        check(self.image_size % self.patch_size == 0, f"image_size {self.image_size} must be divisible by patch_size {self.patch_size}")
        check(self.layers >= 1 and self.heads >= 1 and self.head_dim >= 1, "layers, heads and head_dim must be >= 1")
        check(self.text_layers >= 1 and self.text_heads >= 1, "text_layers and text_heads must be >= 1")
        check(self.text_hidden % self.text_heads == 0, f"text_hidden {self.text_hidden} must be divisible by text_heads {self.text_heads}")
        check(self.vocab_buckets > 3, f"vocab_buckets must be > 3, got {self.vocab_buckets}")
        check(self.max_length >= 2, f"max_length must be >= 2, got {self.max_length}")


@dataclass
class TinyFlowConfig(TinyImageConfig):
    """:class:`TinyImageConfig` plus the Euler sampler's step count and timestep shift."""

    num_steps: int = 4
    shift: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        check(self.num_steps >= 1, f"num_steps must be >= 1, got {self.num_steps}")
        check(self.shift > 0, f"shift must be > 0, got {self.shift}")


class TinyBackbone(nn.Module):
    """Text encoder + ``diffusers.SD3Transformer2DModel``: ``(x, timestep in [0, 1000], cond) -> same shape as x``."""

    def __init__(self, config: TinyImageConfig) -> None:
        super().__init__()
        from diffusers import SD3Transformer2DModel

        c = config
        self.text_encoder = TinyTextEncoder(c.text_hidden, c.text_layers, c.text_heads, c.vocab_buckets, c.max_length)
        self.transformer = SD3Transformer2DModel(
            sample_size=c.image_size,
            patch_size=c.patch_size,
            in_channels=c.channels,
            out_channels=c.channels,
            num_layers=c.layers,
            attention_head_dim=c.head_dim,
            num_attention_heads=c.heads,
            joint_attention_dim=c.text_hidden,
            caption_projection_dim=c.heads * c.head_dim,
            pooled_projection_dim=c.text_hidden,
            pos_embed_max_size=c.image_size // c.patch_size,
        )

    def encode(self, prompts: Sequence[str]) -> TextCond:
        return self.text_encoder(list(prompts))

    def forward(self, x: torch.Tensor, timestep: torch.Tensor, cond: TextCond) -> torch.Tensor:
        states, pooled = cond
        x = x.to(self.transformer.dtype)
        return self.transformer(
            hidden_states=x,
            encoder_hidden_states=states.to(x.dtype),
            pooled_projections=pooled.to(x.dtype),
            timestep=timestep.to(x.dtype),
            return_dict=False,
        )[0]


class _TinyImageMixin:
    """Shared noise shape and prompt encoding (``None`` prompts mean the empty prompt)."""

    config: TinyImageConfig
    backbone: TinyBackbone

    @property
    def noise_shape(self) -> tuple[int, ...]:
        c = self.config
        return (c.channels, c.image_size, c.image_size)

    def encode(self, prompts: Sequence[str] | None) -> TextCond | None:
        return None if prompts is None else self.backbone.encode(prompts)

    def _cond(self, cond: TextCond | None, batch: int) -> TextCond:
        return self.backbone.encode([""] * batch) if cond is None else cond


@register_generator("tiny_one_step")
class TinyOneStepGenerator(_TinyImageMixin, Generator):
    """One-step prompt-conditioned generator ``x = tanh(f(z, prompt))``, images ``3×S×S`` in [-1, 1]."""

    kind: ClassVar[str] = "one_step"
    config_class = TinyImageConfig
    timestep: ClassVar[float] = 1000.0

    def __init__(self, config: TinyImageConfig | None = None) -> None:
        super().__init__(config or TinyImageConfig())
        self.backbone = TinyBackbone(self.config)

    def generate(self, noise: torch.Tensor, cond: TextCond | None = None) -> torch.Tensor:
        t = torch.full((noise.shape[0],), self.timestep, device=noise.device, dtype=noise.dtype)
        return torch.tanh(self.backbone(noise, t, self._cond(cond, noise.shape[0])))


@register_generator("tiny_flow")
class TinyFlowGenerator(_TinyImageMixin, FlowMatchingGenerator):
    """Few-step flow-matching generator; velocity from the tiny backbone at timestep ``t·1000``; samples clamped to [-1, 1]."""

    kind: ClassVar[str] = "few_step"
    config_class = TinyFlowConfig

    def __init__(self, config: TinyFlowConfig | None = None) -> None:
        super().__init__(config or TinyFlowConfig())
        self.backbone = TinyBackbone(self.config)

    def generate(self, noise: torch.Tensor, cond: TextCond | None = None, num_steps: int | None = None) -> torch.Tensor:
        return super().generate(noise, self._cond(cond, noise.shape[0]), num_steps)

    def velocity(self, x: torch.Tensor, t: torch.Tensor, cond: Any = None) -> torch.Tensor:
        return self.backbone(x, t * 1000.0, self._cond(cond, x.shape[0]))

    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        return latents.clamp(-1.0, 1.0)
