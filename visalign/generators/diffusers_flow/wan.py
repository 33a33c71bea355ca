"""Wan 2.x text-to-video (``WanPipeline``, ``WanTransformer3DModel``): UMT5 text embeddings, video latents
``C×T'×H/8×W/8`` (``T' = (T-1)/4 + 1``), timestep ``t·1000`` (per token for Wan 2.2 TI2V's ``expand_timesteps``),
decoded by ``AutoencoderKLWan`` to video ``B×3×T×H×W`` in [-1, 1]. The pipeline's UniPC scheduler is replaced by the
flow Euler scheduler with its ``flow_shift``. Wan 2.2 A14B's two experts (``transformer_2``) are not supported."""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ...core.config import check, option
from ...core.generator import register_generator
from .base import DiffusersFlowConfig, DiffusersFlowModel, Embeds


@dataclass
class WanFlowConfig(DiffusersFlowConfig):
    """:class:`DiffusersFlowConfig` plus the clip length."""

    num_frames: int = option(81, "frames per video; num_frames - 1 must be divisible by the VAE's temporal factor (4)")

    def __post_init__(self) -> None:
        super().__post_init__()
        check(self.num_frames >= 1, f"num_frames must be >= 1, got {self.num_frames}")


@register_generator("diffusers_wan")
class WanFlowModel(DiffusersFlowModel):
    """Wan 2.1 / 2.2 (single transformer) text-to-video stepped by visalign; samples are videos."""

    pipeline_class = "WanPipeline"
    config_class = WanFlowConfig
    default_max_sequence_length = 512
    default_size = (480, 832)

    def _check_pipeline(self) -> None:
        if self.pipeline.transformer_2 is not None:
            raise ValueError("Wan 2.2 with two experts (transformer_2, boundary_ratio) is not supported by diffusers_wan; "
                             "use a single-transformer Wan 2.1 / 2.2 TI2V-5B pipeline")
        factor = self.pipeline.vae_scale_factor_temporal
        if (self.config.num_frames - 1) % factor:
            raise ValueError(f"num_frames - 1 must be divisible by the VAE's temporal factor {factor}, got "
                             f"num_frames={self.config.num_frames}")

    @property
    def noise_shape(self) -> tuple[int, ...]:
        pipe = self.pipeline
        height = self.config.height or self.default_size[0]
        width = self.config.width or self.default_size[1]
        frames = (self.config.num_frames - 1) // pipe.vae_scale_factor_temporal + 1
        scale = pipe.vae_scale_factor_spatial
        return (self.denoiser.config.in_channels, frames, height // scale, width // scale)

    def _encode_batch(self, prompts: list[str]) -> Embeds:
        embeds, _ = self.pipeline.encode_prompt(prompts, do_classifier_free_guidance=False, device=self.device,
                                                max_sequence_length=self.max_sequence_length)
        return {"prompt_embeds": embeds}

    def _denoise(self, denoiser: nn.Module, x: torch.Tensor, t: torch.Tensor, embeds: Embeds) -> torch.Tensor:
        dtype = self.weight_dtype
        timestep = (t * self.timestep_scale).to(dtype)
        if self.pipeline.config.expand_timesteps:
            _, ph, pw = denoiser.config.patch_size
            tokens = x.shape[2] * (x.shape[3] // ph) * (x.shape[4] // pw)
            timestep = timestep[:, None].expand(-1, tokens)
        return denoiser(hidden_states=x.to(dtype), timestep=timestep, encoder_hidden_states=embeds["prompt_embeds"].to(dtype),
                        return_dict=False)[0]

    def _decode_latents(self, latents: torch.Tensor) -> torch.Tensor:
        config = self.vae.config
        shape = (1, config.z_dim, 1, 1, 1)
        mean = torch.tensor(config.latents_mean, device=latents.device).view(shape)
        std = torch.tensor(config.latents_std, device=latents.device).view(shape)
        video = self.vae.decode((latents * std + mean).to(self.weight_dtype), return_dict=False)[0]
        return video.float().clamp(-1, 1)
