"""PickScore (Kirstain et al., 2023): a CLIP ViT-H/14 fine-tuned on Pick-a-Pic preferences."""
from __future__ import annotations

from .clip_backends import HFClip
from .clip_similarity import ClipSimilarityReward
from ..core.reward import register_reward


@register_reward("pickscore")
class PickScore(ClipSimilarityReward):
    """``logit_scale.exp() · cos(image, prompt)`` as published (≈ 18–23 on real images); differentiable.

    ``path``: the local ``PickScore_v1`` folder (a transformers ``CLIPModel``); ``tokenizer_path``: the folder
    with the CLIP tokenizer files if ``path`` lacks them (the authors load it from ``CLIP-ViT-H-14-laion2B``).
    Preprocessing: shortest side → 224 bicubic, center crop, OpenAI CLIP mean / std."""

    def __init__(self, path: str, tokenizer_path: str | None = None, device: str | None = None,
                 batch_size: int = 32, video_pool: str = "mean") -> None:
        self.setup(HFClip(path, tokenizer_path), "logit_scale", device, batch_size, video_pool)
