"""visalign: align generators of images, video and audio-video (and LLMs) with rewards and preferences."""
from __future__ import annotations

import importlib
from typing import Any

from . import builtins as _builtins
from .core.registry import add_builtin_loader as _add_builtin_loader

__version__ = "0.1.0"
_add_builtin_loader(_builtins.load)

_EXPORTS = {
    **{name: "visalign.core" for name in (
        "Policy", "Generator", "FlowModel", "AudioVideoFlowModel", "SDETrajectory", "Reward", "Algorithm", "Evaluation", "OwnedModel",
        "TrainContext", "UpdatePlan", "PromptBatch", "Rollout", "PromptSource", "PromptList", "modality_of",
        "Unconditional", "FunctionReward", "WeightedReward", "ConfigError", "register_reward", "register_algorithm",
        "register_generator", "register_prompt_source", "get_reward", "build_reward", "build_generator", "TokenFeatures", "BlockFeatures",
        "build_algorithm", "build_prompt_source", "load_generator", "ot_coupled_noise",
    )},
    **{name: "visalign.generators" for name in (
        "ToyOneStepGenerator", "ToyFlowGenerator", "TinyOneStepGenerator", "TinyFlowGenerator",
        "DiffusersPipelineGenerator", "DiffusersFlowModel", "SD3FlowModel", "FluxFlowModel", "SanaFlowModel",
        "SanaSprintFlowModel", "WanFlowModel", "LTX2AudioVideoFlowModel",
        "TinyVideoOneStepGenerator", "TinyVideoFlowGenerator", "TinyAudioVideoFlowGenerator",
    )},
    "measure_adapter_step": "visalign.benchmarks.adapter_memory",
    **{name: "visalign.features" for name in (
        "FeatureSpace", "BlockLayout", "build_features", "register_features", "DINOv2Features", "SSLEncoderFeatures",
    )},
    **{name: "visalign.algorithms" for name in (
        "RWTD", "RWTDConfig", "FestDPO", "FestDPOConfig", "RWR", "RWRConfig", "RewardBackprop", "RewardBackpropConfig",
        "FlowGRPO", "FlowGRPOConfig", "DiffusionNFT", "DiffusionNFTConfig", "CoRe", "CoReConfig", "AVGRPO", "AVGRPOConfig",
    )},
    **{name: "visalign.rewards.latent" for name in (
        "LatentReward", "LatentRewardConfig", "LatentPairs", "build_lrm", "load_lrm", "save_lrm", "train_lrm",
        "load_pairs", "save_pairs",
    )},
    **{name: "visalign.trainer" for name in ("Trainer", "TrainerConfig", "TrainerCallback", "SampleCounter")},
    **{name: "visalign.run" for name in ("RunConfig", "load_run_config", "build_trainer")},
    **{name: "visalign.vvr" for name in ("VVRPromptSource", "VVRFilePromptSource", "generate_task", "render_task", "verify", "load_split")},
    "VVRReward": "visalign.rewards.vvr",
    **{name: "visalign.rewards" for name in (
        "CLIPScore", "HPSv2", "ImageReward", "LaionAesthetic", "MultiReward", "NullScore", "OCRReward", "PickScore",
        "RemoteReward", "RemoteRewardError", "VLMJudge", "normalize_then_sum", "sum_then_normalize",
    )},
    **{name: "visalign.results" for name in ("ResultTable", "ResultRow", "Tolerance", "load_results", "write_results")},
    **{name: "visalign.text" for name in ("CausalLMPolicy", "TextGRPO", "TextDistill", "TextMultiReward", "TextMultiTurn")},
    **{name: "visalign.poem" for name in ("ComposedCausalLMPolicy", "ComposedFlowGenerator")},
    **{name: "visalign.reflection" for name in ("Reflection", "ReflectionConfig", "ReflectionPolicy", "ReflectionPair",
                                                "TinyReflectionModel", "run_trajectories")},
}


def __getattr__(name: str) -> Any:
    """Lazy re-exports keep ``import visalign`` (and ``visalign --help``) free of torch start-up cost."""
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'visalign' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = sorted(_EXPORTS)
