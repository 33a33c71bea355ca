"""The shipped video / audio-video run configs train through ``visalign train`` on the shipped tiny checkpoints
(``assets/video``, ``assets/av``) and write contact sheets, GIFs and (audio-video) WAVs."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from visalign.cli import main

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted((ROOT / "configs").glob("video_*.yaml")) + sorted((ROOT / "configs").glob("av_*.yaml"))


def _run(path: Path, out: Path, *overrides: str) -> list[dict]:
    rc = main(["train", str(path), f"trainer.output_dir={out}", "trainer.progress=false", *overrides])
    assert rc == 0
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if line.strip()]
    assert all(r["loss"] == r["loss"] for r in records if "loss" in r), "loss is NaN"
    assert any("eval/reward_mean" in r for r in records)
    for tag in ("before", "after"):
        assert (out / "samples" / f"{tag}.png").is_file() and (out / "samples" / f"{tag}.gif").is_file()
        if path.stem.startswith("av_"):
            assert (out / "samples" / f"{tag}_0.wav").is_file()
    return records


def test_configs_exist_for_video_and_audio_video():
    names = {p.stem for p in CONFIGS}
    assert {"video_flow_grpo", "video_rwr", "video_rwtd", "video_reward_backprop", "av_flow_grpo", "av_rwr"} <= names


def test_video_config_trains_one_step_through_the_cli(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    records = _run(ROOT / "configs" / "av_flow_grpo.yaml", tmp_path / "av", "trainer.steps=1", "trainer.eval_batch_size=4",
                   "algorithm.group_size=2", "trainer.prompts_per_step=1")
    assert [r["step"] for r in records if "loss" in r] == [1]


@pytest.mark.slow
@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_config_runs_end_to_end(path, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    records = _run(path, tmp_path / path.stem)
    assert [r["step"] for r in records if "loss" in r] == list(range(1, 7))
