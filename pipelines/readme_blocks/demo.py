"""README blocks of the demo and of the shipped configs' runs."""
from __future__ import annotations

from visalign.results import ResultTable

from pipelines.readme_blocks.formatting import minus


def demo(t: ResultTable) -> str:
    v = t.row("eval reward").values
    return f"{v['before']:.3f} → {v['after']:.3f}"


def config_runs(t: ResultTable) -> str:
    """``name before → after`` for every config, comma-separated (an inline block)."""
    return ", ".join(minus(f"{r.row} {r.values['before']:.3f} → {r.values['after']:.3f}") for r in t.rows)
