"""``pipelines/rwtd_targets.py``: RWTD's sample-space transport targets scored beside the samples they move."""
from __future__ import annotations

from pathlib import Path

import pytest

from visalign.results import load_results

from .conftest import load_pipeline_script

ROOT = Path(__file__).resolve().parent.parent


def test_scores_current_samples_and_targets_per_step_size(tmp_path: Path) -> None:
    """Two prompt groups from the shipped v2 one-step model: one row per image kind, each target row's change is its
    score minus the current samples' (mean over groups), with a standard error over the groups."""
    script = load_pipeline_script("rwtd_targets")
    results = tmp_path / "r.json"
    assert script.main(["--checkpoints", f"base={ROOT / 'assets' / 'tiny_one_step_vvr2'}", "--groups", "2",
                        "--results", str(results)]) == 0
    table = load_results(results)
    assert [r.row for r in table.rows] == ["base/current", "base/eta=0.5", "base/eta=1"]
    current = table.row("base/current").values
    for target in ("eta=0.5", "eta=1"):
        r = table.row(f"base/{target}")
        assert r.info["groups"] == 2
        for kind in ("strict", "soft"):
            assert 0.0 <= r.values[kind] <= 1.0
            assert r.values[f"{kind}_change"] == pytest.approx(r.values[kind] - current[kind], abs=1e-6)
            assert r.se[f"{kind}_change"] >= 0.0


def test_one_group_is_refused(capsys) -> None:
    with pytest.raises(SystemExit):
        load_pipeline_script("rwtd_targets").main(["--checkpoints", "a=x", "--groups", "1"])
    assert "--groups must be >= 2" in capsys.readouterr().err
