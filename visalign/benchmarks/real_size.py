"""Diffusers pipelines at their published size with random weights: GPU memory and speed checks without downloads.

Each builder makes a family's real denoiser and VAE from the published configs. Text encoders keep the real output
width (all the denoiser reads) but only one or two layers: they are frozen and run once per prompt, so their depth
changes neither the training step nor its memory beyond their own weights. Tokenizers are a character-level CLIP
tokenizer built in memory. ``tiny=True`` shrinks every width and depth so the same code runs on CPU in the tests.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch

CHARS = "abcdefghijklmnopqrstuvwxyz0123456789.,!?'-"


def char_tokenizer(max_length: int):
    """A character-level CLIP BPE tokenizer built in memory (no vocabulary download)."""
    from transformers import CLIPTokenizer

    tokens = ["<|startoftext|>", "<|endoftext|>"] + list(CHARS) + [c + "</w>" for c in CHARS]
    return CLIPTokenizer(vocab={t: i for i, t in enumerate(tokens)}, merges=[], model_max_length=max_length)


def _pick(tiny: bool, real: dict[str, Any], small: dict[str, Any]) -> dict[str, Any]:
    return {**real, **small} if tiny else real


def _clip(tiny: bool, hidden: int, projection: bool):
    import transformers
    from transformers import CLIPTextConfig

    tok = char_tokenizer(16 if tiny else 77)
    config = CLIPTextConfig(vocab_size=len(tok), hidden_size=32 if tiny else hidden, intermediate_size=37 if tiny else 4 * hidden,
                            projection_dim=32 if tiny else hidden, num_hidden_layers=1,
                            num_attention_heads=2 if tiny else hidden // 64, max_position_embeddings=tok.model_max_length,
                            bos_token_id=0, eos_token_id=1, pad_token_id=1)
    model = transformers.CLIPTextModelWithProjection if projection else transformers.CLIPTextModel
    return model(config), tok


def _t5(tiny: bool):
    """T5-XXL / UMT5-XXL encoder width (4096), one layer."""
    from transformers import T5Config, T5EncoderModel

    tok = char_tokenizer(16)
    shape = dict(d_model=32, d_kv=8, d_ff=37, num_heads=2) if tiny else dict(d_model=4096, d_kv=64, d_ff=10240, num_heads=64)
    config = T5Config(vocab_size=len(tok), num_layers=1, dropout_rate=0.0, relative_attention_num_buckets=8 if tiny else 32,
                      pad_token_id=1, eos_token_id=1, **shape)
    return T5EncoderModel(config), tok


def _kl_vae(tiny: bool, scaling: float, shift: float):
    """The 16-channel KL VAE of SD3 and FLUX.1 (8× down)."""
    from diffusers import AutoencoderKL

    blocks = (8, 8) if tiny else (128, 256, 512, 512)
    return AutoencoderKL(in_channels=3, out_channels=3, block_out_channels=blocks, layers_per_block=1 if tiny else 2,
                         latent_channels=4 if tiny else 16, norm_num_groups=4 if tiny else 32,
                         down_block_types=("DownEncoderBlock2D",) * len(blocks), up_block_types=("UpDecoderBlock2D",) * len(blocks),
                         use_quant_conv=False, use_post_quant_conv=False, shift_factor=shift, scaling_factor=scaling,
                         sample_size=32 if tiny else 1024)


def build_sd35_medium(tiny: bool = False):
    """Stable Diffusion 3.5 Medium: MMDiT-X, 24 blocks (dual attention in the first 13), 2.5 B parameters."""
    from diffusers import FlowMatchEulerDiscreteScheduler, SD3Transformer2DModel, StableDiffusion3Pipeline

    clip_l, tok_l = _clip(tiny, 768, projection=True)
    clip_g, tok_g = _clip(tiny, 1280, projection=True)
    t5, tok_t5 = _t5(tiny)
    transformer = SD3Transformer2DModel(**_pick(tiny, dict(
        sample_size=128, patch_size=2, in_channels=16, out_channels=16, num_layers=24, attention_head_dim=64,
        num_attention_heads=24, joint_attention_dim=4096, caption_projection_dim=1536, pooled_projection_dim=2048,
        pos_embed_max_size=384, dual_attention_layers=tuple(range(13)), qk_norm="rms_norm"), dict(
        sample_size=16, in_channels=4, out_channels=4, num_layers=2, attention_head_dim=8, num_attention_heads=2,
        joint_attention_dim=32, caption_projection_dim=16, pooled_projection_dim=64, pos_embed_max_size=8,
        dual_attention_layers=(0,))))
    return StableDiffusion3Pipeline(
        transformer=transformer, scheduler=FlowMatchEulerDiscreteScheduler(shift=3.0), vae=_kl_vae(tiny, 1.5305, 0.0609),
        text_encoder=clip_l, tokenizer=tok_l, text_encoder_2=clip_g, tokenizer_2=tok_g, text_encoder_3=t5, tokenizer_3=tok_t5)


def build_flux1_dev(tiny: bool = False):
    """FLUX.1 [dev]: 19 double + 38 single blocks, guidance-distilled, 12 B parameters."""
    from diffusers import FlowMatchEulerDiscreteScheduler, FluxPipeline, FluxTransformer2DModel

    clip, clip_tok = _clip(tiny, 768, projection=False)
    t5, t5_tok = _t5(tiny)
    transformer = FluxTransformer2DModel(**_pick(tiny, dict(
        patch_size=1, in_channels=64, num_layers=19, num_single_layers=38, attention_head_dim=128, num_attention_heads=24,
        joint_attention_dim=4096, pooled_projection_dim=768, guidance_embeds=True, axes_dims_rope=(16, 56, 56)), dict(
        in_channels=16, num_layers=1, num_single_layers=1, attention_head_dim=8, num_attention_heads=2,
        joint_attention_dim=32, pooled_projection_dim=32, axes_dims_rope=(2, 2, 4))))
    scheduler = FlowMatchEulerDiscreteScheduler(shift=3.0, use_dynamic_shifting=True, base_image_seq_len=256,
                                                max_image_seq_len=4096, base_shift=0.5, max_shift=1.15)
    return FluxPipeline(scheduler=scheduler, vae=_kl_vae(tiny, 0.3611, 0.1159), text_encoder=clip, tokenizer=clip_tok,
                        text_encoder_2=t5, tokenizer_2=t5_tok, transformer=transformer)


def _gemma2(tiny: bool):
    """Gemma-2 2B width (2304), one layer: SANA's text encoder."""
    from transformers import Gemma2Config, Gemma2Model

    tok = char_tokenizer(16)
    shape = (dict(head_dim=8, hidden_size=16, intermediate_size=32, num_attention_heads=2, num_key_value_heads=1) if tiny else
             dict(head_dim=256, hidden_size=2304, intermediate_size=9216, num_attention_heads=8, num_key_value_heads=4))
    config = Gemma2Config(num_hidden_layers=1, vocab_size=len(tok), max_position_embeddings=64 if tiny else 512, pad_token_id=1,
                          attn_implementation="eager", **shape)
    return Gemma2Model(config), tok


def _dc_ae(tiny: bool):
    """DC-AE f32c32 (SANA's 32× autoencoder, 32 latent channels)."""
    from diffusers import AutoencoderDC

    if tiny:
        return AutoencoderDC(in_channels=3, latent_channels=4, attention_head_dim=2,
                             encoder_block_types=("ResBlock", "EfficientViTBlock"), decoder_block_types=("ResBlock", "EfficientViTBlock"),
                             encoder_block_out_channels=(8, 8), decoder_block_out_channels=(8, 8),
                             encoder_qkv_multiscales=((), (5,)), decoder_qkv_multiscales=((), (5,)),
                             encoder_layers_per_block=(1, 1), decoder_layers_per_block=(1, 1), downsample_block_type="conv",
                             upsample_block_type="interpolate", decoder_norm_types="rms_norm", decoder_act_fns="silu",
                             scaling_factor=0.41407)
    vit = ("ResBlock",) * 3 + ("EfficientViTBlock",) * 3
    return AutoencoderDC(in_channels=3, latent_channels=32, attention_head_dim=32, encoder_block_types=vit,
                         decoder_block_types=vit, encoder_block_out_channels=(128, 256, 512, 512, 1024, 1024),
                         decoder_block_out_channels=(128, 256, 512, 512, 1024, 1024),
                         encoder_layers_per_block=(2, 2, 2, 3, 3, 3), decoder_layers_per_block=(3, 3, 3, 3, 3, 3),
                         encoder_qkv_multiscales=((), (), (), (5,), (5,), (5,)),
                         decoder_qkv_multiscales=((), (), (), (5,), (5,), (5,)), upsample_block_type="interpolate",
                         downsample_block_type="conv", decoder_norm_types=("batch_norm",) * 3 + ("rms_norm",) * 3,
                         decoder_act_fns=("relu",) * 3 + ("silu",) * 3, scaling_factor=0.41407)


def build_sana_sprint_1600m(tiny: bool = False):
    """SANA-Sprint 1.6B 1024 px: linear-attention DiT, 20 blocks, guidance embedding, 1-4 step sCM sampler."""
    from diffusers import SanaSprintPipeline, SanaTransformer2DModel, SCMScheduler

    text_encoder, tok = _gemma2(tiny)
    transformer = SanaTransformer2DModel(**_pick(tiny, dict(
        in_channels=32, out_channels=32, num_attention_heads=70, attention_head_dim=32, num_layers=20,
        num_cross_attention_heads=20, cross_attention_head_dim=112, cross_attention_dim=2240, caption_channels=2304,
        mlp_ratio=2.5, sample_size=32, patch_size=1, qk_norm="rms_norm_across_heads", guidance_embeds=True,
        guidance_embeds_scale=0.1), dict(
        in_channels=4, out_channels=4, num_attention_heads=2, attention_head_dim=4, num_layers=1,
        num_cross_attention_heads=2, cross_attention_head_dim=4, cross_attention_dim=8, caption_channels=16, sample_size=16)))
    return SanaSprintPipeline(tokenizer=tok, text_encoder=text_encoder, vae=_dc_ae(tiny), transformer=transformer,
                              scheduler=SCMScheduler())


def build_wan21_t2v_1300m(tiny: bool = False):
    """Wan 2.1 text-to-video 1.3B: 30 blocks of width 1536, UMT5-XXL text width, the Wan 2.1 causal video VAE."""
    from diffusers import AutoencoderKLWan, FlowMatchEulerDiscreteScheduler, WanPipeline, WanTransformer3DModel

    vae = (AutoencoderKLWan(base_dim=3, z_dim=4, dim_mult=[1, 1, 1, 1], num_res_blocks=1, temperal_downsample=[False, True, True],
                            latents_mean=[0.1, -0.2, 0.0, 0.3], latents_std=[1.5, 2.0, 1.0, 0.8]) if tiny else AutoencoderKLWan())
    t5, tok = _t5(tiny)
    transformer = WanTransformer3DModel(**_pick(tiny, dict(
        patch_size=(1, 2, 2), num_attention_heads=12, attention_head_dim=128, in_channels=16, out_channels=16,
        text_dim=4096, freq_dim=256, ffn_dim=8960, num_layers=30, cross_attn_norm=True, qk_norm="rms_norm_across_heads",
        rope_max_seq_len=1024), dict(
        num_attention_heads=2, attention_head_dim=8, in_channels=4, out_channels=4, text_dim=32, freq_dim=16, ffn_dim=32,
        num_layers=1, rope_max_seq_len=32)))
    return WanPipeline(tokenizer=tok, text_encoder=t5, transformer=transformer, vae=vae,
                       scheduler=FlowMatchEulerDiscreteScheduler(shift=3.0))


def build_ltx2(tiny: bool = False):
    """LTX-2 joint audio-video: 48 blocks, video width 4096 and audio width 2048 (19 B parameters), the LTX-2 video
    VAE (32× space, 8× time) and audio VAE and vocoder; the Gemma-3 text encoder at its real width (3840), two layers."""
    from diffusers import (AutoencoderKLLTX2Audio, AutoencoderKLLTX2Video, FlowMatchEulerDiscreteScheduler, LTX2Pipeline,
                           LTX2VideoTransformer3DModel)
    from diffusers.pipelines.ltx2 import LTX2TextConnectors
    from diffusers.pipelines.ltx2.vocoder import LTX2Vocoder
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration

    tok = char_tokenizer(16)
    hidden = 16 if tiny else 3840
    text = dict(vocab_size=len(tok), hidden_size=hidden, num_hidden_layers=2, pad_token_id=1, sliding_window=16 if tiny else 1024,
                max_position_embeddings=64 if tiny else 2048,
                **(dict(intermediate_size=32, num_attention_heads=2, num_key_value_heads=1, head_dim=8) if tiny else
                   dict(intermediate_size=15360, num_attention_heads=16, num_key_value_heads=8, head_dim=256)))
    vision = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, image_size=16, patch_size=8)
    text_encoder = Gemma3ForConditionalGeneration(Gemma3Config(text_config=text, vision_config=vision, mm_tokens_per_image=4,
                                                               image_token_index=len(tok) - 1))
    transformer = LTX2VideoTransformer3DModel(**_pick(tiny, dict(caption_channels=hidden), dict(
        in_channels=4, out_channels=4, num_attention_heads=2, attention_head_dim=8, cross_attention_dim=16,
        audio_in_channels=4, audio_out_channels=4, audio_num_attention_heads=2, audio_attention_head_dim=4,
        audio_cross_attention_dim=8, num_layers=1, rope_double_precision=False, rope_type="split")))
    connectors = LTX2TextConnectors(caption_channels=hidden, text_proj_in_factor=3, **({} if not tiny else dict(
        video_connector_num_attention_heads=4, video_connector_attention_head_dim=4, video_connector_num_layers=1,
        video_connector_num_learnable_registers=None, audio_connector_num_attention_heads=4,
        audio_connector_attention_head_dim=4, audio_connector_num_layers=1, audio_connector_num_learnable_registers=None,
        connector_rope_base_seq_len=32, rope_double_precision=False, rope_type="split")))
    if tiny:
        vae = AutoencoderKLLTX2Video(
            in_channels=3, out_channels=3, latent_channels=4, block_out_channels=(8,), decoder_block_out_channels=(8,),
            layers_per_block=(1,), decoder_layers_per_block=(1, 1), spatio_temporal_scaling=(True,),
            decoder_spatio_temporal_scaling=(True,), decoder_inject_noise=(False, False), downsample_type=("spatial",),
            upsample_residual=(False,), upsample_factor=(1,), timestep_conditioning=False, patch_size=1, patch_size_t=1,
            encoder_causal=True, decoder_causal=False)
        audio_vae = AutoencoderKLLTX2Audio(
            base_channels=4, output_channels=2, ch_mult=(1,), num_res_blocks=1, attn_resolutions=None, in_channels=2,
            resolution=32, latent_channels=2, norm_type="pixel", causality_axis="height", dropout=0.0,
            mid_block_add_attention=False, sample_rate=16000, mel_hop_length=160, is_causal=True, mel_bins=8)
        vocoder = LTX2Vocoder(in_channels=16, hidden_channels=32, out_channels=2, upsample_kernel_sizes=[4, 4],
                              upsample_factors=[2, 2], resnet_kernel_sizes=[3], resnet_dilations=[[1, 3, 5]],
                              leaky_relu_negative_slope=0.1, output_sampling_rate=16000)
    else:
        vae = AutoencoderKLLTX2Video(spatial_compression_ratio=32, temporal_compression_ratio=8)
        audio_vae, vocoder = AutoencoderKLLTX2Audio(), LTX2Vocoder()
    return LTX2Pipeline(scheduler=FlowMatchEulerDiscreteScheduler(), vae=vae, audio_vae=audio_vae, text_encoder=text_encoder,
                        tokenizer=tok, connectors=connectors, transformer=transformer, vocoder=vocoder, processor=None,
                        prompt_enhancer=None, duration_head=None)


@dataclass(frozen=True)
class RealSizeFamily:
    """One model family: its builder, the shipped config that trains it, and the config overrides of the check
    (``overrides`` at real size, ``tiny_overrides`` on CPU)."""

    build: Callable[[bool], Any]
    config: str
    overrides: tuple[str, ...] = ()
    tiny_overrides: tuple[str, ...] = ()


FAMILIES: dict[str, RealSizeFamily] = {
    "sd3.5-medium": RealSizeFamily(build_sd35_medium, "configs/diffusers_sd3_lora.yaml",
                                   tiny_overrides=("generator.height=32", "generator.width=32", "generator.max_sequence_length=16")),
    "flux.1-dev": RealSizeFamily(build_flux1_dev, "configs/diffusers_flux_lora.yaml",
                                 tiny_overrides=("generator.height=32", "generator.width=32", "generator.max_sequence_length=16",
                                                 "generator.num_steps=2")),
    "sana-sprint-1.6b": RealSizeFamily(build_sana_sprint_1600m, "configs/diffusers_sana_sprint_lora.yaml",
                                       tiny_overrides=("generator.height=32", "generator.width=32",
                                                       "generator.max_sequence_length=16")),
    "wan2.1-t2v-1.3b": RealSizeFamily(build_wan21_t2v_1300m, "configs/diffusers_wan_lora.yaml",
                                      tiny_overrides=("generator.height=16", "generator.width=16", "generator.num_frames=5",
                                                      "generator.num_steps=2", "algorithm.num_steps=2",
                                                      "generator.max_sequence_length=16")),
    "ltx-2": RealSizeFamily(build_ltx2, "configs/ltx2_av_grpo.yaml",
                            overrides=("algorithm.group_size=2", "algorithm.num_steps=4", "generator.num_steps=4"),
                            tiny_overrides=("generator.height=32", "generator.width=32", "generator.num_frames=9",
                                            "generator.max_sequence_length=16", "generator.frame_rate=8")),
}
"""Families a GPU check covers. LTX-2 runs 2 samples × 4 steps (its shipped 8 × 15 would take minutes per step)."""


def build_real_size(family: str, tiny: bool = False, device: str | torch.device = "cpu") -> Any:
    """The family's pipeline with random weights, its modules created directly on ``device`` (float32)."""
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; known: {sorted(FAMILIES)}")
    torch.manual_seed(0)
    with torch.device(device):
        return FAMILIES[family].build(tiny)
