"""Tiny prompt-conditioned image generators: a tiny diffusers backbone conditioned on a tiny CLIP text encoder.

Backbones: ``sd3`` (``SD3Transformer2DModel``, patch tokens; fastest) or ``unet`` (``UNet2DConditionModel`` on a 2×2
space-to-depth view of the image, cross-attention to the prompt tokens; slower per step, but its convolutions learn
flat shapes far sooner). Both run on CPU and need no downloaded files.
``tiny_one_step`` maps noise to an image in one pass (``tanh`` output in [-1, 1]), either directly (``image``) or as
the noise minus a velocity (``flow_residual``, so a student copied from a ``tiny_flow`` teacher starts at the
teacher's one-step Euler sample);
``tiny_flow`` is a few-step flow-matching model whose samples are clamped to [-1, 1].
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from ..core.config import check
from ..core.generator import Generator, register_generator
from ..core.flow import FlowModel
from .text_encoder import TinyTextEncoder

TextCond = tuple[torch.Tensor, torch.Tensor]
"""``(token_states [B, L, D], pooled [B, D])`` from :class:`TinyTextEncoder`."""


@dataclass
class TinyImageConfig:
    """Sizes of the tiny denoiser and its text encoder. ``patch_size``, ``layers`` and ``heads`` shape the ``sd3``
    backbone, ``unet_channels`` the ``unet`` one; ``head_dim`` is the attention head size of both."""

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
    backbone: Literal["sd3", "unet"] = "sd3"
    unet_channels: tuple[int, ...] = (32, 64, 64)

    def __post_init__(self) -> None:
        check(self.backbone in ("sd3", "unet"), f"backbone must be 'sd3' or 'unet', got {self.backbone!r}")
        self.unet_channels = tuple(int(c) for c in self.unet_channels)
        check(len(self.unet_channels) >= 2 and all(c > 0 and c % 16 == 0 for c in self.unet_channels),
              f"unet_channels must be >= 2 widths, each a multiple of 16 (group norm), got {self.unet_channels}")
        check(self.backbone != "unet" or self.image_size % (2 ** len(self.unet_channels)) == 0,
              f"unet backbone: image_size {self.image_size} must be divisible by 2**len(unet_channels)")
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


@dataclass
class TinyOneStepConfig(TinyImageConfig):
    """:class:`TinyImageConfig` plus the output parametrisation: ``image`` gives ``x = tanh(f(z))``, ``flow_residual``
    gives ``x = tanh(z - f(z))``, the flow convention ``x_0 = ε - v`` read at ``t = 1``."""

    parametrization: Literal["image", "flow_residual"] = "image"

    def __post_init__(self) -> None:
        super().__post_init__()
        check(self.parametrization in ("image", "flow_residual"),
              f"parametrization must be 'image' or 'flow_residual', got {self.parametrization!r}")


class TinyBackbone(nn.Module):
    """Text encoder + a diffusers denoiser (``SD3Transformer2DModel`` or ``UNet2DConditionModel``):
    ``(x, timestep in [0, 1000], cond) -> same shape as x``."""

    def __init__(self, config: TinyImageConfig) -> None:
        super().__init__()
        c = config
        self.kind = c.backbone
        self.text_encoder = TinyTextEncoder(c.text_hidden, c.text_layers, c.text_heads, c.vocab_buckets, c.max_length)
        if c.backbone == "unet":
            from diffusers import UNet2DConditionModel

            levels = len(c.unet_channels)
            self.unet = UNet2DConditionModel(
                sample_size=c.image_size // 2,
                in_channels=4 * c.channels,
                out_channels=4 * c.channels,
                block_out_channels=c.unet_channels,
                layers_per_block=1,
                down_block_types=("DownBlock2D",) + ("CrossAttnDownBlock2D",) * (levels - 1),
                up_block_types=("CrossAttnUpBlock2D",) * (levels - 1) + ("UpBlock2D",),
                cross_attention_dim=c.text_hidden,
                attention_head_dim=c.head_dim,
                norm_num_groups=16,
                class_embed_type="projection",
                projection_class_embeddings_input_dim=c.text_hidden,
            )
            return
        from diffusers import SD3Transformer2DModel

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

    @property
    def denoiser(self) -> nn.Module:
        return self.unet if self.kind == "unet" else self.transformer

    def encode(self, prompts: Sequence[str]) -> TextCond:
        return self.text_encoder(list(prompts))

    def forward(self, x: torch.Tensor, timestep: torch.Tensor, cond: TextCond) -> torch.Tensor:
        states, pooled = cond
        dtype = self.denoiser.dtype
        x, states, pooled, timestep = x.to(dtype), states.to(dtype), pooled.to(dtype), timestep.to(dtype)
        if self.kind == "unet":
            out = self.unet(F.pixel_unshuffle(x, 2), timestep, encoder_hidden_states=states, class_labels=pooled,
                            return_dict=False)[0]
            return F.pixel_shuffle(out, 2)
        return self.transformer(hidden_states=x, encoder_hidden_states=states, pooled_projections=pooled,
                                timestep=timestep, return_dict=False)[0]


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
    """One-step prompt-conditioned generator ``x = tanh(f(z, prompt))`` (or ``tanh(z - f)``, see
    :class:`TinyOneStepConfig`), images ``3×S×S`` in [-1, 1]."""

    kind: ClassVar[str] = "one_step"
    config_class = TinyOneStepConfig
    timestep: ClassVar[float] = 1000.0

    def __init__(self, config: TinyImageConfig | None = None) -> None:
        if config is not None and not isinstance(config, TinyOneStepConfig):
            config = TinyOneStepConfig(**vars(config))
        super().__init__(config or TinyOneStepConfig())
        self.backbone = TinyBackbone(self.config)

    def generate(self, noise: torch.Tensor, cond: TextCond | None = None) -> torch.Tensor:
        t = torch.full((noise.shape[0],), self.timestep, device=noise.device, dtype=noise.dtype)
        out = self.backbone(noise, t, self._cond(cond, noise.shape[0]))
        return torch.tanh(noise - out if self.config.parametrization == "flow_residual" else out)


class _PromptFlowMixin:
    """Euler sampling with the empty prompt standing in for ``cond=None``; pixel-space samples clamped to [-1, 1]."""

    def generate(self, noise: torch.Tensor, cond: TextCond | None = None, num_steps: int | None = None) -> Any:
        return super().generate(noise, self._cond(cond, noise.shape[0]), num_steps)

    def decode(self, latents: torch.Tensor) -> Any:
        return latents.clamp(-1.0, 1.0)


@register_generator("tiny_flow")
class TinyFlowGenerator(_TinyImageMixin, _PromptFlowMixin, FlowModel):
    """Few-step flow-matching generator; velocity from the tiny backbone at timestep ``t·1000``; samples clamped to [-1, 1]."""

    kind: ClassVar[str] = "few_step"
    config_class = TinyFlowConfig

    def __init__(self, config: TinyFlowConfig | None = None) -> None:
        super().__init__(config or TinyFlowConfig())
        self.backbone = TinyBackbone(self.config)

    def velocity(self, x: torch.Tensor, t: torch.Tensor, cond: Any = None) -> torch.Tensor:
        return self.backbone(x, t * 1000.0, self._cond(cond, x.shape[0]))
