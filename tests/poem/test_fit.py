"""PoEM fit: centring removes per-prompt log Z, OLS / NNLS recover known coefficients, coverage is the R²."""
import numpy as np
import pytest
import torch

from visalign.poem import centre, coverage, fit_log_ratios, fit_rewards, regress


def _synthetic(n_prompts=40, group=6, k=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    n = n_prompts * group
    groups = torch.arange(n_prompts).repeat_interleave(group)
    rewards = torch.randn(n, k, generator=g, dtype=torch.float64)
    log_z = 5 * torch.randn(n_prompts, k, generator=g, dtype=torch.float64)[groups]  # per-prompt constants
    return rewards, groups, log_z


def test_centring_within_groups_removes_per_prompt_log_z():
    rewards, groups, log_z = _synthetic()
    beta = 0.1
    ell = rewards / beta - log_z
    torch.testing.assert_close(centre(ell, groups), centre(rewards / beta, groups))
    # a global centring does not remove per-prompt constants
    assert (centre(ell) - centre(rewards / beta)).abs().max() > 1.0
    c = centre(ell, groups)
    for p in range(5):
        assert c[groups == p].sum(0).abs().max() < 1e-9


def test_log_ratio_fit_recovers_coefficients_despite_log_z():
    rewards, groups, log_z = _synthetic()
    beta, true = 0.1, torch.tensor([0.7, -0.3, 0.0], dtype=torch.float64)
    ell = rewards / beta - log_z
    new = rewards @ true + 3 * torch.randn(groups.max() + 1, dtype=torch.float64)[groups]  # prompt-level offsets too
    fit = fit_log_ratios(new, ell, beta, groups)
    torch.testing.assert_close(fit.coef.double(), true, atol=1e-5, rtol=0)
    assert fit.coverage == pytest.approx(1.0, abs=1e-9)
    # the same data without the per-prompt centring gives wrong coefficients
    wrong = fit_log_ratios(new, ell, beta, groups=None)
    assert (wrong.coef.double() - true).abs().max() > 0.05 and wrong.coverage < 0.9


def test_ols_and_nnls_recover_known_coefficients_from_noisy_rewards():
    rewards, groups, _ = _synthetic(n_prompts=200, seed=1)
    true = torch.tensor([0.5, 0.25, 0.0], dtype=torch.float64)
    noise = 0.05 * torch.randn(rewards.shape[0], generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    new = rewards @ true + noise
    for method in ("ols", "nnls"):
        fit = fit_rewards(new, rewards, groups, method)
        torch.testing.assert_close(fit.coef.double(), true, atol=0.01, rtol=0)
        assert fit.method == method and fit.num_samples == rewards.shape[0]
    nn = fit_rewards(rewards @ torch.tensor([0.5, -0.4, 0.2], dtype=torch.float64), rewards, method="nnls")
    assert (nn.coef >= 0).all() and nn.coef[1] == 0
    assert nn.coverage < fit_rewards(rewards @ torch.tensor([0.5, -0.4, 0.2], dtype=torch.float64), rewards).coverage


def test_coverage_is_the_r2_of_a_least_squares_fit_with_intercept():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(300, 2, generator=g, dtype=torch.float64)
    y = x @ torch.tensor([1.0, -2.0], dtype=torch.float64) + 1.5 * torch.randn(300, generator=g, dtype=torch.float64) + 4.0
    coef, r2 = regress(y, x)
    design = np.column_stack([np.ones(300), x.numpy()])
    beta, *_ = np.linalg.lstsq(design, y.numpy(), rcond=None)
    resid = y.numpy() - design @ beta
    expected = 1 - (resid**2).sum() / ((y.numpy() - y.numpy().mean()) ** 2).sum()
    assert r2 == pytest.approx(expected, abs=1e-10)
    np.testing.assert_allclose(coef.numpy(), beta[1:], atol=1e-10)
    # one feature: R² is the squared correlation
    _, r2_one = regress(y, x[:, :1])
    assert r2_one == pytest.approx(np.corrcoef(x[:, 0].numpy(), y.numpy())[0, 1] ** 2, abs=1e-10)
    assert coverage(centre(x), centre(y), torch.zeros(2, dtype=torch.float64)) == pytest.approx(0.0)


def test_standardize_gives_z_score_coefficients():
    rewards, groups, _ = _synthetic(n_prompts=100)
    scaled = rewards * torch.tensor([1.0, 10.0, 0.1], dtype=torch.float64)
    new = scaled[:, 0] + scaled[:, 1]
    fit = fit_rewards(new, scaled, groups, standardize=True)
    z = centre(scaled, groups)
    sd, sd_new = z.pow(2).mean(0).sqrt(), centre(new, groups).pow(2).mean().sqrt()
    torch.testing.assert_close(fit.coef.double(), torch.tensor([sd[0], sd[1], 0.0]) / sd_new, atol=1e-5, rtol=0)
    assert fit.standardized and fit.coverage == pytest.approx(1.0)


def test_bad_inputs_are_named():
    x = torch.randn(8, 2)
    with pytest.raises(ValueError, match="non-finite"):
        regress(torch.tensor([float("nan")] + [0.0] * 7), x)
    with pytest.raises(ValueError, match=r"features must have shape \[N=8"):
        regress(torch.randn(8), torch.randn(7, 2))
    with pytest.raises(ValueError, match="single sample"):
        centre(torch.randn(4), torch.tensor([0, 0, 1, 2]))
    with pytest.raises(ValueError, match="unknown fit method"):
        regress(torch.randn(8), x, method="ridge")
    with pytest.raises(ValueError, match="zero variance"):
        regress(torch.ones(8), x)
    with pytest.raises(ValueError, match="beta must be > 0"):
        fit_log_ratios(torch.randn(8), x, beta=0.0)
