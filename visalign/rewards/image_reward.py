"""ImageReward (Xu et al., 2023) assembled from transformers BLIP classes, loading the published checkpoint.

The published scorer: BLIP ViT-L/16 at 224 px (LayerNorm eps 1e-6) encodes the image; a BERT-base text encoder
with cross-attention to the image tokens in every layer (BLIP's "med" config) reads the prompt (bert-base-uncased
tokens, padded to 35); the [CLS] state goes through a 5-layer linear MLP and is standardised with the published
mean 0.16717362830052426 and std 1.0333394966054072. ``BlipVisionModel`` and ``BlipTextModel`` are ports of
BLIP's ``vit.py`` and ``med.py``; ``convert_image_reward_state`` renames the checkpoint's keys onto them.
"""
from __future__ import annotations

import re
from typing import Any, Sequence

import torch
from torch import nn

from ..core.reward import register_reward
from .aesthetic import AestheticMLP
from ..core.types import Metadata
from .frames import FrameReward
from .pixels import OPENAI_CLIP_MEAN, OPENAI_CLIP_STD, published_pixels
from .weights import load_state_dict, load_strict

IMAGE_REWARD_MEAN = 0.16717362830052426
IMAGE_REWARD_STD = 1.0333394966054072
MAX_PROMPT_TOKENS = 35
PUBLISHED_VISION = dict(hidden_size=1024, intermediate_size=4096, num_hidden_layers=24, num_attention_heads=16,
                        image_size=224, patch_size=16, layer_norm_eps=1e-6, hidden_act="gelu")
PUBLISHED_TEXT = dict(vocab_size=30524, hidden_size=768, intermediate_size=3072, num_hidden_layers=12,
                      num_attention_heads=12, max_position_embeddings=512, layer_norm_eps=1e-12, hidden_act="gelu")

_VISION_KEYS = [  # (published BLIP ViT name, transformers BlipVisionModel name); {i}: block, {p}: weight / bias
    ("cls_token", "embeddings.class_embedding"),
    ("pos_embed", "embeddings.position_embedding"),
    ("patch_embed.proj.{p}", "embeddings.patch_embedding.{p}"),
    ("norm.{p}", "post_layernorm.{p}"),
    ("blocks.{i}.norm1.{p}", "encoder.layers.{i}.layer_norm1.{p}"),
    ("blocks.{i}.norm2.{p}", "encoder.layers.{i}.layer_norm2.{p}"),
    ("blocks.{i}.attn.qkv.{p}", "encoder.layers.{i}.self_attn.qkv.{p}"),
    ("blocks.{i}.attn.proj.{p}", "encoder.layers.{i}.self_attn.projection.{p}"),
    ("blocks.{i}.mlp.fc1.{p}", "encoder.layers.{i}.mlp.fc1.{p}"),
    ("blocks.{i}.mlp.fc2.{p}", "encoder.layers.{i}.mlp.fc2.{p}"),
]
_PREFIXES = [("blip.visual_encoder.", "vision."), ("blip.text_encoder.", "text."), ("mlp.", "head.")]
_UNUSED_PREFIXES = ("blip.vision_proj.", "blip.text_proj.")  # BLIP's contrastive projections; the score skips them
_BUFFERS = re.compile(r"position_ids$")


def _template_regex(template: str) -> re.Pattern[str]:
    pattern = re.escape(template).replace(r"\{i\}", r"(?P<i>\d+)").replace(r"\{p\}", r"(?P<p>weight|bias)")
    return re.compile(pattern)


def _rename(name: str, published_to_module: bool) -> str | None:
    """One key across the two layouts, or None when it belongs to neither."""
    for published_prefix, module_prefix in _PREFIXES:
        source, target = (published_prefix, module_prefix) if published_to_module else (module_prefix, published_prefix)
        if not name.startswith(source):
            continue
        rest = name[len(source):]
        if source not in ("blip.visual_encoder.", "vision."):
            return target + rest
        for published, module in _VISION_KEYS:
            src, dst = (published, module) if published_to_module else (module, published)
            match = _template_regex(src).fullmatch(rest)
            if match:
                return target + dst.format(**match.groupdict())
    return None


def convert_image_reward_state(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Published ImageReward keys (``blip.visual_encoder.*``, ``blip.text_encoder.*``, ``mlp.*``) -> this
    module's (``vision.*``, ``text.*``, ``head.*``); unknown keys raise a ValueError naming them."""
    out: dict[str, torch.Tensor] = {}
    unknown = []
    for key, value in state.items():
        if key.startswith(_UNUSED_PREFIXES) or _BUFFERS.search(key):
            continue
        new = _rename(key, published_to_module=True)
        if new is None:
            unknown.append(key)
        else:
            out[new] = value
    if unknown:
        raise ValueError(f"not an ImageReward checkpoint: unexpected keys {unknown[:5]}")
    return out


def to_published_layout(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The inverse of ``convert_image_reward_state`` (to save an ``ImageRewardModel`` as ImageReward.pt names)."""
    out = {}
    for key, value in state.items():
        new = _rename(key, published_to_module=False)
        if new is None:
            raise ValueError(f"{key!r} is not an ImageRewardModel key")
        out[new] = value
    return out


class ImageRewardModel(nn.Module):
    """BLIP ViT + cross-attention BERT + MLP head; ``forward(pixels, input_ids, attention_mask) -> [N]``."""

    def __init__(self, vision: dict[str, Any] | None = None, text: dict[str, Any] | None = None) -> None:
        super().__init__()
        from transformers import BlipTextConfig, BlipTextModel, BlipVisionConfig, BlipVisionModel

        vision_cfg = BlipVisionConfig(**{**PUBLISHED_VISION, **(vision or {})})
        text_args = {**PUBLISHED_TEXT, **(text or {})}
        # is_decoder builds the cross-attention layers; forward(is_decoder=False) keeps self-attention bidirectional
        text_cfg = BlipTextConfig(**text_args, encoder_hidden_size=vision_cfg.hidden_size, is_decoder=True,
                                  bos_token_id=None, sep_token_id=None)
        self.vision = BlipVisionModel(vision_cfg)
        self.text = BlipTextModel(text_cfg, add_pooling_layer=False)
        self.head = AestheticMLP(text_cfg.hidden_size)
        self.image_size = vision_cfg.image_size

    def forward(self, pixels: torch.Tensor, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        image_embeds = self.vision(pixel_values=pixels).last_hidden_state
        image_mask = torch.ones(image_embeds.shape[:-1], dtype=torch.long, device=image_embeds.device)
        hidden = self.text(input_ids=input_ids, attention_mask=attention_mask, encoder_hidden_states=image_embeds,
                           encoder_attention_mask=image_mask, is_decoder=False).last_hidden_state
        return ((self.head(hidden[:, 0].float()) - IMAGE_REWARD_MEAN) / IMAGE_REWARD_STD).squeeze(-1)


@register_reward("image_reward")
class ImageReward(FrameReward):
    """ImageReward-v1.0 score (standardised: ≈ 0 on average generations, higher is preferred); differentiable.

    ``path``: ``ImageReward.pt`` (read with ``weights_only``) or a safetensors copy; ``tokenizer_path``: a local
    ``bert-base-uncased`` folder (``vocab.txt``). ``vision`` / ``text`` override the published BLIP config
    (tests build tiny models). Preprocessing: 224 bicubic resize + center crop, OpenAI CLIP mean / std."""

    differentiable = True

    def __init__(self, path: str, tokenizer_path: str, device: str | None = None, batch_size: int = 32,
                 video_pool: str = "mean", vision: dict[str, Any] | None = None,
                 text: dict[str, Any] | None = None) -> None:
        from pathlib import Path

        from transformers import BertTokenizer

        self.configure_frames(batch_size, video_pool, device)
        if not Path(tokenizer_path).is_dir():
            raise FileNotFoundError(f"image_reward: tokenizer folder not found: {tokenizer_path}")
        self.tokenizer = BertTokenizer.from_pretrained(tokenizer_path, local_files_only=True)
        self.model = ImageRewardModel(vision, text)
        load_strict(self.model, convert_image_reward_state(load_state_dict(path)), path)
        self.model.eval().requires_grad_(False).to(self.device)

    def score_frames(self, frames: torch.Tensor, prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        pixels = published_pixels(frames, self.model.image_size, OPENAI_CLIP_MEAN, OPENAI_CLIP_STD)
        tokens = self.tokenizer(list(prompts), padding="max_length", truncation=True, max_length=MAX_PROMPT_TOKENS,
                                return_tensors="pt").to(self.device)
        return self.model(pixels, tokens["input_ids"], tokens["attention_mask"])
