"""Shared fixtures: fixed seeds and a tiny in-test objective."""
from __future__ import annotations

import pytest
import torch

from visalign.core import Algorithm


class ShiftTowardReward(Algorithm):
    """Softmax-weighted regression onto samples shifted along the reward (a minimal reward-weighted objective)."""

    name = "test_shift"

    def loss(self, ctx, rollout):
        weights = torch.softmax(rollout.rewards / 0.1, 0).detach()
        out = ctx.policy(rollout.noise, rollout.batch.prompts)
        target = rollout.samples.detach() + 0.5
        return (weights[:, None] * (out - target).pow(2)).sum(), {"weight_max": weights.max().item()}


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.fixture
def shift_algorithm():
    return ShiftTowardReward()
