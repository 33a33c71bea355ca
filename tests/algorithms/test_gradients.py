"""Losses train the generator only: frozen encoders and the reference receive no gradient."""
import pytest
import torch

from visalign.algorithms import FestDPO, FestDPOConfig, RWTD, RWTDConfig
from visalign.core import PromptBatch
from visalign.core.algorithm import TrainContext
from visalign.core.reward import FunctionReward

brightness = FunctionReward(lambda s, p, m: s.mean((1, 2, 3)), name="brightness")


def _check(algorithm, policy):
    reference = policy.frozen_copy()
    ctx = TrainContext(policy, reference, brightness, torch.device("cpu"))
    algorithm.setup(ctx)
    rollout = algorithm.rollout(ctx, PromptBatch(["a", "b"]), torch.Generator().manual_seed(0))
    loss, metrics = algorithm.loss(ctx, rollout)
    loss.backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in policy.parameters())
    assert all(p.grad is None for p in reference.parameters())
    encoder = algorithm.features.get(ctx)
    assert all(not p.requires_grad and p.grad is None for p in encoder.parameters())
    assert all(isinstance(v, float) for v in metrics.values())
    return metrics


@pytest.mark.parametrize("features", ["conv", {"name": "random_projection", "dim": 16}, {"name": "pixels", "size": 4}])
def test_rwtd_gradients_reach_generator_not_encoder(image_generator, features):
    algo = RWTD(RWTDConfig(lam=0.5, num_current=8, num_reference=8, features=features))
    metrics = _check(algo, image_generator)
    assert 0 < metrics["rwtd/ess"] <= 1 and metrics["rwtd/ot_seconds"] >= 0


def test_rwtd_sample_space_regression_through_feature_plan(image_generator):
    algo = RWTD(RWTDConfig(lam=0.5, num_current=8, num_reference=8, features="conv", regression_space="samples"))
    _check(algo, image_generator)


def test_rwtd_resampled_target_regresses_onto_whole_samples(image_generator):
    """With ``resample_target`` and exact OT each current sample's target is one whole target sample, not an average."""
    _check(RWTD(RWTDConfig(lam=0.5, num_current=8, num_reference=8, features="conv", regression_space="samples",
                           solver="emd", resample_target=True)), image_generator)
    algo = RWTD(RWTDConfig(lam=1.0, num_current=8, features="conv", regression_space="samples", solver="emd",
                           resample_target=True, step_size=1.0, target_ess=0.25))
    ctx = TrainContext(image_generator, image_generator.frozen_copy(), brightness, torch.device("cpu"))
    rollout = algo.rollout(ctx, PromptBatch(["a"]), torch.Generator().manual_seed(1))
    current, targets = rollout.samples.flatten(1), rollout.extras["targets"]
    nearest = torch.cdist(targets.double(), current.double()).min(1)
    assert nearest.values.max() < 1e-5  # every target is one of the samples...
    assert len(set(nearest.indices.tolist())) < 8  # ...and the tilt repeats the best ones


@pytest.mark.parametrize("pair_source", ["reference", "policy"])
def test_festdpo_gradients_reach_generator_not_encoder(image_generator, pair_source):
    algo = FestDPO(FestDPOConfig(num_samples=8, num_pairs=4, features="conv", pair_source=pair_source,
                                 bandwidth="median", bandwidth_scales=[0.5, 1.0, 2.0]))
    _check(algo, image_generator)
