"""The flow-matching loss in velocity space (plain) and in clean-sample space (``loss_space="sample"``), and flows
that predict the clean sample (``prediction: sample``)."""
from __future__ import annotations

import pytest
import torch

from visalign import TinyAudioVideoFlowGenerator, TinyFlowGenerator
from visalign.core.config import ConfigError
from visalign.core.flow import flow_error_weights, noise_latents
from visalign.core.generator import load_generator
from visalign.generators.tiny import TinyFlowConfig
from visalign.generators.tiny_av import TinyAudioVideoConfig

PROMPT = "a red circle bouncing left and right with a low beep"


def _tiny_av(prediction: str = "velocity") -> TinyAudioVideoFlowGenerator:
    torch.manual_seed(0)
    return TinyAudioVideoFlowGenerator(TinyAudioVideoConfig(image_size=16, frames=8, fps=8.0, patch_size=4, width=16,
                                                            layers=1, heads=2, text_hidden=16, sample_rate=2048,
                                                            audio_patch=64, prediction=prediction))


def _draws(model, batch: int, seed: int, decoupled: bool = False):
    """The loss's own draws, replayed from the same generator: ε, t (and the audio's level and the mask)."""
    g = torch.Generator().manual_seed(seed)
    eps, t = torch.randn((batch, *model.noise_shape), generator=g), torch.rand((batch,), generator=g)
    if not decoupled:
        return eps, t
    return eps, t, torch.rand((batch,), generator=g), torch.rand((batch,), generator=g)


def test_weights_are_one_or_the_level_squared_and_bad_spaces_are_named():
    t = torch.tensor([0.0, 0.5, 1.0])
    assert torch.equal(flow_error_weights(t, "velocity") * torch.ones(3), torch.ones(3))
    assert torch.equal(flow_error_weights(t, "sample"), torch.tensor([0.0, 0.25, 1.0]))
    with pytest.raises(ValueError, match="loss_space must be one of"):
        flow_error_weights(t, "x0")
    model = _tiny_av()
    with pytest.raises(ValueError, match="loss_space must be one of"):
        model.flow_matching_loss(torch.zeros(2, *model.noise_shape), model.encode([PROMPT] * 2), loss_space="eps")


def test_the_sample_space_loss_weights_each_items_velocity_error_by_its_level_squared():
    model = _tiny_av()
    x0, cond = torch.randn(4, *model.noise_shape), model.encode([PROMPT] * 4)
    eps, t = _draws(model, 4, seed=5)
    with torch.no_grad():
        error = (model.velocity(noise_latents(x0, t, eps), t, cond) - (eps - x0)).pow(2).mean(1)
        plain = model.flow_matching_loss(x0, cond, torch.Generator().manual_seed(5))
        sample = model.flow_matching_loss(x0, cond, torch.Generator().manual_seed(5), loss_space="sample")
    assert plain.item() == pytest.approx(error.mean().item(), rel=1e-5)  # the default is the plain loss
    assert sample.item() == pytest.approx((t ** 2 * error).mean().item(), rel=1e-5)
    assert sample < plain


def test_for_an_x_predicting_model_the_sample_space_loss_is_its_clean_estimate_error():
    model = _tiny_av("sample")
    x0, cond = torch.randn(4, *model.noise_shape), model.encode([PROMPT] * 4)
    eps, t = _draws(model, 4, seed=7)
    assert t.min() > 0.05  # above the level at which the velocity's divisor is clamped
    with torch.no_grad():
        estimate = model.backbone(noise_latents(x0, t, eps), t, model._cond(cond, 4))
        loss = model.flow_matching_loss(x0, cond, torch.Generator().manual_seed(7), loss_space="sample")
    assert loss.item() == pytest.approx((estimate - x0).pow(2).mean().item(), rel=1e-4)


def test_decoupled_levels_weight_each_modality_by_its_own_level():
    model = _tiny_av()
    x0, cond = torch.randn(3, *model.noise_shape), model.encode([PROMPT] * 3)
    eps, t, own, _ = _draws(model, 3, seed=11, decoupled=True)
    times = {"video": t, "audio": own}  # fraction 1: every item draws the audio's level
    with torch.no_grad():
        parts = {m: noise_latents(p, times[m], model.split_latents(eps)[m]) for m, p in model.split_latents(x0).items()}
        error = model.split_latents((model.modality_velocity(model.join_latents(parts), times, cond) - (eps - x0)) ** 2)
        expected = torch.cat([error[m] * times[m].view(-1, 1) ** 2 for m in ("video", "audio")], 1).mean()
        loss = model.decoupled_flow_matching_loss(x0, cond, torch.Generator().manual_seed(11), fraction=1.0,
                                                  loss_space="sample")
        same_levels = model.decoupled_flow_matching_loss(x0, cond, torch.Generator().manual_seed(11), fraction=0.0,
                                                         loss_space="sample")
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)
    assert same_levels.item() == pytest.approx(
        model.flow_matching_loss(x0, cond, torch.Generator().manual_seed(11), loss_space="sample").item())


def test_latent_levels_spread_each_modalitys_level_over_its_part():
    model = _tiny_av()
    levels = model.latent_levels({"video": torch.tensor([0.2, 0.7]), "audio": torch.tensor([0.9, 0.1])})
    parts = model.split_latents(levels)
    assert levels.shape == (2, *model.noise_shape)
    assert torch.equal(parts["video"], torch.tensor([[0.2], [0.7]]).expand_as(parts["video"]))
    assert torch.equal(parts["audio"], torch.tensor([[0.9], [0.1]]).expand_as(parts["audio"]))


def _tiny_image_flow(prediction: str) -> TinyFlowGenerator:
    torch.manual_seed(0)
    return TinyFlowGenerator(TinyFlowConfig(image_size=8, patch_size=2, num_steps=1, prediction=prediction)).eval()


def test_an_x_predicting_image_flow_reads_its_output_as_the_clean_image():
    """``prediction: sample`` on the tiny image flow: velocity (x_t − out) / max(t, 0.05), so one Euler step from pure
    noise lands exactly on the network's output, and a checkpoint keeps the choice."""
    model = _tiny_image_flow("sample")
    x, t, cond = torch.randn(3, 3, 8, 8), torch.tensor([1.0, 0.5, 0.01]), model.encode(["a red circle"] * 3)
    with torch.no_grad():
        out = model.backbone(x, t * 1000.0, cond)
        expected = (x - out) / torch.tensor([1.0, 0.5, 0.05]).view(3, 1, 1, 1)
        torch.testing.assert_close(model.velocity(x, t, cond), expected)
        z = torch.randn(2, 3, 8, 8)
        torch.testing.assert_close(model.sample_latents(z, model.encode(["a", "b"]), 1),
                                   model.backbone(z, torch.full((2,), 1000.0), model.encode(["a", "b"])))
    with pytest.raises(ConfigError, match=r"prediction must be one of \('velocity', 'sample'\), got 'eps'"):
        TinyFlowConfig(prediction="eps")


def test_the_image_flow_keeps_its_prediction_through_a_checkpoint(tmp_path):
    model = _tiny_image_flow("sample")
    model.save_pretrained(tmp_path / "flow")
    loaded = load_generator(tmp_path / "flow")
    assert loaded.config.prediction == "sample"
    x, t = torch.randn(2, 3, 8, 8), torch.tensor([0.3, 0.8])
    with torch.no_grad():
        torch.testing.assert_close(loaded.velocity(x, t, loaded.encode(["a", "b"])),
                                   model.velocity(x, t, model.encode(["a", "b"])))
    assert TinyFlowConfig().prediction == "velocity"  # earlier checkpoints load as velocity-predicting


def test_for_an_x_predicting_image_flow_the_sample_space_loss_is_its_clean_estimate_error():
    model = _tiny_image_flow("sample")
    x0, cond = torch.rand(4, 3, 8, 8) * 2 - 1, model.encode(["a red circle"] * 4)
    g = torch.Generator().manual_seed(3)
    eps, t = torch.randn((4, 3, 8, 8), generator=g), torch.rand((4,), generator=g)
    assert t.min() > 0.05
    with torch.no_grad():
        estimate = model.backbone(noise_latents(x0, t, eps), t * 1000.0, cond)
        loss = model.flow_matching_loss(x0, cond, torch.Generator().manual_seed(3), loss_space="sample")
    assert loss.item() == pytest.approx((estimate - x0).pow(2).mean().item(), rel=1e-5)
