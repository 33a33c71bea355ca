"""Exact categorical PoEM: closed-form composition, its sampling, SIR, and RL-trained bases on the toy."""
import pytest
import torch

from visalign.poem import CategoricalToy, compose_log_probs, expected, kl, kl_policy_gradient, recovery, sample_composed, sample_sir, tilt
from visalign.poem.categorical import sample


def _bases(toy, beta):
    return torch.stack([tilt(toy.ref_logp, r, beta) for r in toy.basis_rewards])


def test_composition_of_tilted_bases_is_the_tilt_of_the_combined_reward():
    toy = CategoricalToy(num_responses=16, num_bases=3, seed=1)
    bases = _bases(toy, 0.5)
    coef = torch.tensor([0.6, -0.2, 1.1], dtype=torch.float64)
    torch.testing.assert_close(compose_log_probs(toy.ref_logp, bases, coef), tilt(toy.ref_logp, coef @ toy.basis_rewards, 0.5))
    torch.testing.assert_close(compose_log_probs(toy.ref_logp, bases, torch.zeros(3)), toy.ref_logp)
    torch.testing.assert_close(compose_log_probs(toy.ref_logp, bases, torch.tensor([0.0, 1.0, 0.0])), bases[1])
    # strength lambda scales the shift
    torch.testing.assert_close(compose_log_probs(toy.ref_logp, bases, coef, strength=0.5),
                               tilt(toy.ref_logp, coef @ toy.basis_rewards, 1.0))


def test_composed_sampling_equals_the_closed_form():
    toy = CategoricalToy(num_responses=12, num_bases=2, seed=2)
    bases = _bases(toy, 1.0)
    coef = torch.tensor([0.8, 0.5])
    target = compose_log_probs(toy.ref_logp, bases, coef).exp()
    n = 200_000
    draws = sample_composed(toy.ref_logp, bases, coef, n, generator=torch.Generator().manual_seed(0))
    freq = torch.bincount(draws, minlength=12).double() / n
    assert (freq - target).abs().max() < 4 * (target * (1 - target) / n).sqrt().max()
    # sampling-importance-resampling from the reference approaches the same distribution
    unnorm = toy.ref_logp + torch.einsum("k,ky->y", coef.double(), bases - toy.ref_logp)
    sir = sample_sir(toy.ref_logp, unnorm, 50_000, 64, generator=torch.Generator().manual_seed(1))
    sir_freq = torch.bincount(sir, minlength=12).double() / 50_000
    assert 0.5 * (sir_freq - target).abs().sum() < 0.03
    one = sample_sir(toy.ref_logp, unnorm, 50_000, 1, generator=torch.Generator().manual_seed(1))  # 1 proposal: no correction
    assert 0.5 * (torch.bincount(one, minlength=12).double() / 50_000 - target).abs().sum() > 0.1


def test_kl_policy_gradient_reaches_the_tilt_everywhere():
    toy = CategoricalToy(num_responses=32, num_bases=2, seed=3)
    logp, info = kl_policy_gradient(toy.ref_logp, toy.basis_rewards[0], beta=0.1, steps=1500)
    assert info["kl_to_optimum"] < 1e-8 and info["max_log_ratio_error"] < 1e-3
    # with PyTorch's default Adam the logits of responses that lost their mass freeze before converging
    _, frozen = kl_policy_gradient(toy.ref_logp, toy.basis_rewards[0], beta=0.1, steps=1500, adam_betas=(0.9, 0.999), eps=1e-8)
    assert frozen["max_log_ratio_error"] > 1.0


def test_toy_orthogonal_reward_and_metrics():
    toy = CategoricalToy(seed=4)
    w = toy.ref_logp.exp()
    r = toy.orthogonal_reward(torch.Generator().manual_seed(0))
    assert (w * r).sum().abs() < 1e-10 and (w * r * r).sum() == pytest.approx(1.0)
    assert (toy.basis_rewards @ (w * r)).abs().max() < 1e-10
    assert float(kl(toy.ref_logp, toy.ref_logp)) == 0.0
    assert recovery(1.5, 1.0, 2.0) == 0.5
    with pytest.raises(ValueError, match="gained nothing"):
        recovery(1.0, 1.0, 1.0)
    assert float(expected(toy.ref_logp, torch.ones(64, dtype=torch.float64))) == pytest.approx(1.0)
    with pytest.raises(ValueError, match=r"coef must have shape \[6\]"):
        compose_log_probs(toy.ref_logp, _bases(toy, 1.0), torch.zeros(5))
    assert sample(toy.ref_logp, 5).shape == (5,)
