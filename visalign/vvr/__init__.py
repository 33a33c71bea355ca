"""VVR: verifiable visual rewards. Tasks (objects + 32 constraint types) with prompts, a renderer, a classical
verifier, the VVRBench / VVRBench-Challenge splits and a bench runner. Numpy / scipy / PIL only."""
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
}


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = sorted(_EXPORTS)
