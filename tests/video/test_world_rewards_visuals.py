"""The moving-shapes world, video / audio-video rewards and features, image-only rewards refusing video, run pictures."""
from __future__ import annotations

import wave
from pathlib import Path

import pytest
import torch
from PIL import Image

from visalign.core.config import ConfigError
from visalign.core.reward import get_reward
from visalign.features import build_features
from visalign.rewards.video import AudioVideoSyncReward, ObjectColorReward, audio_envelope, best_lag
from visalign.toys.moving_shapes import (WorldConfig, all_prompts, event_frames, parse_prompt, prompt_phase, render_audio,
                                         render_batch, render_video)
from visalign.trainer.visuals import save_samples

from .conftest import AV_PROMPTS, VIDEO_PROMPTS


def _render(world, prompts, audio=False, seed=0):
    return render_batch(prompts, world, torch.Generator().manual_seed(seed), audio=audio)


def test_world_prompts_and_renders(small_world):
    assert len(all_prompts()) == 32 and len(all_prompts(audio=True)) == 64
    assert parse_prompt("A red circle bouncing left to right with a high beep").pitch == "high"
    with pytest.raises(ValueError, match="unknown colour 'purple'"):
        parse_prompt("a purple circle bouncing left to right")
    with pytest.raises(ValueError, match="not a moving-shapes prompt"):
        parse_prompt("a cat")
    clips = _render(small_world, AV_PROMPTS, audio=True)
    assert clips["video"].shape == (2, 3, 4, 8, 8) and clips["audio"].shape == (2, 1, 2048)
    assert clips["video"].min() >= -1 and clips["video"].max() <= 1 and clips["audio"].abs().max() <= 1
    red = clips["video"][0].flatten(1).amax(1)  # the red clip is red
    assert red[0] > 0.9 and red[1] < -0.9 and red[2] < -0.9


def test_audio_bursts_start_at_the_wall_contacts(small_world):
    spec = parse_prompt(AV_PROMPTS[0])
    video, audio = render_video(spec, small_world, phase=1, offset=0.5), render_audio(spec, small_world, phase=1)
    assert event_frames(1, 4) == [1, 3]
    centre = (video[0] > 0).float().nonzero()[:, [0, 2]]  # (frame, column) of red pixels
    columns = torch.stack([centre[centre[:, 0] == k, 1].float().mean() for k in range(4)])
    assert columns[1] > columns[0] and columns[3] < columns[2] and columns[1] == columns.max()
    env = audio_envelope(audio.unsqueeze(0), 4)[0]
    assert env[[1, 3]].min() > 5 * env[[0, 2]].max()


def test_event_frames_follow_the_phase():
    assert event_frames(0, 8) == [0, 4] and event_frames(1, 8) == [3, 7]
    with pytest.raises(ConfigError, match="sample_rate 256 must exceed twice the highest pitch"):
        WorldConfig(sample_rate=256)


def test_a_fixed_motion_world_draws_each_prompt_one_way_and_jitters_only_the_bursts():
    world = WorldConfig(fixed_motion=True, audio_jitter=0.5)
    prompts = all_prompts(audio=True)
    first, second = (render_batch(prompts, world, torch.Generator().manual_seed(s), audio=True) for s in (0, 1))
    assert torch.equal(first["video"], second["video"])  # the prompt fixes the motion
    assert {prompt_phase(parse_prompt(p), world.frames) for p in prompts} == {0, 1, 2, 3}
    assert not torch.equal(first["audio"], second["audio"])
    desync = get_reward("av_desync")
    lags = -desync(first, prompts, [{}] * len(prompts))
    assert 0 < lags.mean() and lags.max() <= 0.5  # quarter-frame resolution: off by 0.25 or 0.5 frames at most
    assert desync(render_batch(prompts, WorldConfig(fixed_motion=True), torch.Generator().manual_seed(0), audio=True),
                  prompts, [{}] * len(prompts)).eq(0).all()
    spec = parse_prompt(prompts[0])
    shifted = render_audio(spec, world, phase=0, shift=0.5)[0]
    onset = int(0.5 / world.fps * world.sample_rate)
    assert shifted[:onset - 1].abs().max() < 1e-6 < shifted[onset:onset + 8].abs().max()
    with pytest.raises(ConfigError, match="audio_jitter is in frames"):
        WorldConfig(audio_jitter=1.0)


def test_a_fixed_offset_world_keeps_the_phase_random_and_the_shape_across_the_middle():
    """A prompt still takes each of its phases over draws, but nothing else varies: 32 draws give exactly one clip
    per phase, the fixed-motion world's clip among them; with fixed_motion the option is refused as redundant."""
    world = WorldConfig(fixed_offset=True)
    prompt = all_prompts(audio=True)[0]
    clips = render_batch([prompt] * 32, world, torch.Generator().manual_seed(0))
    fixed = render_batch([prompt], WorldConfig(fixed_motion=True), torch.Generator().manual_seed(0))[0]
    assert len({tuple(clip.flatten().tolist()) for clip in clips}) == world.frames // 2
    assert any(torch.equal(clip, fixed) for clip in clips)
    with pytest.raises(ConfigError, match="fixed_motion already fixes the offset"):
        WorldConfig(fixed_motion=True, fixed_offset=True)


def test_object_color_prefers_the_prompted_colour(small_world):
    clips = _render(small_world, VIDEO_PROMPTS)
    reward = ObjectColorReward()
    right = reward(clips, VIDEO_PROMPTS, [{}, {}])
    wrong = reward(clips, ["a green circle bouncing left to right"] * 2, [{}, {}])
    assert (right > wrong + 0.5).all()
    clips.requires_grad_(True)
    reward(clips, VIDEO_PROMPTS, [{}, {}]).sum().backward()
    assert clips.grad.abs().sum() > 0  # differentiable (reward backprop)


def test_av_sync_scores_renders_high_and_detects_a_shift(small_world):
    clips = _render(small_world, AV_PROMPTS, audio=True)
    sync = AudioVideoSyncReward()(clips, AV_PROMPTS, [{}, {}])
    assert (sync > 0.7).all()
    frame = 2048 // 4
    shifted = {**clips, "audio": torch.roll(clips["audio"], frame, dims=2)}
    assert (AudioVideoSyncReward()(shifted, AV_PROMPTS, [{}, {}]) < sync - 0.5).all()
    long_clips = _render(WorldConfig(), AV_PROMPTS, audio=True)  # 8 frames: events repeat every 4, so lags ±1 differ
    assert best_lag(long_clips).tolist() == [0, 0]
    for lag in (1, -1):
        late = {**long_clips, "audio": torch.roll(long_clips["audio"], lag * 2048 // 8, dims=2)}
        assert best_lag(late).tolist() == [lag, lag]
    with pytest.raises(ValueError, match="av_sync.*audio_video.*got video samples"):
        AudioVideoSyncReward()(clips["video"], AV_PROMPTS, [{}, {}])


@pytest.mark.parametrize("name,kwargs", [("vvr", {}), ("toy_linear", {}), ("color_match", {})])
def test_image_only_rewards_name_the_modality(name, kwargs, small_world):
    clips = _render(small_world, AV_PROMPTS, audio=True)
    samples = clips if name == "color_match" else clips["video"]  # color_match scores images and video, not audio-video
    modality = "audio_video" if name == "color_match" else "video"
    with pytest.raises(ValueError, match=f"reward '{name}' scores .* only; got {modality} samples"):
        get_reward(name, **kwargs)(samples, AV_PROMPTS, [{"task": {}}] * 2)


def test_clip_pixels_refuse_video():
    from visalign.rewards.clip import clip_pixels

    with pytest.raises(ValueError, match="clip_score.*image samples only; got video samples"):
        clip_pixels(torch.zeros(2, 3, 4, 8, 8), 16)


def test_conv_features_per_frame_with_temporal_pooling(small_world):
    conv = build_features("conv")
    clips = _render(small_world, AV_PROMPTS, audio=True)
    video = clips["video"]
    f = conv(video)
    assert f.shape == (2, 4 * 32)
    # a still clip: the appearance half is that frame's image features, the motion half is zero
    still = video[:, :, :1].expand(-1, -1, 4, -1, -1)
    fs = conv(still)
    torch.testing.assert_close(fs[:, :64], conv(video[:, :, 0]))
    assert fs[:, 64:].abs().max() == 0 and f[:, 64:].abs().max() > 0
    assert conv(clips).shape == (2, 6 * 32)
    with pytest.raises(ValueError, match="'conv' encodes image, video or audio-video samples; got points"):
        conv(torch.zeros(2, 2))
    assert build_features("identity")(clips).shape == (2, 3 * 4 * 8 * 8 + 2048)  # shared numbers are left out


def test_video_and_av_pictures(small_world, tmp_path):
    video = _render(small_world, VIDEO_PROMPTS)
    png = save_samples(video, tmp_path / "v.png", VIDEO_PROMPTS, rewards=torch.tensor([0.5, -0.25]))
    assert png == tmp_path / "v.png" and Image.open(png).size[0] >= 4 * 64
    gif = Image.open(tmp_path / "v.gif")
    assert gif.n_frames == 4
    clips = _render(small_world, AV_PROMPTS, audio=True)
    png = save_samples(clips, tmp_path / "av.png", AV_PROMPTS, rewards=torch.tensor([0.9, 0.1]))
    assert Image.open(png).size[1] > Image.open(tmp_path / "v.png").size[1]  # the waveform strip under the frames
    assert Image.open(tmp_path / "av.gif").n_frames == 4
    for i in range(2):
        with wave.open(str(tmp_path / f"av_{i}.wav")) as f:
            assert f.getframerate() == 2048 and f.getnframes() == 2048 and f.getnchannels() == 1
            pcm = torch.frombuffer(bytearray(f.readframes(2048)), dtype=torch.int16).float() / 32767
        torch.testing.assert_close(pcm, clips["audio"][i, 0], atol=1e-4, rtol=0)
    assert not Path(tmp_path / "av_2.wav").exists()
