"""open_clip from local files only: a loader shared by rewards and feature spaces, and the ``clip_score`` reward."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

import torch
import torch.nn.functional as F

from ..core.reward import Reward, register_reward, require_modality
from ..core.types import Metadata

CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)


def import_open_clip():
    try:
        import open_clip
    except Exception as exc:  # the torchvision trap raises RuntimeError, not ImportError
        raise ImportError(
            "open_clip_torch is not usable here (pip install 'visalign[clip]' with the matching torch/torchvision "
            f"pair, see README): {type(exc).__name__}: {exc}"
        ) from exc
    return open_clip


def load_open_clip(model: str = "ViT-B-32", checkpoint: str | Path | None = None, model_config: str | Path | None = None,
                   allow_random: bool = False, **model_kwargs: Any):
    """``(model, tokenizer)`` from a local checkpoint (``.safetensors`` or ``.pt`` read with ``weights_only``).

    ``model_config`` is an open_clip model JSON (for architectures that open_clip does not ship, e.g. tiny test
    models); its file stem becomes the model name. ``allow_random`` permits ``checkpoint=None`` (benchmarks only).
    """
    open_clip = import_open_clip()
    if model_config is not None:
        config_path = Path(model_config)
        if not config_path.is_file():
            raise FileNotFoundError(f"open_clip model config not found: {config_path}")
        json.loads(config_path.read_text())
        open_clip.add_model_config(config_path)
        model = config_path.stem
    if checkpoint is None and not allow_random:
        raise ValueError(f"open_clip model {model!r} needs checkpoint=<local file>; downloads are disabled")
    if checkpoint is not None and not Path(checkpoint).is_file():
        raise FileNotFoundError(f"open_clip checkpoint not found: {checkpoint}")
    clip = open_clip.create_model(model, pretrained=str(checkpoint) if checkpoint else None, **model_kwargs)
    clip.eval().requires_grad_(False)
    return clip, open_clip.get_tokenizer(model)


def clip_pixels(samples: torch.Tensor, image_size: int | Sequence[int]) -> torch.Tensor:
    """Images in [-1, 1] -> CLIP input: resized (differentiably) and normalised with CLIP statistics."""
    require_modality(samples, ("image",), "clip_score")
    if samples.shape[1] != 3:
        raise ValueError(f"CLIP needs images B×3×H×W in [-1, 1], got {getattr(samples, 'shape', type(samples))}")
    size = tuple(image_size) if isinstance(image_size, (tuple, list)) else (int(image_size),) * 2
    x = (samples.float().clamp(-1, 1) + 1) / 2
    x = F.interpolate(x, size=size, mode="bilinear", align_corners=False, antialias=True)
    mean = torch.tensor(CLIP_MEAN, device=x.device).view(1, 3, 1, 1)
    std = torch.tensor(CLIP_STD, device=x.device).view(1, 3, 1, 1)
    return (x - mean) / std


@register_reward("clip_score")
class CLIPScore(Reward):
    """Cosine similarity between CLIP image and prompt embeddings (×``scale``); differentiable in the images."""

    differentiable = True

    def __init__(self, model: str = "ViT-B-32", checkpoint: str | None = None, model_config: str | None = None,
                 scale: float = 1.0, device: str | None = None) -> None:
        self.model, self.tokenizer = load_open_clip(model, checkpoint, model_config)
        if device:
            self.model.to(device)
        self.scale = scale

    def __call__(self, samples: torch.Tensor, prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        device = next(self.model.parameters()).device
        image = self.model.encode_image(clip_pixels(samples.to(device), self.model.visual.image_size))
        with torch.no_grad():
            text = self.model.encode_text(self.tokenizer(list(prompts)).to(device))
        return self.scale * F.cosine_similarity(image, text, dim=-1)
