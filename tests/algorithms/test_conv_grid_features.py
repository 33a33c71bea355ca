"""The frozen conv feature space with a spatial grid: pooled statistics are blind to where things are, a grid is not."""
from __future__ import annotations

import pytest
import torch

from visalign.features import build_features


def _scene(moved: bool = False) -> torch.Tensor:
    """A white 32 px image with a red block on the left (or, moved, the same block on the right)."""
    x = torch.ones(1, 3, 32, 32)
    left = 20 if moved else 4
    x[0, :, 8:24, left:left + 8] = torch.tensor([1.0, -1.0, -1.0]).view(3, 1, 1)
    return x


def test_pooled_features_cannot_tell_where_a_block_is_and_grid_features_can():
    pooled, grid = build_features("conv"), build_features({"name": "conv", "grid": 4})
    left, right = _scene(), _scene(moved=True)
    assert pooled(left).shape == (1, 64)
    assert grid(left).shape == (1, 4 * 4 * 32 + 32)
    pooled_gap = (pooled(left) - pooled(right)).norm() / pooled(left).norm()
    grid_gap = (grid(left) - grid(right)).norm() / grid(left).norm()
    assert grid_gap > 0.3 and grid_gap > 10 * pooled_gap
    assert torch.equal(grid(left)[:, -32:], grid(_scene())[:, -32:])  # deterministic; the std stays global


def test_grid_features_regress_layout_by_gradient_and_check_their_size():
    grid = build_features({"name": "conv", "grid": 2})
    x = _scene().requires_grad_(True)
    (grid(x) - grid(_scene(moved=True))).pow(2).sum().backward()
    right_half, left_half = x.grad[..., 16:].abs().sum(), x.grad[..., :16].abs().sum()
    assert left_half > 0 and right_half > 0  # the loss pulls on both where the block is and where it should be
    with pytest.raises(ValueError, match="grid must be >= 1"):
        build_features({"name": "conv", "grid": 0})
    with pytest.raises(ValueError, match="at least 32 pixels"):
        build_features({"name": "conv", "grid": 8})(torch.zeros(1, 3, 16, 16))
