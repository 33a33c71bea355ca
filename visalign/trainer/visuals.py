"""Pictures of a run: sample grids for any modality and reward curves."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
from PIL import Image

from ..core.types import AUDIO_VIDEO_KEYS, index_samples, modality_of

VIDEO_PREVIEW = 8  # contact sheets show the first 8 clips


def to_uint8_images(samples: torch.Tensor) -> list[np.ndarray]:
    """``B×C×H×W`` (images) or ``B×C×T×H×W`` (video: first / middle / last frame side by side) in [-1, 1] -> HWC uint8."""
    x = samples.detach().float().cpu()
    if x.dim() == 5:
        t = x.shape[2]
        x = torch.cat([x[:, :, 0], x[:, :, t // 2], x[:, :, -1]], dim=-1)
    if x.dim() != 4 or x.shape[1] not in (1, 3, 4):
        raise ValueError(f"cannot draw samples of shape {tuple(samples.shape)} as images")
    x = ((x.clamp(-1, 1) + 1) * 127.5).round().to(torch.uint8)
    if x.shape[1] == 1:
        x = x.expand(-1, 3, -1, -1)
    return [img.permute(1, 2, 0)[..., :3].numpy() for img in x]


def image_grid(images: Sequence[np.ndarray], cols: int | None = None, scale: int = 1) -> Image.Image:
    """Tile equally sized HWC uint8 images into one PIL image (diffusers' ``make_image_grid`` on arrays)."""
    from diffusers.utils import make_image_grid

    cols = cols or math.ceil(math.sqrt(len(images)))
    rows = math.ceil(len(images) / cols)
    pil = [Image.fromarray(im) for im in images]
    pil += [Image.new("RGB", pil[0].size)] * (rows * cols - len(pil))
    grid = make_image_grid(pil, rows=rows, cols=cols)
    return grid.resize((grid.width * scale, grid.height * scale), Image.NEAREST) if scale > 1 else grid


def save_samples(samples: Any, path: Path, prompts: Sequence[str] | None = None, max_images: int | None = None,
                 rewards: Sequence[float] | torch.Tensor | None = None) -> Path | None:
    """Save a preview by modality (:func:`~visalign.core.types.modality_of`): an image grid (of the first
    ``max_images`` images, if given; captioned with prompt and reward when they are given), a scatter plot for 2-D points, a JSONL of texts, or for video (first
    ``VIDEO_PREVIEW`` clips) a contact sheet (``path``, captioned with prompt and reward) plus an animated GIF, and
    for audio-video also the waveform under the frames and WAV files. Returns the main picture's path."""
    from .media import save_audio_video, save_video

    path.parent.mkdir(parents=True, exist_ok=True)
    modality = modality_of(samples) if not isinstance(samples, dict) or all(
        isinstance(samples.get(k), torch.Tensor) for k in AUDIO_VIDEO_KEYS) else None
    if modality is None:  # a dict of another layout: draw its first image-like tensor
        samples = next((v for v in samples.values() if isinstance(v, torch.Tensor) and v.dim() >= 4), None)
        if samples is None:
            return None
        modality = modality_of(samples)
    if modality == "text":
        out = path.with_suffix(".jsonl")
        with out.open("w") as f:
            for i, text in enumerate(samples):
                f.write(json.dumps({"prompt": prompts[i] if prompts else None, "completion": text}) + "\n")
        return out
    if modality == "points":
        return _scatter(samples, path)
    if modality in ("video", "audio_video"):
        keep = min(VIDEO_PREVIEW, max_images or VIDEO_PREVIEW)
        rows = index_samples(samples, slice(0, keep))
        kept_prompts = list(prompts[:keep]) if prompts else None
        kept_rewards = [float(r) for r in rewards[:keep]] if rewards is not None else None
        if modality == "video":
            return save_video(rows, path, kept_prompts, kept_rewards)[0]
        return save_audio_video(rows, path, kept_prompts, kept_rewards)[0]
    images = to_uint8_images(samples[:max_images])
    if prompts is not None or rewards is not None:
        from .media import captioned_grid

        captioned_grid(images, prompts[:len(images)] if prompts is not None else None,
                       [float(r) for r in rewards[:len(images)]] if rewards is not None else None).save(path)
        return path
    scale = max(1, 128 // images[0].shape[0])
    image_grid(images, scale=scale).save(path)
    return path


def _scatter(points: torch.Tensor, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    p = points.detach().float().cpu().numpy()
    fig, ax = plt.subplots(figsize=(4, 4))
    ax.scatter(p[:, 0], p[:, 1] if p.shape[1] > 1 else np.zeros(len(p)), s=4, alpha=0.6)
    ax.set_aspect("equal")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_reward_curve(history: Sequence[dict[str, float]], path: Path, keys: Sequence[str] = ("reward/mean", "eval/reward_mean")) -> Path:
    """Plot the given metric keys against ``step``; long per-step series get a trailing moving average on top,
    since a step's reward over a few prompts is noisy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for key in keys:
        pts = [(h["step"], h[key]) for h in history if key in h]
        if pts:
            xs, ys = zip(*pts)
            if len(pts) < 30:
                ax.plot(xs, ys, marker="o", ms=3, label=key)
                continue
            line, = ax.plot(xs, ys, alpha=0.3, lw=0.8)
            window = max(5, len(pts) // 15)
            avg = np.convolve(ys, np.ones(window), "valid") / window
            ax.plot(xs[window - 1:], avg, color=line.get_color(), label=f"{key} (mean of {window})")
    ax.set_xlabel("step")
    ax.set_ylabel("reward")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
