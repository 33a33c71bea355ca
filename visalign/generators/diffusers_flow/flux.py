"""FLUX.1 (``FluxPipeline``, ``FluxTransformer2DModel``): CLIP pooled + T5 sequence embeddings, 2×2-packed latent
tokens with positional image ids, the guidance-distilled ``guidance`` embedding, timestep ``t`` (the transformer
scales it), resolution-dependent timestep shift. Noise and latents stay unpacked ``C×H/8×W/8``; packing happens at
the denoiser call."""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ...core.config import check, option
from ...core.generator import register_generator
from .base import DiffusersFlowConfig, DiffusersFlowModel, Embeds


@dataclass
class FluxFlowConfig(DiffusersFlowConfig):
    """:class:`DiffusersFlowConfig` plus FLUX's embedded (distilled) guidance."""

    embedded_guidance: float = option(3.5, "guidance value fed to a guidance-distilled FLUX.1 [dev] transformer "
                                           "(ignored by models without guidance_embeds)")

    def __post_init__(self) -> None:
        super().__post_init__()
        check(self.embedded_guidance >= 0, f"embedded_guidance must be >= 0, got {self.embedded_guidance}")


@register_generator("diffusers_flux")
class FluxFlowModel(DiffusersFlowModel):
    """FLUX.1 stepped by visalign."""

    pipeline_class = "FluxPipeline"
    config_class = FluxFlowConfig
    default_max_sequence_length = 512
    timestep_scale = 1.0

    @property
    def noise_shape(self) -> tuple[int, ...]:
        height, width = self._image_size()
        scale = self.pipeline.vae_scale_factor * 2
        return (self.denoiser.config.in_channels // 4, 2 * (height // scale), 2 * (width // scale))

    @property
    def image_seq_len(self) -> int:
        _, h, w = self.noise_shape
        return (h // 2) * (w // 2)

    def _encode_batch(self, prompts: list[str]) -> Embeds:
        embeds, pooled, _ = self.pipeline.encode_prompt(prompt=prompts, prompt_2=None, device=self.device,
                                                        max_sequence_length=self.max_sequence_length)
        return {"prompt_embeds": embeds, "pooled_prompt_embeds": pooled}

    def _schedule_kwargs(self, num_steps: int, scheduler_config) -> dict:
        import numpy as np

        return {"sigmas": np.linspace(1.0, 1 / num_steps, num_steps), **super()._schedule_kwargs(num_steps, scheduler_config)}

    def _denoise(self, denoiser: nn.Module, x: torch.Tensor, t: torch.Tensor, embeds: Embeds) -> torch.Tensor:
        from diffusers import FluxPipeline

        b, c, h, w = x.shape
        dtype = self.weight_dtype
        packed = FluxPipeline._pack_latents(x.to(dtype), b, c, h, w)
        img_ids = FluxPipeline._prepare_latent_image_ids(b, h // 2, w // 2, x.device, dtype)
        text = embeds["prompt_embeds"].to(dtype)
        txt_ids = torch.zeros(text.shape[1], 3, device=x.device, dtype=dtype)
        guidance = None
        if denoiser.config.guidance_embeds:
            guidance = torch.full((b,), self.config.embedded_guidance, device=x.device, dtype=torch.float32)
        out = denoiser(hidden_states=packed, timestep=t.to(dtype), guidance=guidance,
                       pooled_projections=embeds["pooled_prompt_embeds"].to(dtype), encoder_hidden_states=text,
                       txt_ids=txt_ids, img_ids=img_ids, return_dict=False)[0]
        scale = self.pipeline.vae_scale_factor
        return FluxPipeline._unpack_latents(out, h * scale, w * scale, scale)
