"""``pipelines/av_cross_modal.py``: av_sync of joint samples and of one modality generated for a rendered partner."""
from __future__ import annotations

import json

import pytest

from visalign.generators.tiny_av import TinyAudioVideoConfig, TinyAudioVideoFlowGenerator

from .conftest import load_pipeline_script

av_cross_modal = load_pipeline_script("av_cross_modal")
MODEL = load_pipeline_script("pretrain_av").MODEL


def test_each_checkpoint_gets_the_three_conditions_with_standard_errors(tmp_path):
    for name, window in (("full", None), ("windowed", 0)):
        TinyAudioVideoFlowGenerator(TinyAudioVideoConfig(**{**MODEL, "width": 32, "layers": 1}, num_steps=2,
                                                         cross_frames=window)).save_pretrained(tmp_path / name)
    result = tmp_path / "result.json"
    av_cross_modal.main(["--checkpoints", f"full={tmp_path / 'full'}", f"windowed={tmp_path / 'windowed'}",
                         "--draws", "1", "--out", str(tmp_path / "pics"), "--results", str(result)])
    rows = {r["row"]: r for r in json.loads(result.read_text())["rows"]}
    assert set(rows) == {"renders", "full", "windowed"}
    assert rows["renders"]["values"]["av_sync"] > 0.7  # the world's own clips are in sync
    for name in ("full", "windowed"):
        assert set(rows[name]["values"]) == set(rows[name]["se"]) == set(av_cross_modal.CONDITIONS)
        assert all(-1 <= v <= 1 for v in rows[name]["values"].values())
        assert (tmp_path / "pics" / f"{name}_given_video.png").is_file()


def test_checkpoints_of_another_world_are_refused(tmp_path, capsys):
    for name, size in (("a", {}), ("b", {"image_size": 8, "patch_size": 4})):
        TinyAudioVideoFlowGenerator(TinyAudioVideoConfig(**{**MODEL, "width": 32, "layers": 1, **size},
                                                         num_steps=2)).save_pretrained(tmp_path / name)
    with pytest.raises(SystemExit):
        av_cross_modal.main(["--checkpoints", f"a={tmp_path / 'a'}", f"b={tmp_path / 'b'}", "--out", str(tmp_path / "o")])
    assert "renders another world" in capsys.readouterr().err


def test_from_levels_add_one_condition_per_level_and_bad_levels_are_refused(tmp_path, capsys):
    TinyAudioVideoFlowGenerator(TinyAudioVideoConfig(**{**MODEL, "width": 32, "layers": 1},
                                                     num_steps=2)).save_pretrained(tmp_path / "m")
    result = tmp_path / "result.json"
    av_cross_modal.main(["--checkpoints", f"m={tmp_path / 'm'}", "--draws", "1", "--from-levels", "1", "0.01",
                         "--out", str(tmp_path / "pics"), "--results", str(result)])
    row = next(r for r in json.loads(result.read_text())["rows"] if r["row"] == "m")
    assert set(row["values"]) == {*av_cross_modal.CONDITIONS, "from_1", "from_0.01"}
    # finishing a render noised to 1% barely changes it: nearly the renders' own sync, unlike a random model's samples
    assert row["values"]["from_0.01"] > 0.7 and row["values"]["from_1"] < 0.5
    with pytest.raises(SystemExit):
        av_cross_modal.main(["--checkpoints", f"m={tmp_path / 'm'}", "--from-levels", "1.5"])
    assert "--from-levels must lie in (0, 1]" in capsys.readouterr().err


def test_video_quality_scores_the_video_the_model_made(tmp_path):
    """--video-quality: av_video_quality per condition whose video the model generated (not the given render's); a
    render noised to 1% and finished keeps its bounce, a random model's free samples do not."""
    TinyAudioVideoFlowGenerator(TinyAudioVideoConfig(**{**MODEL, "width": 32, "layers": 1},
                                                     num_steps=2)).save_pretrained(tmp_path / "m")
    result = tmp_path / "result.json"
    av_cross_modal.main(["--checkpoints", f"m={tmp_path / 'm'}", "--draws", "1", "--from-levels", "1", "0.01",
                         "--video-quality", "--out", str(tmp_path / "pics"), "--results", str(result)])
    values = next(r for r in json.loads(result.read_text())["rows"] if r["row"] == "m")["values"]
    assert {k for k in values if k.startswith("video_quality/")} == {
        "video_quality/joint", "video_quality/given_audio", "video_quality/from_1", "video_quality/from_0.01"}
    assert values["video_quality/from_0.01"] > -0.01 > values["video_quality/joint"]
