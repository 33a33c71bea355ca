"""VVR: verifiable visual rewards. v2 (the method's paper's format): closed-world visual specs with 46 constraint
types (+ visalign's extension), whole-scene prompts, a classical verifier (strict / dense / RL reward), visalign's
v2 splits, task files (JSONL / Parquet), video predicates and a bench runner. v1 (open world, 32 types) stays
loadable. Numpy / scipy / PIL only."""
from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Task": "task", "Obj": "task", "Scene": "task", "Constraint": "task", "Contact": "task", "TASK_VERSION": "task",
    "CONSTRAINT_TYPES": "constraints", "CONSTRAINT_NAMES": "constraints", "check": "constraints",
    "LEVELS": "sampler", "Level": "sampler", "LOW_RES_TYPES": "sampler", "generate_task": "sampler",
    "write_prompt": "prompts",
    "render_task": "render", "render_scene": "render", "layout": "render", "to_tensor": "render", "write_renders": "render",
    "parse_image": "parse", "ParsedImage": "parse", "ParsedObject": "parse",
    "verify": "verifier", "VerifyResult": "verifier",
    "SPLITS": "benchmark", "load_split": "benchmark", "generate_split": "benchmark", "read_tasks": "benchmark",
    "write_split": "benchmark",
    "VVRPromptSource": "source", "VVRFilePromptSource": "source", "task_batch": "source",
    "mutate": "mutations", "colour_layout": "features",
    "add_bench_arguments": "bench", "run_bench": "bench", "BenchInputError": "bench",
    # v2
    "VisualSpec": "spec", "parse_spec": "spec", "SpecError": "spec", "IMAGE_TYPES": "spec", "EXTENSION_TYPES": "spec",
    "SpecTask": "spec_task", "make_task": "spec_task", "verify_spec": "spec_verifier", "SpecResult": "spec_verifier",
    "Segmentation": "segment", "name_colour": "colour_model", "OBJECT_COLOURS": "colour_model",
    "BACKGROUND_COLOURS": "colour_model", "generate_spec_task": "spec_sampler", "write_spec_prompt": "spec_prompts",
    "render_spec_task": "spec_render", "load_split_v2": "splits", "read_task_file": "splits",
    "write_task_file": "splits", "SPLITS_V2": "splits", "floor_scores": "floors", "Tolerances": "tolerances",
    "verify_video": "video", "TEMPORAL_TYPES": "video", "generate_video_task": "video_tasks",
    "render_video": "video_tasks", "video_split": "video_tasks", "VideoTask": "video_tasks",
    "VVR2PromptSource": "source",
}


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = sorted(_EXPORTS)
