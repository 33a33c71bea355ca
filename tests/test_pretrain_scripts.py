"""The tiny video / audio-video pretraining recipes: model size options, continuing from a checkpoint, and the
training figures they record."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from visalign.toys.video_pretrain import training_record

from .conftest import load_pipeline_script

pretrain_av = load_pipeline_script("pretrain_av")
pretrain_video = load_pipeline_script("pretrain_video")


def _run(tmp_path: Path, name: str, *extra: str) -> dict:
    assets = tmp_path / name
    pretrain_av.main(["--steps", "3", "--assets", str(assets), "--out", str(tmp_path / f"{name}_pics"), *extra])
    return json.loads((assets / "pretrain_metrics.json").read_text())


def test_width_and_layers_set_the_model_and_init_continues_it(tmp_path):
    first = _run(tmp_path, "small", "--width", "32", "--layers", "1")
    config = json.loads((tmp_path / "small" / "tiny_av_flow" / "generator.json").read_text())["config"]
    assert (config["width"], config["layers"]) == (32, 1)
    assert (first["flow_matching"]["width"], first["flow_matching"]["layers"], first["flow_matching"]["steps"]) == (32, 1, 3)

    second = _run(tmp_path, "continued", "--init", str(tmp_path / "small" / "tiny_av_flow"), "--steps", "1")
    assert second["flow_matching"]["init"] == str(tmp_path / "small" / "tiny_av_flow")
    assert (second["flow_matching"]["width"], second["flow_matching"]["layers"]) == (32, 1)
    before = load_file(tmp_path / "small" / "tiny_av_flow" / "model.safetensors")
    after = load_file(tmp_path / "continued" / "tiny_av_flow" / "model.safetensors")
    assert before.keys() == after.keys()
    # one AdamW step at the warmup's first learning rate (2% of 1e-3) moves each weight by about 2e-5: the run
    # started from the checkpoint and trained it
    assert any(not torch.equal(before[k], after[k]) for k in before)
    assert all(torch.allclose(before[k], after[k], atol=1e-4) for k in before)

    # measuring the checkpoint reports the size and training it recorded
    measured = tmp_path / "measured.json"
    pretrain_av.main(["--pictures-only", "--assets", str(tmp_path / "continued"), "--out", str(tmp_path / "pics"),
                      "--results", str(measured)])
    flow_row = next(r for r in json.loads(measured.read_text())["rows"] if r["row"] == "tiny_av_flow")
    assert {k: flow_row["info"][k] for k in ("width", "layers", "steps")} == {"width": 32, "layers": 1, "steps": 1}


@pytest.mark.parametrize("option", [["--width", "32"], ["--adaptive-norm"], ["--sample-prediction"]])
def test_init_refuses_a_model_option(tmp_path, capsys, option):
    with pytest.raises(SystemExit):
        pretrain_av.main(["--init", str(tmp_path), *option])
    assert "take the model from the checkpoint" in capsys.readouterr().err


def test_a_short_run_records_its_loss_means_over_the_steps_it_ran(tmp_path):
    """Fewer than 20 steps: the first- and last-20 means are both the mean of every step, not a sum over 20."""
    assets = tmp_path / "video"
    pretrain_video.main(["--flow-steps", "3", "--distill-steps", "2", "--batch", "4", "--assets", str(assets),
                         "--out", str(tmp_path / "pics")])
    metrics = json.loads((assets / "pretrain_metrics.json").read_text())
    for key, steps in (("flow", 3), ("one_step", 2)):
        assert metrics[key]["steps"] == steps
        assert metrics[key]["loss_first20"] == metrics[key]["loss_last20"] > 0
    assert (assets / "tiny_video_flow" / "model.safetensors").is_file()
    assert (assets / "tiny_video_one_step" / "model.safetensors").is_file()


def test_training_record_averages_over_the_steps_a_short_run_has():
    assert training_record([1.0, 2.0, 3.0], 1.234) == {"steps": 3, "seconds": 1.2, "loss_first20": 2.0, "loss_last20": 2.0}
    losses = [float(i) for i in range(30)]
    assert training_record(losses, 0.0)["loss_first20"] == 9.5 and training_record(losses, 0.0)["loss_last20"] == 19.5


def test_decoupled_times_are_recorded_and_bad_values_refused(tmp_path, capsys):
    metrics = _run(tmp_path, "decoupled", "--width", "32", "--layers", "1", "--decoupled-times", "0.5")
    assert metrics["flow_matching"]["decoupled_times"] == 0.5
    assert "decoupled_times" not in _run(tmp_path, "plain", "--width", "32", "--layers", "1")["flow_matching"]
    for bad, message in ((["--decoupled-times", "1.5"], "fraction in [0, 1]"),
                         (["--pictures-only", "--decoupled-times", "0.5"], "trains nothing")):
        with pytest.raises(SystemExit):
            pretrain_av.main(["--assets", str(tmp_path / "x"), *bad])
        assert message in capsys.readouterr().err


def test_init_can_continue_a_checkpoint_under_a_cross_attention_window(tmp_path):
    """--cross-frames with --init: the window is a mask, so the checkpoint's weights continue under it."""
    _run(tmp_path, "full", "--width", "32", "--layers", "1")
    metrics = _run(tmp_path, "windowed", "--init", str(tmp_path / "full" / "tiny_av_flow"), "--steps", "1",
                   "--cross-frames", "0")
    assert metrics["flow_matching"]["cross_frames"] == 0
    config = json.loads((tmp_path / "windowed" / "tiny_av_flow" / "generator.json").read_text())["config"]
    assert (config["cross_frames"], config["width"]) == (0, 32)
    before = load_file(tmp_path / "full" / "tiny_av_flow" / "model.safetensors")
    after = load_file(tmp_path / "windowed" / "tiny_av_flow" / "model.safetensors")
    assert before.keys() == after.keys()
    assert all(torch.allclose(before[k], after[k], atol=1e-4) for k in before)  # one warmup step from the same weights


def test_init_can_switch_on_the_shared_time_features(tmp_path, capsys):
    """--shared-time with --init: the features are a fixed table, so the checkpoint's weights continue under them."""
    _run(tmp_path, "plain", "--width", "32", "--layers", "1")
    metrics = _run(tmp_path, "timed", "--init", str(tmp_path / "plain" / "tiny_av_flow"), "--steps", "1", "--shared-time")
    assert metrics["flow_matching"]["shared_time"] is True
    config = json.loads((tmp_path / "timed" / "tiny_av_flow" / "generator.json").read_text())["config"]
    assert (config["shared_time"], config["width"]) == (True, 32)
    with pytest.raises(SystemExit):
        pretrain_av.main(["--pictures-only", "--shared-time", "--assets", str(tmp_path / "timed")])
    assert "measures the checkpoint as it is" in capsys.readouterr().err


def test_time_shift_trains_and_samples_with_the_shift_and_is_recorded(tmp_path, capsys):
    """--time-shift s: recorded, stored as the checkpoint's sampling shift, also when continuing a checkpoint."""
    metrics = _run(tmp_path, "shifted", "--width", "32", "--layers", "1", "--time-shift", "3")
    assert metrics["flow_matching"]["time_shift"] == 3.0
    config = json.loads((tmp_path / "shifted" / "tiny_av_flow" / "generator.json").read_text())["config"]
    assert config["shift"] == 3.0
    _run(tmp_path, "plain", "--width", "32", "--layers", "1")
    continued = _run(tmp_path, "continued", "--init", str(tmp_path / "plain" / "tiny_av_flow"), "--steps", "1",
                     "--time-shift", "2", "--cross-frames", "0")
    assert continued["flow_matching"]["time_shift"] == 2.0
    config = json.loads((tmp_path / "continued" / "tiny_av_flow" / "generator.json").read_text())["config"]
    assert (config["shift"], config["cross_frames"], config["width"]) == (2.0, 0, 32)
    for bad, message in ((["--time-shift", "0"], "--time-shift must be > 0"),
                         (["--pictures-only", "--time-shift", "3"], "trains nothing")):
        with pytest.raises(SystemExit):
            pretrain_av.main(["--assets", str(tmp_path / "x"), *bad])
        assert message in capsys.readouterr().err


def test_new_models_take_the_architecture_options_and_init_adds_convolutions(tmp_path, capsys):
    """--adaptive-norm / --conv-channels set a new model's architecture; --conv-channels with --init grows the
    checkpoint (every weight kept, the new convolutions added) and continues it."""
    metrics = _run(tmp_path, "new", "--width", "32", "--layers", "1", "--adaptive-norm", "--conv-channels", "4")
    config = json.loads((tmp_path / "new" / "tiny_av_flow" / "generator.json").read_text())["config"]
    assert (config["time_conditioning"], config["conv_channels"]) == ("adaptive_norm", 4)
    assert (metrics["flow_matching"]["time_conditioning"], metrics["flow_matching"]["conv_channels"]) == ("adaptive_norm", 4)
    _run(tmp_path, "plain", "--width", "32", "--layers", "1")
    grown = _run(tmp_path, "grown", "--init", str(tmp_path / "plain" / "tiny_av_flow"), "--steps", "1",
                 "--conv-channels", "4")
    assert grown["flow_matching"]["conv_channels"] == 4
    before = load_file(tmp_path / "plain" / "tiny_av_flow" / "model.safetensors")
    after = load_file(tmp_path / "grown" / "tiny_av_flow" / "model.safetensors")
    assert set(after) - set(before) and all(k.startswith("backbone.video_conv.") for k in set(after) - set(before))
    kept = [k for k in before if k != "backbone.video_tower.proj_in.weight"]
    assert all(torch.allclose(before[k], after[k], atol=1e-4) for k in kept)  # one warmup step from the same weights
    with pytest.raises(SystemExit):
        pretrain_av.main(["--pictures-only", "--conv-channels", "4", "--assets", str(tmp_path / "plain")])
    assert "measures the checkpoint as it is" in capsys.readouterr().err


def test_ot_coupling_over_several_clips_per_prompt_is_recorded_and_bad_groupings_refused(tmp_path, capsys):
    metrics = _run(tmp_path, "coupled", "--width", "32", "--layers", "1", "--batch", "8", "--clips-per-prompt", "4",
                   "--ot-coupling")
    assert (metrics["flow_matching"]["clips_per_prompt"], metrics["flow_matching"]["ot_coupling"]) == (4, True)
    plain = _run(tmp_path, "plain", "--width", "32", "--layers", "1")["flow_matching"]
    assert "clips_per_prompt" not in plain and "ot_coupling" not in plain
    for bad, message in ((["--clips-per-prompt", "5"], "must divide --batch (32)"),
                         (["--ot-coupling"], "set --clips-per-prompt > 1"),
                         (["--pictures-only", "--clips-per-prompt", "4"], "trains nothing")):
        with pytest.raises(SystemExit):
            pretrain_av.main(["--assets", str(tmp_path / "x"), *bad])
        assert message in capsys.readouterr().err


def test_the_fixed_motion_world_options_are_recorded_and_bad_jitter_refused(tmp_path, capsys):
    metrics = _run(tmp_path, "fixed", "--width", "32", "--layers", "1", "--fixed-motion", "--audio-jitter", "0.5")
    assert (metrics["flow_matching"]["fixed_motion"], metrics["flow_matching"]["audio_jitter"]) == (True, 0.5)
    assert metrics["renders"]["av_sync"] < _run(tmp_path, "plain", "--width", "32", "--layers", "1")["renders"]["av_sync"]
    with pytest.raises(SystemExit):
        pretrain_av.main(["--assets", str(tmp_path / "x"), "--audio-jitter", "1"])
    assert "--audio-jitter is in frames" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        pretrain_av.main(["--assets", str(tmp_path / "x"), "--fixed-motion", "--fixed-offset"])
    assert "--fixed-motion already fixes the offset" in capsys.readouterr().err


def test_sample_prediction_builds_a_sample_predicting_model_and_is_recorded_only_when_set(tmp_path):
    metrics = _run(tmp_path, "sample", "--width", "32", "--layers", "1", "--sample-prediction")
    assert metrics["flow_matching"]["prediction"] == "sample"
    config = json.loads((tmp_path / "sample" / "tiny_av_flow" / "generator.json").read_text())["config"]
    assert config["prediction"] == "sample"
    continued = _run(tmp_path, "continued", "--init", str(tmp_path / "sample" / "tiny_av_flow"), "--steps", "1")
    assert continued["flow_matching"]["prediction"] == "sample"  # taken from the checkpoint
    assert "prediction" not in _run(tmp_path, "plain", "--width", "32", "--layers", "1")["flow_matching"]


def test_sample_space_loss_is_recorded_only_when_set_and_refused_when_nothing_trains(tmp_path, capsys):
    metrics = _run(tmp_path, "xspace", "--width", "32", "--layers", "1", "--sample-prediction", "--sample-space-loss")
    assert (metrics["flow_matching"]["loss_space"], metrics["flow_matching"]["prediction"]) == ("sample", "sample")
    assert "loss_space" not in _run(tmp_path, "plain", "--width", "32", "--layers", "1")["flow_matching"]
    with pytest.raises(SystemExit):
        pretrain_av.main(["--pictures-only", "--assets", str(tmp_path / "xspace"), "--sample-space-loss"])
    assert "--pictures-only trains nothing" in capsys.readouterr().err


def test_the_shipped_fixed_motion_base_loads_and_records_how_it_was_trained():
    from visalign.core.generator import load_generator
    from visalign.toys.moving_shapes import all_prompts

    folder = Path(__file__).resolve().parents[1] / "assets" / "av_fixed"
    model = load_generator(folder / "tiny_av_flow")
    assert (model.config.prediction, model.config.cross_frames, model.config.width) == ("sample", 0, 64)
    record = json.loads((folder / "pretrain_metrics.json").read_text())["flow_matching"]
    assert {k: record[k] for k in ("steps", "loss_space", "prediction", "fixed_motion", "audio_jitter")} == {
        "steps": 4000, "loss_space": "sample", "prediction": "sample", "fixed_motion": True, "audio_jitter": 0.5}
    samples = model.sample(all_prompts(audio=True)[:2], generator=torch.Generator().manual_seed(0))
    assert torch.isfinite(samples["video"]).all() and torch.isfinite(samples["audio"]).all()
