"""Text algorithms driven directly (no trainer): rollout structure, advantages, losses and gradients."""
import math

import pytest
import torch

from visalign.core import ALGORITHMS, ConfigError, FunctionReward, TrainContext
from visalign.core.types import PromptBatch
from visalign.text import (
    CausalLMPolicy,
    ExactMatchReward,
    TextDistill,
    TextDistillConfig,
    TextGRPO,
    TextGRPOConfig,
    TextMultiReward,
    TextMultiRewardConfig,
    grpo_advantages,
    reconcile,
    tiny_causal_lm,
)

BATCH = PromptBatch(["1+2=", "13+45="], [{"answer": "3"}, {"answer": "58"}])
LONG = FunctionReward(lambda s, p, m: torch.tensor([float(len(t) >= 3) for t in s]), name="long")


def ctx_for(policy, reward=LONG, reference=None):
    return TrainContext(policy, reference, reward, torch.device("cpu"))


def test_grpo_rollout_and_loss(gpt2_policy):
    algo = TextGRPO(TextGRPOConfig(group_size=4))
    ctx = ctx_for(gpt2_policy)
    r = algo.rollout(ctx, BATCH, torch.Generator().manual_seed(0))
    assert len(r.samples) == 8 and r.rewards.shape == (8,) and r.batch.prompts[:4] == ["1+2="] * 4
    assert torch.allclose(r.extras["advantages"], grpo_advantages(r.rewards.view(2, 4)).view(-1))
    assert 0 < r.rewards.sum() < 8  # mixed groups with this seed
    loss, metrics = algo.loss(ctx, r)
    loss.backward()
    assert math.isfinite(float(loss.detach())) and metrics["ratio_mean"] == pytest.approx(1.0)
    assert sum(float(p.grad.abs().sum()) for p in gpt2_policy.parameters() if p.grad is not None) > 0
    # on-policy first update: loss = -mean over tokens of the (broadcast) advantages
    m = r.extras["text"].completion_mask.float()
    expected = -(r.extras["advantages"][:, None] * m).sum() / m.sum()
    assert float(loss.detach()) == pytest.approx(float(expected), abs=1e-5)


def test_mapp_uses_and_updates_posterior(gpt2_policy):
    algo = TextGRPO(TextGRPOConfig(group_size=4, advantage="mapp"))
    ctx = ctx_for(gpt2_policy)
    r = algo.rollout(ctx, BATCH, torch.Generator().manual_seed(0))
    s = r.rewards.view(2, 4).sum(1)
    assert algo.posterior.get("1+2=") == (1.0 + float(s[0]), 1.0 + 4 - float(s[0]))
    state = algo.state_dict()
    other = TextGRPO(TextGRPOConfig(group_size=4, advantage="mapp"))
    other.load_state_dict(state)
    assert other.posterior.table == algo.posterior.table
    assert (r.extras["advantages"] != 0).all()  # MaPP never zeroes a sample


def test_config_validation_and_registry():
    cls = ALGORITHMS.get("text_grpo")
    algo = cls.from_config({"advantage": "dr_grpo", "group_size": 2})
    assert algo.aggregation == "constant"
    with pytest.raises(ConfigError, match="advantage"):
        cls.from_config({"advantage": "ppo"})
    with pytest.raises(ConfigError, match="rloo needs group_size"):
        cls.from_config({"advantage": "rloo", "group_size": 1})
    assert "text_distill" in ALGORITHMS and "text_multi_reward" in ALGORITHMS and "text_multiturn" in ALGORITHMS


def test_kl_needs_reference_and_multiple_updates_keep_old_logprobs(gpt2_policy):
    algo = TextGRPO(TextGRPOConfig(group_size=2, kl_coef=0.1, updates_per_rollout=2))
    assert algo.needs_reference and algo.updates_per_rollout == 2
    with pytest.raises(ValueError, match="reference"):
        algo.rollout(ctx_for(gpt2_policy), BATCH, torch.Generator().manual_seed(0))
    ctx = ctx_for(gpt2_policy, reference=gpt2_policy.frozen_copy())
    r = algo.rollout(ctx, BATCH, torch.Generator().manual_seed(0))
    assert torch.allclose(r.extras["old_logprobs"], r.extras["ref_logprobs"])
    loss, m = algo.loss(ctx, r)
    assert m["kl"] == pytest.approx(0.0, abs=1e-6)


def _teacher(tokenizer, seed=5):
    return CausalLMPolicy(tiny_causal_lm(tokenizer, "gpt2", hidden=32, layers=2, heads=2, max_positions=32, seed=seed), tokenizer,
                          max_new_tokens=4)


@pytest.mark.parametrize("kind", ["reverse", "forward"])
def test_distillation_reduces_kl_on_student_rollouts(gpt2_policy, tokenizer, kind):
    algo = TextDistill(TextDistillConfig(group_size=2, kind=kind), teacher=_teacher(tokenizer))
    ctx = ctx_for(gpt2_policy)
    algo.setup(ctx)
    r = algo.rollout(ctx, BATCH, torch.Generator().manual_seed(0))
    opt = torch.optim.Adam(gpt2_policy.parameters(), lr=1e-2)
    first = None
    for _ in range(15):
        loss, m = algo.loss(ctx, r)
        first = first if first is not None else float(loss.detach())
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert first > 0 and float(algo.loss(ctx, r)[0].detach()) < 0.5 * first


def test_hybrid_reports_grad_norm_ratio(gpt2_policy, tokenizer):
    algo = TextDistill(TextDistillConfig(group_size=4, reward_weight=1.0, distill_weight=0.5), teacher=_teacher(tokenizer))
    ctx = ctx_for(gpt2_policy)
    algo.setup(ctx)
    r = algo.rollout(ctx, BATCH, torch.Generator().manual_seed(0))
    loss, m = algo.loss(ctx, r)
    assert m["grad_norm_ratio"] == pytest.approx(m["grad_norm_reward"] / m["grad_norm_distill"], rel=1e-4)
    assert m["distill_scale"] == pytest.approx(m["grad_norm_ratio"], rel=1e-6)


def test_distill_rejects_other_vocabulary(gpt2_policy):
    from visalign.text import char_tokenizer

    other = char_tokenizer("0123456789+=abc")
    algo = TextDistill(TextDistillConfig(), teacher=_teacher(other))
    with pytest.raises(ValueError, match="tokenizers differ"):
        algo.setup(ctx_for(gpt2_policy))


def test_multi_reward_gradient_is_the_reconciled_update(gpt2_policy):
    cfg = TextMultiRewardConfig(group_size=4, combine="orpg", rewards=["text_format", {"name": "text_length", "max_chars": 4, "weight": 0.5}])
    algo = TextMultiReward(cfg)
    ctx = ctx_for(gpt2_policy)
    r = algo.rollout(ctx, BATCH, torch.Generator().manual_seed(1))
    assert r.extras["component_rewards"].shape == (2, 8)
    assert torch.allclose(r.rewards, r.extras["component_rewards"][0] + 0.5 * r.extras["component_rewards"][1])
    params = [p for p in gpt2_policy.parameters() if p.requires_grad]
    loss, m = algo.loss(ctx, r)
    (g,) = [torch.cat([x.reshape(-1) for x in torch.autograd.grad(loss, params)])]
    # recompute the per-reward gradients independently
    logp = gpt2_policy(r.extras["text"])
    flats = []
    for adv in r.extras["advantages"]:
        l_k, _ = algo._ppo(ctx, r, logp, adv)
        flats.append(torch.cat([x.reshape(-1) for x in torch.autograd.grad(l_k, params, retain_graph=True)]))
    expected, _ = reconcile(flats, "orpg", weights=[1.0, 0.5])
    assert torch.allclose(g, expected, atol=1e-6)
    assert float(loss.detach()) == pytest.approx(m["loss/text_format"] + 0.5 * m["loss/text_length"], abs=1e-6)


def test_exact_match_reward_on_rollout(gpt2_policy):
    algo = TextGRPO(TextGRPOConfig(group_size=2))
    result = algo.evaluate(ctx_for(gpt2_policy, ExactMatchReward()), BATCH, torch.Generator().manual_seed(0))
    texts, metrics = result.samples, {"eval/reward_mean": float(result.rewards.mean()), **result.metrics}
    assert len(texts) == 2 and 0.0 <= metrics["eval/reward_mean"] <= 1.0


def test_grpo_gdpo_normalises_each_reward_component(gpt2_policy):
    from visalign.core.reward import WeightedReward
    from visalign.rewards.multi import normalize_then_sum

    length = FunctionReward(lambda s, p, m: torch.tensor([10.0 * len(t) for t in s]), name="length")
    reward = WeightedReward([(LONG, 1.0), (length, 0.5)])
    algo = TextGRPO(TextGRPOConfig(group_size=4, multi_reward="gdpo"))
    r = algo.rollout(ctx_for(gpt2_policy, reward), BATCH, torch.Generator().manual_seed(0))
    comps = {"long": LONG(r.samples, [], []), "length": length(r.samples, [], [])}
    expected = normalize_then_sum(comps, 4, {"long": 1.0, "length": 0.5})
    assert torch.allclose(r.extras["advantages"], expected, atol=1e-5)
    with pytest.raises(ConfigError, match="needs advantage: grpo"):
        TextGRPOConfig(multi_reward="gdpo", advantage="rloo", group_size=2)
