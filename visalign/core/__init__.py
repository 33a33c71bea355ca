"""Core protocols: policies and generators (flow models among them), rewards, algorithms, prompt sources, configs.

Names are imported lazily, so ``import visalign`` (and the CLI's ``--help``) stays free of torch start-up cost."""
from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    **{name: "algorithm" for name in ("ALGORITHMS", "Algorithm", "Evaluation", "OwnedModel", "TrainContext",
                                      "UpdatePlan", "build_algorithm", "register_algorithm")},
    **{name: "config" for name in ("ConfigError", "apply_overrides", "from_dict", "load_yaml", "option",
                                   "describe_config")},
    **{name: "flow" for name in ("FlowModel", "SDETrajectory", "flow_sigmas", "noise_latents", "shift_times",
                                 "flow_error_weights", "sample_from_level", "velocity_from_sample")},
    "ot_coupled_noise": "coupling",
    "TokenFeatures": "latent",
    "BlockFeatures": "features",
    **{name: "generator" for name in ("GENERATORS", "Generator", "build_generator", "load_generator", "register_generator")},
    "Policy": "policy",
    **{name: "reflection" for name in ("Controller", "ControllerTurns", "EditConditioner", "ReflectionPair",
                                       "ReflectionPolicy", "Turn", "parse_turn", "format_turn")},
    **{name: "audio_video" for name in ("AudioVideoFlowModel", "MODALITIES")},
    **{name: "reward" for name in ("REWARDS", "FunctionReward", "Reward", "WeightedReward", "build_reward", "get_reward",
                                   "register_reward", "require_modality", "score")},
    **{name: "prompts" for name in ("PROMPT_SOURCES", "PromptList", "PromptSource", "Unconditional", "build_prompt_source",
                                    "register_prompt_source")},
    **{name: "types" for name in ("PromptBatch", "Rollout", "Samples", "modality_of", "flatten_samples")},
    **{name: "registry" for name in ("Registry", "add_builtin_loader")},
}


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = sorted(_EXPORTS)
