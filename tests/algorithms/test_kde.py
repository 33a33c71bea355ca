"""KDE log-likelihoods and bandwidth rules, checked against closed forms."""
import math

import pytest
import torch

from visalign.algorithms.kde import bandwidth, kde_log_prob, multi_bandwidth_log_prob
from visalign.core.config import ConfigError


def gaussian_log_prob(x: torch.Tensor, var: float) -> torch.Tensor:
    d = x.shape[1]
    return -x.pow(2).sum(1) / (2 * var) - 0.5 * d * math.log(2 * math.pi * var)


@pytest.mark.parametrize("d,h", [(1, 0.5), (2, 0.3), (5, 0.8)])
def test_kde_matches_the_smoothed_gaussian(d, h):
    """Centres ~ N(0, I): E[p̂_h(x)] = N(x; 0, (1 + h²) I) exactly, so a large-N KDE matches it."""
    g = torch.Generator().manual_seed(d)
    centres = torch.randn(100_000, d, generator=g, dtype=torch.float64)
    x = torch.randn(50, d, generator=g, dtype=torch.float64) * 0.7
    got = kde_log_prob(x, centres, h)
    want = gaussian_log_prob(x, 1 + h * h)
    assert (got - want).abs().max() < 0.05


def test_kde_single_centre_is_the_gaussian_density():
    x = torch.tensor([[0.3, -0.2]], dtype=torch.float64)
    got = kde_log_prob(x, torch.zeros(1, 2, dtype=torch.float64), 0.7)
    assert torch.allclose(got, gaussian_log_prob(x, 0.49))


def test_bandwidth_rules_closed_forms():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1000, 2, generator=g, dtype=torch.float64) * 2.0
    sigma = float(x.var(0).mean().sqrt())
    assert math.isclose(bandwidth(x, "scott"), sigma * 1000 ** (-1 / 6), rel_tol=1e-9)
    assert math.isclose(bandwidth(x, "silverman"), sigma * (4 / 4) ** (1 / 6) * 1000 ** (-1 / 6), rel_tol=1e-9)
    med = float(torch.pdist(x).median())
    assert math.isclose(bandwidth(x, "median"), med / math.sqrt(2 * math.log(1001)), rel_tol=1e-9)
    assert bandwidth(x, 0.25) == 0.25
    with pytest.raises(ConfigError, match="unknown bandwidth rule"):
        bandwidth(x, "nope")
    with pytest.raises(ConfigError, match="at least 2 samples"):
        bandwidth(x[:1], "scott")


def test_multi_bandwidth_is_the_average_and_gradients_reach_the_centres():
    g = torch.Generator().manual_seed(1)
    centres = torch.randn(64, 2, generator=g).requires_grad_(True)
    x = torch.randn(8, 2, generator=g)
    avg = multi_bandwidth_log_prob(x, centres, [0.2, 0.5])
    assert torch.allclose(avg, 0.5 * (kde_log_prob(x, centres, 0.2) + kde_log_prob(x, centres, 0.5)))
    avg.sum().backward()
    assert centres.grad is not None and centres.grad.abs().sum() > 0
