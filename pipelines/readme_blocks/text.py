"""README blocks of the text side (text_arithmetic): single runs, seeds and threads."""
from __future__ import annotations

from visalign.results import ResultTable

from pipelines.readme_blocks.formatting import table, value_se


ESTIMATORS = {"grpo": "GRPO", "dr_grpo": "Dr.GRPO", "rloo": "RLOO", "mapp": "MaPP"}


def text_single(t: ResultTable) -> str:
    warm = t.row("warm start").values["exact_match"]
    return table(["warm start", *ESTIMATORS.values()],
                 [[f"{warm:.3f}", *(f"{t.row(k).values['exact_match']:.3f}" for k in ESTIMATORS)]])


def text_seeds(t: ResultTable) -> str:
    """Warm start: mean exact match ± SE over seeds; estimators: mean gain over the same seed's warm start ± SE."""
    return table(["warm start", *ESTIMATORS.values()],
                 [[value_se(t.row("warm start"), "exact_match"), *(value_se(t.row(k), "gain", sign="+") for k in ESTIMATORS)]])


THREADS = ("1", "3", "4")


def text_threads(t: ResultTable) -> str:
    warm = [t.row(f"threads={n}/warm start").values["exact_match"] for n in THREADS]
    grpo = [t.row(f"threads={n}/grpo").values["exact_match"] for n in THREADS]
    return (f"`--threads 1`, `3` or `4` starts RL from {warm[0]:.3f}, {warm[1]:.3f} or {warm[2]:.3f} and GRPO ends at "
            f"{grpo[0]:.3f}, {grpo[1]:.3f} or {grpo[2]:.3f}")
