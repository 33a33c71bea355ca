"""Built-in generators: toy 2-D, tiny prompt-conditioned image models, and a wrapper for local diffusers pipelines."""
from .flow import FlowMatchingGenerator, SDETrajectory, flow_sigmas
from .toy import ToyFlowGenerator, ToyOneStepGenerator

__all__ = ["FlowMatchingGenerator", "SDETrajectory", "flow_sigmas", "ToyFlowGenerator", "ToyOneStepGenerator"]
