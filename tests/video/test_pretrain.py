"""Pretraining on the moving-shapes world lowers the loss within a few steps (flow matching, one-step distillation)."""
from __future__ import annotations

import pytest
import torch

from visalign.toys.video_pretrain import distill_loss, fit, flow_loss


def _held_out(loss_fn, repeats: int = 3) -> float:
    """Mean loss on fixed draws (the same data, noise and timesteps before and after training)."""
    with torch.no_grad():
        return sum(loss_fn(torch.Generator().manual_seed(100 + i)).item() for i in range(repeats)) / repeats


@pytest.mark.parametrize("name", ["video_flow", "av_flow"])
def test_flow_matching_pretraining_lowers_the_loss(name, request, small_world):
    model = request.getfixturevalue(name)
    loss_fn = flow_loss(model, small_world, batch=8, audio=name == "av_flow")
    before = _held_out(loss_fn)
    losses = fit(model, loss_fn, max_steps=25, lr=3e-3, seed=0)
    after = _held_out(loss_fn)
    assert len(losses) == 25 and after < 0.8 * before, (before, after)


def test_one_step_distillation_lowers_the_loss(video_one_step, video_flow):
    video_flow.requires_grad_(False)
    loss_fn = distill_loss(video_one_step, video_flow, batch=8, teacher_steps=2)
    before = _held_out(loss_fn)
    fit(video_one_step, loss_fn, max_steps=25, lr=3e-3, seed=0)
    assert _held_out(loss_fn) < 0.8 * before
