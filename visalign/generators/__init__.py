"""Built-in generators: toy 2-D, tiny prompt-conditioned image models, and a wrapper for local diffusers pipelines."""
from .diffusers_flow import (DiffusersFlowConfig, DiffusersFlowModel, FluxFlowModel, LTX2AudioVideoFlowModel, SanaFlowModel,
                             SanaSprintFlowModel, SD3FlowModel, WanFlowModel)
from .diffusers_pipeline import DiffusersConfig, DiffusersPipelineGenerator, LoraReference, load_pipeline
from .lora import LoraOptions
from .pretrained_text import PretrainedTextEncoder, resolve_text_encoder_path
from .text_encoder import HashingWordTokenizer, TinyTextEncoder
from .tiny import (TinyFlowConfig, TinyFlowGenerator, TinyFlowReference, TinyImageConfig, TinyOneStepConfig,
                   TinyOneStepGenerator, TinyOneStepReference)
from .tiny_av import TinyAudioVideoConfig, TinyAudioVideoFlowGenerator
from .tiny_video import (TinyVideoConfig, TinyVideoFlowConfig, TinyVideoFlowGenerator, TinyVideoOneStepConfig,
                         TinyVideoOneStepGenerator, add_frame_convs)
from .toy import ToyFlowGenerator, ToyOneStepGenerator

__all__ = [
    "ToyFlowGenerator",
    "ToyOneStepGenerator",
    "HashingWordTokenizer",
    "TinyTextEncoder",
    "PretrainedTextEncoder",
    "resolve_text_encoder_path",
    "TinyImageConfig",
    "TinyOneStepConfig",
    "TinyFlowConfig",
    "TinyOneStepGenerator",
    "TinyFlowGenerator",
    "TinyOneStepReference",
    "TinyFlowReference",
    "LoraOptions",
    "TinyVideoConfig",
    "TinyVideoFlowConfig",
    "TinyVideoOneStepConfig",
    "TinyVideoOneStepGenerator",
    "TinyVideoFlowGenerator",
    "TinyAudioVideoConfig",
    "TinyAudioVideoFlowGenerator",
    "add_frame_convs",
    "DiffusersConfig",
    "DiffusersPipelineGenerator",
    "LoraReference",
    "load_pipeline",
    "DiffusersFlowConfig",
    "DiffusersFlowModel",
    "SD3FlowModel",
    "FluxFlowModel",
    "SanaFlowModel",
    "SanaSprintFlowModel",
    "WanFlowModel",
    "LTX2AudioVideoFlowModel",
]
