"""Weight-free audio-video verifiers on rendered bouncing clips with known desync, noise, counts and pitch."""
import pytest
import torch

from visalign.core import build_reward
from visalign.rewards.av_verifiers import (AudioAlignment, AudioQuality, Desync, VideoAlignment, VideoQuality, parse_asks)
from visalign.toys.av_toy import ToyAVConfig, ToyAVFlow, toy_av_data

CFG = ToyAVConfig()
HIGH = "a red circle bouncing left to right with a high beep"


def clips(n=8, seed=0, prompts=None):
    prompts = prompts or [HIGH] * n
    return toy_av_data(prompts, CFG, torch.Generator().manual_seed(seed), max_jitter=0), prompts


def decode(latents):
    return ToyAVFlow(CFG).decode(latents)


def score(reward, latents, prompts):
    return reward(decode(latents), prompts, [{}] * len(prompts))


def shift_audio(latents, half_frames):
    out = latents.clone()
    env = out[:, CFG.frames: 3 * CFG.frames]
    out[:, CFG.frames: 3 * CFG.frames] = torch.roll(env, half_frames, dims=1)
    return out


def test_desync_reads_the_lag_in_frames():
    x, prompts = clips()
    assert torch.equal(score(Desync(), x, prompts), torch.zeros(8))
    for half_frames, frames in ((1, 0.5), (2, 1.0), (-2, 1.0), (3, 1.5)):
        assert torch.allclose(score(Desync(), shift_audio(x, half_frames), prompts), torch.full((8,), -frames)), half_frames


def test_quality_falls_with_noise():
    x, prompts = clips()
    noisy = x.clone()
    noisy[:, : CFG.frames] += 0.3 * torch.randn(8, CFG.frames, generator=torch.Generator().manual_seed(1))
    assert score(VideoQuality(), x, prompts).max() > -0.01
    assert (score(VideoQuality(), noisy, prompts) < score(VideoQuality(), x, prompts) - 0.02).all()
    hissy = x.clone()
    hissy[:, CFG.frames: 3 * CFG.frames] += 0.5  # a loud floor between the bursts
    assert score(AudioQuality(), x, prompts).min() > 20
    assert (score(AudioQuality(), hissy, prompts) < score(AudioQuality(), x, prompts) - 10).all()


def test_alignment_counts_events_and_checks_pitch_and_direction():
    x, prompts = clips(4, prompts=[HIGH, HIGH.replace("high", "low"), HIGH, HIGH])
    assert torch.equal(score(AudioAlignment(), x, prompts), torch.ones(4))
    assert torch.equal(score(VideoAlignment(), x, prompts), torch.ones(4))
    swapped = [HIGH.replace("high", "low"), HIGH, "a red circle bouncing left to right 3 times with a high beep",
               "a red circle bouncing right to left with a high beep"]
    assert score(AudioAlignment(), x, swapped).tolist() == [0.5, 0.5, 0.5, 1.0]  # wrong pitch, wrong pitch, wrong count
    assert score(VideoAlignment(), x, swapped).tolist()[2:] == pytest.approx([2 / 3, 2 / 3])  # count; direction


def test_prompt_asks_and_bad_input():
    ask = parse_asks("a blue square bouncing top to bottom twice with a low beep", {}, 2)
    assert (ask.events, ask.motion, ask.pitch) == (2, (1, 1), 256.0)  # y axis, downwards
    assert parse_asks("a red circle", {"events": 3}, 2).events == 3
    with pytest.raises(ValueError, match="scores audio_video samples only; got image"):
        build_reward("av_desync")(torch.zeros(2, 3, 8, 8), ["a", "b"], [{}, {}])
    with pytest.raises(ValueError, match="max_lag must be > 0"):
        Desync(max_lag=0)
    with pytest.raises(ValueError, match="min_travel is a fraction of the frame"):
        build_reward({"name": "av_video_quality", "min_travel": 1.5})


def test_moving_shapes_renders_score_perfectly_and_a_late_track_is_caught():
    from visalign.toys.moving_shapes import WorldConfig, all_prompts, render_batch

    world = WorldConfig()
    prompts = all_prompts(audio=True)[::8]
    x = render_batch(prompts, world, torch.Generator().manual_seed(0), audio=True)
    meta = [{}] * len(prompts)
    assert score_av(VideoQuality(), x, prompts).min() > -0.01 and score_av(AudioQuality(), x, prompts).min() > 40
    for reward in (VideoAlignment(), AudioAlignment()):
        assert torch.equal(score_av(reward, x, prompts), torch.ones(len(prompts)))
    assert torch.equal(score_av(Desync(), x, prompts), torch.zeros(len(prompts)))
    late = dict(x, audio=torch.roll(x["audio"], world.sample_rate // int(world.fps), dims=2))  # one frame later
    assert torch.equal(Desync()(late, prompts, meta), torch.full((len(prompts),), -1.0))


def score_av(reward, samples, prompts):
    return reward(samples, prompts, [{}] * len(prompts))


def test_video_quality_needs_an_object_that_travels():
    """Speckle and a still shape fit any motion model (their track sits still); the travel term scores them below a
    bounce. Without it (min_travel 0) speckle scores within 0.01 of the clean bounce: the loophole it closes."""
    from visalign.toys.moving_shapes import WorldConfig, all_prompts, render_batch

    prompts = all_prompts(audio=True)[::8]
    x = render_batch(prompts, WorldConfig(), torch.Generator().manual_seed(0), audio=True)
    speckle = dict(x, video=torch.rand(x["video"].shape, generator=torch.Generator().manual_seed(1)) * 2 - 1)
    still = dict(x, video=x["video"][:, :, :1].expand_as(x["video"]).clone())
    bounce = score_av(VideoQuality(), x, prompts)
    for gamed in (speckle, still):
        assert (score_av(VideoQuality(min_travel=0), gamed, prompts) > bounce - 0.01).all()
        assert (score_av(VideoQuality(), gamed, prompts) < bounce - 0.25).all()
    assert torch.equal(score_av(VideoQuality(min_travel=0), x, prompts), bounce)  # renders travel 0.6 > 0.3


def test_video_quality_tolerance_forgives_residuals_up_to_that_many_pixels():
    """With ``tolerance_px`` the residual counts only beyond it: renders (≤ 0.01 px) score 0, a track one frame of
    which is pushed a pixel off scores its residual less exactly the tolerance, and tolerance 0 is the default."""
    from visalign.toys.moving_shapes import WorldConfig, all_prompts, render_batch

    prompts = all_prompts(audio=True)[::8]
    x = render_batch(prompts, WorldConfig(), torch.Generator().manual_seed(0), audio=True)
    assert torch.equal(score_av(VideoQuality(tolerance_px=0.0), x, prompts), score_av(VideoQuality(), x, prompts))
    assert torch.equal(score_av(VideoQuality(tolerance_px=0.05), x, prompts), torch.zeros(len(prompts)))
    video = x["video"].clone()
    video[:, :, 3] = torch.roll(video[:, :, 3], shifts=(1, 1), dims=(-2, -1))  # frame 3 one pixel down and right
    moved = dict(x, video=video)
    full = score_av(VideoQuality(), moved, prompts)
    assert (full < -0.005).all()  # residual above 0.075 px on a 16 px frame (the renders: ≤ 0.01 px)
    forgiven = score_av(VideoQuality(tolerance_px=0.05), moved, prompts)
    assert torch.allclose(forgiven, full + 0.05 / 15, atol=1e-6)
    assert torch.equal(score_av(VideoQuality(tolerance_px=100.0), moved, prompts), torch.zeros(len(prompts)))
    for bad in (-0.1, float("nan")):
        with pytest.raises(ValueError, match="tolerance_px is a non-negative number of pixels"):
            build_reward({"name": "av_video_quality", "tolerance_px": bad})
