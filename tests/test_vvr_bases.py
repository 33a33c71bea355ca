"""``pipelines/vvr_bases.py``: VVR base checkpoints compared on the same unseen tasks and noise, per easy-pool bin."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from visalign.generators.tiny import TinyFlowConfig, TinyFlowGenerator

from .conftest import load_pipeline_script

vvr_bases = load_pipeline_script("vvr_bases")
SHIPPED_FLOW = Path(__file__).resolve().parent.parent / "assets" / "vvr2_longer" / "tiny_flow_vvr2"


def test_changes_are_paired_against_the_first_checkpoint(tmp_path):
    TinyFlowGenerator(TinyFlowConfig(image_size=32, patch_size=4, text_hidden=32, vocab_buckets=64, max_length=80,
                                     num_steps=2)).save_pretrained(tmp_path / "untrained")
    result = tmp_path / "result.json"
    vvr_bases.main(["--checkpoints", f"shipped={SHIPPED_FLOW}", f"again={SHIPPED_FLOW}",
                    f"untrained={tmp_path / 'untrained'}", "--bins", "1", "2", "--eval-n", "24", "--eval-draws", "2",
                    "--results", str(result)])
    rows = {r["row"]: r for r in json.loads(result.read_text())["rows"]}
    assert set(rows) == {f"{name}/bin {b}" for name in ("shipped", "again", "untrained") for b in (1, 2)}
    shipped, again, untrained = rows["shipped/bin 1"], rows["again/bin 1"], rows["untrained/bin 1"]
    assert shipped["info"]["tasks"] == 24 and shipped["info"]["draws"] == 2
    assert shipped["values"]["acc"] > 0.05  # the shipped flow solves some bin-1 tasks
    assert again["values"] == {**shipped["values"], "acc_change": 0.0, "soft_change": 0.0}  # same noise, same samples
    assert again["se"] == {**shipped["se"], "acc_change": 0.0, "soft_change": 0.0}
    assert untrained["values"]["acc"] == 0.0
    assert untrained["values"]["acc_change"] == pytest.approx(-shipped["values"]["acc"])
    assert untrained["se"]["acc_change"] > 0
    # with several draws: the tasks whose draws hold a solved image, at least the mean accuracy
    assert shipped["values"]["solved_group"] >= shipped["values"]["acc"] > 0
    assert untrained["values"]["solved_group"] == 0.0


def test_solved_group_rate_counts_tasks_with_any_solved_draw():
    import torch

    acc = torch.tensor([0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.0])  # 4 tasks x 2 draws, consecutive
    rate, se = vvr_bases.solved_group_rate(acc, draws=2)
    assert rate == 0.5 and se == pytest.approx(0.25)
    assert vvr_bases.solved_group_rate(acc, draws=1) == (0.375, pytest.approx((0.375 * 0.625 / 8) ** 0.5))


@pytest.mark.parametrize("args, message", [(["--checkpoints", "x"], "name=path"),
                                           (["--checkpoints", "a=x", "--bins", "3"], "the easy pool has bins"),
                                           (["--checkpoints", "a=x", "--eval-n", "1"], "--eval-n must be at least 2")])
def test_bad_arguments_are_refused(args, message, capsys):
    with pytest.raises(SystemExit) as refused:
        vvr_bases.main(args)
    assert message in f"{refused.value}{capsys.readouterr().err}"  # parse_checkpoints exits with its message
