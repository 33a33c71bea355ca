"""``pipelines/vvr_from_level.py``: VVR scores of renders noised to a level and finished by a flow checkpoint."""
from __future__ import annotations

import json

import pytest

from visalign.generators.tiny import TinyFlowConfig, TinyFlowGenerator

from .conftest import load_pipeline_script

vvr_from_level = load_pipeline_script("vvr_from_level")


def test_each_level_is_scored_and_a_barely_noised_render_keeps_the_renders_score(tmp_path):
    TinyFlowGenerator(TinyFlowConfig(image_size=32, patch_size=4, text_hidden=32, vocab_buckets=64, max_length=24,
                                     num_steps=2)).save_pretrained(tmp_path / "flow")
    result = tmp_path / "result.json"
    vvr_from_level.main(["--checkpoints", f"f={tmp_path / 'flow'}", "--version", "1", "--eval-n", "12",
                         "--levels", "1", "0.001", "--results", str(result)])
    rows = {r["row"]: r for r in json.loads(result.read_text())["rows"]}
    assert set(rows) == {"renders_32px", "f/from_1", "f/from_0.001"}
    renders = rows["renders_32px"]["values"]["all_satisfied"]
    assert renders > 0.8
    assert rows["f/from_0.001"]["values"]["all_satisfied"] == pytest.approx(renders, abs=0.1)
    assert rows["f/from_1"]["values"]["all_satisfied"] < 0.2  # an untrained flow draws nothing from pure noise
    assert set(rows["f/from_1"]["se"]) == {"all_satisfied", "soft_reward"}


@pytest.mark.parametrize("args, message", [(["--checkpoints", "x", "--levels", "1"], "name=path"),
                                           (["--checkpoints", "a=x", "--levels", "0"], "--levels must lie in")])
def test_bad_arguments_are_refused(args, message, capsys):
    with pytest.raises(SystemExit) as refused:
        vvr_from_level.main(args)
    assert message in f"{refused.value}{capsys.readouterr().err}"  # parse_checkpoints exits with its message
