"""Bad configurations fail early with messages that name the key."""
import pytest
import torch

from visalign.algorithms import FestDPO, FlowGRPO, FlowGRPOConfig, RewardBackprop, RWR, RWTD
from visalign.core import ConfigError, PromptBatch, build_algorithm
from visalign.core.algorithm import TrainContext
from visalign.core.reward import FunctionReward
from visalign.generators import ToyOneStepGenerator


@pytest.mark.parametrize("name,overrides,message", [
    ("rwtd", {"beta": 0.0}, "rwtd.beta .* must be > 0"),
    ("rwtd", {"beta": -2.0}, "rwtd.beta .* must be > 0"),
    ("rwtd", {"lam": 1.2}, r"rwtd.lam .* must be in \[0, 1\]"),
    ("rwtd", {"lam": -0.5}, r"rwtd.lam .* must be in \[0, 1\]"),
    ("rwtd", {"num_current": 1}, "rwtd.num_current must be >= 2"),
    ("rwtd", {"lam": 0.5, "num_reference": 0}, "rwtd.num_reference must be >= 1 when lam < 1"),
    ("rwtd", {"target_ess": 1.5}, "target_ess"),
    ("rwtd", {"solver": "hungarian"}, "solver"),
    ("festdpo", {"beta": 0.0}, "festdpo.beta must be > 0"),
    ("festdpo", {"num_samples": 1}, "festdpo.num_samples must be >= 2"),
    ("festdpo", {"bandwidth": "wide"}, "festdpo.bandwidth must be one of"),
    ("festdpo", {"bandwidth_scales": []}, "bandwidth_scales"),
    ("rwr", {"beta": 0.0}, "rwr.beta"),
    ("rwr", {"num_samples": 1}, "rwr.num_samples must be >= 2"),
    ("flow_grpo", {"group_size": 1}, "flow_grpo.group_size must be >= 2"),
    ("reward_backprop", {"anchor_weight": -1.0}, "anchor_weight"),
])
def test_bad_config_fails_with_a_clear_message(name, overrides, message):
    with pytest.raises(ConfigError, match=message):
        build_algorithm({"name": name, **overrides})


def test_unknown_key_is_named():
    with pytest.raises(ConfigError, match="rwtd.*lamda"):
        build_algorithm({"name": "rwtd", "lamda": 0.5})


def test_valid_configs_build():
    for name, cls in [("rwtd", RWTD), ("festdpo", FestDPO), ("rwr", RWR), ("flow_grpo", FlowGRPO), ("reward_backprop", RewardBackprop)]:
        assert isinstance(build_algorithm(name), cls)


def _ctx(reward):
    policy = ToyOneStepGenerator()
    return TrainContext(policy, policy.frozen_copy(), reward, torch.device("cpu"))


def test_reward_backprop_rejects_black_box_rewards():
    black_box = FunctionReward(lambda s, p, m: s[:, 0].detach(), name="black_box")
    with pytest.raises(ConfigError, match="needs a differentiable reward.*black_box"):
        RewardBackprop().setup(_ctx(black_box))


def test_flow_grpo_rejects_one_step_generators():
    reward = FunctionReward(lambda s, p, m: s[:, 0], name="x")
    with pytest.raises(ConfigError, match="flow_grpo needs a flow model"):
        FlowGRPO().setup(_ctx(reward))


def test_reward_feature_space_needs_a_features_method():
    reward = FunctionReward(lambda s, p, m: s[:, 0], name="plain")
    algo = RWTD.from_config({"features": "reward"})
    with pytest.raises(ValueError, match="features\\(\\) method"):
        algo.setup(_ctx(reward))


@pytest.mark.parametrize("name,settings", [
    ("rwtd", {"num_current": 6, "num_reference": 4, "features": "conv"}),
    ("festdpo", {"num_samples": 4, "num_pairs": 3, "pair_source": "reference", "features": "conv"}),
    ("festdpo", {"num_samples": 4, "num_pairs": 3, "pair_source": "policy", "features": "conv"}),
    ("rwr", {"num_samples": 5}),
])
def test_samples_per_prompt_counts_what_a_rollout_draws(image_generator, name, settings):
    """``config.samples_per_prompt`` is the budget unit comparisons split by; it must match the generators' draws."""
    algorithm = build_algorithm({"name": name, **settings})
    reference = image_generator.frozen_copy()
    drawn = {"rows": 0}
    for gen in (image_generator, reference):
        def counted(noise, prompts, _forward=gen.forward):
            drawn["rows"] += noise.shape[0]
            return _forward(noise, prompts)
        gen.forward = counted
    ctx = TrainContext(image_generator, reference, FunctionReward(lambda x, p, m: x.mean((1, 2, 3)), name="brightness"), torch.device("cpu"))
    algorithm.setup(ctx)
    with torch.no_grad():
        algorithm.rollout(ctx, PromptBatch(["a", "b"]), torch.Generator().manual_seed(0))
    assert drawn["rows"] == 2 * algorithm.config.samples_per_prompt


def test_flow_grpo_gdpo_normalises_each_reward_component():
    from visalign.core.reward import WeightedReward
    from visalign.generators import ToyFlowGenerator
    from visalign.rewards.multi import normalize_then_sum

    wide = FunctionReward(lambda s, p, m: 100.0 * s[:, 0], name="wide")
    narrow = FunctionReward(lambda s, p, m: -s[:, 1], name="narrow")
    reward = WeightedReward([(wide, 1.0), (narrow, 1.0)])
    policy = ToyFlowGenerator()
    ctx = TrainContext(policy, policy.frozen_copy(), reward, torch.device("cpu"))
    batch = PromptBatch([""] * 2, [{}, {}])
    gen = torch.Generator().manual_seed(0)
    gdpo = FlowGRPO(FlowGRPOConfig(group_size=4, num_steps=2, multi_reward="gdpo")).rollout(ctx, batch, gen)
    expected = normalize_then_sum({"wide": 100.0 * gdpo.samples[:, 0], "narrow": -gdpo.samples[:, 1]}, 4)
    assert torch.allclose(gdpo.extras["advantages"], expected.clamp(-5, 5), atol=1e-5)
    summed = FlowGRPO(FlowGRPOConfig(group_size=4, num_steps=2)).rollout(ctx, batch, torch.Generator().manual_seed(0))
    assert not torch.allclose(summed.extras["advantages"], gdpo.extras["advantages"], atol=1e-2)
    with pytest.raises(ConfigError, match="gdpo needs a reward with several components.*'wide'"):
        FlowGRPO(FlowGRPOConfig(group_size=4, num_steps=2, multi_reward="gdpo")).rollout(
            TrainContext(policy, None, wide, torch.device("cpu")), batch, gen)
    with pytest.raises(ConfigError, match="multi_reward must be one of"):
        FlowGRPOConfig(multi_reward="mean")
