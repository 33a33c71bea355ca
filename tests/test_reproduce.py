"""pipelines/reproduce.py: the README's tables come from the stored result files, and the commands behind them
still produce those numbers (a short text run in the default suite, every other entry under ``-m slow``)."""
from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest

from visalign.results import compare

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipelines import readme_results as registry  # noqa: E402
from pipelines import reproduce  # noqa: E402


def test_every_entry_has_a_stored_result_file():
    missing = [e.name for e in registry.ENTRIES if not e.path.is_file()]
    assert not missing, f"no assets/results/<name>.json for {missing}: run pipelines/reproduce.py --only NAME --write"


def test_readme_blocks_equal_what_their_result_files_render():
    problems = reproduce.readme_mismatches(registry.README.read_text(), reproduce.stored_tables())
    assert not problems, "\n".join(problems) + "\n(pipelines/reproduce.py --render rewrites them)"


def test_a_changed_readme_number_is_caught_by_block_name():
    text = registry.README.read_text()
    block = reproduce.rendered_blocks(reproduce.stored_tables())["toy_tilt/lambda"]
    tampered = text.replace(block, block.replace("| reward |", "| reward | 1 |", 1))
    assert any("'toy_tilt/lambda' differs" in p for p in reproduce.readme_mismatches(tampered, reproduce.stored_tables()))


def test_a_moved_row_is_reported_by_name():
    stored = reproduce.load_results(registry.entry("text_arithmetic").path)
    fresh = copy.deepcopy(stored)
    fresh.row("grpo").values["exact_match"] += 1 / 256
    result = compare(stored, fresh)
    assert result.status == "moved" and [m.row for m in result.moved] == ["grpo"]
    assert "moved: grpo: exact_match" in result.report()


def _check(name: str, tmp_path: Path) -> None:
    e = registry.entry(name)
    stored = reproduce.load_results(e.path)
    if not stored.regenerated:
        pytest.skip(f"{name}: stored numbers are reconstructed, not yet regenerated (run reproduce.py --only {name} --write)")
    fresh = reproduce.run_entry(e, tmp_path, log=lambda _: None)
    result = compare(stored, fresh)
    if result.platform and stored.platform_tolerance is None and not result.ok:
        pytest.skip(f"{name} is exact only on the platform that wrote it, and this one differs:\n{result.report()}")
    assert result.ok, result.report()


def test_short_text_run_reproduces_its_stored_result(tmp_path: Path):
    """~10 s: warm start + 5 RL steps of GRPO and MaPP, compared exactly with assets/results/text_arithmetic_short.json."""
    _check("text_arithmetic_short", tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("name", [e.name for e in registry.ENTRIES if e.name != "text_arithmetic_short"])
def test_entry_reproduces_its_stored_result(name: str, tmp_path: Path):
    _check(name, tmp_path)
