"""A tiny prompt-conditioned audio-video flow generator with a video tower and an audio tower.

Latent of one item: ``[video C·T·H·W | audio L]`` flattened (the :class:`AudioVideoFlowModel` layout). The video
tower works on frame patches, the audio tower on chunks of ``audio_patch`` samples (``sample_rate / fps /
audio_patch`` tokens per frame); both are :class:`TokenTower` s of diffusers ``BasicTransformerBlock`` s, interleaved
layer by layer, and each block's cross-attention reads the prompt tokens *and* the other tower's current tokens —
so sound can follow what moves, and the cross-attention into a modality (with its projection of the other tower's
tokens) belongs to that modality's tower. Each tower places its tokens by its own learned position table;
``shared_time`` also gives both towers the same embedding of each token's time in seconds (as LTX-2 shares temporal
positions across its streams). Shared: the text encoder and the time/prompt embedding. Samples are the
audio-video dict ``{"video": B×C×T×H×W, "audio": B×1×L, "sample_rate", "fps"}``, clamped to [-1, 1].
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping, Sequence

import torch
from torch import nn

from ..core.audio_video import AudioVideoFlowModel
from ..core.config import ConfigError, check, option
from ..core.flow import PREDICTIONS, flow_error_weights, flow_noise, noise_latents, shift_times, velocity_from_sample
from ..core.generator import register_generator
from .text_encoder import TinyTextEncoder
from .tiny import _PromptFlowMixin
from .tiny_video import FrameConvs, TextCond, TimeTextEmbedding, TinyVideoFlowConfig, TokenTower, _TinyVideoMixin, tokens_to_video, video_to_tokens


@dataclass
class TinyAudioVideoConfig(TinyVideoFlowConfig):
    """:class:`TinyVideoFlowConfig` plus mono audio of ``frames / fps`` seconds at ``sample_rate``, tokenised in
    chunks of ``audio_patch`` samples."""

    sample_rate: int = option(2048, "audio samples per second (mono)")
    audio_patch: int = option(64, "audio samples per audio token")
    shared_time: bool = option(False, "add the same sinusoidal embedding of each token's start time (seconds) to "
                               "both towers' tokens, so audio and video of one moment share a position feature")
    cross_frames: int | None = option(None, "time-aligned cross-attention: each token sees only the other tower's "
                                      "tokens within this many video frames of its own (0: its frame); null: all")
    prediction: str = option("velocity", "what the network outputs: 'velocity' (ε − x₀) or 'sample' (x₀, JiT-style "
                             "x-prediction; the velocity is then (x_t − x̂₀) / max(t, 0.05))")

    def __post_init__(self) -> None:
        super().__post_init__()
        check(self.sample_rate >= 1 and self.audio_patch >= 1, "sample_rate and audio_patch must be >= 1")
        length = self.frames / self.fps * self.sample_rate
        check(abs(length - round(length)) < 1e-6, f"frames / fps * sample_rate = {length} must be a whole number of samples")
        check(self.prediction in PREDICTIONS, f"prediction must be one of {PREDICTIONS}, got {self.prediction!r}")
        check(self.cross_frames is None or self.cross_frames >= 0,
              f"cross_frames must be >= 0 (or null for full cross-attention), got {self.cross_frames}")
        check(round(length) % self.audio_patch == 0,
              f"audio length {round(length)} (frames / fps * sample_rate) must be divisible by audio_patch {self.audio_patch}")

    @property
    def audio_length(self) -> int:
        return round(self.frames / self.fps * self.sample_rate)

    @property
    def video_size(self) -> int:
        c, t, h, w = self.video_shape
        return c * t * h * w


def time_embedding(times: torch.Tensor, width: int, longest: float, shortest: float) -> torch.Tensor:
    """``N×width`` sin / cos features of ``times`` (seconds) at ``width / 2`` periods spaced geometrically from
    ``2·longest`` (the clip: no wrap-around) down to ``2·shortest`` (one token apart: neighbours differ)."""
    periods = torch.logspace(math.log10(2 * longest), math.log10(2 * shortest), width // 2)
    angles = 2 * math.pi * times[:, None] / periods[None]
    features = torch.cat([angles.sin(), angles.cos()], dim=1)
    return torch.nn.functional.pad(features, (0, width - features.shape[1]))


class TinyAudioVideoBackbone(nn.Module):
    """Text encoder + time/prompt embedding (shared) + ``video_tower`` + ``audio_tower`` with cross-attention both ways."""

    def __init__(self, config: TinyAudioVideoConfig) -> None:
        super().__init__()
        c = config
        self.config = c
        self.text_encoder = TinyTextEncoder(c.text_hidden, c.text_layers, c.text_heads, c.vocab_buckets, c.max_length)
        self.embedding = TimeTextEmbedding(c.width, c.text_hidden)
        video_tokens = c.frames * (c.image_size // c.patch_size) ** 2
        adaptive = c.time_conditioning == "adaptive_norm"
        self.video_conv = FrameConvs(c.channels, c.conv_channels, c.width) if c.conv_channels else None
        self.video_tower = TokenTower((c.channels + c.conv_channels) * c.patch_size**2, video_tokens, c.width, c.layers, c.heads,
                                      c.text_hidden, other_width=c.width, adaptive=adaptive,
                                      out_dim=c.channels * c.patch_size**2)
        self.audio_tower = TokenTower(c.audio_patch, c.audio_length // c.audio_patch, c.width, c.layers, c.heads,
                                      c.text_hidden, other_width=c.width, adaptive=adaptive)
        if c.shared_time:
            duration = c.frames / c.fps
            for name, times in zip(("video_time", "audio_time"), self.token_times()):
                self.register_buffer(name, time_embedding(times, c.width, duration, c.audio_patch / c.sample_rate),
                                     persistent=False)
        if c.cross_frames is not None:
            video_frame, audio_frame = (torch.floor(times * c.fps + 1e-6) for times in self.token_times())
            near = (video_frame[:, None] - audio_frame[None]).abs() <= c.cross_frames
            bias = torch.zeros(near.shape).masked_fill(~near, float("-inf"))
            self.register_buffer("video_cross_bias", bias, persistent=False)
            self.register_buffer("audio_cross_bias", bias.T.contiguous(), persistent=False)

    def encode(self, prompts: Sequence[str]) -> TextCond:
        return self.text_encoder(list(prompts))

    def cross_biases(self) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """The video tower's and the audio tower's cross-attention bias over the other tower's tokens (None: all seen)."""
        if self.config.cross_frames is None:
            return None, None
        return self.video_cross_bias, self.audio_cross_bias

    def token_times(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Start time in seconds of each video token (its frame, frame-major) and of each audio token (its chunk)."""
        c = self.config
        per_frame = (c.image_size // c.patch_size) ** 2
        video = (torch.arange(c.frames) / c.fps).repeat_interleave(per_frame)
        audio = torch.arange(c.audio_length // c.audio_patch) * (c.audio_patch / c.sample_rate)
        return video, audio

    def forward(self, x: torch.Tensor, t: torch.Tensor, cond: TextCond, audio_t: torch.Tensor | None = None) -> torch.Tensor:
        """Velocity for flat latents ``[B, D_video + D_audio]`` at noise level ``t``, or with the audio part at its
        own level ``audio_t`` (each tower's blocks get its own modality's time embedding)."""
        c = self.config
        states, pooled = cond
        emb = self.embedding(t, pooled)
        audio_emb = emb if audio_t is None else self.embedding(audio_t, pooled)
        video, audio = x[:, : c.video_size], x[:, c.video_size:]
        video = video.reshape(-1, *c.video_shape)
        features = video if self.video_conv is None else self.video_conv.stem(video.to(emb.dtype))
        hv = self.video_tower.embed(video_to_tokens(features, c.patch_size))
        ha = self.audio_tower.embed(audio.reshape(x.shape[0], -1, c.audio_patch))
        if c.shared_time:
            hv, ha = hv + self.video_time.to(hv.dtype), ha + self.audio_time.to(ha.dtype)
        video_bias, audio_bias = self.cross_biases()
        for i in range(c.layers):
            hv, ha = (self.video_tower.block(i, hv, emb, states, ha, video_bias),
                      self.audio_tower.block(i, ha, audio_emb, states, hv, audio_bias))
        out_v = tokens_to_video(self.video_tower.out(hv, emb), c.video_shape, c.patch_size)
        if self.video_conv is not None:
            out_v = self.video_conv.head(out_v, features, emb)
        out_v = out_v.flatten(1)
        out_a = self.audio_tower.out(ha, audio_emb).flatten(1)
        return torch.cat([out_v, out_a], dim=1).to(x.dtype)


@register_generator("tiny_av_flow")
class TinyAudioVideoFlowGenerator(_TinyVideoMixin, _PromptFlowMixin, AudioVideoFlowModel):
    """Few-step flow-matching audio-video generator on the flat ``[video | audio]`` latent (see module docstring)."""

    kind: ClassVar[str] = "few_step"
    config_class = TinyAudioVideoConfig

    def __init__(self, config: TinyAudioVideoConfig | None = None) -> None:
        super().__init__(config or TinyAudioVideoConfig())
        check(not self.config.uses_lora, "generator.lora_rank: tiny_av_flow has no LoRA support yet (its reference "
              "must stay an audio-video model); use lora_rank: 0")
        self.backbone = TinyAudioVideoBackbone(self.config)

    @property
    def noise_shape(self) -> tuple[int, ...]:
        return (self.config.video_size + self.config.audio_length,)

    def add_lora(self, rank: int, alpha: float | None = None, targets: Sequence[str] | None = None) -> None:
        raise ConfigError("generator.lora_rank: tiny_av_flow has no LoRA support yet (its reference must stay an "
                          "audio-video model); train it fully")

    def latent_slices(self) -> dict[str, slice]:
        v = self.config.video_size
        return {"video": slice(0, v), "audio": slice(v, v + self.config.audio_length)}

    def tower_patterns(self) -> dict[str, list[str]]:
        return {"video": [r"^backbone\.video_(tower|conv)\."], "audio": [r"^backbone\.audio_tower\."]}

    def velocity(self, x: torch.Tensor, t: torch.Tensor, cond: Any = None) -> torch.Tensor:
        return self._as_velocity(x, self.backbone(x, t, self._cond(cond, x.shape[0])), t, t)

    def _as_velocity(self, x: torch.Tensor, out: torch.Tensor, video_t: torch.Tensor, audio_t: torch.Tensor) -> torch.Tensor:
        """The network's output as a velocity: itself, or from its clean-sample estimate (``prediction: sample``),
        each modality at its own noise level."""
        if self.config.prediction == "velocity":
            return out
        return velocity_from_sample(x, out, self.latent_levels({"video": video_t, "audio": audio_t}))

    def modality_velocity(self, x: torch.Tensor, times: Mapping[str, torch.Tensor], cond: Any = None) -> torch.Tensor:
        """Velocity when the video part is at noise level ``times["video"]`` and the audio part at ``times["audio"]``
        (each ``[B]``); equal times give :meth:`velocity`."""
        if set(times) != {"video", "audio"}:
            raise ValueError(f"modality_velocity needs times for 'video' and 'audio', got {sorted(times)}")
        out = self.backbone(x, times["video"], self._cond(cond, x.shape[0]), audio_t=times["audio"])
        return self._as_velocity(x, out, times["video"], times["audio"])

    def decoupled_flow_matching_loss(self, x0: torch.Tensor, cond: Any = None, generator: torch.Generator | None = None,
                                     fraction: float = 0.5, time_shift: float = 1.0,
                                     noise: torch.Tensor | None = None, loss_space: str = "velocity") -> torch.Tensor:
        """Flow matching where a ``fraction`` of the items draw the audio's noise level independently of the video's
        (UniDiffuser-style): an item with clean video and noisy audio (or the reverse) is only denoised well by
        reading the other tower, which is what ties the sound's timing to the motion. ``fraction = 0`` is
        :meth:`flow_matching_loss` (same draws); ``time_shift``, ``noise`` and ``loss_space`` as there (with
        ``"sample"`` each modality's error is weighted by its own level squared)."""
        check(0.0 <= fraction <= 1.0, f"fraction of decoupled noise levels must be in [0, 1], got {fraction}")
        if fraction == 0.0:
            return self.flow_matching_loss(x0, cond, generator, time_shift=time_shift, noise=noise,
                                           loss_space=loss_space)
        eps = flow_noise(x0, noise, generator)
        t = shift_times(torch.rand((x0.shape[0],), generator=generator), time_shift).to(x0.device, x0.dtype)
        own = shift_times(torch.rand((x0.shape[0],), generator=generator), time_shift).to(x0.device, x0.dtype)
        decoupled = torch.rand((x0.shape[0],), generator=generator).to(x0.device) < fraction
        times = {"video": t, "audio": torch.where(decoupled, own, t)}
        eps_parts = self.split_latents(eps)
        per_part = {m: noise_latents(part, times[m], eps_parts[m]) for m, part in self.split_latents(x0).items()}
        prediction = self.modality_velocity(self.join_latents(per_part), times, cond)
        weights = flow_error_weights(self.latent_levels(times), loss_space)
        return ((prediction - (eps - x0)).float().pow(2) * weights).mean()

    def encode_samples(self, samples: dict) -> torch.Tensor:
        """Audio-video dict -> flat latents (pretraining targets); shapes are checked against the config."""
        c = self.config
        video, audio = samples["video"], samples["audio"]
        if tuple(video.shape[1:]) != c.video_shape or tuple(audio.shape[1:]) != (1, c.audio_length):
            raise ValueError(f"tiny_av_flow expects video B×{'×'.join(map(str, c.video_shape))} and audio "
                             f"B×1×{c.audio_length}, got {tuple(video.shape)} and {tuple(audio.shape)}")
        return torch.cat([video.flatten(1), audio.flatten(1)], dim=1)

    def decode(self, latents: torch.Tensor) -> dict:
        c = self.config
        parts = self.split_latents(latents.clamp(-1.0, 1.0))
        return {"video": parts["video"].reshape(-1, *c.video_shape), "audio": parts["audio"].reshape(-1, 1, c.audio_length),
                "sample_rate": c.sample_rate, "fps": c.fps}


__all__ = ["TinyAudioVideoConfig", "TinyAudioVideoBackbone", "TinyAudioVideoFlowGenerator"]
