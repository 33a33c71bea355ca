"""``pipelines/av_position_probe.py``: does a tiny AV model place the shape from the prompt and the frame?"""
from __future__ import annotations

import json

import pytest
import torch

from visalign.generators.tiny_av import TinyAudioVideoConfig, TinyAudioVideoFlowGenerator
from visalign.toys.moving_shapes import WorldConfig, all_prompts, render_batch

from .conftest import load_pipeline_script

probe = load_pipeline_script("av_position_probe")
MODEL = load_pipeline_script("pretrain_av").MODEL


class Oracle:
    """A stand-in flow model whose velocity points exactly at known clean latents."""

    def __init__(self, x0: torch.Tensor) -> None:
        self.x0 = x0

    def encode(self, prompts):
        return None

    def time(self, level, x):
        return torch.full((x.shape[0],), level)

    def velocity(self, x, t, cond):
        return (x - self.x0) / t.view(-1, 1)


def test_an_exact_model_estimates_the_clean_clip_at_every_level():
    x0 = torch.randn(3, 10)
    for level in (1.0, 0.5):
        estimate = probe.clean_estimates(Oracle(x0), x0, ["p"] * 3, level, 2, torch.Generator().manual_seed(0))
        assert torch.allclose(estimate, x0, atol=1e-5)


def test_tracks_follow_each_prompts_motion_axis_and_the_correlation_scores_them():
    world = WorldConfig(fixed_motion=True)
    prompts = all_prompts(audio=True)
    video = render_batch(prompts, world, torch.Generator().manual_seed(0), audio=True)["video"]
    tracks = probe.motion_tracks(video, prompts)
    assert tracks.shape == (64, 8) and (tracks.std(1) > 2).all()  # every render crosses the frame on its axis
    assert torch.allclose(probe.correlation(tracks, tracks), torch.ones(64))
    assert torch.allclose(probe.correlation(tracks, -tracks), -torch.ones(64))
    assert probe.correlation(tracks, torch.ones_like(tracks)).eq(0).all()


def test_a_random_model_follows_only_the_noisy_input(tmp_path):
    """An untrained model's estimate is mostly its noisy input: no track at pure noise, the render's at half noise."""
    torch.manual_seed(0)
    TinyAudioVideoFlowGenerator(TinyAudioVideoConfig(**{**MODEL, "width": 32, "layers": 1},
                                                     num_steps=2)).save_pretrained(tmp_path / "random")
    result = tmp_path / "result.json"
    probe.main(["--checkpoints", f"random={tmp_path / 'random'}", "--levels", "1", "0.5", "--draws", "2",
                "--results", str(result)])
    row = json.loads(result.read_text())["rows"][0]["values"]
    assert abs(row["correlation/1"]) < 0.2 < 0.8 < row["correlation/0.5"]
    assert row["pos_std_across_frames"] == pytest.approx(0.02, abs=0.005)  # the table's random init, 0.02
    with pytest.raises(SystemExit):
        probe.main(["--checkpoints", f"random={tmp_path / 'random'}", "--levels", "0"])
