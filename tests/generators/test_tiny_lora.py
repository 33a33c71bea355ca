"""LoRA on the tiny generators: adapter off is the base exactly, the fresh adapter leaves the policy equal to its
reference, only LoRA weights train (RWTD on tiny_one_step, Flow-GRPO on tiny_flow through the Trainer), checkpoints
round-trip the adapter, a LoRA run resumes exactly, and bad LoRA settings give errors naming the problem."""
from __future__ import annotations

import copy

import pytest
import torch

from visalign.algorithms import FlowGRPO, FlowGRPOConfig
from visalign.core import PromptList, Reward
from visalign.core.algorithm import build_algorithm
from visalign.core.config import ConfigError
from visalign.core.errors import CheckpointError
from visalign.core.generator import build_generator, load_generator
from visalign.generators import TinyFlowGenerator, TinyOneStepGenerator
from visalign.generators.lora import LORA_WEIGHTS_FILE
from visalign.generators.tiny import TinyFlowConfig, TinyOneStepConfig
from visalign.trainer import Trainer, TrainerConfig

PROMPTS = ["a red circle left of a blue square", "a green triangle"]
SMALL = dict(image_size=16, patch_size=4, text_hidden=32, vocab_buckets=256, max_length=12, layers=1)


class Brightness(Reward):
    name = "brightness"

    def __call__(self, samples, prompts, metadata):
        return samples.float().flatten(1).mean(1)


def _base(kind: str, **extra) -> TinyOneStepGenerator | TinyFlowGenerator:
    torch.manual_seed(0)
    if kind == "one_step":
        return TinyOneStepGenerator(TinyOneStepConfig(**SMALL, **extra))
    return TinyFlowGenerator(TinyFlowConfig(**SMALL, num_steps=2, **extra))


def _samples(gen, seed: int = 3) -> torch.Tensor:
    noise = gen.make_noise(len(PROMPTS), torch.Generator().manual_seed(seed))
    return gen.sample(PROMPTS, noise=noise)


def _split(gen) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    state = {k: v.detach().clone() for k, v in gen.state_dict().items()}
    return ({k: v for k, v in state.items() if "lora_" in k}, {k: v for k, v in state.items() if "lora_" not in k})


def _perturb_lora(gen) -> None:
    with torch.no_grad():
        for name, p in gen.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.05, generator=torch.Generator().manual_seed(1))


@pytest.mark.parametrize("kind", ["one_step", "flow"])
def test_adapter_off_is_the_base_and_a_fresh_adapter_equals_the_reference(kind):
    base = _base(kind)
    lora = copy.deepcopy(base)
    lora.add_lora(2, 4.0)
    ref = lora.frozen_copy()
    assert list(ref.parameters()) == [] and not ref.training  # a view: no second copy of the base
    expected = _samples(base)
    torch.testing.assert_close(_samples(lora), expected, rtol=0, atol=0)  # B = 0 at init: policy == reference
    _perturb_lora(lora)
    moved = _samples(lora)
    assert (moved - expected).abs().max() > 1e-4
    with lora.adapter_disabled():
        torch.testing.assert_close(_samples(lora), expected, rtol=0, atol=0)
    torch.testing.assert_close(_samples(ref), expected, rtol=0, atol=0)
    torch.testing.assert_close(_samples(lora), moved, rtol=0, atol=0)  # the adapter is back on after the reference


def test_only_lora_weights_get_gradients_and_the_reference_records_none():
    gen = _base("one_step", lora_rank=2)
    trainable = [n for n, p in gen.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    assert all(".default." in n for n in trainable)  # the text encoder and every base weight are frozen
    noise = gen.make_noise(2, torch.Generator().manual_seed(0))
    gen.sample(PROMPTS, noise=noise, grad=True).mean().backward()
    grads = {n for n, p in gen.named_parameters() if p.grad is not None}
    assert grads and grads <= set(trainable)
    assert not gen.frozen_copy().sample(PROMPTS, noise=noise).requires_grad


def _trainer(gen, kind: str, out, steps: int, resume: str | None = None) -> Trainer:
    if kind == "one_step":
        algorithm = build_algorithm({"name": "rwtd", "num_current": 4, "num_reference": 4, "features": "pixels",
                                     "target_ess": 0.5, "step_size": 0.5})
    else:
        algorithm = FlowGRPO(FlowGRPOConfig(group_size=4, num_steps=2, kl_beta=0.04))
    cfg = TrainerConfig(steps=steps, prompts_per_step=1, learning_rate=1e-2, save_every=1, log_with=[], progress=False,
                        output_dir=str(out), resume_from=resume, eval_batch_size=2, cpu=True, seed=0)
    return Trainer(gen, algorithm, Brightness(), PromptList(PROMPTS), cfg)


@pytest.mark.parametrize("kind", ["one_step", "flow"])
def test_a_trainer_step_moves_the_lora_not_the_base(kind, tmp_path):
    gen = _base(kind, lora_rank=2)
    before_lora, before_base = _split(gen)
    expected = _samples(gen)
    trainer = _trainer(gen, kind, tmp_path / "run", steps=1)
    assert trainer.params and {id(p) for p in trainer.params} == {id(p) for n, p in gen.named_parameters() if "lora_" in n}
    assert list(trainer.reference.parameters()) == []
    trainer.train()
    after_lora, after_base = _split(gen)
    assert all(torch.equal(after_base[k], v) for k, v in before_base.items())
    assert any(not torch.equal(after_lora[k], v) for k, v in before_lora.items()), "no LoRA weight moved"
    torch.testing.assert_close(_samples(trainer.reference), expected, rtol=0, atol=0)
    final = tmp_path / "run" / "final"
    assert (final / LORA_WEIGHTS_FILE).is_file()
    torch.testing.assert_close(_samples(load_generator(final)), _samples(gen), rtol=0, atol=0)


def test_save_load_round_trip_and_lora_on_a_loaded_checkpoint(tmp_path):
    base = _base("one_step")
    base.save_pretrained(tmp_path / "base")
    gen = build_generator({"checkpoint": str(tmp_path / "base"), "lora_rank": 2, "lora_alpha": 4.0, "lora_targets": ["to_q", "to_v"]})
    assert gen.config.lora_rank == 2 and gen.config.lora_targets == ["to_q", "to_v"]
    torch.testing.assert_close(_samples(gen), _samples(base), rtol=0, atol=0)
    _perturb_lora(gen)
    gen.save_pretrained(tmp_path / "lora")
    loaded = load_generator(tmp_path / "lora")
    assert type(loaded) is TinyOneStepGenerator and loaded.config == gen.config
    assert all(torch.equal(v, loaded.state_dict()[k]) for k, v in gen.state_dict().items())
    torch.testing.assert_close(_samples(loaded), _samples(gen), rtol=0, atol=0)
    assert not any(p.requires_grad for n, p in loaded.named_parameters() if "lora_" not in n)
    # the adapter file alone, onto a fresh adapter on the same base
    fresh = build_generator({"checkpoint": str(tmp_path / "base"), "lora_rank": 2, "lora_alpha": 4.0, "lora_targets": ["to_q", "to_v"]})
    fresh.load_lora(tmp_path / "lora" / LORA_WEIGHTS_FILE)
    torch.testing.assert_close(_samples(fresh), _samples(gen), rtol=0, atol=0)
    other_rank = build_generator({"checkpoint": str(tmp_path / "base"), "lora_rank": 3, "lora_targets": ["to_q", "to_v"]})
    with pytest.raises(CheckpointError, match="another lora_rank"):
        other_rank.load_lora(tmp_path / "lora" / LORA_WEIGHTS_FILE)
    with pytest.raises(CheckpointError, match="missing LoRA keys"):
        build_generator({"checkpoint": str(tmp_path / "base"), "lora_rank": 2}).load_lora(tmp_path / "lora" / LORA_WEIGHTS_FILE)


def test_exact_resume_of_a_lora_run(tmp_path):
    def run(out, steps, resume=None):
        gen = _base("one_step", lora_rank=2)
        _trainer(gen, "one_step", out, steps, resume).train()
        return {k: v.detach().clone() for k, v in gen.state_dict().items()}

    full = run(tmp_path / "full", 2)
    run(tmp_path / "part", 1)
    resumed = run(tmp_path / "part", 2, resume=str(tmp_path / "part" / "checkpoints" / "step_000001"))
    assert any(v.abs().sum() > 0 for k, v in full.items() if "lora_B" in k)
    for name, value in full.items():
        assert torch.equal(value, resumed[name]), (name, float((value - resumed[name]).abs().max()))


def test_bad_lora_settings_are_named(tmp_path):
    with pytest.raises(ConfigError, match="lora_rnk"):
        build_generator({"name": "tiny_one_step", "lora_rnk": 2})
    with pytest.raises(ConfigError, match=r"\['to_qq'\] match no linear or conv layer.*to_q"):
        _base("one_step", lora_rank=2, lora_targets=["to_q", "to_qq"])
    with pytest.raises(ConfigError, match="lora_rank must be >= 0"):
        TinyOneStepConfig(lora_rank=-1)
    with pytest.raises(ConfigError, match="lora_targets must be a non-empty list"):
        TinyOneStepConfig(lora_rank=2, lora_targets=[])
    with pytest.raises(ConfigError, match="lora_alpha must be > 0"):
        TinyOneStepConfig(lora_rank=2, lora_alpha=0.0)
    _base("one_step").save_pretrained(tmp_path / "base")
    with pytest.raises(ConfigError, match="without lora_rank"):
        build_generator({"checkpoint": str(tmp_path / "base"), "lora_alpha": 4.0})
    lora = build_generator({"checkpoint": str(tmp_path / "base"), "lora_rank": 2})
    lora.save_pretrained(tmp_path / "lora")
    with pytest.raises(ConfigError, match="already carries a rank-2 LoRA"):
        build_generator({"checkpoint": str(tmp_path / "lora"), "lora_rank": 2})
    with pytest.raises(CheckpointError, match="no LoRA weights"):
        lora.load_lora(tmp_path / "nothing.safetensors")


def test_shipped_lora_config_puts_an_adapter_on_the_vvr_checkpoint():
    from pathlib import Path

    from visalign.run import load_run_config

    root = Path(__file__).resolve().parents[2]
    cfg = load_run_config(root / "configs" / "vvr_rwtd_lora.yaml")
    gen = build_generator(cfg.generator)
    base = load_generator(root / "assets" / "tiny_one_step_vvr2")
    assert gen.config.lora_rank == 8 and cfg.algorithm["name"] == "rwtd"
    trainable = sum(p.numel() for p in gen.parameters() if p.requires_grad)
    assert 0 < trainable < 0.1 * sum(p.numel() for p in base.parameters())
    torch.testing.assert_close(_samples(gen), _samples(base), rtol=0, atol=0)


@pytest.mark.parametrize("name", ["tiny_video_one_step", "tiny_video_flow"])
def test_tiny_video_lora_trains_only_the_video_tower_adapter(name, tmp_path):
    small = dict(image_size=8, frames=2, patch_size=4, width=32, layers=1, heads=2, vocab_buckets=64, max_length=8)
    torch.manual_seed(0)
    base = build_generator({"name": name, **small})
    base.save_pretrained(tmp_path / "base")
    gen = build_generator({"checkpoint": str(tmp_path / "base"), "lora_rank": 2})
    trainable = [n for n, p in gen.named_parameters() if p.requires_grad]
    assert trainable and all(n.startswith("backbone.video_tower.") and "lora_" in n for n in trainable)
    expected = _samples(base)
    torch.testing.assert_close(_samples(gen), expected, rtol=0, atol=0)
    _perturb_lora(gen)
    assert (_samples(gen) - expected).abs().max() > 1e-5
    torch.testing.assert_close(_samples(gen.frozen_copy()), expected, rtol=0, atol=0)
    gen.save_pretrained(tmp_path / "lora")
    torch.testing.assert_close(_samples(load_generator(tmp_path / "lora")), _samples(gen), rtol=0, atol=0)


def test_tiny_av_refuses_lora_clearly(tmp_path):
    with pytest.raises(ConfigError, match="tiny_av_flow has no LoRA support"):
        build_generator({"name": "tiny_av_flow", "lora_rank": 2})
