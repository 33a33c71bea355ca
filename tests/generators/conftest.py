"""Fixtures for generator tests: small tiny-model configs and prompts."""
from __future__ import annotations

import pytest
import torch

from visalign.generators import TinyFlowConfig, TinyFlowGenerator, TinyImageConfig, TinyOneStepGenerator

PROMPTS = ["a red circle left of a blue square", "a blue square", "a green triangle above a red circle", "a yellow star"]


@pytest.fixture
def prompts() -> list[str]:
    return list(PROMPTS)


@pytest.fixture(params=["sd3", "unet"])
def small_image_config(request) -> dict:
    """Both denoiser backbones, small: every test taking ``one_step`` / ``flow`` runs once per backbone."""
    return dict(image_size=16, patch_size=4, text_hidden=32, vocab_buckets=256, max_length=12, backbone=request.param,
                unet_channels=(16, 32))


@pytest.fixture
def one_step(small_image_config) -> TinyOneStepGenerator:
    torch.manual_seed(0)
    return TinyOneStepGenerator(TinyImageConfig(**small_image_config))


@pytest.fixture
def flow(small_image_config) -> TinyFlowGenerator:
    torch.manual_seed(0)
    return TinyFlowGenerator(TinyFlowConfig(**small_image_config, num_steps=3))


def _tiny_clip_tokenizer():
    """A character-level CLIP BPE tokenizer built in memory (no vocabulary download)."""
    from transformers import CLIPTokenizer

    chars = "abcdefghijklmnopqrstuvwxyz0123456789.,!?'-"
    tokens = ["<|startoftext|>", "<|endoftext|>"] + list(chars) + [c + "</w>" for c in chars]
    return CLIPTokenizer(vocab={t: i for i, t in enumerate(tokens)}, merges=[], model_max_length=16)


def build_tiny_sd3_pipeline():
    """A randomly initialised StableDiffusion3Pipeline small enough for CPU tests (32×32 images)."""
    from diffusers import AutoencoderKL, FlowMatchEulerDiscreteScheduler, SD3Transformer2DModel, StableDiffusion3Pipeline
    from transformers import CLIPTextConfig, CLIPTextModelWithProjection

    torch.manual_seed(0)
    transformer = SD3Transformer2DModel(
        sample_size=16, patch_size=2, in_channels=4, out_channels=4, num_layers=1, attention_head_dim=8,
        num_attention_heads=2, joint_attention_dim=64, caption_projection_dim=16, pooled_projection_dim=64, pos_embed_max_size=8,
    )
    vae = AutoencoderKL(
        in_channels=3, out_channels=3, block_out_channels=(8, 8), layers_per_block=1, latent_channels=4, norm_num_groups=4,
        down_block_types=("DownEncoderBlock2D",) * 2, up_block_types=("UpDecoderBlock2D",) * 2,
        use_quant_conv=False, use_post_quant_conv=False, shift_factor=0.0609, scaling_factor=1.5035, sample_size=32,
    )
    tokenizer = _tiny_clip_tokenizer()
    text_config = CLIPTextConfig(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, projection_dim=32, num_hidden_layers=2,
        num_attention_heads=2, max_position_embeddings=16, bos_token_id=0, eos_token_id=1, pad_token_id=1,
    )
    return StableDiffusion3Pipeline(
        transformer=transformer, scheduler=FlowMatchEulerDiscreteScheduler(), vae=vae,
        text_encoder=CLIPTextModelWithProjection(text_config), tokenizer=tokenizer,
        text_encoder_2=CLIPTextModelWithProjection(text_config), tokenizer_2=_tiny_clip_tokenizer(),
        text_encoder_3=None, tokenizer_3=None,
    )


@pytest.fixture(scope="session")
def tiny_sd3_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny_sd3")
    build_tiny_sd3_pipeline().save_pretrained(str(path))
    return path
