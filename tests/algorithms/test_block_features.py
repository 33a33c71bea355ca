"""Block feature spaces: per-block mean-square costs in transport, kernels and the RWTD regression."""
import math

import numpy as np
import ot
import pytest
import torch

from visalign.algorithms import RWTD, RWTDConfig
from visalign.algorithms.festdpo import kernel_features
from visalign.algorithms.kde import kde_log_prob
from visalign.algorithms.transport import (barycentric_projection, mixture_target, squared_cost, transport_plan,
                                           transport_targets)
from visalign.core import BlockFeatures, PromptBatch, TrainContext
from visalign.core.reward import FunctionReward
from visalign.features import BlockLayout, FeatureSpace, build_features
from visalign.generators import ToyOneStepGenerator
from visalign.generators.toy import ToyConfig


class UnequalBlocks(FeatureSpace, BlockFeatures):
    """Block "a" = x_0 (1 wide), block "b" = [x_1, x_2] repeated twice (4 wide)."""

    def block_sizes(self) -> dict[str, int]:
        return {"a": 1, "b": 4}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([x[:, :1], x[:, 1:3], x[:, 1:3]], dim=1)


def hand_cost(x: torch.Tensor, y: torch.Tensor, sizes: list[int]) -> torch.Tensor:
    out = torch.zeros(x.shape[0], y.shape[0], dtype=torch.float64)
    start = 0
    for d in sizes:
        for i in range(x.shape[0]):
            for j in range(y.shape[0]):
                out[i, j] += float(((x[i, start:start + d] - y[j, start:start + d]) ** 2).sum()) / d
        start += d
    return out


def test_block_cost_is_the_sum_of_per_block_mean_squares():
    gen = torch.Generator().manual_seed(0)
    x, y = torch.randn(4, 6, generator=gen), torch.randn(5, 6, generator=gen)
    layout = BlockLayout.mean_square({"cls": 1, "mean": 2, "std": 3})
    assert torch.allclose(squared_cost(x, y, layout), hand_cost(x, y, [1, 2, 3]), atol=1e-12)
    assert set(layout.split(x)) == {"cls", "mean", "std"} and layout.split(x)["std"].shape == (4, 3)
    # unequal blocks are not a rescaled concatenation: the ratio to the plain cost varies from pair to pair
    ratio = squared_cost(x, y, layout) / squared_cost(x, y)
    assert float(ratio.max() - ratio.min()) > 0.05


def test_equal_blocks_equal_the_concatenation_divided_by_the_block_size_and_give_the_same_plan():
    gen = torch.Generator().manual_seed(1)
    x, y = torch.randn(6, 12, generator=gen), torch.randn(6, 12, generator=gen)
    layout = BlockLayout.mean_square({"cls": 4, "mean": 4, "std": 4})
    blocks, concat = squared_cost(x, y, layout), squared_cost(x, y)
    assert torch.allclose(blocks, concat / 4, atol=1e-12)
    w = torch.full((6,), 1 / 6, dtype=torch.float64)
    for solver in ("emd", "sinkhorn"):  # sinkhorn's ε is relative to the median cost, so the factor cancels
        assert torch.allclose(transport_plan(blocks, w, w, solver), transport_plan(concat, w, w, solver), atol=1e-9)


def test_layout_of_a_space_plain_or_block_and_its_errors():
    assert BlockLayout.of(build_features("identity"), 7) == BlockLayout.single(7)
    assert BlockLayout.of(UnequalBlocks(), 5).weights == (1.0, 0.25)
    with pytest.raises(ValueError, match="declares blocks .* returned 6-wide"):
        BlockLayout.of(UnequalBlocks(), 6)
    with pytest.raises(ValueError, match="3 wide but the block layout"):
        BlockLayout.mean_square({"a": 1, "b": 4}).split(torch.zeros(2, 3))


def _ctx():
    torch.manual_seed(0)
    policy = ToyOneStepGenerator(ToyConfig(dim=3, hidden=16, layers=1))
    reward = FunctionReward(lambda s, p, m: s[:, 0] - s[:, 1], name="x")
    return TrainContext(policy, policy.frozen_copy(), reward, torch.device("cpu"))


def test_rwtd_step_with_a_block_space_regresses_onto_what_the_per_block_cost_implies():
    ctx = _ctx()
    config = RWTDConfig(lam=1.0, num_reference=0, num_current=8, beta=0.5, solver="emd", step_size=0.5,
                        features=UnequalBlocks())
    algo = RWTD(config)
    rollout = algo.rollout(ctx, PromptBatch([""]), torch.Generator().manual_seed(3))
    f = UnequalBlocks()(rollout.samples)
    weights = mixture_target(rollout.rewards, None, 0.5, 1.0)
    uniform = np.full(8, 1 / 8)
    plan = torch.from_numpy(ot.emd(uniform, weights.numpy() / weights.numpy().sum(), hand_cost(f, f, [1, 4]).numpy()))
    expected = 0.5 * f + 0.5 * barycentric_projection(plan, f)
    assert torch.allclose(rollout.extras["targets"], expected, atol=1e-6)
    concat = transport_targets(f, f, weights, "emd").targets  # the plain squared distance would give other targets
    assert not torch.allclose(0.5 * f + 0.5 * concat, expected, atol=1e-3)

    loss, _ = algo.loss(ctx, rollout)
    u = UnequalBlocks()(ctx.policy(rollout.noise, rollout.batch.prompts))
    t = rollout.extras["targets"]
    hand = ((u[:, :1] - t[:, :1]) ** 2).mean() + ((u[:, 1:] - t[:, 1:]) ** 2).mean()
    assert float(loss.detach()) == pytest.approx(float(hand.detach()), rel=1e-6)
    loss.backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in ctx.policy.parameters())


def test_plain_spaces_keep_the_mean_square_loss():
    ctx = _ctx()
    algo = RWTD(RWTDConfig(lam=1.0, num_reference=0, num_current=6, solver="emd", features="identity"))
    rollout = algo.rollout(ctx, PromptBatch([""]), torch.Generator().manual_seed(3))
    loss, _ = algo.loss(ctx, rollout)
    out = ctx.policy(rollout.noise, rollout.batch.prompts)
    assert float(loss.detach()) == pytest.approx(float((out.detach() - rollout.extras["targets"]).pow(2).mean()), rel=1e-6)


def test_festdpo_kernels_use_the_per_block_distance():
    gen = torch.Generator().manual_seed(2)
    x, c = torch.randn(3, 3, generator=gen), torch.randn(5, 3, generator=gen)
    phi = UnequalBlocks()
    h = 0.7
    got = kde_log_prob(kernel_features(phi, x), kernel_features(phi, c), h)
    dist = hand_cost(phi(x), phi(c), [1, 4])
    d = 5
    expected = torch.logsumexp(-dist / (2 * h * h), 1) - math.log(5) - 0.5 * d * math.log(2 * math.pi * h * h)
    assert torch.allclose(got.double(), expected, atol=1e-5)
