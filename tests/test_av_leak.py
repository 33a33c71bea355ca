"""``pipelines/av_leak.py``: which weights and which partner samples carry a modality's quality change."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from visalign.algorithms.av_grpo import modality_partition
from visalign.core.generator import load_generator
from visalign.generators.tiny_av import TinyAudioVideoConfig, TinyAudioVideoFlowGenerator

from .conftest import load_pipeline_script

av_leak = load_pipeline_script("av_leak")
av_compare = load_pipeline_script("av_compare")
MODEL = load_pipeline_script("pretrain_av").MODEL


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> dict[str, Path]:
    """A random tiny base and a copy whose audio tower alone is perturbed."""
    root = tmp_path_factory.mktemp("leak")
    torch.manual_seed(0)
    base = TinyAudioVideoFlowGenerator(TinyAudioVideoConfig(**{**MODEL, "width": 32, "layers": 1}, num_steps=2))
    base.save_pretrained(root / "base")
    audio, _ = modality_partition(base, "audio")
    with torch.no_grad():
        for name, p in base.trainable_module().named_parameters():
            if name in audio:
                p.add_(0.05 * torch.randn_like(p))
    base.save_pretrained(root / "audio_moved")
    return {"base": root / "base", "audio_moved": root / "audio_moved"}


def _table(checkpoints, name: str) -> tuple:
    base, trained = load_generator(checkpoints["base"]), load_generator(checkpoints[name])
    prompts = av_compare.world_prompts()[:6]
    return av_leak.leak_table(base, trained, prompts, 0.3), base, trained, prompts


def test_the_trained_row_is_av_compares_after(checkpoints):
    table, base, trained, prompts = _table(checkpoints, "audio_moved")
    before, _ = av_compare.per_sample_metrics(base, prompts, av_compare.EVAL_SEED, 0.3)
    after, _ = av_compare.per_sample_metrics(trained, prompts, av_compare.EVAL_SEED, 0.3)
    for m in av_leak.MODALITIES:
        assert table["trained"][m] == av_compare.paired(before[f"av_{m}_quality"], after[f"av_{m}_quality"])
    assert table["trained"]["audio"]["delta"] != 0


def test_tower_swaps_and_partner_locks_separate_the_routes(checkpoints):
    """Only the audio tower moved: the base with the trained video tower is the base; the base with the trained
    audio tower is the trained model; the audio made by the trained weights with the base's video partner moves."""
    table, *_ = _table(checkpoints, "audio_moved")
    for m in av_leak.MODALITIES:
        assert table["base with the trained video tower"][m]["delta"] == 0
        assert table["base with the trained video tower"][m]["se"] == 0
        assert table["base with the trained audio tower"][m] == table["trained"][m]
    assert table["by trained, partner from base"]["audio"]["se"] > 0


def test_the_same_model_leaks_nothing(checkpoints):
    table, *_ = _table(checkpoints, "base")
    for row in table.values():
        for m in av_leak.MODALITIES:
            assert row[m]["delta"] == 0 and row[m]["se"] == 0


def test_cli_writes_rows_and_names_a_missing_folder(checkpoints, tmp_path):
    out = tmp_path / "leak.json"
    av_leak.main(["--base", str(checkpoints["base"]), "--trained", f"moved={checkpoints['audio_moved']}",
                  "--eval-size", "4", "--results", str(out)])
    rows = {r["row"] for r in json.loads(out.read_text())["rows"]}
    assert rows == {f"moved/{source}" for source in ("trained", "base with the trained video tower",
                                                     "base with the trained audio tower", "by trained, partner from base",
                                                     "by base, partner from trained")}
    with pytest.raises(SystemExit, match="not a model folder"):
        av_leak.main(["--base", str(checkpoints["base"]), "--trained", f"x={tmp_path / 'missing'}"])
