"""RWTD target construction: tilted weights, the λ-mixture, OT + barycentric projection."""
import math

import pytest
import torch

from visalign.algorithms.transport import (barycentric_projection, beta_for_ess, effective_sample_size, mixture_target,
                                           partial_step, systematic_resample, tilted_weights, transport_plan,
                                           transport_targets)
from visalign.core.config import ConfigError


def test_tilted_weights_are_a_softmax_of_r_over_beta():
    r = torch.tensor([0.0, 1.0, 2.0])
    w = tilted_weights(r, beta=0.5)
    assert torch.allclose(w, torch.softmax(r.double() / 0.5, 0))
    assert math.isclose(float(w.sum()), 1.0)
    assert torch.allclose(tilted_weights(r, math.inf), torch.full((3,), 1 / 3, dtype=torch.float64))
    assert torch.argmax(tilted_weights(r, 1e-3)) == 2 and tilted_weights(r, 1e-3)[2] > 0.999


@pytest.mark.parametrize("beta", [0.0, -1.0])
def test_nonpositive_beta_is_a_config_error(beta):
    with pytest.raises(ConfigError, match="beta must be > 0"):
        tilted_weights(torch.zeros(3), beta)


def test_mixture_target_lambda_limits_and_untilted_limit():
    rc, rr = torch.randn(4), torch.randn(6)
    w0 = mixture_target(rc, rr, beta=1.0, lam=0.0)
    assert w0[:4].abs().sum() == 0 and torch.allclose(w0[4:], tilted_weights(rr, 1.0))
    w1 = mixture_target(rc, rr, beta=1.0, lam=1.0)
    assert w1[4:].abs().sum() == 0 and torch.allclose(w1[:4], tilted_weights(rc, 1.0))
    lam = 0.3
    w = mixture_target(rc, rr, beta=1.0, lam=lam)
    assert math.isclose(float(w[:4].sum()), lam) and math.isclose(float(w.sum()), 1.0)
    # β -> ∞: the untilted mixture λ·uniform(current) + (1−λ)·uniform(reference)
    winf = mixture_target(rc, rr, beta=1e12, lam=lam)
    expected = torch.cat([torch.full((4,), lam / 4), torch.full((6,), (1 - lam) / 6)]).double()
    assert torch.allclose(winf, expected, atol=1e-9)


@pytest.mark.parametrize("lam", [-0.1, 1.5])
def test_lambda_outside_unit_interval_is_a_config_error(lam):
    with pytest.raises(ConfigError, match=r"lam .* must be in \[0, 1\]"):
        mixture_target(torch.zeros(2), torch.zeros(2), 1.0, lam)


def test_lambda_below_one_needs_reference_samples():
    with pytest.raises(ConfigError, match="needs reference samples"):
        mixture_target(torch.zeros(3), None, 1.0, 0.5)


def test_beta_for_ess_hits_the_requested_fraction():
    r = torch.randn(200, generator=torch.Generator().manual_seed(0))
    beta = beta_for_ess(r, 0.3)
    assert abs(effective_sample_size(tilted_weights(r, beta)) / 200 - 0.3) < 1e-3
    assert beta_for_ess(torch.ones(5), 0.5) == math.inf


def test_exact_ot_with_uniform_weights_is_a_permutation():
    g = torch.Generator().manual_seed(0)
    src, tgt = torch.randn(32, 2, generator=g), torch.randn(32, 2, generator=g) + 3
    res = transport_targets(src, tgt, torch.full((32,), 1 / 32, dtype=torch.float64), solver="emd")
    # every source lands exactly on a distinct target point
    match = torch.cdist(res.targets.double(), tgt.double()).min(1)
    assert match.values.max() < 1e-5 and len(set(match.indices.tolist())) == 32
    # and the assignment is optimal: no cheaper one found by scipy's Hungarian solver
    from scipy.optimize import linear_sum_assignment

    cost = torch.cdist(src.double(), tgt.double()).pow(2).numpy()
    rows, cols = linear_sum_assignment(cost)
    assert math.isclose(res.cost, cost[rows, cols].sum() / 32, rel_tol=1e-6)


@pytest.mark.parametrize("solver", ["emd", "sinkhorn"])
def test_plan_marginals_and_zero_weight_targets_get_no_mass(solver):
    g = torch.Generator().manual_seed(1)
    src, tgt = torch.randn(16, 3, generator=g), torch.randn(24, 3, generator=g)
    w = torch.rand(24, generator=g).double()
    w[:8] = 0.0
    w = w / w.sum()
    plan = transport_plan(torch.cdist(src.double(), tgt.double()).pow(2), torch.full((16,), 1 / 16).double(), w, solver, eps_scale=0.05)
    assert torch.allclose(plan.sum(1), torch.full((16,), 1 / 16).double(), atol=1e-4)
    assert torch.allclose(plan.sum(0), w, atol=1e-4)
    assert plan[:, :8].sum() < 1e-6


def test_barycentric_projection_and_partial_step():
    plan = torch.tensor([[0.25, 0.25], [0.0, 0.5]], dtype=torch.float64)
    values = torch.tensor([[0.0, 0.0], [2.0, 4.0]])
    proj = barycentric_projection(plan, values)
    assert torch.allclose(proj, torch.tensor([[1.0, 2.0], [2.0, 4.0]]))
    u = torch.zeros(2, 2)
    assert torch.allclose(partial_step(u, proj, 0.25), 0.25 * proj)
    with pytest.raises(ConfigError, match="step_size"):
        partial_step(u, proj, 0.0)


def test_weighted_target_moves_mass_toward_high_reward():
    """With a strong tilt the barycentric targets of all current points move toward high-reward targets."""
    g = torch.Generator().manual_seed(2)
    cur, ref = torch.randn(64, 2, generator=g), torch.randn(64, 2, generator=g)
    w = mixture_target(cur[:, 0], ref[:, 0], beta=0.5, lam=0.5)
    res = transport_targets(cur, torch.cat([cur, ref]), w, solver="sinkhorn", eps_scale=0.02)
    expected_mean = float((w.float() @ torch.cat([cur, ref])[:, 0].double().float()))
    assert abs(float(res.targets[:, 0].mean()) - expected_mean) < 0.02  # projection preserves the target mean
    assert float(res.targets[:, 0].mean()) > float(cur[:, 0].mean()) + 0.5


def test_systematic_resample_draws_each_particle_floor_or_ceil_of_n_w_times():
    w = torch.tensor([0.5, 0.3, 0.15, 0.05, 0.0], dtype=torch.float64)
    for seed in range(20):
        counts = torch.bincount(systematic_resample(w, 16, torch.Generator().manual_seed(seed)), minlength=5)
        assert counts.sum() == 16 and counts[4] == 0
        assert torch.all(counts >= torch.floor(16 * w).long()) and torch.all(counts <= torch.ceil(16 * w).long())
    with pytest.raises(ValueError, match="not all zero"):
        systematic_resample(torch.zeros(3), 4)
    with pytest.raises(ValueError, match="n must be >= 1"):
        systematic_resample(w, 0)


def test_resampled_target_maps_every_source_onto_one_whole_target():
    g = torch.Generator().manual_seed(0)
    source, target = torch.randn(8, 3, generator=g), torch.randn(5, 3, generator=g)
    idx = systematic_resample(torch.tensor([0.4, 0.3, 0.2, 0.1, 0.0]), 8, g)
    result = transport_targets(source, target[idx], torch.full((8,), 1 / 8, dtype=torch.float64), "emd")
    assert torch.equal((result.plan > 0).sum(1), torch.ones(8, dtype=torch.long))
    assert all(any(torch.allclose(row, t) for t in target[:4]) for row in result.targets)
