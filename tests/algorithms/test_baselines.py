"""Per-method behaviour of the baselines (RWR, reward backprop) and of FestDPO's bandwidth annealing, on the shipped
ring references with the linear reward r = x₀: each method moves the mean in the reward direction."""
import pytest
import torch

from visalign.algorithms import FestDPO, FestDPOConfig, RewardBackprop, RewardBackpropConfig, RWR, RWRConfig
from visalign.core import ConfigError, Unconditional
from visalign.core.reward import FunctionReward
from visalign.rewards.toy import ToyLinearReward
from visalign.trainer import Trainer, TrainerConfig

reward = ToyLinearReward((1.0, 0.0))


def mean_reward(gen, n=2000):
    with torch.no_grad():
        return float(reward(gen.sample(n=n, generator=torch.Generator().manual_seed(5))).mean())


@pytest.mark.parametrize("family", ["one_step", "flow"])
def test_rwr_moves_the_mean_in_the_reward_direction(family, one_step_reference, flow_reference, tmp_path, train, trainable_copy):
    reference = one_step_reference if family == "one_step" else flow_reference
    policy = trainable_copy(reference)
    before = mean_reward(policy)
    train(policy, RWR(RWRConfig(beta=1.0, num_samples=128, normalize_rewards=False)), reward, reference, 40, 2e-3, tmp_path)
    after = mean_reward(policy)
    print(family, before, after)
    assert after > before + 0.25
    with torch.no_grad():  # the orthogonal coordinate is not pushed anywhere
        x = policy.sample(n=2000, generator=torch.Generator().manual_seed(6))
    assert abs(float(x[:, 1].mean())) < 0.25


@pytest.mark.parametrize("family", ["one_step", "flow"])
def test_reward_backprop_moves_the_mean_and_the_anchor_limits_it(family, one_step_reference, flow_reference, tmp_path, train, trainable_copy):
    reference = one_step_reference if family == "one_step" else flow_reference
    before = mean_reward(reference)
    results = {}
    for anchor in (0.0, 2.0):
        policy = trainable_copy(reference)
        algo = RewardBackprop(RewardBackpropConfig(num_samples=64, anchor_weight=anchor))
        train(policy, algo, reward, reference, 30, 2e-3, tmp_path / str(anchor))
        results[anchor] = mean_reward(policy)
    print(family, before, results)
    assert results[0.0] > before + 0.5  # plain reward ascent moves far ...
    assert before < results[2.0] < results[0.0]  # ... an L2 anchor to the reference moves less


def test_reward_backprop_with_a_black_box_reward_fails_naming_it(one_step_reference, tmp_path, trainable_copy):
    black_box = FunctionReward(lambda s, p, m: s[:, 0].detach().round(), name="rounded_x0")
    cfg = TrainerConfig(steps=1, prompts_per_step=1, log_with=[], progress=False, output_dir=str(tmp_path))
    with pytest.raises(ConfigError, match="reward_backprop needs a differentiable reward; 'rounded_x0'"):
        Trainer(trainable_copy(one_step_reference), RewardBackprop(), black_box, Unconditional(), cfg).train()


def test_festdpo_bandwidth_anneal_schedule_and_checks():
    algo = FestDPO(FestDPOConfig(bandwidth_anneal=4.0, bandwidth_anneal_steps=10))
    factors = []
    for step in range(12):
        algo.num_updates = step
        factors.append(algo.bandwidth_factor())
    assert factors[0] == pytest.approx(4.0) and factors[5] == pytest.approx(2.0) and factors[10:] == [1.0, 1.0]
    assert all(a >= b for a, b in zip(factors, factors[1:]))
    assert FestDPO(FestDPOConfig()).bandwidth_factor() == 1.0
    state = algo.state_dict()
    fresh = FestDPO(FestDPOConfig(bandwidth_anneal=4.0, bandwidth_anneal_steps=10))
    fresh.load_state_dict(state)
    assert fresh.num_updates == algo.num_updates
    with pytest.raises(ConfigError, match="festdpo.bandwidth_anneal .* must be >= 1"):
        FestDPOConfig(bandwidth_anneal=0.5)
    with pytest.raises(ConfigError, match="festdpo.bandwidth_anneal_steps must be >= 0"):
        FestDPOConfig(bandwidth_anneal_steps=-1)
