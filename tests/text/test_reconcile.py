"""Multi-reward gradient reconciliation: norm preservation, PCGrad and priority cases."""
import math

import pytest
import torch

from visalign.text.reconcile import orpg_blend, pcgrad, priority_projection, reconcile, weighted_sum


def test_weighted_sum():
    assert torch.allclose(weighted_sum([torch.tensor([1.0, 0]), torch.tensor([0.0, 2])], [2.0, 0.5]), torch.tensor([2.0, 1.0]))


def test_orpg_keeps_norm_of_plain_sum_for_compatible_gradients():
    g1, g2 = torch.tensor([3.0, 0.0]), torch.tensor([1.0, 1.0])
    u, info = reconcile([g1, g2], "orpg")
    s = g1 + g2
    assert info["conflict"] == 0.0
    assert math.isclose(float(u.norm()), float(s.norm()), rel_tol=1e-6)
    # the blend tilts towards the smaller gradient relative to the plain sum
    assert u[1] / u[0] > s[1] / s[0]


def test_orpg_aligned_gradients_give_plain_sum():
    g = torch.tensor([1.0, 2.0, -1.0])
    assert torch.allclose(orpg_blend([g, 3 * g]), 4 * g, atol=1e-6)


def test_orpg_orthogonal_equal_weighting_hand_value():
    # c = 0 -> u is the normalised reference at ||s||; p=1 -> b ∝ e1 + e2
    u = orpg_blend([torch.tensor([4.0, 0.0]), torch.tensor([0.0, 1.0])], normalize_power=1.0)
    r = math.sqrt(17) / math.sqrt(2)
    assert torch.allclose(u, torch.tensor([r, r]), atol=1e-5)


def test_pcgrad_conflicting_pair_hand_values():
    g1, g2 = torch.tensor([1.0, 0.0]), torch.tensor([-1.0, 1.0])
    # g1' = g1 - (-1/2) g2 = (0.5, 0.5); g2' = g2 - (-1) g1 = (0, 1)
    assert torch.allclose(pcgrad([g1, g2]), torch.tensor([0.5, 1.5]))
    u, info = reconcile([g1, g2], "orpg")
    assert info["conflict"] == 1.0 and torch.allclose(u, torch.tensor([0.5, 1.5]))


def test_priority_projection_keeps_primary_intact():
    g1, g2 = torch.tensor([1.0, 0.0]), torch.tensor([-1.0, 1.0])
    u = priority_projection([g1, g2], order=[0, 1])
    assert torch.allclose(u, torch.tensor([1.0, 1.0]))  # g2 projected off g1 -> (0, 1)
    assert math.isclose(float(u @ g1), float(g1 @ g1))
    u2, _ = reconcile([g1, g2], "orpg", priority=[1, 0])
    # g2 primary: g1 projected off g2: g1 - (-1/2) g2 = (0.5, 0.5); update = g2 + that
    assert torch.allclose(u2, torch.tensor([-0.5, 1.5]))
    assert math.isclose(float(u2 @ g2), float(g2 @ g2))
    with pytest.raises(ValueError, match="permutation"):
        priority_projection([g1, g2], order=[0, 0])


def test_bad_inputs():
    with pytest.raises(ValueError, match="flat vectors"):
        reconcile([torch.zeros(2), torch.zeros(3)])
    with pytest.raises(ValueError, match="mode"):
        reconcile([torch.ones(2)], "nope")
