"""``visalign bench memory``: one training step per generator, peak memory and step time, any generator config."""
import json

import pytest

from visalign.benchmarks.memory import generator_section
from visalign.cli import main
from visalign.core import ConfigError


def test_bench_memory_on_the_tiny_image_generator(tmp_path, capsys):
    spec = tmp_path / "gen.yaml"
    spec.write_text("generator:\n  name: tiny_one_step\n  image_size: 8\n  patch_size: 2\n")
    out = tmp_path / "rows.json"
    rc = main(["bench", "memory", "--in-process", "--generator", "tiny_flow", "--generator", str(spec), "--steps", "1",
               "--set", "generator.image_size=8", "--set", "generator.patch_size=2", "--set", "algorithm.num_samples=2",
               "--json", str(out)])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "peak MB" in printed and "tiny_flow" in printed and "tiny_one_step" in printed
    rows = json.loads(out.read_text())
    assert [r["generator"] for r in rows] == ["tiny_flow", "tiny_one_step"]
    for row in rows:
        assert row["memory"] == "cpu peak RSS (sampled)" and row["device"] == "cpu"
        assert row["step_s"] > 0 and row["peak_mb"] > 50 and row["growth_mb"] >= 0
        assert row["trainable_params_m"] > 0 and row["overrides"][0] == "generator.image_size=8"


def test_bench_memory_rejects_a_yaml_without_a_generator(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("trainer:\n  steps: 1\n")
    with pytest.raises(ConfigError, match="generator section"):
        generator_section(str(bad))
