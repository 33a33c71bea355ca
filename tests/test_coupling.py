"""Minibatch optimal-transport coupling of noise and data (``ot_coupled_noise``) and the flow-matching losses that
take the paired noise."""
from __future__ import annotations

import itertools

import pytest
import torch

from visalign import TinyAudioVideoFlowGenerator, ot_coupled_noise
from visalign.generators.tiny_av import TinyAudioVideoConfig
from visalign.toys.moving_shapes import WorldConfig
from visalign.toys.video_pretrain import flow_loss


def _cost(x0: torch.Tensor, noise: torch.Tensor) -> float:
    return float((x0 - noise).pow(2).sum())


def test_the_pairing_is_the_cheapest_permutation_within_each_group():
    g = torch.Generator().manual_seed(0)
    x0, noise = torch.randn(8, 3, generator=g), torch.randn(8, 3, generator=g)
    keys = ["a", "b"] * 4
    paired = ot_coupled_noise(x0, noise, keys)
    rows = {k: [i for i, key in enumerate(keys) if key == k] for k in "ab"}
    for key, idx in rows.items():
        best = min(_cost(x0[idx], noise[list(p)]) for p in itertools.permutations(idx))
        assert _cost(x0[idx], paired[idx]) == pytest.approx(best, rel=1e-6)
        assert sorted(map(tuple, paired[idx].tolist())) == sorted(map(tuple, noise[idx].tolist()))  # only its own rows


def test_without_groups_the_whole_batch_is_one_group_and_the_cost_falls():
    g = torch.Generator().manual_seed(1)
    x0, noise = torch.randn(16, 4, generator=g), torch.randn(16, 4, generator=g)
    paired = ot_coupled_noise(x0, noise)
    assert _cost(x0, paired) < 0.8 * _cost(x0, noise)
    assert sorted(map(tuple, paired.tolist())) == sorted(map(tuple, noise.tolist()))


def test_a_paired_noise_draw_points_at_its_mode():
    """Two modes per group (±3 along one axis): independently paired, the noise's sign along that axis says nothing
    about the item's mode; paired by transport it says it for most items, which is what lets a model commit."""
    g = torch.Generator().manual_seed(2)
    x0 = torch.zeros(256, 16)
    x0[:, 0] = torch.tensor([3.0, -3.0]).repeat(128)
    noise = torch.randn(256, 16, generator=g)
    keys = [i // 16 for i in range(256)]
    agree = lambda n: float((n[:, 0].sign() == x0[:, 0].sign()).float().mean())  # noqa: E731
    assert abs(agree(noise) - 0.5) < 0.1
    assert agree(ot_coupled_noise(x0, noise, keys)) > 0.8


def test_bad_inputs_are_named():
    x0 = torch.zeros(4, 3)
    with pytest.raises(ValueError, match="same shape"):
        ot_coupled_noise(x0, torch.zeros(4, 2))
    with pytest.raises(ValueError, match="groups has 3 keys for a batch of 4"):
        ot_coupled_noise(x0, torch.zeros(4, 3), ["a", "a", "b"])
    with pytest.raises(ValueError, match="non-finite"):
        ot_coupled_noise(x0, torch.full((4, 3), float("nan")))
    with pytest.raises(ValueError, match="batch-first"):
        ot_coupled_noise(torch.zeros(4), torch.zeros(4))


def _tiny_av() -> TinyAudioVideoFlowGenerator:
    torch.manual_seed(0)
    return TinyAudioVideoFlowGenerator(TinyAudioVideoConfig(image_size=16, frames=8, fps=8.0, patch_size=4, width=16,
                                                            layers=1, heads=2, text_hidden=16, sample_rate=2048,
                                                            audio_patch=64))


def test_flow_matching_losses_use_the_given_noise_and_check_its_shape():
    model = _tiny_av()
    x0, noise = torch.randn(2, *model.noise_shape), torch.randn(2, *model.noise_shape)
    cond = model.encode(["a red circle bouncing left and right with a low beep"] * 2)
    same = lambda loss: [loss(x0, cond, torch.Generator().manual_seed(3), noise=noise).item() for _ in range(2)]  # noqa: E731
    plain = same(model.flow_matching_loss)
    assert plain[0] == plain[1]
    assert plain[0] != model.flow_matching_loss(x0, cond, torch.Generator().manual_seed(3)).item()
    assert same(lambda *a, **k: model.decoupled_flow_matching_loss(*a, fraction=0.0, **k)) == plain
    with pytest.raises(ValueError, match="latents' shape"):
        model.flow_matching_loss(x0, cond, noise=noise[:, :5])


def test_flow_loss_renders_several_clips_per_prompt_and_refuses_bad_groupings():
    model = _tiny_av()
    world = WorldConfig(size=16, frames=8, fps=8.0, sample_rate=2048)
    seen = []

    def record(x0, cond, generator=None, noise=None):
        seen.append(noise)
        return x0.sum() * 0

    loss_fn = flow_loss(model, world, 8, audio=True, loss=record, clips_per_prompt=4, ot_coupling=True)
    loss_fn(torch.Generator().manual_seed(0))
    assert seen[0] is not None and seen[0].shape == (8, *model.noise_shape)
    flow_loss(model, world, 8, audio=True, loss=record)(torch.Generator().manual_seed(0))
    assert seen[1] is None  # independent pairs: the loss draws its own noise, as before the option existed
    with pytest.raises(ValueError, match="must divide the batch"):
        flow_loss(model, world, 8, audio=True, clips_per_prompt=3)
    with pytest.raises(ValueError, match="clips_per_prompt > 1"):
        flow_loss(model, world, 8, audio=True, ot_coupling=True)
