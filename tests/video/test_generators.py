"""Built-in tiny video and audio-video generators: shapes and ranges, seeds, checkpoints, the AV latent and towers."""
from __future__ import annotations

import pytest
import torch

from visalign.core.config import ConfigError
from visalign.core.generator import build_generator, load_generator
from visalign.core.types import modality_of
from visalign.generators import TinyAudioVideoConfig, TinyAudioVideoFlowGenerator, TinyVideoFlowConfig, add_frame_convs

from .conftest import AV_PROMPTS, SMALL, SMALL_AV, VIDEO_PROMPTS


def _seeded(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("name", ["video_one_step", "video_flow"])
def test_video_shapes_range_and_seeds(name, request):
    gen = request.getfixturevalue(name)
    x = gen.sample(VIDEO_PROMPTS, generator=_seeded(1), num_samples=2)
    assert x.shape == (4, 3, 4, 8, 8) and modality_of(x) == "video"
    assert x.min() >= -1 and x.max() <= 1 and x.std() > 0.01
    torch.testing.assert_close(x, gen.sample(VIDEO_PROMPTS, generator=_seeded(1), num_samples=2), rtol=0, atol=0)
    assert not torch.equal(x, gen.sample(VIDEO_PROMPTS, generator=_seeded(2), num_samples=2))


def test_av_samples_are_the_audio_video_dict(av_flow):
    x = av_flow.sample(AV_PROMPTS, generator=_seeded(1))
    assert modality_of(x) == "audio_video"
    assert x["video"].shape == (2, 3, 4, 8, 8) and x["audio"].shape == (2, 1, 2048)
    assert x["sample_rate"] == 2048 and x["fps"] == 4.0
    for part in (x["video"], x["audio"]):
        assert part.min() >= -1 and part.max() <= 1 and part.std() > 0.01
    again = av_flow.sample(AV_PROMPTS, generator=_seeded(1))
    assert torch.equal(x["video"], again["video"]) and torch.equal(x["audio"], again["audio"])
    assert not torch.equal(x["audio"], av_flow.sample(AV_PROMPTS, generator=_seeded(2))["audio"])


@pytest.mark.parametrize("name", ["video_one_step", "video_flow", "av_flow"])
def test_save_load_round_trip_is_exact(name, request, tmp_path):
    gen = request.getfixturevalue(name)
    gen.save_pretrained(tmp_path / name)
    loaded = load_generator(tmp_path / name)
    assert type(loaded) is type(gen) and loaded.config == gen.config
    noise = gen.make_noise(2, _seeded())
    prompts = AV_PROMPTS if name == "av_flow" else VIDEO_PROMPTS
    a, b = gen.sample(prompts, noise=noise), loaded.sample(prompts, noise=noise)
    for key in ("video", "audio") if name == "av_flow" else (None,):
        torch.testing.assert_close(a[key] if key else a, b[key] if key else b, rtol=0, atol=0)


def test_av_latent_split_join_and_decode(av_flow):
    x = av_flow.make_noise(3, _seeded())
    parts = av_flow.split_latents(x)
    assert parts["video"].shape == (3, 3 * 4 * 8 * 8) and parts["audio"].shape == (3, 2048)
    assert torch.equal(av_flow.join_latents(parts), x)
    decoded = av_flow.decode(x.clamp(-1, 1))
    assert torch.equal(av_flow.encode_samples(decoded), x.clamp(-1, 1))
    with pytest.raises(ValueError, match="tiny_av_flow expects video"):
        av_flow.encode_samples({"video": decoded["video"][:, :, :2], "audio": decoded["audio"]})


def test_av_towers_partition_every_parameter(av_flow):
    names = {n for n, _ in av_flow.named_parameters()}
    video = {n for n, _ in av_flow.tower_parameters("video")}
    audio = {n for n, _ in av_flow.tower_parameters("audio")}
    shared = {n for n, _ in av_flow.shared_parameters()}
    assert video and audio and not video & audio
    assert video | audio | shared == names
    assert all(n.startswith(("backbone.text_encoder.", "backbone.embedding.")) for n in shared)
    # the cross-attention into each modality (and its projection of the other tower's tokens) is that tower's
    assert any("attn2" in n for n in video) and any("other_proj" in n for n in audio)


def test_av_towers_see_each_other(av_flow):
    """Cross-attention both ways: changing the video part of the latent changes the audio velocity, and back."""
    x = av_flow.make_noise(2, _seeded())
    t = torch.full((2,), 0.5)
    cond = av_flow.encode(AV_PROMPTS)
    v = av_flow.velocity(x, t, cond)
    s = av_flow.latent_slices()
    x_video = x.clone()
    x_video[:, s["video"]] += 1.0
    x_audio = x.clone()
    x_audio[:, s["audio"]] += 1.0
    assert (av_flow.velocity(x_video, t, cond)[:, s["audio"]] - v[:, s["audio"]]).abs().max() > 1e-4
    assert (av_flow.velocity(x_audio, t, cond)[:, s["video"]] - v[:, s["video"]]).abs().max() > 1e-4


def test_prompts_change_the_clip(video_flow):
    noise = video_flow.make_noise(2, _seeded())
    a = video_flow.sample(VIDEO_PROMPTS, noise=noise)
    b = video_flow.sample(["a yellow square bouncing right to left"] * 2, noise=noise)
    assert (a - b).abs().amax(dim=(1, 2, 3, 4)).min() > 1e-4


def test_bad_configs_name_the_key():
    with pytest.raises(ConfigError, match="patch_size"):
        TinyVideoFlowConfig(**{**SMALL, "patch_size": 3})
    with pytest.raises(ConfigError, match="audio_patch"):
        TinyAudioVideoConfig(**{**SMALL_AV, "audio_patch": 300})
    with pytest.raises(ConfigError, match="layerz"):
        build_generator({"name": "tiny_video_flow", "layerz": 2})


def test_shared_time_gives_audio_and_video_of_one_moment_the_same_position_feature(tmp_path):
    """generator.shared_time: the video tokens of frame k and the audio token starting at k / fps carry the same time
    features (and different moments differ); the model saves, loads and samples as exactly as without it."""
    torch.manual_seed(0)
    gen = TinyAudioVideoFlowGenerator(TinyAudioVideoConfig(**SMALL_AV, num_steps=2, shared_time=True))
    backbone = gen.backbone
    per_frame, per_chunk = (8 // 4) ** 2, 256 / 2048  # video tokens per frame; seconds per audio token
    for k in range(4):
        chunk = round(k / 4.0 / per_chunk)
        for token in range(k * per_frame, (k + 1) * per_frame):
            torch.testing.assert_close(backbone.video_time[token], backbone.audio_time[chunk], rtol=0, atol=1e-6)
    times = backbone.audio_time
    assert torch.cdist(times, times).fill_diagonal_(1.0).min() > 0.1  # every audio token's moment is told apart
    gen.save_pretrained(tmp_path / "av")
    loaded = load_generator(tmp_path / "av")
    assert loaded.config.shared_time
    noise = gen.make_noise(2, _seeded())
    torch.testing.assert_close(gen.sample(AV_PROMPTS, noise=noise)["audio"], loaded.sample(AV_PROMPTS, noise=noise)["audio"],
                               rtol=0, atol=0)
    plain = TinyAudioVideoFlowGenerator(TinyAudioVideoConfig(**SMALL_AV, num_steps=2))
    plain.load_state_dict(gen.state_dict())  # the time features are not weights: the same weights load either way
    assert (plain.velocity(noise, torch.full((2,), 0.5), plain.encode(AV_PROMPTS))
            - gen.velocity(noise, torch.full((2,), 0.5), gen.encode(AV_PROMPTS))).abs().max() > 1e-4


@pytest.mark.parametrize("name", ["tiny_video_flow", "tiny_av_flow"])
def test_adaptive_norm_conditions_every_block_on_the_time(name, tmp_path):
    """generator.time_conditioning = adaptive_norm: each block's norms (and the output norm) are scaled and shifted
    by the time/prompt vector instead of that vector being added to the tokens; the model computes, saves and loads
    exactly, and its towers still partition the parameters."""
    gen, prompts = _with_options(name, time_conditioning="adaptive_norm")
    blocks = [m for n, m in gen.named_modules() if n.endswith(("blocks.0", "blocks.0.norm1"))]
    assert any(type(m).__name__ == "AdaLayerNormContinuous" for m in blocks)
    _check_time_save_load_partition(gen, prompts, tmp_path)
    if name == "tiny_av_flow":
        assert any("norm1.linear" in n for n, _ in gen.tower_parameters("audio"))
    assert build_generator({"name": name, **_small(name)}).config.time_conditioning == "add"  # older checkpoints
    with pytest.raises(ConfigError, match="time_conditioning: 'film' is not one of"):
        build_generator({"name": name, **_small(name), "time_conditioning": "film"})


@pytest.mark.parametrize("name", ["tiny_video_flow", "tiny_av_flow"])
def test_conv_channels_wrap_the_video_tokens_in_per_frame_convolutions(name, tmp_path):
    """generator.conv_channels: a convolutional stem before patching and a head after it. The head's last layer
    starts at zero, so a fresh head leaves the token tower's output as it is (changing the head's first layer
    changes nothing); once trained, it adds to it. The convolutions belong to the video tower."""
    gen, prompts = _with_options(name, conv_channels=8)
    _check_time_save_load_partition(gen, prompts, tmp_path)
    if name == "tiny_av_flow":
        assert any(n.startswith("backbone.video_conv.") for n, _ in gen.tower_parameters("video"))
    conv = gen.backbone.video_conv
    x, cond, t = gen.make_noise(2, _seeded()), gen.encode(prompts), torch.full((2,), 0.5)
    with torch.no_grad():
        before = gen.velocity(x, t, cond)
        conv.head_in.weight.add_(1.0)
        torch.testing.assert_close(gen.velocity(x, t, cond), before, rtol=0, atol=0)
        conv.head_out.weight.normal_(0, 0.1)
        assert (gen.velocity(x, t, cond) - before).abs().max() > 1e-4
    with pytest.raises(ConfigError, match="conv_channels must be >= 0"):
        build_generator({"name": name, **_small(name), "conv_channels": -1})


@pytest.mark.parametrize("name", ["tiny_video_flow", "tiny_av_flow"])
def test_add_frame_convs_grows_a_checkpoint_that_computes_what_it_did(name):
    """add_frame_convs: a model without convolutions gets them; until it trains, it gives the same velocity."""
    gen, prompts = _with_options(name)
    grown = add_frame_convs(gen, 8)
    assert grown.config.conv_channels == 8 and gen.config.conv_channels == 0
    x, t = gen.make_noise(2, _seeded()), torch.full((2,), 0.4)
    torch.testing.assert_close(grown.velocity(x, t, grown.encode(prompts)), gen.velocity(x, t, gen.encode(prompts)),
                               rtol=0, atol=0)
    with pytest.raises(ConfigError, match="already has conv_channels 8"):
        add_frame_convs(grown, 8)


def _small(name: str) -> dict:
    return {**(SMALL_AV if name == "tiny_av_flow" else SMALL), "num_steps": 2}


def _with_options(name: str, **options) -> tuple:
    torch.manual_seed(0)
    return (build_generator({"name": name, **_small(name), **options}),
            AV_PROMPTS if name == "tiny_av_flow" else VIDEO_PROMPTS)


def _check_time_save_load_partition(gen, prompts: list[str], tmp_path) -> None:
    x, cond = gen.make_noise(2, _seeded()), gen.encode(prompts)
    early, late = (gen.velocity(x, torch.full((2,), t), cond) for t in (0.9, 0.1))
    assert (early - late).abs().max() > 1e-4
    gen.save_pretrained(tmp_path / "gen")
    loaded = load_generator(tmp_path / "gen")
    assert loaded.config == gen.config
    half = torch.full((2,), 0.5)
    torch.testing.assert_close(loaded.velocity(x, half, cond), gen.velocity(x, half, cond), rtol=0, atol=0)
    if isinstance(gen, TinyAudioVideoFlowGenerator):
        names = {n for n, _ in gen.named_parameters()}
        towers = {n for m in ("video", "audio") for n, _ in gen.tower_parameters(m)}
        assert towers | {n for n, _ in gen.shared_parameters()} == names


def _av_model() -> TinyAudioVideoFlowGenerator:
    torch.manual_seed(0)
    return TinyAudioVideoFlowGenerator(TinyAudioVideoConfig(**SMALL_AV, num_steps=2))


def test_modality_velocity_at_equal_times_is_the_velocity_and_the_audio_time_reaches_only_the_audio_tower():
    gen = _av_model()
    x, cond = gen.make_noise(2, _seeded()), gen.encode(AV_PROMPTS)
    t = torch.tensor([0.3, 0.8])
    joint = gen.velocity(x, t, cond)
    torch.testing.assert_close(gen.modality_velocity(x, {"video": t, "audio": t}, cond), joint, rtol=0, atol=0)
    moved = gen.modality_velocity(x, {"video": t, "audio": torch.tensor([0.9, 0.1])}, cond)
    video = gen.latent_slices()["video"]
    audio = gen.latent_slices()["audio"]
    assert (moved[:, audio] - joint[:, audio]).abs().max() > 1e-4
    # one block: the video tower reads the audio tokens as they enter, before any block adds a time, so only the
    # audio tower's output sees the audio's level
    torch.testing.assert_close(moved[:, video], joint[:, video], rtol=0, atol=0)
    with pytest.raises(ValueError, match="needs times for 'video' and 'audio'"):
        gen.modality_velocity(x, {"video": t}, cond)


def test_a_sample_predicting_model_turns_its_clean_estimate_into_each_modalitys_velocity(tmp_path):
    """prediction: sample: the network's output is x̂₀ and the velocity (x_t − x̂₀) / max(t, 0.05), per modality."""
    torch.manual_seed(0)
    gen = TinyAudioVideoFlowGenerator(TinyAudioVideoConfig(**SMALL_AV, num_steps=2, prediction="sample"))
    x, cond = gen.make_noise(2, _seeded()), gen.encode(AV_PROMPTS)
    times = {"video": torch.tensor([0.3, 0.8]), "audio": torch.tensor([0.6, 0.01])}
    estimate = gen.backbone(x, times["video"], gen._cond(cond, 2), audio_t=times["audio"])
    video, audio = gen.latent_slices()["video"], gen.latent_slices()["audio"]
    velocity = gen.modality_velocity(x, times, cond)
    torch.testing.assert_close(velocity[:, video], (x - estimate)[:, video] / times["video"].view(-1, 1))
    torch.testing.assert_close(velocity[:, audio], (x - estimate)[:, audio] / torch.tensor([[0.6], [0.05]]))
    _check_time_save_load_partition(gen, AV_PROMPTS, tmp_path)
    with pytest.raises(ConfigError, match=r"prediction must be one of \('velocity', 'sample'\), got 'noise'"):
        TinyAudioVideoConfig(**SMALL_AV, prediction="noise")


def test_decoupled_flow_matching_noises_each_modality_at_its_own_level():
    gen = _av_model()
    clean = gen.make_noise(4, _seeded(1)).clamp(-1, 1)
    cond = gen.encode(AV_PROMPTS * 2)
    torch.testing.assert_close(gen.decoupled_flow_matching_loss(clean, cond, _seeded(2), fraction=0.0),
                               gen.flow_matching_loss(clean, cond, _seeded(2)), rtol=0, atol=0)
    seen = []
    plain_velocity = gen.modality_velocity
    gen.modality_velocity = lambda x, times, c=None: seen.append((x, times)) or plain_velocity(x, times, c)
    loss = gen.decoupled_flow_matching_loss(clean, cond, _seeded(2), fraction=1.0)
    g = _seeded(2)  # the documented draws: noise, the video's level, the audio's own level, which items decouple
    eps, t, own = torch.randn(clean.shape, generator=g), torch.rand((4,), generator=g), torch.rand((4,), generator=g)
    x, times = seen[0]
    torch.testing.assert_close(times["video"], t)
    torch.testing.assert_close(times["audio"], own)  # fraction 1: every item's audio has its own level
    for modality, level in (("video", t), ("audio", own)):
        part = gen.latent_slices()[modality]
        torch.testing.assert_close(x[:, part], (1 - level[:, None]) * clean[:, part] + level[:, None] * eps[:, part])
    torch.testing.assert_close(loss, (plain_velocity(x, times, cond) - (eps - clean)).pow(2).mean())
    with pytest.raises(ConfigError, match="fraction of decoupled noise levels"):
        gen.decoupled_flow_matching_loss(clean, cond, _seeded(2), fraction=1.5)


def test_shift_times_is_the_schedules_shift_and_moves_training_towards_noise():
    from visalign.core.flow import shift_times

    uniform = torch.linspace(0, 1, 9)
    torch.testing.assert_close(shift_times(uniform, 1.0), uniform, rtol=0, atol=0)
    torch.testing.assert_close(shift_times(torch.tensor([0.0, 0.5, 1.0]), 3.0), torch.tensor([0.0, 0.75, 1.0]))
    draws = shift_times(torch.rand(20000, generator=_seeded(0)), 3.0)
    assert abs(float((draws > 0.5).float().mean()) - 0.75) < 0.01  # s = 3: P(t > 1/2) = P(u > 1/4)
    with pytest.raises(ValueError, match="time shift must be > 0"):
        shift_times(uniform, 0.0)


@pytest.mark.parametrize("fraction", [0.0, 1.0])
def test_flow_matching_time_shift_maps_the_drawn_levels(fraction):
    """time_shift = s trains at the uniform draw u mapped to s·u/(1+(s-1)·u), for the plain loss and for both
    levels of the decoupled one; the noise draw is unchanged."""
    from visalign.core.flow import shift_times

    gen = _av_model()
    clean = gen.make_noise(4, _seeded(1)).clamp(-1, 1)
    cond = gen.encode(AV_PROMPTS * 2)
    seen = []
    plain_velocity = gen.modality_velocity
    gen.modality_velocity = lambda x, times, c=None: seen.append(times) or plain_velocity(x, times, c)
    plain = gen.velocity
    gen.velocity = lambda x, t, c=None: seen.append({"video": t, "audio": t}) or plain(x, t, c)
    gen.decoupled_flow_matching_loss(clean, cond, _seeded(2), fraction=fraction, time_shift=3.0)
    g = _seeded(2)
    torch.randn(clean.shape, generator=g)
    t, own = torch.rand((4,), generator=g), torch.rand((4,), generator=g)
    torch.testing.assert_close(seen[-1]["video"], shift_times(t, 3.0))
    torch.testing.assert_close(seen[-1]["audio"], shift_times(own if fraction else t, 3.0))


def test_sample_given_holds_the_given_modality_on_its_noised_path_and_ends_on_it():
    from visalign.toys.video_pretrain import sample_given

    gen = _av_model()
    clean, noise = gen.make_noise(2, _seeded(1)).clamp(-1, 1), gen.make_noise(2, _seeded(2))
    seen = []
    plain_velocity = gen.velocity
    gen.velocity = lambda x, t, c=None: seen.append((x.clone(), t)) or plain_velocity(x, t, c)
    out = sample_given(gen, clean, "video", noise, gen.encode(AV_PROMPTS))
    video, audio = gen.latent_slices()["video"], gen.latent_slices()["audio"]
    sigmas = gen.sigmas().tolist()
    assert len(seen) == len(sigmas) - 1
    for (x, t), sigma in zip(seen, sigmas):
        torch.testing.assert_close(t, torch.full((2,), sigma))
        torch.testing.assert_close(x[:, video], (1 - sigma) * clean[:, video] + sigma * noise[:, video])
    torch.testing.assert_close(out[:, video], clean[:, video], rtol=0, atol=0)
    assert (out[:, audio] - noise[:, audio]).abs().max() > 1e-3  # the audio was generated


def test_sample_from_level_noises_the_clean_latents_and_integrates_to_zero():
    from visalign.core.flow import sample_from_level

    gen = _av_model()
    clean, noise = gen.make_noise(2, _seeded(1)).clamp(-1, 1), gen.make_noise(2, _seeded(2))
    cond = gen.encode(AV_PROMPTS)
    seen = []
    plain_velocity = gen.velocity
    gen.velocity = lambda x, t, c=None: seen.append((x.clone(), t)) or plain_velocity(x, t, c)
    out = sample_from_level(gen, clean, 0.5, noise, cond, num_steps=4)
    assert [float(t[0]) for _, t in seen] == [0.5, 0.375, 0.25, 0.125]
    torch.testing.assert_close(seen[0][0], 0.5 * clean + 0.5 * noise)  # starts on the forward path at the level
    x = 0.5 * clean + 0.5 * noise
    for sigma in (0.5, 0.375, 0.25, 0.125):
        x = x - 0.125 * plain_velocity(x, torch.full((2,), sigma), cond)
    torch.testing.assert_close(out, x)
    with pytest.raises(ValueError, match="level must be in"):
        sample_from_level(gen, clean, 0.0, noise, cond)


def test_cross_frames_lets_an_audio_token_hear_only_the_video_of_its_own_frame(tmp_path):
    """generator.cross_frames = 0: moving the pixels of frame k changes the audio velocity (one block) only on the
    audio tokens that lie in frame k; without the option every audio token hears every frame."""
    torch.manual_seed(0)
    gen = TinyAudioVideoFlowGenerator(TinyAudioVideoConfig(**SMALL_AV, num_steps=2, cross_frames=0))
    full = TinyAudioVideoFlowGenerator(TinyAudioVideoConfig(**SMALL_AV, num_steps=2))
    full.load_state_dict(gen.state_dict())  # the masks are not weights: the same weights load either way
    c = gen.config
    x, t = gen.make_noise(2, _seeded()), torch.full((2,), 0.5)
    frame, per_frame_audio = 2, c.audio_length // c.frames  # samples of audio per frame
    moved = x.clone()
    video = moved[:, gen.latent_slices()["video"]].view(2, *c.video_shape)
    video[:, :, frame] += 1.0
    audio = gen.latent_slices()["audio"]
    for model, only_frame in ((gen, True), (full, False)):
        cond = model.encode(AV_PROMPTS)
        change = (model.velocity(moved, t, cond) - model.velocity(x, t, cond))[:, audio].abs().view(2, c.frames, -1)
        inside = change[:, frame].max()
        outside = torch.cat([change[:, :frame], change[:, frame + 1:]], dim=1).max()
        assert inside > 1e-4
        assert (outside == 0) if only_frame else (outside > 1e-4)
    assert per_frame_audio % c.audio_patch == 0  # whole audio tokens per frame in this configuration
    gen.save_pretrained(tmp_path / "av")
    loaded = load_generator(tmp_path / "av")
    assert loaded.config.cross_frames == 0
    torch.testing.assert_close(loaded.velocity(x, t, loaded.encode(AV_PROMPTS)), gen.velocity(x, t, gen.encode(AV_PROMPTS)),
                               rtol=0, atol=0)
    with pytest.raises(ConfigError, match="cross_frames must be >= 0"):
        TinyAudioVideoConfig(**SMALL_AV, cross_frames=-1)
