"""LTX-2 joint audio-video (``LTX2Pipeline``, ``LTX2VideoTransformer3DModel``) as an :class:`AudioVideoFlowModel`.

One flow over a flat per-item latent ``[video | audio]``: the video part is the pipeline's normalised, patch-packed
video latent (``S_v × D_v`` tokens), the audio part its normalised, packed mel latent (``L × C·M``); both start from
unit Gaussian noise and share the timestep, as in the pipeline. Prompts go through Gemma-3 (every hidden layer
stacked) and the pipeline's text connectors, whose video / audio embeddings are cached per prompt. ``decode`` gives
``{"video": B×3×T×H×W, "audio": B×C×L (vocoder waveform), "sample_rate", "fps"}``, both clamped to [-1, 1].

Not carried over from the pipeline's sampler: spatio-temporal guidance (STG), modality-isolation guidance, guidance
rescale and a separate audio guidance scale (the adapter's ``guidance_scale`` is plain CFG on both parts), prompt
enhancement, the duration head (``num_frames`` is fixed) and decode-time noise (``timestep_conditioning`` VAEs)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from ...core.audio_video import AudioVideoFlowModel
from ...core.config import check, option
from ...core.generator import register_generator
from .base import DiffusersFlowConfig, DiffusersFlowModel, Embeds


@dataclass
class LTX2FlowConfig(DiffusersFlowConfig):
    """:class:`DiffusersFlowConfig` plus the clip length, frame rate and LTX-2.3's cross-modal timestep switch."""

    num_frames: int = option(121, "video frames; num_frames - 1 must be divisible by the VAE's temporal factor (8)")
    frame_rate: float = option(24.0, "frames per second (sets the audio length and the video positions)")
    use_cross_timestep: bool = option(True, "LTX-2.3: each modality's cross-attention sees the other's timestep")

    def __post_init__(self) -> None:
        super().__post_init__()
        check(self.num_frames >= 1, f"num_frames must be >= 1, got {self.num_frames}")
        check(self.frame_rate > 0, f"frame_rate must be > 0, got {self.frame_rate}")


@register_generator("diffusers_ltx2")
class LTX2AudioVideoFlowModel(DiffusersFlowModel, AudioVideoFlowModel):
    """LTX-2 text-to-audio-video stepped by visalign (see module docstring)."""

    pipeline_class = "LTX2Pipeline"
    config_class = LTX2FlowConfig
    default_max_sequence_length = 1024
    default_size = (512, 768)

    def _check_pipeline(self) -> None:
        factor = self.pipeline.vae_temporal_compression_ratio
        if (self.config.num_frames - 1) % factor:
            raise ValueError(f"num_frames - 1 must be divisible by the VAE's temporal factor {factor}, got "
                             f"num_frames={self.config.num_frames}")

    # ------------------------------------------------------------------ latent layout
    @property
    def video_grid(self) -> tuple[int, int, int]:
        """Latent (frames, height, width) of the video."""
        pipe = self.pipeline
        height = self.config.height or self.default_size[0]
        width = self.config.width or self.default_size[1]
        frames = (self.config.num_frames - 1) // pipe.vae_temporal_compression_ratio + 1
        return frames, height // pipe.vae_spatial_compression_ratio, width // pipe.vae_spatial_compression_ratio

    @property
    def video_tokens(self) -> tuple[int, int]:
        """Packed video latent (tokens, features per token)."""
        pipe = self.pipeline
        f, h, w = self.video_grid
        p, pt = pipe.transformer_spatial_patch_size, pipe.transformer_temporal_patch_size
        return (f // pt) * (h // p) * (w // p), self.denoiser.config.in_channels * pt * p * p

    @property
    def audio_frames(self) -> int:
        pipe = self.pipeline
        per_second = pipe.audio_sampling_rate / pipe.audio_hop_length / float(pipe.audio_vae_temporal_compression_ratio)
        return round(self.config.num_frames / self.config.frame_rate * per_second)

    @property
    def audio_mel_bins(self) -> int:
        return self.pipeline.audio_vae.config.mel_bins // self.pipeline.audio_vae_mel_compression_ratio

    @property
    def audio_tokens(self) -> tuple[int, int]:
        """Packed audio latent (latent frames, channels × latent mel bins)."""
        return self.audio_frames, self.pipeline.audio_vae.config.latent_channels * self.audio_mel_bins

    def latent_slices(self) -> dict[str, slice]:
        video = int(np.prod(self.video_tokens))
        return {"video": slice(0, video), "audio": slice(video, video + int(np.prod(self.audio_tokens)))}

    @property
    def noise_shape(self) -> tuple[int, ...]:
        return (self.latent_slices()["audio"].stop,)

    @property
    def image_seq_len(self) -> int:
        return self.video_tokens[0]

    def tower_patterns(self) -> dict[str, list[str]]:
        """Audio: every ``audio_*`` module except ``audio_to_video_attn`` (video queries audio: video's tower), plus
        ``video_to_audio_attn`` and the audio cross-attention modulation. Video: the unprefixed blocks."""
        return {
            "audio": [r"(^|\.)audio_(?!to_video_attn)", r"(^|\.)video_to_audio_attn\.", r"(^|\.)av_cross_attn_audio_"],
            "video": [r"(^|\.)(proj_in|proj_out|caption_projection|time_embed|attn1|attn2|ff|norm1|norm2|norm3)\.",
                      r"(^|\.)scale_shift_table$", r"(^|\.)audio_to_video_attn\.", r"(^|\.)av_cross_attn_video_",
                      r"(^|\.)video_a2v_cross_attn_scale_shift_table$"],
        }

    def _split(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        parts = self.split_latents(x)
        return parts["video"].reshape(x.shape[0], *self.video_tokens), parts["audio"].reshape(x.shape[0], *self.audio_tokens)

    # ------------------------------------------------------------------ FlowModel hooks
    def _encode_batch(self, prompts: list[str]) -> Embeds:
        pipe = self.pipeline
        embeds, mask, _, _ = pipe.encode_prompt(prompts, do_classifier_free_guidance=False, device=self.device,
                                                max_sequence_length=self.max_sequence_length)
        video, audio, connector_mask = pipe.connectors(embeds, mask, padding_side=pipe.tokenizer.padding_side)
        return {"video": video, "audio": audio, "mask": connector_mask}

    def _schedule_kwargs(self, num_steps: int, scheduler_config: Any) -> dict[str, Any]:
        from diffusers.pipelines.ltx2.pipeline_ltx2 import calculate_shift

        mu = calculate_shift(self.image_seq_len, scheduler_config.get("base_image_seq_len", 1024),
                             scheduler_config.get("max_image_seq_len", 4096), scheduler_config.get("base_shift", 0.95),
                             scheduler_config.get("max_shift", 2.05))
        return {"sigmas": np.linspace(1.0, 1 / num_steps, num_steps), "mu": mu}

    def _denoise(self, denoiser: nn.Module, x: torch.Tensor, t: torch.Tensor, embeds: Embeds) -> torch.Tensor:
        dtype = self.weight_dtype
        video, audio = self._split(x)
        batch = x.shape[0]
        frames, height, width = self.video_grid
        video_coords = denoiser.rope.prepare_video_coords(batch, frames, height, width, x.device, fps=self.config.frame_rate)
        audio_coords = denoiser.audio_rope.prepare_audio_coords(batch, self.audio_frames, x.device)
        timestep = (t * self.timestep_scale).to(dtype)
        v_video, v_audio = denoiser(
            hidden_states=video.to(dtype), audio_hidden_states=audio.to(dtype),
            encoder_hidden_states=embeds["video"].to(dtype), audio_encoder_hidden_states=embeds["audio"].to(dtype),
            timestep=timestep, sigma=timestep, encoder_attention_mask=embeds["mask"],
            audio_encoder_attention_mask=embeds["mask"], num_frames=frames, height=height, width=width,
            fps=self.config.frame_rate, audio_num_frames=self.audio_frames, video_coords=video_coords,
            audio_coords=audio_coords, isolate_modalities=False, spatio_temporal_guidance_blocks=None,
            perturbation_mask=None, use_cross_timestep=self.config.use_cross_timestep, return_dict=False)
        return torch.cat([v_video.flatten(1), v_audio.flatten(1)], dim=1)

    def _decode_latents(self, latents: torch.Tensor) -> dict[str, Any]:
        from diffusers import LTX2Pipeline

        pipe = self.pipeline
        video, audio = self._split(latents)
        frames, height, width = self.video_grid
        video = LTX2Pipeline._unpack_latents(video, frames, height, width, pipe.transformer_spatial_patch_size,
                                             pipe.transformer_temporal_patch_size)
        video = LTX2Pipeline._denormalize_latents(video, pipe.vae.latents_mean, pipe.vae.latents_std,
                                                  pipe.vae.config.scaling_factor)
        clip = pipe.vae.decode(video.to(self.weight_dtype), None, return_dict=False)[0]
        audio = LTX2Pipeline._denormalize_audio_latents(audio, pipe.audio_vae.latents_mean, pipe.audio_vae.latents_std)
        audio = LTX2Pipeline._unpack_audio_latents(audio, self.audio_frames, num_mel_bins=self.audio_mel_bins)
        mel = pipe.audio_vae.decode(audio.to(self.weight_dtype), return_dict=False)[0]
        wave = pipe.vocoder(mel)
        return {"video": clip.float().clamp(-1, 1), "audio": wave.float().clamp(-1, 1),
                "sample_rate": int(pipe.vocoder.config.output_sampling_rate), "fps": float(self.config.frame_rate)}
