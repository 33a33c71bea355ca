"""Audio-video flow-model protocol: one flow over a latent that packs a video part and an audio part.

The latent of one item is a flat vector ``[D_video + D_audio]`` (each part flattened from the model's own latent
layout), so every shared flow operation (ODE/SDE steps, log-probs, flow matching) applies unchanged, and methods
that treat the modalities apart (modality-anchored GRPO: lock one part to a cached reference, train the other's
tower) address the parts through :meth:`AudioVideoFlowModel.latent_slices` and the towers through parameter-name
patterns (cross-attention *into* a modality belongs to that modality's tower)."""
from __future__ import annotations

import re
from abc import abstractmethod
from typing import ClassVar, Mapping

import torch
from torch import nn

from .flow import FlowModel

MODALITIES = ("video", "audio")


class AudioVideoFlowModel(FlowModel):
    """A :class:`FlowModel` whose flat latent is ``[video part | audio part]`` and whose samples are audio-video dicts
    ``{"video": B×C×T×H×W, "audio": B×C×L, "sample_rate": int, "fps": float}``."""

    modalities: ClassVar[tuple[str, ...]] = MODALITIES

    @abstractmethod
    def latent_slices(self) -> dict[str, slice]:
        """Where each modality lies in the flat per-item latent, e.g. ``{"video": slice(0, 512), "audio": slice(512, 640)}``."""

    @abstractmethod
    def tower_patterns(self) -> dict[str, list[str]]:
        """Regular expressions over ``trainable_module().named_parameters()`` names, per modality: the parameters of
        that modality's tower (cross-attention into the modality included). Parameters matching none are shared."""

    def split_latents(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """The per-modality parts ``[B, D_m]`` of flat latents ``[B, D]`` (views)."""
        return {m: x[:, s] for m, s in self.latent_slices().items()}

    def join_latents(self, parts: dict[str, torch.Tensor]) -> torch.Tensor:
        """Inverse of :meth:`split_latents`."""
        slices = self.latent_slices()
        return torch.cat([parts[m] for m in sorted(slices, key=lambda m: slices[m].start)], dim=1)

    def latent_levels(self, times: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """Flat ``[B, D]`` noise levels: each modality's per-item level ``times[m]`` (``[B]``) over its part."""
        return self.join_latents({m: times[m].view(-1, 1).expand(-1, s.stop - s.start)
                                  for m, s in self.latent_slices().items()})

    def tower_parameters(self, modality: str) -> list[tuple[str, nn.Parameter]]:
        """Named trainable parameters of ``modality``'s tower."""
        if modality not in self.modalities:
            raise ValueError(f"unknown modality {modality!r}; this model has {list(self.modalities)}")
        patterns = [re.compile(p) for p in self.tower_patterns()[modality]]
        return [(n, p) for n, p in self.trainable_module().named_parameters() if any(r.search(n) for r in patterns)]

    def shared_parameters(self) -> list[tuple[str, nn.Parameter]]:
        """Trainable parameters that belong to no tower."""
        owned = {n for m in self.modalities for n, _ in self.tower_parameters(m)}
        return [(n, p) for n, p in self.trainable_module().named_parameters() if n not in owned]


__all__ = ["AudioVideoFlowModel", "MODALITIES"]
