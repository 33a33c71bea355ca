"""The local diffusers pipeline wrapper, on a tiny random StableDiffusion3Pipeline saved to disk."""
from __future__ import annotations

import pytest
import torch

from visalign.core.generator import build_generator, load_generator
from visalign.generators import DiffusersConfig, DiffusersPipelineGenerator

PROMPTS = ["a red circle", "a blue square"]


def _seeded(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _gen(path, **kw) -> DiffusersPipelineGenerator:
    return DiffusersPipelineGenerator(DiffusersConfig(path=str(path), height=32, width=32, num_inference_steps=2, **kw))


def _train_step(gen, noise, lr=0.05):
    opt = torch.optim.SGD([p for p in gen.trainable_module().parameters() if p.requires_grad], lr=lr)
    gen.sample(noise=noise, prompts=PROMPTS, grad=True).pow(2).mean().backward()
    opt.step()
    opt.zero_grad()


def test_missing_path_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere"):
        _gen(tmp_path / "nowhere")


def test_samples_shape_range_seed_and_prompts(tiny_sd3_path):
    gen = _gen(tiny_sd3_path)
    assert gen.noise_shape == (4, 16, 16) and gen.kind == "multi_step"
    a = gen.sample(prompts=PROMPTS, generator=_seeded(1))
    assert a.shape == (2, 3, 32, 32) and a.min() >= -1 and a.max() <= 1 and not a.requires_grad
    torch.testing.assert_close(gen.sample(prompts=PROMPTS, generator=_seeded(1)), a, rtol=0, atol=0)
    other = gen.sample(prompts=["zzz", "qqq"], generator=_seeded(1))
    assert (a - other).abs().amax(dim=(1, 2, 3)).min() > 1e-4
    assert not torch.equal(gen.sample(prompts=PROMPTS, generator=_seeded(2)), a)


def test_full_finetune_grads_frozen_copy_and_round_trip(tiny_sd3_path, tmp_path):
    gen = _gen(tiny_sd3_path)
    assert gen.trainable_module() is gen.pipeline.transformer
    assert not any(p.requires_grad for p in gen.components["vae"].parameters())
    ref = gen.frozen_copy()
    assert not any(p.requires_grad for p in ref.parameters())
    noise = gen.make_noise(2, _seeded())
    before = ref.sample(noise=noise, prompts=PROMPTS)
    gen.sample(noise=noise, prompts=PROMPTS, grad=True).pow(2).mean().backward()
    assert gen.denoiser.proj_out.weight.grad.abs().sum() > 0
    _train_step(gen, noise)
    torch.testing.assert_close(ref.sample(noise=noise, prompts=PROMPTS), before, rtol=0, atol=0)
    trained = gen.sample(noise=noise, prompts=PROMPTS)
    assert not torch.equal(trained, before)

    gen.save_pretrained(tmp_path / "ckpt")
    loaded = load_generator(tmp_path / "ckpt")
    assert isinstance(loaded, DiffusersPipelineGenerator)
    for (k, p), (k2, q) in zip(gen.denoiser.state_dict().items(), loaded.denoiser.state_dict().items()):
        assert k == k2 and torch.equal(p, q), k
    torch.testing.assert_close(loaded.sample(noise=noise, prompts=PROMPTS), trained, rtol=0, atol=0)


def test_lora_trains_adapter_only_reference_is_adapter_off(tiny_sd3_path, tmp_path):
    gen = _gen(tiny_sd3_path, lora_rank=4)
    trainable = {n for n, p in gen.trainable_module().named_parameters() if p.requires_grad}
    assert trainable and all("lora" in n for n in trainable)
    noise = gen.make_noise(2, _seeded())
    base = gen.sample(noise=noise, prompts=PROMPTS)  # LoRA B starts at zero: identical to the base model
    torch.testing.assert_close(base, _gen(tiny_sd3_path).sample(noise=noise, prompts=PROMPTS), rtol=0, atol=0)
    ref = gen.frozen_copy()
    assert list(ref.parameters()) == []
    _train_step(gen, noise, lr=0.5)
    trained = gen.sample(noise=noise, prompts=PROMPTS)
    assert not torch.equal(trained, base)
    torch.testing.assert_close(ref.sample(noise=noise, prompts=PROMPTS), base, rtol=0, atol=0)
    torch.testing.assert_close(gen.sample(noise=noise, prompts=PROMPTS), trained, rtol=0, atol=0)  # adapter back on

    gen.save_pretrained(tmp_path / "lora")
    assert (tmp_path / "lora" / "lora.safetensors").is_file() and not (tmp_path / "lora" / "pipeline").exists()
    loaded = load_generator(tmp_path / "lora")
    torch.testing.assert_close(loaded.sample(noise=noise, prompts=PROMPTS), trained, rtol=0, atol=0)


def test_pipeline_folder_is_a_path_not_a_checkpoint(tiny_sd3_path):
    gen = build_generator({"name": "diffusers", "path": str(tiny_sd3_path), "height": 32, "width": 32})
    assert isinstance(gen, DiffusersPipelineGenerator) and gen.config.path == str(tiny_sd3_path)
    with pytest.raises(FileNotFoundError, match="diffusers pipeline folder: pass it as the adapter's `path`"):
        build_generator({"name": "diffusers", "checkpoint": str(tiny_sd3_path)})


def test_wraps_a_pipeline_object_and_lora_save_needs_base_path(tmp_path):
    from .conftest import build_tiny_sd3_pipeline

    gen = DiffusersPipelineGenerator(DiffusersConfig(height=32, width=32, num_inference_steps=1, lora_rank=2), pipeline=build_tiny_sd3_pipeline())
    assert gen.sample(["a red circle"], generator=_seeded()).shape == (1, 3, 32, 32)
    with pytest.raises(ValueError, match="config.path"):
        gen.save_pretrained(tmp_path / "x")
    with pytest.raises(ValueError, match="config.path"):
        DiffusersPipelineGenerator(DiffusersConfig())
