"""Smoke run of the text arithmetic pipeline (slow: pretraining + RL for two estimators)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_text_arithmetic_pipeline_smoke(tmp_path):
    cmd = [sys.executable, str(ROOT / "pipelines" / "text_arithmetic.py"), "--output", str(tmp_path), "--pretrain-steps", "20",
           "--rl-steps", "2", "--prompts-per-step", "4", "--group-size", "4", "--estimators", "grpo,mapp"]
    subprocess.run(cmd, check=True, capture_output=True, timeout=600)
    results = json.loads((tmp_path / "results.json").read_text())
    assert set(results) >= {"before", "grpo", "mapp"} and results["completions"] == 2 * 4 * 4
    assert 0.0 <= results["grpo"]["after"] <= 1.0
