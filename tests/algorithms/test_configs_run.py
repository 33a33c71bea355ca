"""Every toy run config (``configs/toy_*.yaml``) builds and trains through the CLI (``visalign train``) for 2 steps."""
import json
from pathlib import Path

import pytest

from visalign.cli import main

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted((ROOT / "configs").glob("toy_*.yaml"))


def test_toy_configs_exist_for_each_method():
    names = {p.stem for p in CONFIGS}
    assert {"toy_rwtd", "toy_festdpo", "toy_rwr", "toy_flow_grpo", "toy_reward_backprop"} <= names


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_toy_config_trains_through_the_cli(path, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)  # generator checkpoints (assets/toy/...) are relative to the repo root
    out = tmp_path / path.stem
    rc = main(["train", str(path), "trainer.steps=2", f"trainer.output_dir={out}", "trainer.eval_batch_size=16"])
    assert rc == 0, capsys.readouterr().err
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if line.strip()]
    steps = [r for r in records if "loss" in r]
    assert [r["step"] for r in steps] == [1, 2], records
    assert all(r["loss"] == r["loss"] for r in steps), "loss is NaN"
    assert any("eval/reward_mean" in r for r in records)
