"""Formatting shared by the README's result blocks: numbers, signs, tables, spreads over seeds, and where the
result files live."""
from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Callable

from visalign.results import ResultRow, ResultTable


ROOT = Path(__file__).resolve().parents[2]
RESULTS_DIR = ROOT / "assets" / "results"


Renderer = Callable[[ResultTable], str]


def minus(text: str) -> str:
    return text.replace("-", "−")


def decimals(x: float, digits: int) -> str:
    """``x`` to ``digits`` decimals with a typographic minus, unsigned when it rounds to zero."""
    text = f"{x:.{digits}f}"
    return minus(text[1:] if text.startswith("-") and float(text) == 0 else text)


def pct(p: float, digits: int = 1) -> str:
    return "0%" if p == 0 else f"{100 * p:.{digits}f}%"


def times(r: float) -> str:
    return f"{r:.0f}×" if r >= 10 else f"{r:.1f}×"


def table(head: list[str], lines: list[list[str]]) -> str:
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(rows + ["| " + " | ".join(line) + " |" for line in lines])


def value_se(r: ResultRow, column: str, digits: int = 3, sign: str = "") -> str:
    """A row's ``column`` as ``value (±SE)`` (``sign="+"``: the value always signed)."""
    return minus(f"{r.values[column]:{sign}.{digits}f}") + f" (±{r.se[column]:.{digits}f})"


def signed(x: float, digits: int) -> str:
    return minus(f"{x:+.{digits}f}")


def value_range(values: list[float], digits: int) -> str:
    low, high = f"{min(values):.{digits}f}", f"{max(values):.{digits}f}"
    return low if low == high else f"{low}–{high}"


def across_seeds(changes: list[dict[str, float]], metrics: tuple[tuple[str, str], ...]) -> dict[str, float]:
    """Per metric, the mean of the per-seed changes over its standard error across the seeds (one t-like score
    whose spread includes the training runs' own randomness, which a paired SE over evaluation draws leaves out)."""
    out = {}
    for k, _ in metrics:
        values = [c[k] for c in changes]
        se = statistics.stdev(values) / math.sqrt(len(values))
        mean = statistics.fmean(values)
        out[k] = mean / se if se > 0 else math.copysign(math.inf, mean) if mean else 0.0
    return out
