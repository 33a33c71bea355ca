"""Tiny prompt-conditioned image generators: sampling, checkpoints, reference copies, gradients, SDE, training."""
from __future__ import annotations

import pytest
import torch

from visalign.core.config import ConfigError
from visalign.core.generator import build_generator, load_generator
from visalign.generators import TinyFlowConfig, TinyFlowGenerator, TinyImageConfig, TinyOneStepConfig, TinyOneStepGenerator

KINDS = ["one_step", "flow"]


@pytest.fixture(params=KINDS)
def gen(request, one_step, flow):
    return {"one_step": one_step, "flow": flow}[request.param]


def _seeded(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_shapes_and_range(gen, prompts):
    x = gen.sample(prompts, generator=_seeded())
    assert x.shape == (4, 3, 16, 16) and x.dtype == torch.float32
    assert x.min() >= -1 and x.max() <= 1
    assert x.std() > 0.01  # not a constant image
    assert gen.sample(n=2, generator=_seeded()).shape == (2, 3, 16, 16)  # no prompts: the empty prompt


def test_same_seed_same_samples_and_prompts_matter(gen, prompts):
    a = gen.sample(prompts=prompts, generator=_seeded(1))
    b = gen.sample(prompts=prompts, generator=_seeded(1))
    torch.testing.assert_close(a, b, rtol=0, atol=0)
    other = gen.sample(prompts=["a purple hexagon"] * 4, generator=_seeded(1))
    assert (a - other).abs().amax(dim=(1, 2, 3)).min() > 1e-3
    assert not torch.equal(a, gen.sample(prompts=prompts, generator=_seeded(2)))


def test_save_load_round_trip_is_exact(gen, prompts, tmp_path):
    gen.save_pretrained(tmp_path / "ckpt")
    loaded = load_generator(tmp_path / "ckpt")
    assert type(loaded) is type(gen) and loaded.config == gen.config
    for (name, p), (name2, q) in zip(gen.state_dict().items(), loaded.state_dict().items()):
        assert name == name2 and torch.equal(p, q), name
    noise = gen.make_noise(4, _seeded())
    torch.testing.assert_close(loaded.sample(noise=noise, prompts=prompts), gen.sample(noise=noise, prompts=prompts), rtol=0, atol=0)


def test_frozen_copy_is_detached_and_unchanged_by_training(gen, prompts):
    ref = gen.frozen_copy()
    assert not any(p.requires_grad for p in ref.parameters()) and not ref.training
    noise = gen.make_noise(4, _seeded())
    before = ref.sample(noise=noise, prompts=prompts)
    opt = torch.optim.SGD(gen.parameters(), lr=0.1)
    for _ in range(2):
        opt.zero_grad()
        gen.sample(noise=noise, prompts=prompts, grad=True).mean().backward()
        opt.step()
    torch.testing.assert_close(ref.sample(noise=noise, prompts=prompts), before, rtol=0, atol=0)
    assert not torch.equal(gen.sample(noise=noise, prompts=prompts), before)


def _output_layer(gen) -> torch.Tensor:
    denoiser = gen.backbone.denoiser
    return (denoiser.conv_out if gen.config.backbone == "unet" else denoiser.proj_out).weight


def test_gradients_reach_denoiser_and_text_encoder(gen, prompts):
    assert gen.sample(prompts=prompts).requires_grad is False
    x = gen.sample(prompts=prompts, grad=True, generator=_seeded())
    x.pow(2).mean().backward()
    module = gen.trainable_module()
    grads = {n: p.grad for n, p in module.named_parameters()}
    assert _output_layer(gen).grad.abs().sum() > 0
    assert grads["backbone.text_encoder.model.embeddings.token_embedding.weight"].abs().sum() > 0


def test_tiny_flow_sde_log_probs_match_recomputation(flow, prompts):
    noise = flow.make_noise(4, _seeded())
    traj = flow.sample_sde(noise, prompts, generator=_seeded(3))
    assert traj.latents.shape == (4, 4, 3, 16, 16) and traj.log_probs.shape == (4, 3)
    assert torch.isfinite(traj.log_probs).all()
    for step in range(traj.num_steps):
        lp = flow.sde_log_prob(traj, step)
        torch.testing.assert_close(lp, traj.log_probs[:, step], rtol=1e-4, atol=1e-4)
    lp.sum().backward()
    assert _output_layer(flow).grad.abs().sum() > 0


def _fit_flat_red(flow: TinyFlowGenerator, size: int, steps: int = 80) -> tuple[list[float], torch.Tensor]:
    """Flow-match a flat red image for ``steps`` Adam steps: the losses and 8 samples afterwards."""
    x0 = torch.zeros(8, 3, size, size)
    x0[:, 0] = 0.8
    opt = torch.optim.Adam(flow.parameters(), lr=3e-3)
    losses = []
    for step in range(steps):
        loss = flow.flow_matching_loss(x0, flow.encode(["a red image"] * 8), generator=_seeded(step))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, flow.sample(noise=flow.make_noise(8, _seeded()), prompts=["a red image"] * 8)


def test_tiny_flow_matching_loss_trains(flow):
    losses, out = _fit_flat_red(flow, 16)
    assert sum(losses[-10:]) / 10 < 0.6 * sum(losses[:10]) / 10, losses
    assert out[:, 0].mean() > out[:, 1:].mean() + 0.3


def test_one_step_learns_prompt_dependent_colour():
    torch.manual_seed(0)
    gen = TinyOneStepGenerator(TinyImageConfig(image_size=16, patch_size=4, vocab_buckets=256, max_length=8))
    target = {"red": torch.tensor([0.6, -0.6, -0.6]), "blue": torch.tensor([-0.6, -0.6, 0.6])}
    opt = torch.optim.Adam(gen.parameters(), lr=1e-2)
    g = _seeded(0)
    losses = []
    for step in range(100):
        colours = ["red" if bit else "blue" for bit in torch.randint(0, 2, (8,), generator=g).tolist()]
        prompts = [f"a {c} image" for c in colours]
        x = gen.sample(prompts=prompts, generator=g, grad=True)
        loss = (x.mean(dim=(2, 3)) - torch.stack([target[c] for c in colours])).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    first, last = sum(losses[:10]) / 10, sum(losses[-10:]) / 10
    assert last < 0.05 * first, (first, last)
    with torch.no_grad():
        red = gen.sample(prompts=["a red image"] * 8, generator=_seeded(9)).mean(dim=(0, 2, 3))
        blue = gen.sample(prompts=["a blue image"] * 8, generator=_seeded(9)).mean(dim=(0, 2, 3))
    assert red[0] > 0.3 and red[2] < -0.3 and blue[2] > 0.3 and blue[0] < -0.3


def test_registry_build_and_config_errors():
    gen = build_generator({"name": "tiny_flow", "image_size": 8, "patch_size": 2, "num_steps": 2})
    assert isinstance(gen, TinyFlowGenerator) and gen.kind == "few_step" and gen.noise_shape == (3, 8, 8)
    assert build_generator({"name": "tiny_one_step", "image_size": 8, "patch_size": 2}).kind == "one_step"
    with pytest.raises(ConfigError, match="divisible by patch_size"):
        build_generator({"name": "tiny_one_step", "image_size": 10, "patch_size": 4})
    with pytest.raises(ConfigError, match="num_steps"):
        build_generator({"name": "tiny_flow", "num_steps": 0})
    with pytest.raises(ConfigError, match="nonsense"):
        build_generator({"name": "tiny_one_step", "nonsense": 1})
    with pytest.raises(ConfigError, match="backbone: 'resnet' is not one of"):
        build_generator({"name": "tiny_one_step", "backbone": "resnet"})
    with pytest.raises(ConfigError, match="multiple of 16"):
        build_generator({"name": "tiny_one_step", "backbone": "unet", "unet_channels": [16, 20]})
    with pytest.raises(ConfigError, match="divisible by unet_unshuffle × 2\\*\\*\\(len\\(unet_channels\\) - 1\\) = 8"):
        build_generator({"name": "tiny_one_step", "backbone": "unet", "image_size": 12, "patch_size": 4, "unet_channels": [16, 32, 32]})
    with pytest.raises(ConfigError, match="= 16"):
        build_generator({"name": "tiny_one_step", "backbone": "unet", "image_size": 24, "unet_unshuffle": 4,
                         "unet_channels": [16, 32, 32]})
    with pytest.raises(ConfigError, match="unet_unshuffle must be >= 1"):
        build_generator({"name": "tiny_one_step", "backbone": "unet", "unet_unshuffle": 0})
    with pytest.raises(ConfigError, match="parametrization: 'velocity' is not one of"):
        build_generator({"name": "tiny_one_step", "parametrization": "velocity"})


def test_unet_unshuffle_sets_the_denoisers_grid_keeps_the_image_size_and_round_trips(tmp_path):
    gen = build_generator({"name": "tiny_one_step", "backbone": "unet", "image_size": 64, "unet_unshuffle": 4,
                           "unet_channels": [16, 32, 32]})
    unet = gen.backbone.denoiser
    assert unet.conv_in.in_channels == 48 and unet.conv_out.out_channels == 48 and unet.config.sample_size == 16
    noise = gen.make_noise(2, _seeded())
    x = gen.sample(["a red circle", "a blue square"], noise=noise)
    assert x.shape == (2, 3, 64, 64)
    gen.save_pretrained(tmp_path / "ckpt")
    loaded = load_generator(tmp_path / "ckpt")
    assert loaded.config.unet_unshuffle == 4
    torch.testing.assert_close(loaded.sample(["a red circle", "a blue square"], noise=noise), x, rtol=0, atol=0)


def test_unet_on_a_4x4_space_to_depth_view_learns_a_flat_image():
    torch.manual_seed(0)
    flow = TinyFlowGenerator(TinyFlowConfig(image_size=32, text_hidden=32, vocab_buckets=256, max_length=12,
                                            backbone="unet", unet_channels=(48, 48), unet_unshuffle=4, num_steps=3))
    losses, out = _fit_flat_red(flow, 32)
    assert sum(losses[-10:]) / 10 < 0.8 * sum(losses[:10]) / 10, losses  # slower than f = 2: 48 channels per cell
    assert out[:, 0].mean() > out[:, 1:].mean() + 0.3


def test_flow_residual_student_starts_at_the_teachers_one_step_euler_sample(flow, small_image_config, prompts, tmp_path):
    """A ``flow_residual`` one-step model with the flow's weights outputs tanh(z - v(z, t=1)): the flow's one Euler step."""
    student = TinyOneStepGenerator(TinyOneStepConfig(**small_image_config, parametrization="flow_residual"))
    student.backbone.load_state_dict(flow.backbone.state_dict())
    noise = flow.make_noise(4, _seeded(3))
    with torch.no_grad():
        cond = flow.encode(prompts)
        euler = noise - flow.velocity(noise, torch.ones(4), cond)
        torch.testing.assert_close(student.generate(noise, student.encode(prompts)), torch.tanh(euler))
        image = TinyOneStepGenerator(TinyImageConfig(**small_image_config))
        image.backbone.load_state_dict(flow.backbone.state_dict())
        assert image.config.parametrization == "image"
        assert (image.generate(noise, image.encode(prompts)) - torch.tanh(euler)).abs().max() > 0.1
    student.save_pretrained(tmp_path / "student")
    assert load_generator(tmp_path / "student").config.parametrization == "flow_residual"


def test_bf16_forward(one_step, prompts):
    gen = one_step.to(torch.bfloat16)
    x = gen.sample(prompts=prompts, generator=_seeded(), grad=True)
    assert x.dtype == torch.bfloat16 and torch.isfinite(x.float()).all()
    x.float().mean().backward()
