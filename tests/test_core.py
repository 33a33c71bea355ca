import textwrap
from pathlib import Path
from dataclasses import dataclass

import pytest
import torch

from visalign import ConfigError, FunctionReward, Reward, WeightedReward, build_reward, get_reward, register_reward
from visalign.core import PromptBatch, build_algorithm, build_generator, build_prompt_source, from_dict, load_generator, score
from visalign.core.config import apply_overrides
from visalign.generators import ToyFlowGenerator, ToyOneStepGenerator
from visalign.run import RunConfig, load_run_config

IMAGES = torch.zeros(3, 3, 8, 8)


@register_reward("test_constant")
class ConstantReward(Reward):
    def __init__(self, value: float = 1.0) -> None:
        self.value = value

    def __call__(self, samples, prompts, metadata):
        return torch.full((len(prompts),), self.value)


def test_registry_builds_by_name_with_kwargs():
    reward = get_reward("test_constant", value=2.5)
    assert reward.name == "test_constant"
    assert score(reward, IMAGES, ["a"] * 3, [{}] * 3).tolist() == [2.5] * 3


def test_unknown_reward_lists_known_names():
    with pytest.raises(KeyError, match="unknown reward 'nope'.*color_match"):
        get_reward("nope")


def test_reward_from_file_path(tmp_path):
    plugin = tmp_path / "my_verifier.py"
    plugin.write_text(textwrap.dedent('''
        import torch
        from visalign import Reward

        class RedFraction(Reward):
            name = "red_fraction"
            def __call__(self, samples, prompts, metadata):
                return (samples[:, 0] > 0.5).float().flatten(1).mean(1)
    '''))
    reward = get_reward(f"{plugin}:RedFraction")
    images = torch.zeros(2, 3, 4, 4)
    images[0, 0] = 1.0
    assert score(reward, images, ["", ""], [{}, {}]).tolist() == [1.0, 0.0]


def test_shipped_plugin_loads_by_path_and_scores_centering():
    plugin = Path(__file__).resolve().parent.parent / "rewards" / "centered_object.py"
    reward = build_reward({"name": f"{plugin}:CenteredObject", "threshold": 0.2})
    images = -torch.ones(2, 3, 16, 16)
    images[0, :, 6:10, 6:10] = 1.0
    images[1, :, 0:4, 0:4] = 1.0
    values = score(reward, images, ["", ""], [{}, {}])
    assert values[0] > 0.9 and values[1] < 0.4


def test_reward_from_entry_point(tmp_path, monkeypatch):
    (tmp_path / "ep_plugin.py").write_text(
        "import torch\nfrom visalign import Reward\n"
        "class Seven(Reward):\n    def __call__(self, s, p, m):\n        return torch.full((len(p),), 7.0)\n"
    )
    dist = tmp_path / "ep_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ep-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[visalign.rewards]\nseven = ep_plugin:Seven\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert score(get_reward("seven"), IMAGES, ["x"] * 3, [{}] * 3).tolist() == [7.0] * 3


def test_missing_plugin_file_is_named():
    with pytest.raises(FileNotFoundError, match="no_such_file.py"):
        get_reward("no_such_file.py:Thing")


def test_nan_and_bad_shape_are_errors_naming_the_reward():
    nan = FunctionReward(lambda s, p, m: torch.tensor([1.0, float("nan"), 0.0]), name="flaky")
    with pytest.raises(ValueError, match="'flaky'.*non-finite.*\\[1\\]"):
        score(nan, IMAGES, ["a"] * 3, [{}] * 3)
    short = FunctionReward(lambda s, p, m: torch.zeros(2), name="short")
    with pytest.raises(ValueError, match="'short' returned shape \\(2,\\), expected \\(3,\\)"):
        score(short, IMAGES, ["a"] * 3, [{}] * 3)
    with pytest.raises(TypeError, match="'listy' returned list"):
        score(FunctionReward(lambda s, p, m: [0, 0, 0], name="listy"), IMAGES, ["a"] * 3, [{}] * 3)


def test_weighted_sum_combines_and_reports_components():
    reward = build_reward([{"name": "test_constant", "value": 1.0, "weight": 2.0}, {"name": "brightness", "weight": 0.5}])
    assert isinstance(reward, WeightedReward)
    images = torch.ones(3, 3, 4, 4)
    assert score(reward, images, ["a"] * 3, [{}] * 3).tolist() == [2.5] * 3
    assert set(reward.last_components) == {"test_constant", "brightness"}


def test_color_match_reward_is_differentiable_and_prompt_aware():
    reward = get_reward("color_match")
    red = torch.zeros(2, 3, 4, 4, requires_grad=True)
    values = reward(red, ["a red circle", "a blue square"], [{}, {}])
    values.sum().backward()
    assert red.grad is not None and red.grad.abs().sum() > 0
    solid_red = -torch.ones(1, 3, 4, 4)
    solid_red[:, 0] = 1
    assert reward(solid_red, ["red"], [{}]).item() == pytest.approx(0.0)
    assert reward(solid_red, ["blue"], [{}]).item() < -1


@dataclass
class Inner:
    rate: float = 0.1
    mode: str = "a"


@dataclass
class Outer:
    steps: int = 3
    inner: Inner = None


def test_config_rejects_unknown_keys_and_bad_values_naming_them():
    assert from_dict(Outer, {"steps": 5, "inner": {"rate": 2}}).inner.rate == 2.0
    with pytest.raises(ConfigError, match="inner.rtae"):
        from_dict(Outer, {"inner": {"rtae": 1}})
    with pytest.raises(ConfigError, match="steps: expected an integer, got 'many'"):
        from_dict(Outer, {"steps": "many"})


def test_cli_overrides_and_run_config(tmp_path):
    cfg_file = tmp_path / "run.yaml"
    cfg_file.write_text("reward: brightness\ntrainer:\n  steps: 10\n")
    cfg = load_run_config(cfg_file, ["trainer.steps=200", "trainer.learning_rate=3e-4", "algorithm.name=rwtd"])
    assert isinstance(cfg, RunConfig)
    assert cfg.trainer.steps == 200 and cfg.trainer.learning_rate == pytest.approx(3e-4)
    assert cfg.algorithm == {"name": "rwtd"}
    with pytest.raises(ConfigError, match="trainer.stepz"):
        load_run_config(cfg_file, ["trainer.stepz=1"])
    with pytest.raises(ConfigError, match="trainer.prompts_per_step must be >= 1"):
        load_run_config(cfg_file, ["trainer.prompts_per_step=0"])
    with pytest.raises(ConfigError, match="not of the form"):
        apply_overrides({}, ["trainer.steps"])


def test_unknown_algorithm_and_generator_names():
    with pytest.raises(KeyError, match="unknown algorithm 'ppo_typo'"):
        build_algorithm({"name": "ppo_typo"})
    with pytest.raises(KeyError, match="unknown generator 'gan'"):
        build_generator({"name": "gan"})
    with pytest.raises(ConfigError, match="generator\\(toy_flow\\).num_stepz"):
        build_generator({"name": "toy_flow", "num_stepz": 2})


@pytest.mark.parametrize("cls", [ToyOneStepGenerator, ToyFlowGenerator])
def test_generator_checkpoint_round_trip_and_frozen_reference(tmp_path, cls):
    gen = cls()
    gen.save_pretrained(tmp_path / "ckpt")
    loaded = load_generator(tmp_path / "ckpt")
    noise = gen.make_noise(8, torch.Generator().manual_seed(0))
    assert torch.equal(gen(noise), loaded(noise))
    ref = gen.frozen_copy()
    assert not any(p.requires_grad for p in ref.parameters())
    with torch.no_grad():
        next(gen.parameters()).add_(1.0)
    assert not torch.equal(gen(noise), ref(noise))


def test_missing_generator_checkpoint_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere"):
        load_generator(tmp_path / "nowhere")


def test_sample_grad_switch_and_modalities():
    gen = ToyOneStepGenerator()
    assert not gen.sample(n=4).requires_grad
    out = gen.sample(n=4, grad=True)
    out.sum().backward()
    assert all(p.grad is not None for p in gen.parameters())
    from visalign.core.types import batch_size_of

    assert batch_size_of({"video": torch.zeros(2, 3, 4, 8, 8), "audio": torch.zeros(2, 1, 100)}) == 2
    with pytest.raises(ValueError, match="disagree"):
        batch_size_of({"video": torch.zeros(2, 3), "audio": torch.zeros(3, 1)})


def test_prompt_sources(tmp_path):
    f = tmp_path / "p.jsonl"
    f.write_text('{"prompt": "a red dot", "id": 1}\n{"prompt": "a blue dot", "id": 2}\n')
    source = build_prompt_source({"name": "file", "path": str(f)})
    batch = source.sample(6, torch.Generator().manual_seed(0))
    assert isinstance(batch, PromptBatch) and len(batch) == 6
    assert all(m["id"] in (1, 2) for m in batch.metadata)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "x"}\n')
    with pytest.raises(ValueError, match="bad.jsonl:1.*'prompt'"):
        build_prompt_source({"name": "file", "path": str(bad)})


def test_public_api_is_re_exported_lazily():
    import subprocess
    import sys

    code = "import sys, visalign; assert 'torch' not in sys.modules; print(sorted(visalign.__all__) == sorted(set(visalign.__all__)))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "True"
    import visalign

    for name in visalign.__all__:
        assert getattr(visalign, name) is not None, name
