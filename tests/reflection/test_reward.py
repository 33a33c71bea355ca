"""Trajectory reward and advantage: the invariants of the spec (stall gain, λ ≥ α·w_max, malformed rule, A = 0 for
identical rewards, std floor)."""
import pytest
import torch

from visalign.core import ConfigError, build_algorithm
from visalign.reflection import TrajectoryRewardConfig, group_advantages, trajectory_rewards


def rewards(rows, cfg, done_while_wrong=None):
    """R for trajectories given as lists q_0..q_T (padded to 3 rounds)."""
    q = torch.tensor([row + [row[-1]] * (4 - len(row)) for row in rows])
    edits = torch.tensor([len(row) - 1 for row in rows])
    dww = torch.tensor(done_while_wrong or [False] * len(rows))
    return trajectory_rewards(q, edits, dww, cfg)


def test_flat_round_weights_give_zero_stall_gain():
    flat = TrajectoryRewardConfig()
    immediate, stalled = rewards([[0.4, 1.0], [0.4, 0.4, 1.0]], flat)
    assert immediate == pytest.approx(stalled)
    assert immediate == pytest.approx(1.0 + 0.3 * 0.6)
    decaying = TrajectoryRewardConfig(round_weights=(1.0, 0.5, 0.25))
    immediate, stalled = rewards([[0.4, 1.0], [0.4, 0.4, 1.0]], decaying)
    assert stalled < immediate  # the gain depends on when the repair happens once the weights are not flat


def test_reward_terms():
    cfg = TrajectoryRewardConfig()
    two_gains, damage_then_repair, premature = rewards([[0.2, 0.4, 1.0], [1.0, 0.4, 1.0], [0.4]], cfg,
                                                       [False, False, True])
    assert two_gains == pytest.approx(1.0 + 0.3 * 0.8 + 0.3 * 0.2)   # β on the gains except the largest
    assert damage_then_repair == pytest.approx(1.0 + 0.3 * 0.6 - 0.5 * 0.6)
    assert damage_then_repair < 1.0                                   # damage + repair never beats leaving it alone
    assert premature == pytest.approx(0.4 - 0.5)


@pytest.mark.parametrize("overrides", [{"lam": 0.2}, {"alpha": 0.6, "lam": 0.5},
                                       {"round_weights": [1.0, 2.0, 1.0], "lam": 0.5}])
def test_lambda_must_cover_alpha_times_max_weight(overrides):
    with pytest.raises(ConfigError, match="lam=.* must be >= alpha·max"):
        TrajectoryRewardConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in overrides.items()})
    with pytest.raises(ConfigError, match="lam=.* must be >= alpha·max"):
        build_algorithm({"name": "reflection", "reward": overrides})
    TrajectoryRewardConfig(alpha=0.3, lam=0.3)  # equality is allowed


def test_malformed_trajectory_never_gets_a_nonnegative_advantage():
    cfg = TrajectoryRewardConfig()
    gen = torch.Generator().manual_seed(0)
    cases = []
    for _ in range(3000):
        k = int(torch.randint(2, 17, (1,), generator=gen))
        r = torch.rand(k, generator=gen) * 3 - 1
        if torch.rand((), generator=gen) < 0.3:
            r = r.round()  # ties, identical groups
        malformed = torch.rand(k, generator=gen) < 0.3
        malformed[int(torch.randint(k, (1,), generator=gen))] = True
        cases.append((r, malformed))
    cases.append((torch.tensor([5.0, 0.0, 0.0, 0.0]), torch.tensor([True, False, False, False])))  # best R
    cases.append((torch.ones(4), torch.ones(4, dtype=torch.bool)))                                 # all malformed
    for r, malformed in cases:
        adv = group_advantages(r, malformed, r.shape[0], cfg)
        assert (adv[malformed] < 0).all(), (r, malformed, adv)
        assert (adv >= -1).all() and (adv <= 1).all()
        assert (adv[malformed] <= -0.5).all()


def test_identical_rewards_give_zero_advantage():
    cfg = TrajectoryRewardConfig()
    adv = group_advantages(torch.tensor([0.7] * 8 + [0.2] * 8), torch.zeros(16, dtype=torch.bool), 8, cfg)
    assert torch.equal(adv, torch.zeros(16))


def test_std_floor():
    cfg = TrajectoryRewardConfig()
    small = group_advantages(torch.tensor([0.0, 0.02]), torch.zeros(2, dtype=torch.bool), 2, cfg)
    assert small.tolist() == pytest.approx([-0.1, 0.1])  # (±0.01) / max(0.01, 0.1)
    large = group_advantages(torch.tensor([0.0, 0.4]), torch.zeros(2, dtype=torch.bool), 2, cfg)
    assert large.tolist() == pytest.approx([-1.0, 1.0])  # (±0.2) / 0.2, the population std
    floored = group_advantages(torch.tensor([0.0, 0.02]), torch.zeros(2, dtype=torch.bool), 2,
                               TrajectoryRewardConfig(std_floor=0.01))
    assert floored.tolist() == pytest.approx([-1.0, 1.0])


def test_bad_inputs_are_named():
    cfg = TrajectoryRewardConfig()
    with pytest.raises(ValueError, match="multiple of group_size"):
        group_advantages(torch.zeros(5), torch.zeros(5, dtype=torch.bool), 2, cfg)
    with pytest.raises(ValueError, match="NaN"):
        group_advantages(torch.tensor([0.0, float("nan")]), torch.zeros(2, dtype=torch.bool), 2, cfg)
    with pytest.raises(ConfigError, match="malformed_penalty must be > 0"):
        TrajectoryRewardConfig(malformed_penalty=0.0)
