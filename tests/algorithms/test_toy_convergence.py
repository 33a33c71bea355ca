"""Tilted-target toys (small, fast): the trained generator matches T_β[p_ref] ∝ p_ref·exp(r/β), measured by MMD
against exact target samples next to the noise floor (MMD between two independent target sets of the same size)."""
import pytest
import torch

from visalign.algorithms import FestDPO, FestDPOConfig, RWTD, RWTDConfig
from visalign.rewards.toy import ToyLinearReward
from visalign.toys import mmd_rbf, noise_floor, tilted_reference_sample


BETA = 1.0
N_EVAL = 1000
reward = ToyLinearReward((1.0, 0.0))


def target_sampler(reference):
    def sample(n, g):
        seed = int(torch.randint(0, 2**31 - 1, (1,), generator=g))
        return tilted_reference_sample(lambda k, gg: reference.sample(k, generator=gg), reward, BETA, n, pool=100_000, seed=seed)[0]
    return sample


def distances(policy, reference):
    sampler = target_sampler(reference)
    target = sampler(N_EVAL, torch.Generator().manual_seed(1))
    floor, _ = noise_floor(sampler, N_EVAL, repeats=3)
    with torch.no_grad():
        x = policy.sample(N_EVAL, generator=torch.Generator().manual_seed(2))
        x_ref = reference.sample(N_EVAL, generator=torch.Generator().manual_seed(3))
    return {"mmd": mmd_rbf(x, target), "floor": floor, "ref_mmd": mmd_rbf(x_ref, target),
            "reward": float(reward(x).mean()), "target_reward": float(reward(target).mean()), "x": x}


@pytest.fixture(scope="module")
def rwtd_lam0(one_step_reference, tmp_path_factory, train, trainable_copy):
    policy = trainable_copy(one_step_reference)
    algo = RWTD(RWTDConfig(lam=0.0, beta=BETA, num_current=256, num_reference=512, solver="emd"))
    train(policy, algo, reward, one_step_reference, [(150, 1e-3), (100, 3e-4)], tmp_path_factory.mktemp("rwtd0"))
    return policy, distances(policy, one_step_reference)


def test_rwtd_lambda0_matches_tilted_reference(rwtd_lam0):
    _, d = rwtd_lam0
    print({k: v for k, v in d.items() if k != "x"})
    assert d["ref_mmd"] > 5 * d["floor"]  # the target really is far from the reference...
    assert d["mmd"] < 2.5 * d["floor"]  # ...and the trained generator is close to it
    assert abs(d["reward"] - d["target_reward"]) < 0.1


@pytest.mark.slow
def test_rwtd_lambda_positive_trades_distance_for_reward(rwtd_lam0, one_step_reference, tmp_path, train, trainable_copy):
    _, d0 = rwtd_lam0
    policy = trainable_copy(one_step_reference)
    algo = RWTD(RWTDConfig(lam=0.7, beta=BETA, num_current=256, num_reference=512, solver="emd"))
    train(policy, algo, reward, one_step_reference, [(150, 1e-3), (100, 3e-4)], tmp_path)
    d = distances(policy, one_step_reference)
    with torch.no_grad():
        x_ref = one_step_reference.sample(N_EVAL, generator=torch.Generator().manual_seed(3))
    assert d["reward"] > d0["reward"] + 0.2
    assert mmd_rbf(d["x"], x_ref) > mmd_rbf(d0["x"], x_ref)


@pytest.mark.parametrize("family,phases", [
    pytest.param("one_step", [(300, 1e-3), (200, 3e-4)], marks=[pytest.mark.slow, pytest.mark.xfail(
        strict=False, reason="one-step FestDPO is not yet robust on a weak (64-wide) reference: reward undershoots")]),
    ("flow", [(150, 2e-3), (100, 5e-4)]),
])
def test_festdpo_matches_tilted_reference(family, phases, one_step_reference, flow_reference, tmp_path, train, trainable_copy):
    reference = one_step_reference if family == "one_step" else flow_reference
    policy = trainable_copy(reference)
    before = distances(policy, reference)
    algo = FestDPO(FestDPOConfig(beta=BETA, num_samples=512, num_pairs=256, bandwidth="silverman", pair_source="reference"))
    train(policy, algo, reward, reference, phases, tmp_path)
    d = distances(policy, reference)
    print(family, {k: v for k, v in d.items() if k != "x"}, "before", before["mmd"])
    assert d["mmd"] < 0.4 * before["mmd"]
    assert d["mmd"] < 4 * d["floor"]
    assert abs(d["reward"] - d["target_reward"]) < 0.25
