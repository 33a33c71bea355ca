"""Graph (CRBC) credit against a hand-solved graph, and progress credit."""
import math

import pytest

from visalign.text.credit import combine_credit, graph_credit, progress_credit

# four rollouts of one prompt; s1 is shared by three of them
TRAJ = [["s0", "s1"], ["s0", "s1"], ["s0", "s2"], ["s0", "s2", "s1"]]
SUCC = [True, False, True, True]


def test_graph_values_hand_solved_gamma_one():
    c = graph_credit(TRAJ, SUCC, gamma=1.0)
    # V1 = 2/3 (2 of 3 visits succeed), V2 = 1/2*1 + 1/2*V1 = 5/6, V0 = (V1 + V2)/2 = 3/4
    assert math.isclose(c.values["s1"], 2 / 3) and math.isclose(c.values["s2"], 5 / 6) and math.isclose(c.values["s0"], 0.75)


def test_graph_step_advantages_hand_solved_discounted():
    c = graph_credit(TRAJ, SUCC, gamma=0.9, sigma_min=0.01)
    # V1 = 0.9*2/3 = 0.6, V2 = 0.9*(0.5 + 0.5*0.6) = 0.72, V0 = 0.9*(0.6 + 0.72)/2 = 0.594
    assert math.isclose(c.values["s1"], 0.6) and math.isclose(c.values["s2"], 0.72) and math.isclose(c.values["s0"], 0.594)
    # at s0: Q(->s1) = 0.54, Q(->s2) = 0.648, sigma = 0.054 -> advantages -1 / +1
    assert math.isclose(c.q_values[0][0], 0.54) and math.isclose(c.q_values[2][0], 0.648)
    assert math.isclose(c.step_advantages[0][0], -1.0) and math.isclose(c.step_advantages[2][0], 1.0)
    # at s1: Q(success) = 0.9, Q(failure) = 0, sigma = sqrt(2/3*0.09 + 1/3*0.36) = sqrt(0.18)
    sig = math.sqrt(0.18)
    assert math.isclose(c.step_advantages[0][1], 0.3 / sig) and math.isclose(c.step_advantages[1][1], -0.6 / sig)
    # s2 has two observed actions (-> success, -> s1): Q = 0.9 and 0.54, V = 0.72, sigma = 0.18
    assert math.isclose(c.step_advantages[2][1], 1.0) and math.isclose(c.step_advantages[3][1], -1.0)
    assert c.num_actions == {"s0": 2, "s1": 2, "s2": 2}


def test_single_action_states_get_no_step_credit():
    c = graph_credit([["a", "b"], ["a", "b"]], [True, False], gamma=1.0)
    # 'a' always goes to 'b' (one action) -> 0; 'b' has success and failure actions
    assert c.step_advantages[0][0] == 0.0 and c.step_advantages[0][1] > 0 > c.step_advantages[1][1]


def test_combine_and_errors():
    assert combine_credit([1.0, -1.0], [[0.5, 0.0], [0.0]], w_group=1.0, w_step=0.5) == [[1.25, 1.0], [-1.0]]
    with pytest.raises(ValueError, match="outcomes"):
        graph_credit([["a"]], [True, False])


def test_progress_credit_telescopes():
    credits = progress_credit([0.25, 0.25, 1.0], initial=0.0)
    assert credits == [0.25, 0.0, 0.75] and math.isclose(sum(credits), 1.0)
    assert progress_credit([0.5, 0.0], initial=0.5) == [0.0, -0.5]
