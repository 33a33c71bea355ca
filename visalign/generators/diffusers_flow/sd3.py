"""Stable Diffusion 3 / 3.5 (``StableDiffusion3Pipeline``, ``SD3Transformer2DModel``): CLIP-L/G + optional T5 text
embeddings, latents ``C×H/8×W/8``, timestep ``t·1000``, VAE latents shifted and scaled."""
from __future__ import annotations

import torch
from torch import nn

from ...core.generator import register_generator
from .base import DiffusersFlowModel, Embeds


@register_generator("diffusers_sd3")
class SD3FlowModel(DiffusersFlowModel):
    """SD3 / SD3.5 stepped by visalign (Euler flow ODE, Flow-GRPO SDE, flow matching, DRaFT-K)."""

    pipeline_class = "StableDiffusion3Pipeline"
    default_max_sequence_length = 256

    @property
    def noise_shape(self) -> tuple[int, ...]:
        height, width = self._image_size()
        scale = self.pipeline.vae_scale_factor
        return (self.denoiser.config.in_channels, height // scale, width // scale)

    @property
    def image_seq_len(self) -> int:
        _, h, w = self.noise_shape
        patch = self.denoiser.config.patch_size
        return (h // patch) * (w // patch)

    def _encode_batch(self, prompts: list[str]) -> Embeds:
        embeds, _, pooled, _ = self.pipeline.encode_prompt(
            prompt=prompts, prompt_2=None, prompt_3=None, device=self.device, do_classifier_free_guidance=False,
            max_sequence_length=self.max_sequence_length)
        return {"prompt_embeds": embeds, "pooled_prompt_embeds": pooled}

    def _denoise(self, denoiser: nn.Module, x: torch.Tensor, t: torch.Tensor, embeds: Embeds) -> torch.Tensor:
        dtype = self.weight_dtype
        return denoiser(hidden_states=x.to(dtype), timestep=(t * self.timestep_scale).to(dtype),
                        encoder_hidden_states=embeds["prompt_embeds"].to(dtype),
                        pooled_projections=embeds["pooled_prompt_embeds"].to(dtype), return_dict=False)[0]
