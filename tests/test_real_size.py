"""The real-size GPU check (`pipelines/gpu_real_size.py`): its published configs build at the published sizes, and the
same code trains every family one LoRA step on CPU at tiny widths, also from a saved folder through the CLI."""
from __future__ import annotations

import pytest
import torch

from visalign.benchmarks.real_size import FAMILIES, build_real_size

from .conftest import load_pipeline_script

PUBLISHED_BILLIONS = {"sd3.5-medium": 2.24, "flux.1-dev": 11.9, "sana-sprint-1.6b": 1.6, "wan2.1-t2v-1.3b": 1.42, "ltx-2": 18.9}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_published_configs_build_at_their_published_size(family):
    pipeline = build_real_size(family, device="meta")  # no memory: shapes only
    billions = sum(p.numel() for p in pipeline.transformer.parameters()) / 1e9
    assert billions == pytest.approx(PUBLISHED_BILLIONS[family], rel=0.02)


def test_unknown_family_is_named():
    with pytest.raises(ValueError, match="unknown family 'sdxl'"):
        build_real_size("sdxl")


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_family_trains_lora_only_at_tiny_width(family, tmp_path):
    torch.set_num_threads(1)
    record = load_pipeline_script("gpu_real_size").check_in_memory(family, tiny=True, out=tmp_path, device=torch.device("cpu"), steps=1,
                                       from_disk=family == "wan2.1-t2v-1.3b")
    assert record["loss_finite"] and record["only_lora_moved"] and record["frozen_unchanged"]
    assert len(record["steps"]) == 1 and record["lora_params"] > 0
    if family == "wan2.1-t2v-1.3b":
        assert record["from_disk"]["rc"] == 0, record["from_disk"]["tail"]
        assert (tmp_path / family / "cli_run" / "final" / "pytorch_lora_weights.safetensors").is_file()


def test_frozen_fingerprint_sees_a_moved_frozen_weight():
    fingerprint = load_pipeline_script("gpu_real_size")._frozen_fingerprint
    layer = torch.nn.Linear(4, 4)
    layer.weight.requires_grad_(False)
    before = fingerprint(layer)
    assert before.shape == (1,) and torch.equal(fingerprint(layer), before)
    with torch.no_grad():
        layer.bias.add_(1.0)  # trainable: not in the fingerprint
    assert torch.equal(fingerprint(layer), before)
    with torch.no_grad():
        layer.weight[0, 0] += 0.5
    assert not torch.equal(fingerprint(layer), before)
    assert fingerprint(torch.nn.Linear(2, 2)).numel() == 0  # nothing frozen (a full fine-tune)


def test_isolated_family_runs_in_a_child_process_and_reports_a_timeout(tmp_path):
    script = load_pipeline_script("gpu_real_size")
    parsed = script.build_parser().parse_args(["--isolate", "--families", "flux.1-dev", "ltx-2", "--tiny", "--set", "a=1",
                                               "b=2", "--out", "x", "--family-timeout", "9", "--steps", "1"])
    assert script.child_argv(parsed) == ["--steps", "1", "--tiny", "--set", "a=1", "b=2"]  # not the parent's own options
    record = script.check_isolated("sana-sprint-1.6b", ["--tiny", "--steps", "1"], tmp_path, limit_s=300)
    assert record["family"] == "sana-sprint-1.6b" and record["loss_finite"] and record["only_lora_moved"]
    late = script.check_isolated("sana-sprint-1.6b", ["--tiny", "--steps", "1"], tmp_path / "late", limit_s=0.01)
    assert late == {"family": "sana-sprint-1.6b", "error": "over its 0.01 s limit (--family-timeout)"}
