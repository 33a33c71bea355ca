"""``pipelines/av_compare.py`` on a tiny random two-tower AV model: scoring a base alone, and a short comparison."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from visalign.generators.tiny_av import TinyAudioVideoConfig, TinyAudioVideoFlowGenerator

from .conftest import load_pipeline_script

av_compare = load_pipeline_script("av_compare")
MODEL = load_pipeline_script("pretrain_av").MODEL


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("av") / "tiny_av_flow"
    TinyAudioVideoFlowGenerator(TinyAudioVideoConfig(**{**MODEL, "width": 32, "layers": 1}, num_steps=2)).save_pretrained(path)
    return path


def _run(checkpoint: Path, out: Path, *extra: str) -> tuple[dict, dict]:
    av_compare.main(["--model", "tiny_av", "--checkpoint", str(checkpoint), "--eval-size", "4", "--group", "4",
                     "--num-steps", "2", "--out", str(out), "--results", str(out / "result.json"), *extra])
    return json.loads((out / "results.json").read_text()), json.loads((out / "result.json").read_text())


def test_no_methods_scores_the_base_only(checkpoint, tmp_path):
    results, stored = _run(checkpoint, tmp_path, "--methods")
    assert results["methods"] == {} and "budget" not in results
    assert set(results["base"]) == set(av_compare.REPORTED)
    assert [r["row"] for r in stored["rows"]] == ["base", "advantage spearman"]
    assert set(stored["rows"][0]["values"]) == {k.removeprefix("av_") for k in av_compare.REPORTED}


def test_a_short_comparison_reports_each_method_against_the_same_base(checkpoint, tmp_path):
    results, stored = _run(checkpoint, tmp_path, "--methods", "av_grpo", "joint_grpo", "--steps", "2",
                           "--eval-every", "1", "--steps-per-modality", "1")
    rows = {r["row"]: r for r in stored["rows"]}
    assert set(rows) == {"base", "av_grpo", "joint_grpo", "budget", "advantage spearman"}
    for method in ("av_grpo", "joint_grpo"):
        for k in av_compare.REPORTED:
            assert results["methods"][method]["metrics"][k]["before"] == results["base"][k]
    # the anchored group draws one reference per prompt on top of the group
    assert results["methods"]["av_grpo"]["rollouts"] == 2 * 2 * (4 + 1)
    assert results["methods"]["joint_grpo"]["rollouts"] == 2 * 2 * 4
