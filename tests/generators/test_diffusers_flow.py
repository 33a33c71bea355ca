"""Diffusers flow adapters on tiny random pipelines (SD3, FLUX.1, SANA, SANA-Sprint, Wan): they sample exactly what the
pipeline's own ``__call__`` samples, train with Flow-GRPO / RWR / reward backprop (LoRA moves, the adapter-off
reference does not), save LoRA files that diffusers' ``load_lora_weights`` reads, and resume exactly."""
from __future__ import annotations

import pytest
import torch

from visalign.algorithms import FlowGRPO, FlowGRPOConfig, RewardBackprop, RewardBackpropConfig, RWR, RWRConfig
from visalign.core import Reward
from visalign.core.algorithm import TrainContext, build_algorithm
from visalign.core.generator import build_generator, load_generator
from visalign.core.types import PromptBatch
from visalign.generators import load_pipeline, FluxFlowModel, LTX2AudioVideoFlowModel, SanaFlowModel, SanaSprintFlowModel, SD3FlowModel, WanFlowModel

from .tiny_pipelines import BUILDERS

PROMPTS = ["a red circle", "a blue square"]
FAMILIES = {
    "sd3": (SD3FlowModel, dict(height=32, width=32, num_steps=2, max_sequence_length=16)),
    "flux": (FluxFlowModel, dict(height=32, width=32, num_steps=2, max_sequence_length=16)),
    "sana": (SanaFlowModel, dict(height=32, width=32, num_steps=2, max_sequence_length=16)),
    "sana_sprint": (SanaSprintFlowModel, dict(height=32, width=32, num_steps=1, max_sequence_length=16)),
    "wan": (WanFlowModel, dict(height=16, width=16, num_steps=2, num_frames=5, max_sequence_length=16)),
}
WAN_TI2V = (WanFlowModel, FAMILIES["wan"][1])
LTX2 = (LTX2AudioVideoFlowModel, dict(height=32, width=32, num_frames=9, frame_rate=25.0, num_steps=2, max_sequence_length=16,
                                      use_cross_timestep=False))
EXTRA = {"wan_ti2v": WAN_TI2V, "ltx2": LTX2}


@pytest.fixture(autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _seeded(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def adapter(family: str, pipeline=None, **overrides):
    cls, kwargs = EXTRA[family] if family in EXTRA else FAMILIES[family]
    return cls(cls.config_class(**{**kwargs, **overrides}), pipeline=pipeline or BUILDERS[family]())


@pytest.fixture(scope="module")
def saved_pipelines(tmp_path_factory):
    """Each tiny pipeline saved once to a folder (what a user's ``generator.path`` points at)."""
    root = tmp_path_factory.mktemp("tiny_pipelines")
    paths = {}

    def get(family: str):
        if family not in paths:
            paths[family] = root / family
            BUILDERS[family]().save_pretrained(str(paths[family]))
        return paths[family]

    return get


class MeanReward(Reward):
    """Differentiable mean sample value (any layout: images, videos, latents)."""

    name = "mean"
    differentiable = True

    def __call__(self, samples, prompts, metadata):
        if isinstance(samples, dict):  # audio-video
            return samples["video"].float().flatten(1).mean(1) + samples["audio"].float().flatten(1).mean(1)
        return samples.float().flatten(1).mean(1)


def _pipeline_call(family: str, pipe, noise: torch.Tensor, num_steps: int) -> torch.Tensor:
    """The pipeline's own sampler from the same initial noise, as samples in [-1, 1]."""
    common = dict(prompt=PROMPTS, num_inference_steps=num_steps, output_type="pt", return_dict=False,
                  max_sequence_length=16)
    if family == "sd3":
        return pipe(latents=noise, height=32, width=32, guidance_scale=1.0, **common)[0] * 2 - 1
    if family == "flux":
        b, c, h, w = noise.shape
        return pipe(latents=pipe._pack_latents(noise, b, c, h, w), height=32, width=32, guidance_scale=3.5, **common)[0] * 2 - 1
    if family in ("sana", "sana_sprint"):
        extra = dict(guidance_scale=1.0) if family == "sana" else dict(guidance_scale=4.5, intermediate_timesteps=None)
        return pipe(latents=noise, height=32, width=32, use_resolution_binning=False, complex_human_instruction=None,
                    **extra, **common)[0] * 2 - 1
    frames = pipe(latents=noise, height=16, width=16, num_frames=5, guidance_scale=1.0, **common)[0]
    return frames.permute(0, 2, 1, 3, 4) * 2 - 1  # B×T×C×H×W in [0, 1] -> B×C×T×H×W in [-1, 1]


@pytest.mark.parametrize("family", [*FAMILIES, "wan_ti2v"])
def test_samples_match_the_pipeline_and_sde_log_probs_are_finite(family):
    gen = adapter(family)
    noise = gen.make_noise(2, _seeded())
    samples = gen.sample(PROMPTS, noise=noise)
    expected_shape = (2, 3, 5, 16, 16) if family.startswith("wan") else (2, 3, 32, 32)
    assert samples.shape == expected_shape and samples.min() >= -1 and samples.max() <= 1 and not samples.requires_grad
    expected = _pipeline_call(family, gen.pipeline, noise, gen.num_steps)
    # SANA-Sprint: the first SCM angle 1.5708 is flow time 1 + 4e-6, which the adapter clips to 1
    torch.testing.assert_close(samples, expected, rtol=0, atol=2e-5)  # prompts encoded one by one vs batched
    assert (samples[0] - samples[1]).abs().max() > 1e-4  # prompts (and noise) matter

    traj = gen.sample_sde(noise, PROMPTS, generator=_seeded(1), num_steps=2)
    assert traj.latents.shape == (2, 3, *gen.noise_shape) and torch.isfinite(traj.log_probs).all()
    rescored = torch.stack([gen.sde_log_prob(traj, k) for k in range(2)], 1)
    torch.testing.assert_close(rescored, traj.log_probs, rtol=0, atol=1e-4)


def test_prompt_embeddings_are_cached_per_text_and_bounded():
    gen = adapter("sd3", prompt_cache_size=3)
    calls = []
    encode = gen._encode_batch
    gen._encode_batch = lambda prompts: calls.append(list(prompts)) or encode(prompts)
    first = gen.encode(["a", "b", "a", "b"])
    assert calls == [["a"], ["b"]]  # one pass per new prompt
    again = gen.encode(["b", "a"])
    assert calls == [["a"], ["b"]]  # no encoder call for known prompts
    torch.testing.assert_close(again.embeds["prompt_embeds"], first.embeds["prompt_embeds"][[1, 0]], rtol=0, atol=0)
    gen.encode(["c", "d"])
    assert calls[-2:] == [["c"], ["d"]] and len(gen.prompt_cache) == 3  # least recently used "b" dropped
    gen.encode(["b"])
    assert calls[-1] == ["b"]


def test_classifier_free_guidance_matches_the_pipeline():
    gen = adapter("sd3", guidance_scale=3.0, negative_prompt="")
    noise = gen.make_noise(2, _seeded())
    cond = gen.encode(PROMPTS)
    t = torch.full((2,), 0.5)
    plain = adapter("sd3", pipeline=gen.pipeline)
    v_text = plain.velocity(noise, t, plain.encode(PROMPTS))
    v_null = plain.velocity(noise, t, plain.encode(["", ""]))
    torch.testing.assert_close(gen.velocity(noise, t, cond), v_null + 3.0 * (v_text - v_null), rtol=1e-5, atol=1e-5)
    expected = gen.pipeline(prompt=PROMPTS, latents=noise, height=32, width=32, guidance_scale=3.0, num_inference_steps=2,
                            max_sequence_length=16, output_type="pt", return_dict=False)[0] * 2 - 1
    torch.testing.assert_close(gen.sample(PROMPTS, noise=noise), expected, rtol=0, atol=1e-5)


def test_latent_rewards_skip_the_vae():
    gen = adapter("sd3", decode=False)
    noise = gen.make_noise(2, _seeded())
    samples = gen.sample(PROMPTS, noise=noise)
    assert samples.shape == (2, *gen.noise_shape)
    torch.testing.assert_close(samples, gen.sample_latents(noise, gen.encode(PROMPTS)).detach(), rtol=0, atol=0)


def _algorithms():
    return {
        "flow_grpo": FlowGRPO(FlowGRPOConfig(group_size=2, num_steps=2, kl_beta=0.1)),
        "rwr": RWR(RWRConfig(num_samples=2, likelihood="flow_matching")),
        "reward_backprop": RewardBackprop(RewardBackpropConfig(truncate_steps=1)),
        "diffusion_nft": build_algorithm({"name": "diffusion_nft", "group_size": 2, "kl_beta": 0.1}),
    }


def one_step(gen, algorithm, lr: float = 1e-2):
    """One rollout + loss + Adam step (the trainer's optimizer; it moves every weight with a gradient by ~lr) of ``algorithm`` on ``gen`` (reference: ``gen.frozen_copy()``)."""
    reference = gen.frozen_copy() if algorithm.needs_reference else None
    ctx = TrainContext(gen, reference, MeanReward(), torch.device("cpu"))
    algorithm.setup(ctx)
    params = [p for p in gen.trainable_module().parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(params, lr=lr)
    rollout = algorithm.rollout(ctx, PromptBatch(PROMPTS[:1]), _seeded(3))
    loss, _ = algorithm.loss(ctx, rollout)
    assert torch.isfinite(loss)
    loss.backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in params), "no gradient reached the trainable weights"
    optimizer.step()


@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize("method", ["flow_grpo", "rwr", "reward_backprop", "diffusion_nft"])
def test_one_training_step_moves_lora_not_the_reference(family, method):
    gen = adapter(family, lora_rank=2)
    trainable = {n for n, p in gen.trainable_module().named_parameters() if p.requires_grad}
    assert trainable and all("lora" in n for n in trainable)
    before = {n: p.detach().clone() for n, p in gen.trainable_module().named_parameters()}
    reference = gen.frozen_copy()
    assert list(reference.parameters()) == []  # adapter off, no second copy
    noise = gen.make_noise(2, _seeded())
    t = torch.full((2,), 0.7)
    cond = gen.encode(PROMPTS)
    v_base = gen.velocity(noise, t, cond).detach()  # LoRA B starts at zero: the base model

    one_step(gen, _algorithms()[method])

    after = dict(gen.trainable_module().named_parameters())
    changed = {n for n in trainable if not torch.equal(after[n], before[n])}
    assert changed, f"{method} on {family}: no LoRA weight moved"
    assert all(torch.equal(after[n], before[n]) for n in before if n not in trainable)  # base weights untouched
    torch.testing.assert_close(reference.velocity(noise, t, cond), v_base, rtol=0, atol=0)
    assert not torch.equal(gen.velocity(noise, t, cond), v_base)


@pytest.mark.parametrize("method", [
    {"name": "rwtd", "num_current": 3, "num_reference": 3, "features": "conv"},
    {"name": "festdpo", "num_samples": 3, "num_pairs": 2, "features": "conv"},
], ids=["rwtd", "festdpo"])
def test_one_step_methods_train_sana_sprint_lora(method):
    """RWTD and FestDPO (one- / few-step generators, samples only) on the one-step SANA-Sprint adapter."""
    gen = adapter("sana_sprint", lora_rank=2)
    trainable = {n for n, p in gen.trainable_module().named_parameters() if p.requires_grad}
    before = {n: p.detach().clone() for n, p in gen.trainable_module().named_parameters()}
    reference = gen.frozen_copy()
    noise = gen.make_noise(2, _seeded())
    ref_before = reference.sample(PROMPTS, noise=noise).detach()

    one_step(gen, build_algorithm(dict(method)))

    after = dict(gen.trainable_module().named_parameters())
    assert any(not torch.equal(after[n], before[n]) for n in trainable), f"{method['name']}: no LoRA weight moved"
    assert all(torch.equal(after[n], before[n]) for n in before if n not in trainable)
    torch.testing.assert_close(reference.sample(PROMPTS, noise=noise), ref_before, rtol=0, atol=0)


def test_full_finetune_reference_is_a_frozen_denoiser_copy():
    gen = adapter("sd3")
    reference = gen.frozen_copy()
    assert not any(p.requires_grad for p in reference.parameters())
    assert reference.denoiser_copy is not gen.denoiser and reference._policy.vae is gen.vae  # only the denoiser copied
    noise = gen.make_noise(2, _seeded())
    before = reference.sample(PROMPTS, noise=noise)
    one_step(gen, _algorithms()["reward_backprop"])
    torch.testing.assert_close(reference.sample(PROMPTS, noise=noise), before, rtol=0, atol=0)
    assert not torch.equal(gen.sample(PROMPTS, noise=noise), before)


@pytest.mark.parametrize("family", [*FAMILIES, pytest.param("ltx2", marks=pytest.mark.slow)])  # Gemma-3 loads slowly
def test_lora_save_load_round_trip_and_diffusers_reads_the_file(family, saved_pipelines, tmp_path):
    path = saved_pipelines(family)
    gen = adapter(family, pipeline=load_pipeline(path), lora_rank=2,
                  lora_alpha=4.0, path=str(path))
    one_step(gen, _algorithms()["rwr"])
    noise = gen.make_noise(2, _seeded())
    trained = gen.sample_latents(noise, gen.encode(PROMPTS)).detach()

    gen.save_pretrained(tmp_path / "lora")
    assert (tmp_path / "lora" / "pytorch_lora_weights.safetensors").is_file()
    loaded = load_generator(tmp_path / "lora")
    assert type(loaded) is type(gen) and loaded.config.lora_alpha == 4.0
    torch.testing.assert_close(loaded.sample_latents(noise, loaded.encode(PROMPTS)).detach(), trained, rtol=0, atol=0)

    pipe = load_pipeline(path)
    pipe.load_lora_weights(str(tmp_path / "lora"))  # diffusers' own loader, adapter config from the file's metadata
    plain = adapter(family, pipeline=pipe)
    base = adapter(family, pipeline=load_pipeline(path)).sample_latents(noise, plain.encode(PROMPTS)).detach()
    assert not torch.allclose(base, trained, atol=1e-5)  # the adapter matters
    torch.testing.assert_close(plain.sample_latents(noise, plain.encode(PROMPTS)).detach(), trained, rtol=0, atol=1e-5)


def test_full_finetune_save_load_and_clear_errors(saved_pipelines, tmp_path):
    path = saved_pipelines("sd3")
    gen = build_generator({"name": "diffusers_sd3", "path": str(path), **FAMILIES["sd3"][1]})
    one_step(gen, _algorithms()["reward_backprop"])
    noise = gen.make_noise(2, _seeded())
    gen.save_pretrained(tmp_path / "full")
    loaded = load_generator(tmp_path / "full")
    for (k, p), (k2, q) in zip(gen.denoiser.state_dict().items(), loaded.denoiser.state_dict().items()):
        assert k == k2 and torch.equal(p, q), (k, float((p - q).abs().max()))
    torch.testing.assert_close(loaded.sample(PROMPTS, noise=noise), gen.sample(PROMPTS, noise=noise), rtol=0, atol=0)

    with pytest.raises(ValueError, match="holds a StableDiffusion3Pipeline"):
        build_generator({"name": "diffusers_flux", "path": str(path)})
    with pytest.raises(FileNotFoundError, match="no diffusers pipeline"):
        build_generator({"name": "diffusers_sd3", "path": str(tmp_path / "nowhere")})
    lora = adapter("sd3", lora_rank=2, path=str(path))
    lora.save_pretrained(tmp_path / "lora")
    with pytest.raises(ValueError, match="missing LoRA keys"):
        adapter("sd3", lora_rank=2, lora_targets=["to_q", "to_k", "to_v", "to_out.0", "proj_out"]).load_lora(
            tmp_path / "lora" / "pytorch_lora_weights.safetensors")


def test_gradient_checkpointing_and_bf16_switches():
    base = adapter("sd3")
    checkpointed = adapter("sd3", gradient_checkpointing=True)
    assert checkpointed.denoiser.is_gradient_checkpointing
    noise = base.make_noise(2, _seeded())
    grads = []
    for gen in (base, checkpointed):
        gen.train()
        gen.sample_latents(noise, gen.encode(PROMPTS)).pow(2).mean().backward()
        grads.append(gen.denoiser.proj_out.weight.grad)
    torch.testing.assert_close(grads[1], grads[0], rtol=1e-5, atol=1e-6)
    assert not base.components["text_encoder"].training  # frozen parts stay in eval mode

    bf16 = adapter("sd3", dtype="bfloat16", lora_rank=2)
    assert bf16.denoiser.proj_out.weight.dtype == torch.bfloat16 and bf16.make_noise(1).dtype == torch.float32
    assert all(p.dtype == torch.float32 for p in bf16.trainable_module().parameters() if p.requires_grad)
    out = bf16.sample(PROMPTS, noise=noise)
    assert out.dtype == torch.float32 and torch.isfinite(out).all()


def test_exact_resume_of_a_lora_diffusers_run(saved_pipelines, tmp_path):
    from visalign.core import PromptList
    from visalign.trainer import Trainer, TrainerConfig

    path = saved_pipelines("sd3")

    def run(out, steps, resume=None):
        gen = build_generator({"name": "diffusers_sd3", "path": str(path), "lora_rank": 2, **FAMILIES["sd3"][1]})
        cfg = TrainerConfig(steps=steps, prompts_per_step=1, learning_rate=1e-2, save_every=1, log_with=[], progress=False,
                            output_dir=str(out), resume_from=resume, eval_batch_size=2, cpu=True)
        algorithm = FlowGRPO(FlowGRPOConfig(group_size=2, num_steps=2))
        Trainer(gen, algorithm, MeanReward(), PromptList(PROMPTS), cfg).train()
        return {n: p.detach().clone() for n, p in gen.trainable_module().named_parameters() if p.requires_grad}

    full = run(tmp_path / "full", 2)
    run(tmp_path / "part", 1)
    resumed = run(tmp_path / "part", 2, resume=str(tmp_path / "part" / "checkpoints" / "step_000001"))
    assert any(v.abs().sum() > 0 for n, v in full.items() if "lora_B" in n)
    for name, value in full.items():
        assert torch.equal(value, resumed[name]), (name, float((value - resumed[name]).abs().max()))


def test_pinned_diffusers_names_and_signatures():
    """Every diffusers name and keyword the adapters rely on; a diffusers upgrade that changes one fails here."""
    import inspect

    import diffusers
    from diffusers import FluxPipeline, SCMScheduler
    from diffusers.pipelines.flux.pipeline_flux import calculate_shift

    def params(fn) -> set[str]:
        return set(inspect.signature(fn).parameters)

    assert {"hidden_states", "timestep", "encoder_hidden_states", "pooled_projections", "return_dict"} <= params(
        diffusers.SD3Transformer2DModel.forward)
    assert {"hidden_states", "timestep", "guidance", "pooled_projections", "encoder_hidden_states", "txt_ids", "img_ids",
            "return_dict"} <= params(diffusers.FluxTransformer2DModel.forward)
    assert {"hidden_states", "encoder_hidden_states", "encoder_attention_mask", "timestep", "guidance",
            "return_dict"} <= params(diffusers.SanaTransformer2DModel.forward)
    assert {"hidden_states", "timestep", "encoder_hidden_states", "return_dict"} <= params(diffusers.WanTransformer3DModel.forward)
    assert {"prompt", "prompt_2", "prompt_3", "device", "do_classifier_free_guidance", "max_sequence_length"} <= params(
        diffusers.StableDiffusion3Pipeline.encode_prompt)
    assert {"prompt", "prompt_2", "device", "max_sequence_length"} <= params(FluxPipeline.encode_prompt)
    for pipeline in (diffusers.SanaPipeline, diffusers.SanaSprintPipeline):
        assert {"prompt", "device", "max_sequence_length", "complex_human_instruction"} <= params(pipeline.encode_prompt)
    assert "do_classifier_free_guidance" in params(diffusers.SanaPipeline.encode_prompt)
    assert {"prompt", "do_classifier_free_guidance", "device", "max_sequence_length"} <= params(diffusers.WanPipeline.encode_prompt)
    assert {"latents", "batch_size", "num_channels_latents", "height", "width"} <= params(FluxPipeline._pack_latents)
    assert {"latents", "height", "width", "vae_scale_factor"} <= params(FluxPipeline._unpack_latents)
    assert {"batch_size", "height", "width", "device", "dtype"} <= params(FluxPipeline._prepare_latent_image_ids)
    assert {"image_seq_len", "base_seq_len", "max_seq_len", "base_shift", "max_shift"} <= params(calculate_shift)
    assert {"num_inference_steps", "sigmas", "mu"} <= params(diffusers.FlowMatchEulerDiscreteScheduler.set_timesteps)
    assert {"num_inference_steps", "max_timesteps", "intermediate_timesteps"} <= params(SCMScheduler.set_timesteps)
    for pipeline in (diffusers.StableDiffusion3Pipeline, FluxPipeline, diffusers.SanaPipeline, diffusers.SanaSprintPipeline,
                     diffusers.WanPipeline):
        assert {"save_directory", "transformer_lora_layers", "weight_name", "transformer_lora_adapter_metadata"} <= params(
            pipeline.save_lora_weights), pipeline.__name__
        assert "pretrained_model_name_or_path_or_dict" in params(pipeline.load_lora_weights)
    for transformer in (diffusers.SD3Transformer2DModel, diffusers.FluxTransformer2DModel, diffusers.SanaTransformer2DModel,
                        diffusers.WanTransformer3DModel):
        for method in ("add_adapter", "disable_adapters", "enable_adapters", "enable_gradient_checkpointing"):
            assert callable(inspect.getattr_static(transformer, method, None)), (transformer.__name__, method)
    from diffusers import LTX2Pipeline
    from diffusers.models.transformers.transformer_ltx2 import LTX2AudioVideoRotaryPosEmbed
    from diffusers.pipelines.ltx2 import LTX2TextConnectors

    assert {"hidden_states", "audio_hidden_states", "encoder_hidden_states", "audio_encoder_hidden_states", "timestep",
            "sigma", "encoder_attention_mask", "audio_encoder_attention_mask", "num_frames", "height", "width", "fps",
            "audio_num_frames", "video_coords", "audio_coords", "isolate_modalities", "spatio_temporal_guidance_blocks",
            "perturbation_mask", "use_cross_timestep", "return_dict"} <= params(diffusers.LTX2VideoTransformer3DModel.forward)
    assert {"prompt", "do_classifier_free_guidance", "device", "max_sequence_length"} <= params(LTX2Pipeline.encode_prompt)
    assert {"text_encoder_hidden_states", "attention_mask", "padding_side"} <= params(LTX2TextConnectors.forward)
    assert {"latents", "num_frames", "height", "width", "patch_size", "patch_size_t"} <= params(LTX2Pipeline._unpack_latents)
    assert {"latents", "latents_mean", "latents_std", "scaling_factor"} <= params(LTX2Pipeline._denormalize_latents)
    assert {"latents", "latents_mean", "latents_std"} <= params(LTX2Pipeline._denormalize_audio_latents)
    assert {"latents", "latent_length", "num_mel_bins"} <= params(LTX2Pipeline._unpack_audio_latents)
    assert {"batch_size", "num_frames", "height", "width", "device", "fps"} <= params(LTX2AudioVideoRotaryPosEmbed.prepare_video_coords)
    assert {"batch_size", "num_frames", "device"} <= params(LTX2AudioVideoRotaryPosEmbed.prepare_audio_coords)
    assert {"save_directory", "transformer_lora_layers", "weight_name", "transformer_lora_adapter_metadata"} <= params(
        LTX2Pipeline.save_lora_weights)
    from diffusers.loaders.lora_base import LORA_WEIGHT_NAME_SAFE
    from visalign.generators.diffusers_flow import LORA_WEIGHTS_FILE

    assert LORA_WEIGHT_NAME_SAFE == LORA_WEIGHTS_FILE


CONFIG_OVERRIDES = {  # the shipped configs shrunk to the tiny pipelines (path, sizes, float32, few steps)
    "diffusers_sd3_lora": ("sd3", ["generator.height=32", "generator.width=32", "algorithm.num_steps=2",
                                   "algorithm.sde_window=1", "algorithm.group_size=2"]),
    "diffusers_flux_lora": ("flux", ["generator.height=32", "generator.width=32", "generator.num_steps=2"]),
    "diffusers_sana_lora": ("sana", ["generator.height=32", "generator.width=32", "generator.num_steps=2",
                                     "algorithm.num_steps=2", "algorithm.sde_window=1", "algorithm.group_size=2"]),
    "diffusers_sana_sprint_lora": ("sana_sprint", ["generator.height=32", "generator.width=32", "algorithm.num_samples=2"]),
    "diffusers_wan_lora": ("wan", ["generator.height=16", "generator.width=16", "generator.num_frames=5",
                                   "generator.num_steps=2", "algorithm.num_steps=2", "algorithm.sde_window=1",
                                   "algorithm.group_size=2"]),
    "ltx2_av_grpo": ("ltx2", ["generator.height=32", "generator.width=32", "generator.num_frames=9", "generator.frame_rate=25.0",
                              "generator.num_steps=2", "generator.use_cross_timestep=false", "algorithm.num_steps=2",
                              "algorithm.group_size=2"]),
}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "ltx2_av_grpo" else n  # ~9 s
                                  for n in CONFIG_OVERRIDES])
def test_shipped_diffusers_config_trains_through_the_cli(name, saved_pipelines, tmp_path, capsys):
    import json
    from pathlib import Path

    from visalign.cli import main

    config = Path(__file__).resolve().parents[2] / "configs" / f"{name}.yaml"
    family, overrides = CONFIG_OVERRIDES[name]
    out = tmp_path / name
    rc = main(["train", str(config), f"generator.path={saved_pipelines(family)}", "generator.dtype=float32",
               "generator.max_sequence_length=16", "generator.lora_rank=2", "trainer.steps=1", "trainer.prompts_per_step=1",
               "trainer.eval_batch_size=2", f"trainer.output_dir={out}", *overrides])
    assert rc == 0, capsys.readouterr().err
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if line.strip()]
    assert [r["step"] for r in records if "loss" in r] == [1] and all(r["loss"] == r["loss"] for r in records if "loss" in r)
    assert (out / "final" / "pytorch_lora_weights.safetensors").is_file() and (out / "samples" / "after.png").is_file()


def test_measure_adapter_step_reports_and_leaves_the_model_unchanged():
    from visalign.benchmarks.adapter_memory import measure_adapter_step

    gen = adapter("sd3", lora_rank=2)
    before = {n: p.detach().clone() for n, p in gen.trainable_module().named_parameters()}
    report = measure_adapter_step(gen, PROMPTS, batch_size=2, repeats=1)
    assert report["adapter"] == "SD3FlowModel" and report["batch_size"] == 2 and report["noise_shape"] == [4, 16, 16]
    assert report["sample_s"] > 0 and report["train_step_s"] > 0 and report["peak_memory_mb"] > 0
    lora = sum(p.numel() for n, p in gen.trainable_module().named_parameters() if "lora" in n)
    assert report["trainable_params"] == lora < report["total_params"]
    for n, p in gen.trainable_module().named_parameters():
        assert torch.equal(p, before[n]), n
    with pytest.raises(ValueError, match="grad_steps"):
        measure_adapter_step(gen, PROMPTS, grad_steps=5)


def test_ltx2_audio_video_matches_the_pipeline_and_trains(tmp_path):
    from visalign.core.types import modality_of

    gen = adapter("ltx2", lora_rank=2)
    pipe = gen.pipeline
    noise = gen.make_noise(2, _seeded())
    out = gen.sample(PROMPTS, noise=noise)
    assert modality_of(out) == "audio_video" and out["video"].shape == (2, 3, 9, 32, 32) and out["audio"].shape[:2] == (2, 2)
    assert out["sample_rate"] == 16000 and out["fps"] == 25.0
    video, audio = gen._split(noise)  # the pipeline normalises given audio latents: hand it the denormalised noise
    audio = audio * pipe.audio_vae.latents_std + pipe.audio_vae.latents_mean
    ref = pipe(prompt=PROMPTS, negative_prompt="", num_inference_steps=2, guidance_scale=1.0, stg_scale=0.0,
               modality_scale=1.0, guidance_rescale=0.0, audio_guidance_scale=1.0, audio_stg_scale=0.0,
               audio_modality_scale=1.0, audio_guidance_rescale=0.0, spatio_temporal_guidance_blocks=None,
               use_cross_timestep=False, height=32, width=32, num_frames=9, frame_rate=25.0, max_sequence_length=16,
               output_type="pt", latents=video, audio_latents=audio)
    torch.testing.assert_close(out["video"], ref.frames.permute(0, 2, 1, 3, 4) * 2 - 1, rtol=0, atol=2e-5)
    torch.testing.assert_close(out["audio"], ref.audio.clamp(-1, 1), rtol=0, atol=2e-5)
    assert torch.isfinite(gen.sample_sde(noise, PROMPTS, generator=_seeded(1)).log_probs).all()

    towers = {m: {n for n, _ in gen.tower_parameters(m)} for m in ("video", "audio")}
    assert not towers["video"] & towers["audio"] and "proj_out.lora_A.default.weight" not in towers["audio"]
    assert any("audio_attn1.to_q.lora_B" in n for n in towers["audio"]) and any("audio_to_video_attn.to_q.lora_B" in n for n in towers["video"])
    assert any("video_to_audio_attn.to_q.lora_B" in n for n in towers["audio"]) and any(".attn1.to_q.lora_B" in n for n in towers["video"])
    assert {n for n, _ in gen.shared_parameters()} == set()  # every LoRA weight belongs to one tower

    for method, algorithm in _algorithms().items():
        before = {n: p.detach().clone() for n, p in gen.trainable_module().named_parameters() if p.requires_grad}
        t = torch.full((2,), 0.7)
        v_ref = gen.frozen_copy().velocity(noise, t, gen.encode(PROMPTS))
        one_step(gen, algorithm)
        moved = [n for n, p in gen.trainable_module().named_parameters() if p.requires_grad and not torch.equal(p, before[n])]
        assert moved, method
        torch.testing.assert_close(gen.frozen_copy().velocity(noise, t, gen.encode(PROMPTS)), v_ref, rtol=0, atol=0)

    trained = gen.sample_latents(noise, gen.encode(PROMPTS)).detach()
    gen._save_lora(tmp_path)  # the file save_pretrained writes (a LoRA checkpoint also needs a base folder path)
    fresh = BUILDERS["ltx2"]()
    fresh.load_lora_weights(str(tmp_path))
    plain = adapter("ltx2", pipeline=fresh)
    torch.testing.assert_close(plain.sample_latents(noise, plain.encode(PROMPTS)).detach(), trained, rtol=0, atol=1e-5)


class _ModalityMeans(Reward):
    """Mean video intensity plus mean audio amplitude, with each as a labelled component (AV-GRPO's reward sets)."""

    def __init__(self):
        self.last: dict[str, torch.Tensor] = {}

    def __call__(self, samples, prompts, metadata):
        self.last = {"video_mean": samples["video"].flatten(1).mean(1), "audio_mean": samples["audio"].flatten(1).abs().mean(1)}
        return self.last["video_mean"] + self.last["audio_mean"]

    def components(self):
        return dict(self.last)


def test_ltx2_av_grpo_step_moves_only_the_trained_tower():
    """One AV-GRPO step on the video tower, then one on the audio tower, of the tiny random LTX-2 pipeline with a
    LoRA: the tower partition covers every trainable weight exactly once, and each step moves only its tower."""
    from visalign.algorithms.av_grpo import AVGRPO, AVGRPOConfig, modality_partition

    gen = adapter("ltx2", lora_rank=2)
    trainable = {n for n, p in gen.trainable_module().named_parameters() if p.requires_grad}
    parts = {m: modality_partition(gen, m)[0] & trainable for m in ("video", "audio")}
    assert parts["video"] and parts["audio"] and not parts["video"] & parts["audio"]
    assert parts["video"] | parts["audio"] == trainable
    algo = AVGRPO(AVGRPOConfig(group_size=2, num_steps=2, steps_per_modality=1, video_rewards=["video_mean"],
                               audio_rewards=["audio_mean"]))
    ctx = TrainContext(gen, gen.frozen_copy(), _ModalityMeans(), torch.device("cpu"))
    algo.setup(ctx)
    for modality in ("video", "audio"):
        assert algo.modality == modality
        rollout = algo.rollout(ctx, PromptBatch(PROMPTS[:1]), _seeded(3))
        plan = algo.update_plan(ctx, [rollout])
        assert plan.reset_optimizer and not plan.skip and plan.frozen & trainable == parts["video" if modality == "audio" else "audio"]
        params = {n: p for n, p in gen.trainable_module().named_parameters() if n in parts[modality]}
        before = {n: p.detach().clone() for n, p in gen.trainable_module().named_parameters() if n in trainable}
        loss, metrics = algo.loss(ctx, rollout)
        assert torch.isfinite(loss) and metrics["av_grpo/ratio"] == pytest.approx(1.0, abs=1e-5)
        loss.backward()
        torch.optim.Adam(params.values(), lr=1e-2).step()
        gen.trainable_module().zero_grad(set_to_none=True)
        moved = {n for n, p in gen.trainable_module().named_parameters() if n in trainable and not torch.equal(p, before[n])}
        assert moved and moved <= parts[modality], (modality, sorted(moved - parts[modality])[:5])
