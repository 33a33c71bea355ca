"""visalign: align generators of images, video and audio-video (and LLMs) with rewards and preferences."""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "Generator": "visalign.core",
    "Reward": "visalign.core",
    "Algorithm": "visalign.core",
    "TrainContext": "visalign.core",
    "PromptBatch": "visalign.core",
    "Rollout": "visalign.core",
    "FunctionReward": "visalign.core",
    "WeightedReward": "visalign.core",
    "ConfigError": "visalign.core",
    "register_reward": "visalign.core",
    "register_algorithm": "visalign.core",
    "register_generator": "visalign.core",
    "get_reward": "visalign.core",
    "build_reward": "visalign.core",
    "build_generator": "visalign.core",
    "build_algorithm": "visalign.core",
    "load_generator": "visalign.core",
    "FlowMatchingGenerator": "visalign.generators",
    "ToyOneStepGenerator": "visalign.generators",
    "ToyFlowGenerator": "visalign.generators",
}


def __getattr__(name: str) -> Any:
    """Lazy re-exports keep ``import visalign`` (and ``visalign --help``) free of torch start-up cost."""
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'visalign' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = sorted(_EXPORTS)
