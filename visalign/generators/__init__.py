"""Built-in generators: toy 2-D, tiny prompt-conditioned image models, and a wrapper for local diffusers pipelines."""
from .diffusers_pipeline import DiffusersConfig, DiffusersPipelineGenerator, LoraReference, load_pipeline
from .flow import FlowMatchingGenerator, SDETrajectory, flow_sigmas
from .text_encoder import HashingWordTokenizer, TinyTextEncoder
from .tiny import TinyFlowConfig, TinyFlowGenerator, TinyImageConfig, TinyOneStepConfig, TinyOneStepGenerator
from .toy import ToyFlowGenerator, ToyOneStepGenerator

__all__ = [
    "FlowMatchingGenerator",
    "SDETrajectory",
    "flow_sigmas",
    "ToyFlowGenerator",
    "ToyOneStepGenerator",
    "HashingWordTokenizer",
    "TinyTextEncoder",
    "TinyImageConfig",
    "TinyOneStepConfig",
    "TinyFlowConfig",
    "TinyOneStepGenerator",
    "TinyFlowGenerator",
    "DiffusersConfig",
    "DiffusersPipelineGenerator",
    "LoraReference",
    "load_pipeline",
]
