"""SANA (``SanaPipeline``) and SANA-Sprint (``SanaSprintPipeline``), both on ``SanaTransformer2DModel`` with Gemma-2
text embeddings (first token + last ``L-1`` tokens, with attention mask) and the DC-AE decoder.

SANA-Sprint is a TrigFlow / sCM consistency model: the pipeline keeps ``x_τ = cos τ·x_0 + sin τ·σ_d·z`` for
``τ ∈ [0, π/2]`` and feeds the transformer the flow-frame input ``x_s = x_τ / (σ_d (sin τ + cos τ))`` at flow time
``s = sin τ / (sin τ + cos τ)``; its ``x_0`` estimate ``cos τ·x_τ − sin τ·F`` equals ``x_s − s·v`` with ``v`` the
transformer output. So in the flow frame the transformer *is* a flow velocity, and the adapter runs it as a
:class:`FlowModel` on the SCM timesteps mapped to ``s`` (one step by default: exactly the pipeline's one-step
sample). With more steps the pipeline re-noises each ``x_0`` estimate with *fresh* noise; the shared Euler step
re-noises it with the *predicted* noise (the deterministic consistency sampler), so multi-step samples differ from
the pipeline's, and Flow-GRPO's SDE replaces the fresh re-noising by its own Gaussian step."""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ...core.config import check, option
from ...core.generator import register_generator
from .base import DiffusersFlowConfig, DiffusersFlowModel, Embeds


@dataclass
class SanaFlowConfig(DiffusersFlowConfig):
    """:class:`DiffusersFlowConfig` plus SANA's optional instruction prefix of prompts."""

    complex_human_instruction: list[str] | None = option(None, "lines prepended to every prompt before Gemma encodes it "
                                                               "(the pipelines' default instruction; null: none)")


@dataclass
class SanaSprintFlowConfig(SanaFlowConfig):
    """:class:`SanaFlowConfig` plus the SCM schedule and embedded guidance of SANA-Sprint."""

    num_steps: int = option(1, "sampling steps (SANA-Sprint is a one- to few-step model)")
    embedded_guidance: float = option(4.5, "guidance value fed to the transformer's guidance embedding")
    max_timesteps: float = option(1.57080, "first TrigFlow angle τ (π/2: pure noise)")
    intermediate_timesteps: float | None = option(1.3, "middle angle of a 2-step schedule (null: evenly spaced)")

    def __post_init__(self) -> None:
        super().__post_init__()
        check(0 < self.max_timesteps <= 1.5708, f"max_timesteps must be in (0, π/2], got {self.max_timesteps}")
        check(self.embedded_guidance >= 0, f"embedded_guidance must be >= 0, got {self.embedded_guidance}")


class _SanaBase(DiffusersFlowModel):
    default_max_sequence_length = 300

    @property
    def noise_shape(self) -> tuple[int, ...]:
        height, width = self._image_size()
        scale = self.pipeline.vae_scale_factor
        return (self.denoiser.config.in_channels, height // scale, width // scale)

    def _image_size(self) -> tuple[int, int]:
        default = self.denoiser.config.sample_size * self.pipeline.vae_scale_factor
        return self.config.height or default, self.config.width or default

    def _encode_batch(self, prompts: list[str]) -> Embeds:
        out = self.pipeline.encode_prompt(prompts, **self._encode_kwargs(), device=self.device,
                                          max_sequence_length=self.max_sequence_length,
                                          complex_human_instruction=self.config.complex_human_instruction)
        return {"prompt_embeds": out[0], "prompt_attention_mask": out[1]}

    def _encode_kwargs(self) -> dict:
        return {}

    def _transformer(self, denoiser: nn.Module, x: torch.Tensor, timestep: torch.Tensor, embeds: Embeds,
                     **extra) -> torch.Tensor:
        dtype = self.weight_dtype
        out = denoiser(x.to(dtype), encoder_hidden_states=embeds["prompt_embeds"].to(dtype),
                       encoder_attention_mask=embeds["prompt_attention_mask"], timestep=timestep, return_dict=False, **extra)[0]
        if denoiser.config.out_channels // 2 == x.shape[1]:  # learned sigma: keep the prediction half
            out = out.chunk(2, dim=1)[0]
        return out

    def _decode_latents(self, latents: torch.Tensor) -> torch.Tensor:
        scaled = latents / self.vae.config.scaling_factor
        return self.vae.decode(scaled.to(self.weight_dtype), return_dict=False)[0].float().clamp(-1, 1)


@register_generator("diffusers_sana")
class SanaFlowModel(_SanaBase):
    """SANA (flow matching) stepped by visalign; timestep ``t·1000·timestep_scale`` of the transformer config."""

    pipeline_class = "SanaPipeline"
    config_class = SanaFlowConfig

    def _encode_kwargs(self) -> dict:
        return {"do_classifier_free_guidance": False}

    def _denoise(self, denoiser: nn.Module, x: torch.Tensor, t: torch.Tensor, embeds: Embeds) -> torch.Tensor:
        timestep = t * self.timestep_scale * denoiser.config.timestep_scale
        return self._transformer(denoiser, x, timestep.to(self.weight_dtype), embeds)


@register_generator("diffusers_sana_sprint")
class SanaSprintFlowModel(_SanaBase):
    """SANA-Sprint (sCM / TrigFlow) run in the flow frame (see module docstring)."""

    pipeline_class = "SanaSprintPipeline"
    config_class = SanaSprintFlowConfig
    kind = "few_step"

    def _denoise(self, denoiser: nn.Module, x: torch.Tensor, t: torch.Tensor, embeds: Embeds) -> torch.Tensor:
        guidance = torch.full((x.shape[0],), self.config.embedded_guidance, device=x.device)
        guidance = (guidance * denoiser.config.guidance_embeds_scale).to(self.weight_dtype)
        return self._transformer(denoiser, x, t.to(self.weight_dtype), embeds, guidance=guidance)

    def _schedule(self, num_steps: int) -> torch.Tensor:
        """SCM angles τ (the pipeline's SCMScheduler) mapped to flow time ``s = sin τ/(sin τ + cos τ)``, clipped to
        [0, 1] (τ = 1.5708 gives s = 1 + 4e-6)."""
        from diffusers import SCMScheduler

        scheduler = SCMScheduler.from_config(self.pipeline.scheduler.config)
        middle = self.config.intermediate_timesteps if num_steps == 2 else None
        scheduler.set_timesteps(num_steps, max_timesteps=self.config.max_timesteps, intermediate_timesteps=middle)
        tau = scheduler.timesteps.double()
        return (torch.sin(tau) / (torch.sin(tau) + torch.cos(tau))).clamp(0.0, 1.0)
