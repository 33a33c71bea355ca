"""Advantage estimators against hand-computed values."""
import math

import pytest
import torch

from visalign.text.advantages import (
    BetaPosteriorTable,
    beta_binomial_pmf,
    dr_grpo_advantages,
    group_rewards,
    grpo_advantages,
    mapp_advantages,
    mapp_selection_score,
    rloo_advantages,
)


def test_group_rewards_reshape_and_error():
    assert group_rewards(torch.arange(6.0), 3).tolist() == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(ValueError, match="groups of 4"):
        group_rewards(torch.arange(6.0), 4)


def test_grpo_binary_group_matches_sqrt_formula():
    a = grpo_advantages(torch.tensor([[1.0, 0, 0, 0], [1, 0, 0, 1]]))
    # S=1 of G=4: success +sqrt(3), failure -sqrt(1/3); S=2: +-1
    expected = torch.tensor([[math.sqrt(3), -math.sqrt(1 / 3), -math.sqrt(1 / 3), -math.sqrt(1 / 3)], [1, -1, -1, 1]])
    assert torch.allclose(a, expected, atol=1e-4)


def test_grpo_collapses_on_uniform_groups():
    a = grpo_advantages(torch.tensor([[1.0, 1, 1, 1], [0, 0, 0, 0]]))
    assert torch.equal(a, torch.zeros(2, 4))


def test_dr_grpo_is_mean_centred_without_std():
    a = dr_grpo_advantages(torch.tensor([[1.0, 0, 0, 0], [2, 4, 6, 8]]))
    assert torch.allclose(a, torch.tensor([[0.75, -0.25, -0.25, -0.25], [-3, -1, 1, 3]]))


def test_rloo_leave_one_out_baseline():
    a = rloo_advantages(torch.tensor([[1.0, 0, 0, 0], [2, 4, 6, 6]]))
    # second row baselines: (4+6+6)/3, (2+6+6)/3, (2+4+6)/3, (2+4+6)/3
    assert torch.allclose(a, torch.tensor([[1, -1 / 3, -1 / 3, -1 / 3], [2 - 16 / 3, 4 - 14 / 3, 2, 2]]))
    with pytest.raises(ValueError, match="< 2 needed"):
        rloo_advantages(torch.tensor([[1.0]]))


def test_beta_binomial_pmf_small_case():
    # BB(k; 2, 2, 1): k=0 -> 1/6, k=1 -> 1/3, k=2 -> 1/2
    p = beta_binomial_pmf(torch.tensor([0.0, 1, 2]), 2, torch.tensor(2.0), torch.tensor(1.0))
    assert torch.allclose(p, torch.tensor([1 / 6, 1 / 3, 1 / 2], dtype=torch.float64))


def test_mapp_group_of_two_closed_form():
    # G=2: A+ = beta/(alpha+beta), A- = -alpha/(alpha+beta)
    a = mapp_advantages(torch.tensor([[1.0, 0.0]]), torch.tensor([[2.0, 2.0]]), torch.tensor([[3.0, 3.0]]))
    assert torch.allclose(a, torch.tensor([[0.6, -0.4]]))


def test_mapp_group_of_three_hand_values():
    # alpha=2, beta=1: A+ = sqrt2/6 + (1/3)/sqrt2 ; A- = -(sqrt2/2 + (1/3)/sqrt2)
    a = mapp_advantages(torch.tensor([[1.0, 0.0, 1.0]]), torch.full((1, 3), 2.0), torch.full((1, 3), 1.0))
    plus = math.sqrt(2) / 6 + 1 / (3 * math.sqrt(2))
    minus = -(math.sqrt(2) / 2 + 1 / (3 * math.sqrt(2)))
    assert torch.allclose(a, torch.tensor([[plus, minus, plus]]), atol=1e-6)


def test_mapp_rejects_non_binary():
    with pytest.raises(ValueError, match="binary"):
        mapp_advantages(torch.tensor([[0.5, 1.0]]), torch.ones(1, 2), torch.ones(1, 2))


def test_mapp_all_correct_group_is_not_zero_while_grpo_is():
    table = BetaPosteriorTable(alpha0=1.0, beta0=1.0, discount=0.5)
    rewards = torch.ones(1, 4)
    alpha, beta = table.leave_one_out(["p"], rewards)
    # fresh prompt: decayed prior (1, 1); leave-one-out: alpha = 1 + 4 - 1, beta = 1 + 0
    assert alpha.tolist() == [[4.0] * 4] and beta.tolist() == [[1.0] * 4]
    a = mapp_advantages(rewards, alpha, beta)
    # w = BB(S-1; 3, 4, 1) = 1/35, 4/35, 10/35 for S = 1, 2, 3
    expected = (math.sqrt(3) + 4 + 10 / math.sqrt(3)) / 35
    assert torch.allclose(a, torch.full((1, 4), expected), atol=1e-6)
    assert torch.equal(grpo_advantages(rewards), torch.zeros(1, 4))
    # all-wrong mirrors it
    alpha0, beta0 = table.leave_one_out(["q"], torch.zeros(1, 4))
    assert torch.allclose(mapp_advantages(torch.zeros(1, 4), alpha0, beta0), torch.full((1, 4), -expected), atol=1e-6)


def test_discounted_posterior_update_and_state_roundtrip():
    table = BetaPosteriorTable(alpha0=1.0, beta0=1.0, discount=0.5)
    table.update(["p"], torch.ones(1, 4))
    assert table.get("p") == (5.0, 1.0)
    table.update(["p"], torch.tensor([[1.0, 0, 0, 0]]))
    # decay: (0.5*5 + 0.5, 0.5*1 + 0.5) = (3, 1); + S=1, G-S=3
    assert table.get("p") == (4.0, 4.0)
    other = BetaPosteriorTable()
    other.load_state_dict(table.state_dict())
    assert other.get("p") == (4.0, 4.0) and other.get("unseen") == (1.0, 1.0)


def test_selection_score_is_mixed_group_probability():
    # uniform prior, G=2: P(mixed) = E[2p(1-p)] = 1/3
    assert math.isclose(float(mapp_selection_score(1.0, 1.0, 2)), 1 / 3, rel_tol=1e-9)
    # confident prompts (all-correct history) score lower than uncertain ones
    table = BetaPosteriorTable()
    table.update(["easy"], torch.ones(1, 8))
    s = table.scores(["easy", "new"], 8)
    assert s[0] < s[1]


def test_posterior_prompt_source_prefers_uncertain_prompts():
    from visalign.core import PromptList
    from visalign.text import PosteriorPromptSource

    table = BetaPosteriorTable()
    for _ in range(3):
        table.update(["easy"], torch.ones(1, 8))
    # (1,1) -> (9,1) -> (5,1)+8 = (13,1) -> (7,1)+8 = (15,1); score = 1 - 15/23 - 15*B(15,9) vs 1 - 2/9 for a new prompt
    assert table.get("easy") == (15.0, 1.0)
    s = table.scores(["easy", "new"], 8)
    assert math.isclose(float(s[1]), 7 / 9, rel_tol=1e-9) and math.isclose(float(s[0]), 8 / 23 - 15 * math.exp(math.lgamma(15) + math.lgamma(9) - math.lgamma(24)), rel_tol=1e-9)
    source = PosteriorPromptSource(PromptList(["easy", "new"]), table, group_size=8, pool_factor=4)
    g = torch.Generator().manual_seed(0)
    drawn = [p for _ in range(100) for p in source.sample(1, g).prompts]
    assert drawn.count("new") > 1.5 * drawn.count("easy")
