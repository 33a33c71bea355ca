"""Tiny random-weight diffusers pipelines (SD3, FLUX.1, SANA, SANA-Sprint, Wan) built from configs, no downloads.

Every text encoder uses the in-memory character-level CLIP tokenizer of ``conftest`` (T5 / Gemma / UMT5 slots
included: the pipelines only call ``tokenizer(...)`` on them), sized to its vocabulary."""
from __future__ import annotations

import torch

from .conftest import _tiny_clip_tokenizer, build_tiny_sd3_pipeline


def _clip_text(cls_name: str = "CLIPTextModel", hidden: int = 32):
    import transformers
    from transformers import CLIPTextConfig

    tok = _tiny_clip_tokenizer()
    config = CLIPTextConfig(vocab_size=len(tok), hidden_size=hidden, intermediate_size=37, projection_dim=hidden,
                            num_hidden_layers=1, num_attention_heads=2, max_position_embeddings=16, bos_token_id=0,
                            eos_token_id=1, pad_token_id=1)
    return getattr(transformers, cls_name)(config), tok


def _t5(d_model: int = 32):
    from transformers import T5Config, T5EncoderModel

    tok = _tiny_clip_tokenizer()
    config = T5Config(vocab_size=len(tok), d_model=d_model, d_kv=8, d_ff=37, num_layers=1, num_heads=2,
                      dropout_rate=0.0, relative_attention_num_buckets=8, pad_token_id=1, eos_token_id=1)
    return T5EncoderModel(config), tok


def build_tiny_flux_pipeline():
    from diffusers import AutoencoderKL, FlowMatchEulerDiscreteScheduler, FluxPipeline, FluxTransformer2DModel

    torch.manual_seed(0)
    transformer = FluxTransformer2DModel(patch_size=1, in_channels=16, num_layers=1, num_single_layers=1,
                                         attention_head_dim=8, num_attention_heads=2, joint_attention_dim=32,
                                         pooled_projection_dim=32, guidance_embeds=True, axes_dims_rope=[2, 2, 4])
    clip, clip_tok = _clip_text("CLIPTextModel")
    t5, t5_tok = _t5()
    vae = AutoencoderKL(in_channels=3, out_channels=3, block_out_channels=(8, 8), layers_per_block=1, latent_channels=4,
                        norm_num_groups=4, down_block_types=("DownEncoderBlock2D",) * 2,
                        up_block_types=("UpDecoderBlock2D",) * 2, use_quant_conv=False, use_post_quant_conv=False,
                        shift_factor=0.0609, scaling_factor=1.5035, sample_size=32)
    scheduler = FlowMatchEulerDiscreteScheduler(use_dynamic_shifting=True, base_image_seq_len=16, max_image_seq_len=256,
                                                base_shift=0.5, max_shift=1.15)
    return FluxPipeline(scheduler=scheduler, vae=vae, text_encoder=clip, tokenizer=clip_tok, text_encoder_2=t5,
                        tokenizer_2=t5_tok, transformer=transformer)


def _gemma():
    from transformers import Gemma2Config, Gemma2Model

    tok = _tiny_clip_tokenizer()
    config = Gemma2Config(head_dim=8, hidden_size=16, intermediate_size=32, num_attention_heads=2, num_hidden_layers=1,
                          num_key_value_heads=1, vocab_size=len(tok), max_position_embeddings=64, pad_token_id=1,
                          attn_implementation="eager")
    return Gemma2Model(config), tok


def _dc_ae():
    from diffusers import AutoencoderDC

    return AutoencoderDC(in_channels=3, latent_channels=4, attention_head_dim=2,
                         encoder_block_types=("ResBlock", "EfficientViTBlock"),
                         decoder_block_types=("ResBlock", "EfficientViTBlock"), encoder_block_out_channels=(8, 8),
                         decoder_block_out_channels=(8, 8), encoder_qkv_multiscales=((), (5,)),
                         decoder_qkv_multiscales=((), (5,)), encoder_layers_per_block=(1, 1),
                         decoder_layers_per_block=[1, 1], downsample_block_type="conv",
                         upsample_block_type="interpolate", decoder_norm_types="rms_norm", decoder_act_fns="silu",
                         scaling_factor=0.41407)


def _sana_transformer(guidance: bool):
    from diffusers import SanaTransformer2DModel

    return SanaTransformer2DModel(patch_size=1, in_channels=4, out_channels=4, num_layers=1, num_attention_heads=2,
                                  attention_head_dim=4, num_cross_attention_heads=2, cross_attention_head_dim=4,
                                  cross_attention_dim=8, caption_channels=16, sample_size=16,
                                  qk_norm="rms_norm_across_heads" if guidance else None, guidance_embeds=guidance)


def build_tiny_sana_pipeline():
    from diffusers import FlowMatchEulerDiscreteScheduler, SanaPipeline

    torch.manual_seed(0)
    text_encoder, tok = _gemma()
    return SanaPipeline(tokenizer=tok, text_encoder=text_encoder, vae=_dc_ae(), transformer=_sana_transformer(False),
                        scheduler=FlowMatchEulerDiscreteScheduler(shift=3.0))


def build_tiny_sana_sprint_pipeline():
    from diffusers import SanaSprintPipeline, SCMScheduler

    torch.manual_seed(0)
    text_encoder, tok = _gemma()
    return SanaSprintPipeline(tokenizer=tok, text_encoder=text_encoder, vae=_dc_ae(),
                              transformer=_sana_transformer(True), scheduler=SCMScheduler())


def build_tiny_wan_pipeline(expand_timesteps: bool = False):
    from diffusers import AutoencoderKLWan, FlowMatchEulerDiscreteScheduler, WanPipeline, WanTransformer3DModel

    torch.manual_seed(0)
    vae = AutoencoderKLWan(base_dim=3, z_dim=4, dim_mult=[1, 1, 1, 1], num_res_blocks=1,
                           temperal_downsample=[False, True, True],
                           latents_mean=[0.1, -0.2, 0.0, 0.3], latents_std=[1.5, 2.0, 1.0, 0.8])
    t5, tok = _t5()
    transformer = WanTransformer3DModel(patch_size=(1, 2, 2), num_attention_heads=2, attention_head_dim=8, in_channels=4,
                                        out_channels=4, text_dim=32, freq_dim=16, ffn_dim=32, num_layers=1,
                                        cross_attn_norm=True, qk_norm="rms_norm_across_heads", rope_max_seq_len=32)
    return WanPipeline(tokenizer=tok, text_encoder=t5, transformer=transformer, vae=vae,
                       scheduler=FlowMatchEulerDiscreteScheduler(shift=3.0), expand_timesteps=expand_timesteps)


def build_tiny_ltx2_pipeline():
    """LTX-2 audio-video: tiny Gemma-3 (text + a tiny vision tower it never uses), connectors, joint transformer,
    video VAE, audio VAE and vocoder (the real-size check's tiny variant)."""
    from visalign.benchmarks.real_size import build_real_size

    return build_real_size("ltx-2", tiny=True)


BUILDERS = {
    "sd3": build_tiny_sd3_pipeline,
    "flux": build_tiny_flux_pipeline,
    "sana": build_tiny_sana_pipeline,
    "sana_sprint": build_tiny_sana_sprint_pipeline,
    "wan": build_tiny_wan_pipeline,
    "ltx2": build_tiny_ltx2_pipeline,
    "wan_ti2v": lambda: build_tiny_wan_pipeline(expand_timesteps=True),  # Wan 2.2 TI2V-5B: per-token timesteps
}
