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
    rho = stored["rows"][1]
    assert set(rho["se"]) == set(rho["values"]) and all(0 <= v < 1 for v in rho["se"].values())
    assert any(v > 0 for v in rho["se"].values())  # 16 groups: the mean's spread over groups


def test_eval_steps_sets_the_evaluation_samples_euler_steps(checkpoint, tmp_path):
    """--eval-steps at the model's own step count scores the same samples as the default; another count draws other
    samples from the same noise."""
    import torch

    from visalign.core import load_generator

    default, _ = _run(checkpoint, tmp_path / "default", "--methods")
    same, _ = _run(checkpoint, tmp_path / "same", "--methods", "--eval-steps", "2")
    assert same["base"] == default["base"]
    model, prompts = load_generator(checkpoint), av_compare.world_prompts()[:4]
    samples = {n: av_compare.per_sample_metrics(model, prompts, av_compare.EVAL_SEED, 0.3, n)[1] for n in (None, 2, 1)}
    assert torch.equal(samples[None]["video"], samples[2]["video"])
    assert not torch.allclose(samples[None]["video"], samples[1]["video"])


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


def test_fixed_set_budget_curve_starts_and_ends_at_the_table(checkpoint, tmp_path):
    """--budget-curve fixed: the desync curve is measured on the table's evaluation set, so its first and last points
    are the table's before and after desync of each method."""
    results, _ = _run(checkpoint, tmp_path, "--methods", "av_grpo", "joint_grpo", "--steps", "2", "--eval-every", "1",
                      "--steps-per-modality", "1", "--budget-curve", "fixed", "--lr", "0.05")
    for method in ("av_grpo", "joint_grpo"):
        curve, table = results["methods"][method]["desync_curve"], results["methods"][method]["metrics"]["av_desync"]
        assert [step for step, _ in curve] == [0, 1, 2]
        assert curve[0][1] == pytest.approx(table["before"], abs=1e-4)
        assert curve[-1][1] == pytest.approx(table["after"], abs=1e-4)
    assert "budget" in results


def test_a_reward_set_may_name_a_reward_outside_the_summed_five(checkpoint, tmp_path):
    """A reward set naming another registered reward (here the no-signal null_score) scores it at weight 0: the
    audio tower trains on it, and the summed reward of the baselines is unchanged."""
    reward = av_compare.make_reward(0.3, ["null_score", "av_desync"])
    assert {part.name: w for part, w in reward.parts()} == {**av_compare.COMPONENTS, "null_score": 0.0}
    results, _ = _run(checkpoint, tmp_path, "--methods", "av_grpo", "--steps", "1", "--order", "audio", "video",
                      "--audio-rewards", "null_score")
    assert results["methods"]["av_grpo"]["rollouts"] == 2 * (4 + 1)


def test_paired_change_reports_it_in_standard_errors_from_unrounded_values():
    import torch

    small = av_compare.paired(torch.zeros(4), torch.tensor([1e-5, 2e-5, 3e-5, 4e-5]))
    assert small["delta"] == 0.0 and small["se"] == 0.0  # four decimals hide it
    assert small["exact"] == pytest.approx(2.5e-5, rel=1e-5)
    assert small["in_se"] == pytest.approx(2.5 / (torch.tensor([1.0, 2, 3, 4]).std().item() / 2), abs=0.01)
    assert av_compare.paired(torch.ones(3), torch.ones(3))["in_se"] is None


def test_eval_video_tolerance_adds_a_visible_quality_readout_and_leaves_the_rest(checkpoint, tmp_path):
    """--eval-video-tolerance-px adds av_video_quality read at that resolution to the evaluation (never above zero,
    at least the full readout); every other figure, training included, is what the run without it gives."""
    args = ("--methods", "av_grpo", "--steps", "1", "--steps-per-modality", "1", "--eval-every", "1")
    plain, plain_stored = _run(checkpoint, tmp_path / "plain", *args)
    visible, stored = _run(checkpoint, tmp_path / "visible", *args, "--eval-video-tolerance-px", "0.5")
    assert list(visible["base"]) == [*av_compare.REPORTED, av_compare.VISIBLE]
    assert 0 >= visible["base"][av_compare.VISIBLE] >= visible["base"]["av_video_quality"]
    for k in av_compare.REPORTED:
        assert visible["base"][k] == plain["base"][k]
        assert visible["methods"]["av_grpo"]["metrics"][k] == plain["methods"]["av_grpo"]["metrics"][k]
    rows = {r["row"]: r for r in stored["rows"]}
    assert "video_quality_visible" in rows["av_grpo"]["values"] and "video_quality_visible" in rows["av_grpo"]["se"]
    assert "video_quality_visible" in rows["av_grpo"]["info"]["change_in_se"]
    assert "video_quality_visible" not in {r["row"]: r for r in plain_stored["rows"]}["av_grpo"]["values"]
    assert rows["av_grpo"]["info"]["largest_residual_px"] > 0
    # each clip is forgiven at most min(its residual, 0.5 px) of a 16 px frame (means rounded to 4 decimals)
    forgiven = visible["base"][av_compare.VISIBLE] - visible["base"]["av_video_quality"]
    assert forgiven <= min(rows["base"]["info"]["largest_residual_px"], 0.5) / 15 + 1e-4
