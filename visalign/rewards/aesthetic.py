"""The LAION aesthetic predictor ("improved aesthetic predictor", sac+logos+ava1-l14-linearMSE): an MLP on
L2-normalised CLIP ViT-L/14 image embeddings, predicting a 1–10 rating."""
from __future__ import annotations

from typing import Literal, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from ..core.reward import register_reward
from ..core.types import Metadata
from .clip_backends import ClipBackend, HFClip, OpenClip
from .clip_similarity import ClipSimilarityReward
from .weights import load_state_dict, load_strict


class AestheticMLP(nn.Module):
    """The published head: Linear(d,1024) → Dropout(0.2) → Linear(1024,128) → Dropout(0.2) → Linear(128,64)
    → Dropout(0.1) → Linear(64,16) → Linear(16,1), no activations (keys ``layers.{0,2,4,6,7}``)."""

    def __init__(self, input_size: int = 768) -> None:
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(input_size, 1024), nn.Dropout(0.2), nn.Linear(1024, 128), nn.Dropout(0.2),
            nn.Linear(128, 64), nn.Dropout(0.1), nn.Linear(64, 16), nn.Linear(16, 1),
        )

    def forward(self, embeds: torch.Tensor) -> torch.Tensor:
        return self.layers(embeds)


@register_reward("aesthetic")
class LaionAesthetic(ClipSimilarityReward):
    """Predicted aesthetic rating ``MLP(normalize(CLIP_image(x)))``; differentiable; ignores the prompt.

    ``path``: the MLP weights (``sac+logos+ava1-l14-linearMSE.pth`` via ``weights_only``, or safetensors).
    ``clip_path``: the CLIP ViT-L/14 it was trained on — a transformers folder (``openai/clip-vit-large-patch14``,
    ``clip_backend: transformers``, default) or an open_clip checkpoint (``clip_backend: open_clip`` with
    ``clip_model: ViT-L-14-quickgelu``; the OpenAI weights need QuickGELU)."""

    def __init__(self, path: str, clip_path: str, clip_backend: Literal["transformers", "open_clip"] = "transformers",
                 clip_model: str = "ViT-L-14-quickgelu", clip_model_config: str | None = None,
                 tokenizer_path: str | None = None, device: str | None = None, batch_size: int = 32,
                 video_pool: str = "mean") -> None:
        backend: ClipBackend
        if clip_backend == "transformers":
            backend = HFClip(clip_path, tokenizer_path)
        elif clip_backend == "open_clip":
            backend = OpenClip(clip_path, clip_model, clip_model_config)
        else:
            raise ValueError(f"aesthetic: clip_backend must be 'transformers' or 'open_clip', got {clip_backend!r}")
        self.setup(backend, 1.0, device, batch_size, video_pool)
        state = load_state_dict(path)
        width = state["layers.0.weight"].shape[1] if "layers.0.weight" in state else None
        self.head = AestheticMLP(width or 768)
        load_strict(self.head, state, path)
        self.head.eval().requires_grad_(False).to(self.device)

    def score_frames(self, frames: torch.Tensor, prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        embeds = self.embed_images(frames)
        if embeds.shape[-1] != self.head.layers[0].in_features:
            raise ValueError(f"aesthetic: CLIP embeddings have {embeds.shape[-1]} dims but the MLP expects "
                             f"{self.head.layers[0].in_features} (the head is trained on ViT-L/14, 768 dims)")
        return self.head(F.normalize(embeds.float(), dim=-1)).squeeze(-1)
