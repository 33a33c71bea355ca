"""Diffusers flow adapters: local diffusers pipelines stepped by visalign as :class:`~visalign.core.flow.FlowModel`
(SD3 / SD3.5, FLUX.1, SANA, SANA-Sprint, Wan 2.x text-to-video, LTX-2 audio-video)."""
from .base import (DiffusersFlowConfig, DiffusersFlowModel, DiffusersReference, LORA_WEIGHTS_FILE, PromptCond,
                   PromptEmbeddingCache)
from .flux import FluxFlowConfig, FluxFlowModel
from .ltx2 import LTX2AudioVideoFlowModel, LTX2FlowConfig
from .sana import SanaFlowConfig, SanaFlowModel, SanaSprintFlowConfig, SanaSprintFlowModel
from .sd3 import SD3FlowModel
from .wan import WanFlowConfig, WanFlowModel

__all__ = [
    "DiffusersFlowConfig", "DiffusersFlowModel", "DiffusersReference", "LORA_WEIGHTS_FILE", "PromptCond",
    "PromptEmbeddingCache", "SD3FlowModel", "FluxFlowConfig", "FluxFlowModel", "SanaFlowConfig", "SanaFlowModel",
    "SanaSprintFlowConfig", "SanaSprintFlowModel", "WanFlowConfig", "WanFlowModel", "LTX2FlowConfig",
    "LTX2AudioVideoFlowModel",
]
