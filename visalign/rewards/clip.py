"""open_clip from local files only: a loader shared by rewards and feature spaces, and the ``clip_score`` reward."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal, Sequence

import torch
import torch.nn.functional as F

from ..core.reward import register_reward, require_modality
from .clip_similarity import ClipSimilarityReward
from .pixels import OPENAI_CLIP_MEAN as CLIP_MEAN, OPENAI_CLIP_STD as CLIP_STD


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
    if not isinstance(samples, torch.Tensor) or samples.dim() != 4 or samples.shape[1] != 3:
        raise ValueError(f"CLIP needs images B×3×H×W in [-1, 1], got {getattr(samples, 'shape', type(samples))}")
    size = tuple(image_size) if isinstance(image_size, (tuple, list)) else (int(image_size),) * 2
    x = (samples.float().clamp(-1, 1) + 1) / 2
    x = F.interpolate(x, size=size, mode="bilinear", align_corners=False, antialias=True)
    mean = torch.tensor(CLIP_MEAN, device=x.device).view(1, 3, 1, 1)
    std = torch.tensor(CLIP_STD, device=x.device).view(1, 3, 1, 1)
    return (x - mean) / std


@register_reward("clip_score")
class CLIPScore(ClipSimilarityReward):
    """``scale · cos(CLIP image, CLIP prompt)``, differentiable in the images; images and videos (per frame).

    ``backend: open_clip`` (default) takes an architecture name or ``model_config`` JSON plus ``checkpoint`` (or
    ``path``) to a local file; ``backend: transformers`` takes ``path`` to a local ``CLIPModel`` folder. Inputs get
    the published resize → center crop → normalise. ``scale: logit_scale`` uses the model's temperature."""

    def __init__(self, model: str = "ViT-B-32", checkpoint: str | None = None, model_config: str | None = None,
                 scale: float | str = 1.0, device: str | None = None, path: str | None = None,
                 backend: Literal["open_clip", "transformers"] = "open_clip", tokenizer_path: str | None = None,
                 batch_size: int = 32, video_pool: str = "mean") -> None:
        from .clip_backends import HFClip, OpenClip

        if checkpoint and path and checkpoint != path:
            raise ValueError(f"clip_score: give the weights once (checkpoint={checkpoint!r}, path={path!r})")
        weights = path or checkpoint
        if backend == "transformers":
            if weights is None:
                raise ValueError("clip_score with backend=transformers needs path=<local CLIPModel folder>")
            clip = HFClip(weights, tokenizer_path)
        elif backend == "open_clip":
            if weights is None:
                raise ValueError(f"open_clip model {model!r} needs checkpoint=<local file>; downloads are disabled")
            clip = OpenClip(weights, model, model_config)
        else:
            raise ValueError(f"clip_score: backend must be 'open_clip' or 'transformers', got {backend!r}")
        self.setup(clip, scale, device, batch_size, video_pool)
        self.model = clip.model
