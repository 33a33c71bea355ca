"""The colour layout of VVR images (the ``vvr`` reward's ``features``, usable as the RWTD / FestDPO feature space)."""
from __future__ import annotations

import pytest
import torch

from visalign.core import get_reward
from visalign.features import build_features
from visalign.vvr.features import LAYOUT_COLOURS, colour_layout
from visalign.vvr.vocab import PALETTE

RED, BLUE = list(PALETTE).index("red"), list(PALETTE).index("blue")


def _scene() -> torch.Tensor:
    """White 32 px image: a red 8×8 block in the top-left cell, a blue one in the bottom-right cell."""
    x = torch.ones(1, 3, 32, 32)
    x[0, :, :8, :8] = LAYOUT_COLOURS[RED].view(3, 1, 1)
    x[0, :, 24:, 24:] = LAYOUT_COLOURS[BLUE].view(3, 1, 1)
    return x


def test_layout_puts_each_colour_where_it_is_drawn():
    f = colour_layout(_scene(), grid=4)
    assert f.shape == (1, len(PALETTE), 4, 4)
    assert f[0, RED, 0, 0] > 0.99 and f[0, BLUE, 3, 3] > 0.99
    assert f[0, RED].sum() - f[0, RED, 0, 0] < 1e-3 and f[0, BLUE].sum() - f[0, BLUE, 3, 3] < 1e-3
    assert f.sum(1).max() <= 1 + 1e-5  # shares of a cell's pixels
    mirrored = colour_layout(_scene().flip(-1), grid=4)
    assert mirrored[0, RED, 0, 3] > 0.99 and mirrored[0, RED, 0, 0] < 1e-3  # positions, not just colour totals


def test_layout_is_differentiable_and_checks_its_input():
    x = _scene().requires_grad_(True)
    colour_layout(x * 0.9, grid=2)[:, RED].sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0
    with pytest.raises(ValueError, match="B x 3 x H x W"):
        colour_layout(torch.zeros(3, 32, 32))
    with pytest.raises(ValueError, match="grid 5 must divide"):
        colour_layout(torch.zeros(1, 3, 32, 32), grid=5)


def test_vvr_reward_features_are_the_reward_feature_space():
    reward = get_reward("vvr", layout_grid=2)
    phi = build_features("reward", reward=reward)
    f = phi(_scene())
    assert f.shape == (1, len(PALETTE) * 4)
    torch.testing.assert_close(f, colour_layout(_scene(), grid=2).flatten(1))
