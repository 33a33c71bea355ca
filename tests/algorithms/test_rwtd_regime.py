"""The published RWTD regime as options: run-wide reward scale with a fixed temperature (from `visalign calibrate`),
the uniform floor on the current weights, the absolute Sinkhorn ε floor, and prompt groups accumulated per step."""
import json

import pytest
import torch

from visalign.algorithms import RWTD, RWTDConfig
from visalign.algorithms.transport import mixture_target, tilted_weights, transport_plan, squared_cost
from visalign.core import ConfigError, PromptBatch, TrainContext
from visalign.core.reward import FunctionReward
from visalign.core.types import Rollout
from visalign.generators import ToyOneStepGenerator


def test_current_floor_mixes_uniform_weights_into_the_current_population_only():
    rc, rr = torch.tensor([0.0, 5.0, 10.0, 20.0]), torch.tensor([0.0, 9.0])
    w = mixture_target(rc, rr, beta=0.5, lam=0.85, current_floor=0.1)
    expected_cur = 0.85 * (0.9 * tilted_weights(rc, 0.5) + 0.1 / 4)
    assert torch.allclose(w[:4], expected_cur) and torch.allclose(w[4:], 0.15 * tilted_weights(rr, 0.5))
    assert float(w[:4].min()) >= 0.85 * 0.1 / 4 - 1e-12 and float(w.sum()) == pytest.approx(1.0)
    with pytest.raises(ConfigError, match="current_floor"):
        mixture_target(rc, rr, 0.5, 0.85, current_floor=1.5)


def test_eps_floor_only_acts_when_it_exceeds_the_relative_epsilon():
    gen = torch.Generator().manual_seed(0)
    cost = squared_cost(torch.randn(6, 3, generator=gen), torch.randn(6, 3, generator=gen))
    uniform = torch.full((6,), 1 / 6, dtype=torch.float64)
    median = float(cost.median())
    plain = transport_plan(cost, uniform, uniform, "sinkhorn", 0.1)
    low = transport_plan(cost, uniform, uniform, "sinkhorn", 0.1, eps_floor=1e-4 * median)
    high = transport_plan(cost, uniform, uniform, "sinkhorn", 0.1, eps_floor=10 * median)
    assert torch.allclose(plain, low)
    entropy = lambda p: float(-(p * p.clamp_min(1e-300).log()).sum())  # noqa: E731
    assert entropy(high) > entropy(plain) + 0.5  # a larger ε blurs the plan towards the product coupling
    with pytest.raises(ConfigError, match="eps_floor"):
        RWTDConfig(eps_floor=-1.0)


def _targets(config: RWTDConfig, reward_scale_of_rewards: float) -> torch.Tensor:
    torch.manual_seed(0)
    policy = ToyOneStepGenerator()
    reward = FunctionReward(lambda s, p, m: reward_scale_of_rewards * s[:, 0], name="x")
    ctx = TrainContext(policy, policy.frozen_copy(), reward, torch.device("cpu"))
    return RWTD(config).rollout(ctx, PromptBatch(["", ""]), torch.Generator().manual_seed(1)).extras["targets"]


def test_fixed_temperature_on_a_run_wide_scale_is_invariant_to_reward_units():
    base = dict(lam=0.85, beta=0.5, num_current=8, num_reference=8, current_floor=0.1, eps_floor=1e-4)
    a = _targets(RWTDConfig(**base, reward_scale=1.0), 1.0)
    b = _targets(RWTDConfig(**base, reward_scale=100.0), 100.0)
    raw = _targets(RWTDConfig(**base), 100.0)
    assert torch.allclose(a, b, atol=1e-6)
    assert not torch.allclose(a, raw, atol=1e-3)  # without the scale, units change the tilt


def test_reward_scale_from_a_calibration_file_and_its_errors(tmp_path):
    single = tmp_path / "single.json"
    single.write_text(json.dumps({"rewards": {"vvr": {"mean": 0.2, "scale": 0.05}}}))
    assert RWTD(RWTDConfig(reward_scale=str(single))).reward_scale == pytest.approx(0.05)
    several = tmp_path / "several.json"
    several.write_text(json.dumps({"rewards": {"a": {"mean": 0, "scale": 1}, "b": {"mean": 0, "scale": 2}}}))
    with pytest.raises(ConfigError, match="calibrates the components .* but not their total"):
        RWTD(RWTDConfig(reward_scale=str(several)))
    with pytest.raises(FileNotFoundError, match="missing.json"):
        RWTD(RWTDConfig(reward_scale=str(tmp_path / "missing.json")))
    with pytest.raises(ConfigError, match="cannot be combined with normalize_rewards or target_ess"):
        RWTDConfig(reward_scale=1.0, target_ess=0.5)


def test_accumulated_prompt_groups_give_the_gradient_of_one_large_batch():
    """RWTD's targets are per prompt group and its loss a mean over equal groups, so grad_accum micro-batches of
    2 prompts give the gradient of one rollout of 4 (the trainer scales each micro-batch by 1/grad_accum)."""
    torch.manual_seed(0)
    policy = ToyOneStepGenerator()
    reward = FunctionReward(lambda s, p, m: s[:, 0], name="x")
    ctx = TrainContext(policy, policy.frozen_copy(), reward, torch.device("cpu"))
    algo = RWTD(RWTDConfig(num_current=4, num_reference=4))
    big = algo.rollout(ctx, PromptBatch(["a", "b", "c", "d"]), torch.Generator().manual_seed(3))

    def grads(rollouts: list[Rollout]) -> list[torch.Tensor]:
        policy.zero_grad()
        for r in rollouts:
            (algo.loss(ctx, r)[0] / len(rollouts)).backward()
        return [p.grad.clone() for p in policy.parameters()]

    def half(k: int) -> Rollout:
        rows = slice(8 * k, 8 * (k + 1))
        return Rollout(samples=big.samples[rows], batch=PromptBatch(big.batch.prompts[rows], big.batch.metadata[rows]),
                       rewards=big.rewards[rows], noise=big.noise[rows],
                       extras={**big.extras, "targets": big.extras["targets"][rows]})

    for g_big, g_acc in zip(grads([big]), grads([half(0), half(1)])):
        assert torch.allclose(g_big, g_acc, atol=1e-6)


def test_groups_with_equal_rewards_are_counted_not_averaged_into_beta():
    """A group whose rewards are all equal has no finite β (every β keeps the weights uniform): it counts in
    ``rwtd/flat_groups`` and stays out of the mean β, which would otherwise be NaN."""
    torch.manual_seed(0)
    policy = ToyOneStepGenerator()
    # prompt "flat" scores 0 on every sample; prompt "varied" scores the first coordinate
    reward = FunctionReward(lambda s, p, m: s[:, 0] * torch.tensor([q == "varied" for q in p], dtype=s.dtype), name="x")
    ctx = TrainContext(policy, policy.frozen_copy(), reward, torch.device("cpu"))
    algo = RWTD(RWTDConfig(num_current=4, num_reference=4, target_ess=0.5))
    rollout = algo.rollout(ctx, PromptBatch(["flat", "varied"]), torch.Generator().manual_seed(3))
    _, metrics = algo.loss(ctx, rollout)
    assert metrics["rwtd/flat_groups"] == 0.5
    assert 0 < metrics["rwtd/beta"] < float("inf")
    rollout = algo.rollout(ctx, PromptBatch(["flat"]), torch.Generator().manual_seed(3))
    _, metrics = algo.loss(ctx, rollout)
    assert metrics["rwtd/flat_groups"] == 1.0 and "rwtd/beta" not in metrics
