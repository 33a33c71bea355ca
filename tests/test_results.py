"""Result files, their comparison and the README blocks rendered from them (visalign.results)."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from visalign.core.config import ConfigError
from visalign.results import (
    ResultRow,
    ResultTable,
    Run,
    Tolerance,
    command_args,
    compare,
    load_results,
    read_blocks,
    replace_blocks,
    write_results,
)

PLATFORM = {"cpu": "cpu A", "torch": "2.13.0"}


def table(rows, tolerance=Tolerance(), platform=PLATFORM, platform_tolerance=None, regenerated=True, args=("--x", "1")):
    return ResultTable("t", [Run("python p.py", list(args))], rows, tolerance=tolerance, platform=dict(platform),
                       platform_tolerance=platform_tolerance, regenerated=regenerated)


def test_identical_results_are_unchanged_and_times_in_info_are_not_compared():
    stored = table([ResultRow("grpo", {"acc": 0.5}, info={"seconds": 3.0})])
    fresh = table([ResultRow("grpo", {"acc": 0.5}, info={"seconds": 9.0})])
    result = compare(stored, fresh)
    assert result.status == "unchanged" and result.ok and not result.moved


def test_exact_tolerance_reports_the_moved_row_by_name():
    stored = table([ResultRow("grpo", {"acc": 0.5}), ResultRow("rloo", {"acc": 0.4})])
    fresh = table([ResultRow("grpo", {"acc": 0.5}), ResultRow("rloo", {"acc": 0.4 + 1e-12})])
    result = compare(stored, fresh)
    assert result.status == "moved"
    assert [(m.row, m.column) for m in result.moved] == [("rloo", "acc")]
    assert "moved: rloo: acc 0.4 -> 0.4" in result.report()


def test_standard_error_tolerance_uses_both_errors():
    tol = Tolerance(se_multiple=2.0)
    stored = table([ResultRow("a", {"acc": 0.50}, {"acc": 0.03})], tolerance=tol)
    inside = table([ResultRow("a", {"acc": 0.50 + 2 * math.hypot(0.03, 0.04) - 1e-9}, {"acc": 0.04})])
    outside = table([ResultRow("a", {"acc": 0.50 + 2 * math.hypot(0.03, 0.04) + 1e-6}, {"acc": 0.04})])
    assert compare(stored, inside).ok
    (moved,) = compare(stored, outside).moved
    assert moved.row == "a" and moved.allowed == pytest.approx(0.1)


def test_relative_tolerance_for_time_ratios():
    stored = table([ResultRow("b64", {"ratio": 2.0})], tolerance=Tolerance(rel=0.5))
    assert compare(stored, table([ResultRow("b64", {"ratio": 2.9})])).ok
    assert not compare(stored, table([ResultRow("b64", {"ratio": 3.1})])).ok


def test_missing_and_new_rows_and_columns_are_moves():
    stored = table([ResultRow("a", {"x": 1.0, "y": 2.0}), ResultRow("b", {"x": 1.0})])
    fresh = table([ResultRow("a", {"x": 1.0, "z": 3.0}), ResultRow("c", {"x": 1.0})])
    report = compare(stored, fresh).report()
    for text in ("a: y is gone", "a: z is new", "row 'b' is gone", "row 'c' is new"):
        assert text in report, report


def test_reconstructed_results_say_not_yet_regenerated_even_when_they_agree():
    stored = table([ResultRow("a", {"x": 1.0})], regenerated=False, platform={})
    result = compare(stored, table([ResultRow("a", {"x": 1.0})]))
    assert result.status == "not yet regenerated" and not result.ok
    assert "agrees" in result.detail


def test_other_platform_uses_the_stated_platform_tolerance():
    stored = table([ResultRow("a", {"acc": 0.5}, {"acc": 0.05})], platform_tolerance=Tolerance(se_multiple=2.0))
    fresh = table([ResultRow("a", {"acc": 0.55}, {"acc": 0.05})], platform={**PLATFORM, "cpu": "cpu B"})
    result = compare(stored, fresh)
    assert result.ok and result.platform == ["cpu: cpu A -> cpu B"]
    same_platform = compare(stored, table([ResultRow("a", {"acc": 0.55}, {"acc": 0.05})]))
    assert same_platform.status == "moved"  # the exact tolerance applies where the numbers are bit-reproducible


def test_other_platform_without_a_tolerance_says_so():
    stored = table([ResultRow("a", {"acc": 0.5})])
    result = compare(stored, table([ResultRow("a", {"acc": 0.6})], platform={**PLATFORM, "torch": "2.14.1"}))
    assert result.status == "moved" and "exact only on the platform" in result.detail
    assert "torch: 2.13.0 -> 2.14.1" in result.report()


def test_different_arguments_are_not_compared():
    stored = table([ResultRow("a", {"x": 1.0})])
    result = compare(stored, table([ResultRow("a", {"x": 1.0})], args=("--x", "2")))
    assert result.status == "arguments differ" and not result.ok


def test_result_file_round_trip_and_errors(tmp_path: Path):
    t = table([ResultRow("a", {"x": 0.25}, {"x": 0.01}, {"seconds": 1.5})], tolerance=Tolerance(se_multiple=2.0, note="n"))
    path = t.save(tmp_path / "t.json")
    assert load_results(path) == t
    with pytest.raises(FileNotFoundError, match="result file not found"):
        load_results(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ValueError, match="bad.json: not valid JSON"):
        load_results(tmp_path / "bad.json")
    data = json.loads(path.read_text())
    (tmp_path / "extra.json").write_text(json.dumps({**data, "colour": 1}))
    with pytest.raises(ValueError, match=r"unknown keys \['colour'\]"):
        load_results(tmp_path / "extra.json")
    data["rows"][0]["values"]["x"] = float("nan")
    (tmp_path / "nan.json").write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="row 'a': values.x must be a finite number"):
        load_results(tmp_path / "nan.json")


def test_bad_tables_are_rejected_with_the_problem_named():
    with pytest.raises(ConfigError, match="duplicate row names"):
        table([ResultRow("a", {"x": 1.0}), ResultRow("a", {"x": 2.0})])
    with pytest.raises(ConfigError, match="standard errors for values it does not have"):
        ResultRow("a", {"x": 1.0}, {"y": 0.1})
    with pytest.raises(ConfigError, match="tolerance.rel must be a finite number >= 0"):
        Tolerance(rel=-1)
    with pytest.raises(ConfigError, match="runs is empty"):
        ResultTable("t", [], [])


def test_write_results_records_the_command_without_its_results_path(tmp_path: Path):
    assert command_args(["--a", "1", "--results", "x.json", "--b"]) == ["--a", "1", "--b"]
    assert command_args(["--results=x.json", "--b"]) == ["--b"]
    path = write_results(tmp_path / "r.json", "r", "python p.py", ["--seed", "3", "--results", "r.json"],
                         [ResultRow("a", {"x": 1.0})])
    t = load_results(path)
    assert t.runs == [Run("python p.py", ["--seed", "3"])] and t.regenerated
    assert len(t.commit) == 40 and "torch" in t.platform and "torch_threads" in t.platform


README = """Intro <!-- results:inline -->1 → 2<!-- /results --> and more.

<!-- results:tab -->
| a |
|---|
| 1 |
<!-- /results -->
"""


def test_readme_blocks_are_read_and_replaced_in_place():
    assert read_blocks(README) == {"inline": "1 → 2", "tab": "| a |\n|---|\n| 1 |"}
    new = replace_blocks(README, {"inline": "3 → 4", "tab": "| a |\n|---|\n| 2 |"})
    assert read_blocks(new) == {"inline": "3 → 4", "tab": "| a |\n|---|\n| 2 |"}
    assert new.replace("3 → 4", "1 → 2").replace("| 2 |", "| 1 |") == README
    assert replace_blocks(README, {}) == README


def test_readme_block_errors_name_the_block():
    with pytest.raises(KeyError, match="no results block for \\['nope'\\]"):
        replace_blocks(README, {"nope": "x"})
    with pytest.raises(ValueError, match="'inline' appears twice"):
        read_blocks(README + README)
    with pytest.raises(ValueError, match="not closed"):
        read_blocks("a <!-- results:x -->1")
    with pytest.raises(ValueError, match="'x' is inline but starts its line"):
        read_blocks("text\n  <!-- results:x -->1<!-- /results -->")
