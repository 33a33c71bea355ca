"""PoEM: predict the outcome of RL on a new reward by composing already-tuned policies, without new RL.

``fit``: centring, OLS / NNLS coefficients and coverage (R²); ``categorical``: exact composition of finite policies;
``text``: a token-level product of causal LMs and its sequence-level (SIR) variant; ``flow``: velocity mixing of flow
generators; ``calibrate``: calibration sets; ``toy``: the exact categorical toy; ``cli``: ``visalign poem``.
Exports resolve lazily so the command line's ``--help`` does not import torch."""
from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    **{name: "visalign.poem.fit" for name in (
        "PoemFit", "centre", "coverage", "fit_log_ratios", "fit_rewards", "nnls", "ols", "regress")},
    **{name: "visalign.poem.categorical" for name in (
        "compose_log_probs", "expected", "kl", "log_ratios", "recovery", "sample_composed", "sample_sir", "tilt")},
    **{name: "visalign.poem.text" for name in ("ComposedCausalLMPolicy", "ProductOfExpertsLM", "sequence_log_ratios")},
    **{name: "visalign.poem.flow" for name in ("ComposedFlowConfig", "ComposedFlowGenerator", "path_log_ratios")},
    **{name: "visalign.poem.calibrate" for name in ("Calibration", "calibrate_flow", "calibrate_text", "fit_calibration")},
    **{name: "visalign.poem.toy" for name in ("CategoricalToy", "kl_policy_gradient")},
    "compose_checkpoints": "visalign.poem.cli",
}


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'visalign.poem' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = sorted(_EXPORTS)
