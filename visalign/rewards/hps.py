"""HPS v2 / v2.1 (Wu et al., 2023): an open_clip ViT-H-14 fine-tuned on Human Preference Dataset v2."""
from __future__ import annotations

from .clip_backends import OpenClip
from .clip_similarity import ClipSimilarityReward
from ..core.reward import register_reward


@register_reward("hpsv2")
class HPSv2(ClipSimilarityReward):
    """``cos(image, prompt)`` of the HPS model, as the authors' ``img_score.score`` computes it (≈ 0.2–0.35 on
    real images; no temperature); differentiable. Needs the ``clip`` extra.

    ``path``: ``HPS_v2.1_compressed.pt`` (read with ``weights_only``; its ``state_dict`` key is opened) or a
    safetensors conversion of it. ``model`` / ``model_config`` pick the open_clip architecture (ViT-H-14 as
    published; tests pass a tiny JSON config)."""

    def __init__(self, path: str, model: str = "ViT-H-14", model_config: str | None = None, device: str | None = None,
                 batch_size: int = 32, video_pool: str = "mean") -> None:
        self.setup(OpenClip(path, model, model_config), 1.0, device, batch_size, video_pool)
