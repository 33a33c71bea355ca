"""Multi-reward advantages (GDPO-style normalise-then-sum vs sum-then-normalise), MultiReward and calibration."""
import json

import pytest
import torch

from visalign.core import FunctionReward, build_reward, register_reward, score
from visalign.core.reward import Reward
from visalign.rewards.multi import (Calibration, MultiReward, component_weights, load_calibration,
                                    measure_calibration, normalize_then_sum, sum_then_normalize)


def test_sum_then_normalize_lets_the_wide_reward_drown_the_narrow_one():
    # one group of 4: a wide-range reward (x100) and a narrow one that ranks the samples the opposite way
    wide = torch.tensor([100.0, 0.0, 100.0, 0.0])
    narrow = torch.tensor([0.0, 1.0, 0.1, 0.9])
    mixed = sum_then_normalize({"wide": wide, "narrow": narrow}, group_size=4)
    decoupled = normalize_then_sum({"wide": wide, "narrow": narrow}, group_size=4)
    assert torch.allclose(mixed, sum_then_normalize({"wide": wide}, group_size=4), atol=0.02)  # narrow is invisible
    assert torch.allclose(decoupled.mean(), torch.tensor(0.0), atol=1e-6)
    assert torch.allclose(decoupled.std(unbiased=False), torch.tensor(1.0), atol=1e-4)
    # GDPO: each reward counts by its weight; ties on the wide reward are broken by the narrow one
    assert decoupled[2] > decoupled[0] and decoupled[1] > decoupled[3]
    assert abs(decoupled[1]) > 0.2


def test_gdpo_keeps_combinations_apart_that_grpo_collapses():
    # binary rewards, group of 4: (1,0),(0,1),(0,0),(0,0) vs (1,1),(0,0),(0,0),(0,0) style collapse from the paper
    a = {"r1": torch.tensor([1.0, 0, 0, 0]), "r2": torch.tensor([0.0, 0, 0, 0])}
    b = {"r1": torch.tensor([1.0, 0, 0, 0]), "r2": torch.tensor([1.0, 0, 0, 0])}
    grpo = [sum_then_normalize(c, 4) for c in (a, b)]
    gdpo = [normalize_then_sum(c, 4, batch_normalize=False) for c in (a, b)]
    assert torch.allclose(grpo[0], grpo[1])  # GRPO: one reward or two satisfied -> same advantages
    assert not torch.allclose(gdpo[0], gdpo[1]) and gdpo[1][0] == pytest.approx(2 * gdpo[0][0])


def test_weights_and_groups_are_checked():
    comps = {"a": torch.arange(8.0), "b": torch.ones(8)}
    out = normalize_then_sum(comps, group_size=4, weights={"a": 2.0, "b": 1.0}, batch_normalize=False)
    assert torch.allclose(out, 2 * normalize_then_sum({"a": comps["a"]}, 4, batch_normalize=False))  # b is constant
    with pytest.raises(ValueError, match="do not match"):
        normalize_then_sum(comps, 4, weights={"a": 1.0})
    with pytest.raises(ValueError, match="groups of 3"):
        sum_then_normalize(comps, 3)
    with pytest.raises(ValueError, match="one length"):
        sum_then_normalize({"a": torch.ones(4), "b": torch.ones(8)}, 4)


@register_reward("test_mean_pixel")
class MeanPixel(Reward):
    def __call__(self, samples, prompts, metadata):
        return samples.flatten(1).mean(1) * 10 + 3


def test_multi_reward_exposes_raw_components_and_applies_calibration(tmp_path):
    images = torch.rand(6, 3, 8, 8) * 2 - 1
    spec = {"name": "multi", "rewards": [{"name": "test_mean_pixel", "weight": 0.5},
                                         {"name": "brightness", "weight": 2.0, "label": "bright"}]}
    plain = build_reward(spec)
    total = score(plain, images, ["x"] * 6, [{}] * 6)
    comps = plain.components()
    assert set(comps) == {"test_mean_pixel", "bright"}
    assert component_weights(plain) == {"test_mean_pixel": 0.5, "bright": 2.0}
    assert torch.allclose(total, 0.5 * comps["test_mean_pixel"] + 2.0 * comps["bright"])

    calib = measure_calibration(comps)
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps({"rewards": {k: {"mean": c.mean, "scale": c.scale} for k, c in calib.items()}}))
    calibrated = build_reward({**spec, "calibration": str(path)})
    total = score(calibrated, images, ["x"] * 6, [{}] * 6)
    z = {k: (v - v.mean()) / v.std(unbiased=False) for k, v in comps.items()}
    assert torch.allclose(total, 0.5 * z["test_mean_pixel"] + 2.0 * z["bright"], atol=1e-5)
    assert torch.equal(calibrated.components()["bright"], comps["bright"])  # raw scores for logging


def test_multi_reward_refuses_ambiguous_or_uncovered_setups(tmp_path):
    with pytest.raises(ValueError, match="repeat"):
        MultiReward([{"name": "brightness"}, {"name": "brightness", "weight": 2}])
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"rewards": {"brightness": {"mean": 0.5, "scale": 0.1}}}))
    with pytest.raises(ValueError, match="no entry for \\['color_match'\\]"):
        MultiReward([{"name": "brightness"}, {"name": "color_match"}], calibration=str(path))
    path.write_text("{\"rewards\": [1, 2]}")
    with pytest.raises(ValueError, match="not a reward calibration"):
        load_calibration(path)
    with pytest.raises(ValueError, match="scale > 0"):
        Calibration(0.0, 0.0)
    with pytest.raises(ValueError, match="constant"):
        measure_calibration({"flat": torch.ones(8)})


def test_weighted_reward_components_are_exposed_on_the_base_class():
    single = FunctionReward(lambda s, p, m: torch.zeros(len(p)), name="z")
    assert single.components() == {} and component_weights(single) == {"z": 1.0}
    pair = build_reward([{"name": "brightness", "weight": 1.0}, {"name": "color_match", "weight": 1.0}])
    score(pair, torch.zeros(2, 3, 4, 4), ["red", "red"], [{}, {}])
    assert set(pair.components()) == {"brightness", "color_match"}
    assert component_weights(pair) == {"brightness": 1.0, "color_match": 1.0}


def test_calibrate_command_writes_a_file_multi_loads(tmp_path, capsys):
    from visalign.cli import main

    config = tmp_path / "run.yaml"
    config.write_text(
        "generator: {name: tiny_one_step}\n"
        "reward: {name: multi, rewards: [{name: brightness}, {name: color_match, weight: 2.0}]}\n"
        "prompts: {name: list, prompts: ['a red circle', 'a blue square']}\n"
    )
    out = tmp_path / "calibration.json"
    assert main(["calibrate", str(config), "--out", str(out), "--prompts", "2", "--samples-per-prompt", "4"]) == 0
    data = json.loads(out.read_text())
    assert set(data["rewards"]) == {"brightness", "color_match"} and data["num_samples"] == 8
    assert all(v["scale"] > 0 for v in data["rewards"].values())
    reward = build_reward({"name": "multi", "calibration": str(out),
                           "rewards": [{"name": "brightness"}, {"name": "color_match", "weight": 2.0}]})
    assert reward.calibration["brightness"].scale == pytest.approx(data["rewards"]["brightness"]["scale"])
    # the whole reward's scale too: RWTD's fixed-temperature regime reads it
    from visalign.algorithms import RWTD, RWTDConfig

    assert data["total"]["scale"] > 0
    assert RWTD(RWTDConfig(reward_scale=str(out))).reward_scale == pytest.approx(data["total"]["scale"])
