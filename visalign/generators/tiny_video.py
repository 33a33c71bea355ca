"""Tiny prompt-conditioned video generators (``B×C×T×H×W`` in [-1, 1]) built from diffusers blocks.

The denoiser is a token transformer: each frame is cut into ``patch_size``² patches (one token each, a learned
position per token over time and space), the diffusion time (diffusers ``Timesteps`` + ``TimestepEmbedding``) and the
pooled prompt are added to every token before every block, and each block is a diffusers ``BasicTransformerBlock``
(self-attention over all tokens of the clip, cross-attention to the prompt tokens of :class:`TinyTextEncoder`,
feed-forward). :class:`TokenTower` is also one tower of the audio-video model (``tiny_av.py``), where a second
context (the other modality's tokens) joins the prompt in the cross-attention.

``tiny_video_one_step`` maps noise to a clip in one pass (``tanh``, or ``tanh(z - f(z))`` as for images);
``tiny_video_flow`` is a few-step :class:`FlowModel` in pixel space (samples clamped to [-1, 1]).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal, Sequence

import torch
from torch import nn

from ..core.config import check, option
from ..core.flow import FlowModel
from ..core.generator import Generator, register_generator
from .text_encoder import TinyTextEncoder
from .lora import LoraOptions
from .tiny import TinyFlowReference, TinyOneStepReference, _PromptFlowMixin, _TinyImageMixin

TextCond = tuple[torch.Tensor, torch.Tensor]


@dataclass
class TinyVideoConfig(LoraOptions):
    """Clip shape (``channels``×``frames``×``image_size``²), patching, transformer and text-encoder sizes;
    ``lora_rank > 0`` trains only a LoRA adapter on the video tower (:class:`LoraOptions`)."""

    image_size: int = option(16, "frame height and width in pixels")
    frames: int = option(8, "frames per clip")
    channels: int = option(3, "colour channels")
    fps: float = option(8.0, "frames per second of the clip (sets the audio length too)")
    patch_size: int = option(4, "spatial patch size of the video tokens")
    width: int = option(64, "transformer width")
    layers: int = option(3, "transformer blocks")
    heads: int = option(4, "attention heads")
    text_hidden: int = option(32, "width of the tiny text encoder")
    text_layers: int = option(2, "text-encoder layers")
    text_heads: int = option(2, "text-encoder attention heads")
    vocab_buckets: int = option(256, "hashing-tokenizer vocabulary size")
    max_length: int = option(16, "prompt tokens kept")
    time_conditioning: Literal["add", "adaptive_norm"] = option(
        "add", "how each block reads the time/prompt vector: add it to every token (add) or scale and shift each "
        "block's norms by it (adaptive_norm, DiT-style adaptive LayerNorm)")
    conv_channels: int = option(0, "channels of per-frame 3x3 convolutions around the video tokens (a stem before "
                                "patching, a head after it with a full-resolution skip, U-ViT-style); 0: none")

    def __post_init__(self) -> None:
        super().__post_init__()
        check(self.image_size >= 1 and self.frames >= 1 and self.channels >= 1,
              "image_size, frames and channels must be >= 1")
        check(self.fps > 0, f"fps must be > 0, got {self.fps}")
        check(self.patch_size >= 1 and self.image_size % self.patch_size == 0,
              f"image_size {self.image_size} must be divisible by patch_size {self.patch_size}")
        check(self.layers >= 1 and self.heads >= 1, "layers and heads must be >= 1")
        check(self.width % self.heads == 0, f"width {self.width} must be divisible by heads {self.heads}")
        check(self.text_hidden % self.text_heads == 0, f"text_hidden {self.text_hidden} must be divisible by text_heads {self.text_heads}")
        check(self.vocab_buckets > 3, f"vocab_buckets must be > 3, got {self.vocab_buckets}")
        check(self.max_length >= 2, f"max_length must be >= 2, got {self.max_length}")
        check(self.conv_channels >= 0, f"conv_channels must be >= 0 (0: no convolutions), got {self.conv_channels}")

    @property
    def video_shape(self) -> tuple[int, int, int, int]:
        return (self.channels, self.frames, self.image_size, self.image_size)


@dataclass
class TinyVideoFlowConfig(TinyVideoConfig):
    """:class:`TinyVideoConfig` plus the Euler sampler's step count and timestep shift."""

    num_steps: int = option(4, "Euler sampling steps")
    shift: float = option(1.0, "timestep shift of the flow schedule (1 = uniform)")

    def __post_init__(self) -> None:
        super().__post_init__()
        check(self.num_steps >= 1, f"num_steps must be >= 1, got {self.num_steps}")
        check(self.shift > 0, f"shift must be > 0, got {self.shift}")


@dataclass
class TinyVideoOneStepConfig(TinyVideoConfig):
    """:class:`TinyVideoConfig` plus the output parametrisation (``video``: ``tanh(f(z))``; ``flow_residual``:
    ``tanh(z - f(z))``, so a student copied from a flow teacher starts at its one-step Euler sample)."""

    parametrization: Literal["video", "flow_residual"] = option("video", "video: tanh(f(z)); flow_residual: tanh(z - f(z)) (a student copied from a flow teacher)")

    def __post_init__(self) -> None:
        super().__post_init__()
        check(self.parametrization in ("video", "flow_residual"),
              f"parametrization must be 'video' or 'flow_residual', got {self.parametrization!r}")


def video_to_tokens(x: torch.Tensor, patch: int) -> torch.Tensor:
    """``B×C×T×H×W`` -> ``B×(T·H/p·W/p)×(C·p²)`` (frame-major)."""
    b, c, t, h, w = x.shape
    x = x.reshape(b, c, t, h // patch, patch, w // patch, patch)
    return x.permute(0, 2, 3, 5, 1, 4, 6).reshape(b, t * (h // patch) * (w // patch), c * patch * patch)


def tokens_to_video(tokens: torch.Tensor, shape: Sequence[int], patch: int) -> torch.Tensor:
    """Inverse of :func:`video_to_tokens` for one item shape ``(C, T, H, W)``."""
    c, t, h, w = shape
    b = tokens.shape[0]
    x = tokens.reshape(b, t, h // patch, w // patch, c, patch, patch)
    return x.permute(0, 4, 1, 2, 5, 3, 6).reshape(b, c, t, h, w)


def per_frame(conv: nn.Module, video: torch.Tensor) -> torch.Tensor:
    """``conv`` (a 2-D module) applied to every frame of ``B×C×T×H×W``."""
    b, c, t, h, w = video.shape
    out = conv(video.transpose(1, 2).reshape(b * t, c, h, w))
    return out.reshape(b, t, -1, h, w).transpose(1, 2)


class FrameConvs(nn.Module):
    """Per-frame 3×3 convolutions around a video token tower (U-ViT-style). :meth:`stem` appends ``hidden`` feature
    maps to the pixels, and the tower patches both into tokens; :meth:`head` refines the tower's unpatched output from
    it, the stem's full-resolution features and the time/prompt vector (a per-channel shift). Patch tokens alone
    learn speckle at this size; the convolutions draw solid shapes. The head's last layer starts at zero, so a new
    head leaves the tower's output as it is (and a tower whose token projection reads only the pixel channels is
    the tower without convolutions)."""

    def __init__(self, channels: int, hidden: int, width: int) -> None:
        super().__init__()
        self.stem_layers = nn.Sequential(nn.Conv2d(channels, hidden, 3, padding=1), nn.SiLU(),
                                         nn.Conv2d(hidden, hidden, 3, padding=1))
        self.head_in = nn.Conv2d(2 * channels + hidden, hidden, 3, padding=1)
        self.time_shift = nn.Linear(width, hidden)
        self.head_out = nn.Conv2d(hidden, channels, 3, padding=1)
        nn.init.zeros_(self.head_out.weight)
        nn.init.zeros_(self.head_out.bias)

    def stem(self, video: torch.Tensor) -> torch.Tensor:
        """``B×C×T×H×W`` -> ``B×(C + hidden)×T×H×W``: the pixels, then the feature maps."""
        return torch.cat([video, per_frame(self.stem_layers, video)], dim=1)

    def head(self, video: torch.Tensor, stem: torch.Tensor, emb: torch.Tensor) -> torch.Tensor:
        h = per_frame(self.head_in, torch.cat([video, stem], dim=1))
        h = nn.functional.silu(h + self.time_shift(emb)[:, :, None, None, None])
        return video + per_frame(self.head_out, h)


class TimeTextEmbedding(nn.Module):
    """Diffusion time (``t`` in [0, 1], embedded at ``1000·t``) plus the pooled prompt, as one ``[B, width]`` vector."""

    def __init__(self, width: int, text_hidden: int) -> None:
        super().__init__()
        from diffusers.models.embeddings import TimestepEmbedding, Timesteps

        self.time_proj = Timesteps(width, flip_sin_to_cos=True, downscale_freq_shift=0)
        self.time_embed = TimestepEmbedding(width, width)
        self.text_embed = nn.Linear(text_hidden, width)

    def forward(self, t: torch.Tensor, pooled: torch.Tensor) -> torch.Tensor:
        dtype = self.text_embed.weight.dtype
        return self.time_embed(self.time_proj(t * 1000.0).to(dtype)) + self.text_embed(pooled.to(dtype))


class TokenTower(nn.Module):
    """Tokens of one modality through diffusers ``BasicTransformerBlock`` s; the cross-attention context is the
    prompt tokens, plus (``other_width``) another tower's tokens projected into this width. Output tokens have
    ``out_dim`` features (default ``token_dim``). The time/prompt vector is added to every token before each block,
    or (``adaptive``) scales and shifts every norm of the blocks and the output norm (diffusers
    ``AdaLayerNormContinuous``)."""

    def __init__(self, token_dim: int, num_tokens: int, width: int, layers: int, heads: int, text_hidden: int,
                 other_width: int | None = None, adaptive: bool = False, out_dim: int | None = None) -> None:
        super().__init__()
        from diffusers.models.attention import BasicTransformerBlock
        from diffusers.models.normalization import AdaLayerNormContinuous

        self.adaptive = adaptive
        self.proj_in = nn.Linear(token_dim, width)
        self.pos = nn.Parameter(torch.randn(1, num_tokens, width) * 0.02)
        self.text_proj = nn.Linear(text_hidden, width)
        self.other_proj = nn.Linear(other_width, width) if other_width else None
        norm = dict(norm_type="ada_norm_continuous", ada_norm_continous_conditioning_embedding_dim=width) if adaptive else {}
        self.blocks = nn.ModuleList(
            BasicTransformerBlock(width, heads, width // heads, cross_attention_dim=width, **norm) for _ in range(layers))
        self.norm_out = (AdaLayerNormContinuous(width, width, elementwise_affine=False, eps=1e-6) if adaptive
                         else nn.LayerNorm(width))
        self.proj_out = nn.Linear(width, out_dim or token_dim)

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.proj_in(tokens.to(self.proj_in.weight.dtype)) + self.pos

    def block(self, i: int, h: torch.Tensor, emb: torch.Tensor, text_states: torch.Tensor,
              other: torch.Tensor | None = None, other_bias: torch.Tensor | None = None) -> torch.Tensor:
        """Block ``i`` on hidden tokens ``h`` with the time/prompt vector ``emb`` added to every token;
        ``other_bias`` (``[tokens of h, tokens of other]``, 0 or -inf) limits which of the other tower's tokens each
        token's cross-attention sees (the prompt tokens stay visible to all)."""
        context = self.text_proj(text_states.to(h.dtype))
        mask = None
        if self.other_proj is not None and other is not None:
            if other_bias is not None:
                visible_text = other_bias.new_zeros(other_bias.shape[0], context.shape[1])
                mask = torch.cat([visible_text, other_bias], dim=1).to(h.dtype).expand(h.shape[0], -1, -1)
            context = torch.cat([context, self.other_proj(other)], dim=1)
        if self.adaptive:
            return self.blocks[i](h, encoder_hidden_states=context, encoder_attention_mask=mask,
                                  added_cond_kwargs={"pooled_text_emb": emb})
        return self.blocks[i](h + emb.unsqueeze(1), encoder_hidden_states=context, encoder_attention_mask=mask)

    def out(self, h: torch.Tensor, emb: torch.Tensor) -> torch.Tensor:
        """Output tokens; ``emb`` (the time/prompt vector) conditions the output norm of an ``adaptive`` tower."""
        return self.proj_out(self.norm_out(h, emb) if self.adaptive else self.norm_out(h))


class TinyVideoBackbone(nn.Module):
    """Text encoder + time embedding + one video :class:`TokenTower`: ``(x, t in [0, 1], cond) -> same shape as x``."""

    def __init__(self, config: TinyVideoConfig) -> None:
        super().__init__()
        c = config
        self.config = c
        self.text_encoder = TinyTextEncoder(c.text_hidden, c.text_layers, c.text_heads, c.vocab_buckets, c.max_length)
        self.embedding = TimeTextEmbedding(c.width, c.text_hidden)
        tokens = c.frames * (c.image_size // c.patch_size) ** 2
        self.video_conv = FrameConvs(c.channels, c.conv_channels, c.width) if c.conv_channels else None
        self.video_tower = TokenTower((c.channels + c.conv_channels) * c.patch_size**2, tokens, c.width, c.layers,
                                      c.heads, c.text_hidden, adaptive=c.time_conditioning == "adaptive_norm",
                                      out_dim=c.channels * c.patch_size**2)

    def encode(self, prompts: Sequence[str]) -> TextCond:
        return self.text_encoder(list(prompts))

    def forward(self, x: torch.Tensor, t: torch.Tensor, cond: TextCond) -> torch.Tensor:
        states, pooled = cond
        tower, c = self.video_tower, self.config
        emb = self.embedding(t, pooled)
        features = x if self.video_conv is None else self.video_conv.stem(x.to(emb.dtype))
        h = tower.embed(video_to_tokens(features, c.patch_size))
        for i in range(c.layers):
            h = tower.block(i, h, emb, states)
        out = tokens_to_video(tower.out(h, emb), c.video_shape, c.patch_size)
        if self.video_conv is not None:
            out = self.video_conv.head(out, features, emb)
        return out.to(x.dtype)


class _TinyVideoMixin(_TinyImageMixin):
    """Prompt encoding as for images (``None`` prompts mean the empty prompt); noise shaped like one clip."""

    config: TinyVideoConfig

    @property
    def noise_shape(self) -> tuple[int, ...]:
        return self.config.video_shape

    def lora_module(self) -> nn.Module:
        """The video tower carries the LoRA adapter (text encoder and time embedding stay frozen)."""
        return self.backbone.video_tower


@register_generator("tiny_video_one_step")
class TinyVideoOneStepGenerator(_TinyVideoMixin, Generator):
    """One-step prompt-conditioned video generator ``x = tanh(f(z, prompt))`` (or ``tanh(z - f)``), clips
    ``C×T×S×S`` in [-1, 1]."""

    kind: ClassVar[str] = "one_step"
    config_class = TinyVideoOneStepConfig

    def __init__(self, config: TinyVideoConfig | None = None) -> None:
        if config is not None and not isinstance(config, TinyVideoOneStepConfig):
            config = TinyVideoOneStepConfig(**{k: v for k, v in vars(config).items() if k in TinyVideoConfig.__dataclass_fields__})
        super().__init__(config or TinyVideoOneStepConfig())
        self.backbone = TinyVideoBackbone(self.config)
        self._init_lora()

    def generate(self, noise: torch.Tensor, cond: TextCond | None = None) -> torch.Tensor:
        t = torch.ones(noise.shape[0], device=noise.device, dtype=noise.dtype)
        out = self.backbone(noise, t, self._cond(cond, noise.shape[0]))
        return torch.tanh(noise - out if self.config.parametrization == "flow_residual" else out)


@register_generator("tiny_video_flow")
class TinyVideoFlowGenerator(_TinyVideoMixin, _PromptFlowMixin, FlowModel):
    """Few-step flow-matching video generator in pixel space; samples clamped to [-1, 1]."""

    kind: ClassVar[str] = "few_step"
    config_class = TinyVideoFlowConfig

    def __init__(self, config: TinyVideoFlowConfig | None = None) -> None:
        super().__init__(config or TinyVideoFlowConfig())
        self.backbone = TinyVideoBackbone(self.config)
        self._init_lora()

    def velocity(self, x: torch.Tensor, t: torch.Tensor, cond: Any = None) -> torch.Tensor:
        return self.backbone(x, t, self._cond(cond, x.shape[0]))


TinyVideoOneStepGenerator.reference_class = TinyOneStepReference
TinyVideoFlowGenerator.reference_class = TinyFlowReference

PROJ_IN = "backbone.video_tower.proj_in.weight"


def add_frame_convs(model: Generator, channels: int) -> Generator:
    """``model`` (a tiny video or audio-video generator without convolutions) with :class:`FrameConvs` of
    ``channels`` added, to continue training a checkpoint under them. Every weight is copied; the video tokens'
    projection reads the pixel channels as before and the new feature channels through zero weights, and the
    head starts at zero, so the grown model computes exactly what ``model`` does until it is trained."""
    check(model.config.conv_channels == 0, f"the model already has conv_channels {model.config.conv_channels}")
    check(channels >= 1, f"channels must be >= 1, got {channels}")
    grown = type(model)(replace(model.config, conv_channels=channels))
    state = dict(model.state_dict())
    projection = torch.zeros_like(grown.state_dict()[PROJ_IN])
    projection[:, : state[PROJ_IN].shape[1]] = state[PROJ_IN]  # token features are channel-major: pixels first
    state[PROJ_IN] = projection
    missing, unexpected = grown.load_state_dict(state, strict=False)
    new = [k for k in missing if not k.startswith("backbone.video_conv.")]
    if new or unexpected:
        raise RuntimeError(f"growing {type(model).__name__}: unmatched weights {new + list(unexpected)}")
    return grown.to(model.device)

__all__ = ["TinyVideoConfig", "TinyVideoFlowConfig", "TinyVideoOneStepConfig", "TinyVideoBackbone", "TokenTower",
           "TimeTextEmbedding", "FrameConvs", "TinyVideoOneStepGenerator", "TinyVideoFlowGenerator", "video_to_tokens",
           "tokens_to_video", "add_frame_convs"]
