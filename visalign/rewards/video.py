"""Weight-free rewards for video and audio-video samples (the moving-shapes world and anything like it).

* ``object_color``: the colour of the salient object (pixels weighted by their distance from the frame's median
  colour, i.e. the background) against the first colour word of the prompt, averaged over frames; differentiable.
* ``av_sync``: Pearson correlation, at lag 0, between the video's event signal (how close the object's centre is to
  the extremes of its own track, per frame: wall contacts of a bouncing shape) and the audio's onset envelope (RMS
  per frame window); differentiable. :func:`best_lag` gives the lag (frames) that maximises the cross-correlation.
"""
from __future__ import annotations

from typing import Sequence

import torch

from ..core.reward import Reward, register_reward, require_modality
from ..core.types import Metadata, Samples
from .image_stats import COLOURS, ColorMatchReward


def frames_of(samples: Samples, reward: str) -> torch.Tensor:
    """``B×T×3×H×W`` in [0, 1] from images (T = 1), video, or the video part of audio-video samples."""
    modality = require_modality(samples, ("image", "video", "audio_video"), reward)
    x = samples["video"] if modality == "audio_video" else samples
    x = x.unsqueeze(2) if modality == "image" else x
    if x.shape[1] != 3:
        raise ValueError(f"reward {reward!r} needs RGB (3 channels), got {x.shape[1]} channels in {tuple(x.shape)}")
    return ((x.float().clamp(-1, 1) + 1) / 2).transpose(1, 2)


def object_colour(frames: torch.Tensor) -> torch.Tensor:
    """``B×T×3``: per frame, the mean colour weighted by each pixel's distance from the frame's median colour."""
    flat = frames.flatten(3)  # B×T×3×N
    background = flat.detach().median(dim=3, keepdim=True).values
    weight = (flat.detach() - background).norm(dim=2, keepdim=True) + 1e-6
    return (weight * flat).sum(3) / weight.sum(3)


def object_track(frames: torch.Tensor) -> torch.Tensor:
    """``B×T×2``: the salience-weighted centre (x, y) per frame, in pixels."""
    flat = frames.flatten(3)
    background = flat.detach().median(dim=3, keepdim=True).values
    weight = (flat - background).norm(dim=2) + 1e-6  # B×T×N
    weight = weight / weight.sum(2, keepdim=True)
    h, w = frames.shape[-2:]
    ys, xs = torch.meshgrid(torch.arange(h, device=frames.device, dtype=frames.dtype),
                            torch.arange(w, device=frames.device, dtype=frames.dtype), indexing="ij")
    return torch.stack([(weight * xs.flatten()).sum(2), (weight * ys.flatten()).sum(2)], dim=2)


def video_events(frames: torch.Tensor) -> torch.Tensor:
    """``B×T`` in [0, 1]: closeness of the object's centre, along its main axis of motion, to the ends of its track."""
    track = object_track(frames)
    axis = track.var(1).argmax(1)  # B
    pos = track.gather(2, axis.view(-1, 1, 1).expand(-1, track.shape[1], 1)).squeeze(2)
    low, high = pos.min(1, keepdim=True).values, pos.max(1, keepdim=True).values
    half = ((high - low) / 2).clamp_min(1e-3)
    return 1 - torch.minimum(pos - low, high - pos) / half


def audio_envelope(audio: torch.Tensor, frames: int) -> torch.Tensor:
    """``B×T``: RMS of the (channel-mean) audio in each of ``frames`` equal windows."""
    a = audio.float().mean(1)
    usable = a.shape[1] - a.shape[1] % frames
    return a[:, :usable].reshape(a.shape[0], frames, -1).pow(2).mean(2).add(1e-8).sqrt()


def _standardise(x: torch.Tensor) -> torch.Tensor:
    return (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True, unbiased=False) + 1e-6)


def sync_signals(samples: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """(video event signal, audio onset envelope), both ``B×T``."""
    frames = frames_of(samples, "av_sync")
    return video_events(frames), audio_envelope(samples["audio"], frames.shape[1])


def best_lag(samples: dict, max_lag: int = 2) -> torch.Tensor:
    """Per item, the lag in frames (audio later = positive, |lag| <= ``max_lag``) that maximises the mean product of
    the standardised signals over their overlap; ties go to the smaller |lag|. Periodic events make lags a period
    apart equivalent (the bouncing world repeats every T/2 frames), so keep ``max_lag`` below half the period."""
    events, envelope = (_standardise(s.detach()) for s in sync_signals(samples))
    t = events.shape[1]
    if not 0 <= max_lag < t:
        raise ValueError(f"max_lag must be in [0, {t - 1}] for {t} frames, got {max_lag}")
    lags = [0] + [s * k for k in range(1, max_lag + 1) for s in (1, -1)]
    scores = torch.stack([(events[:, : t - lag] * envelope[:, lag:]).mean(1) if lag >= 0 else
                          (events[:, -lag:] * envelope[:, : t + lag]).mean(1) for lag in lags], dim=1)
    return torch.tensor(lags, device=scores.device)[scores.argmax(1)]


@register_reward("object_color")
class ObjectColorReward(Reward):
    """Negative distance between the salient object's colour and the prompt's colour (images, video, audio-video)."""

    differentiable = True

    def __init__(self, default: str = "red") -> None:
        self.colours = ColorMatchReward(default)

    def __call__(self, samples: Samples, prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        colour = object_colour(frames_of(samples, "object_color"))  # B×T×3
        target = torch.tensor([self.colours.target(p) for p in prompts], device=colour.device, dtype=colour.dtype)
        return -(colour - target.unsqueeze(1)).norm(dim=2).mean(1)


@register_reward("av_sync")
class AudioVideoSyncReward(Reward):
    """Correlation in [-1, 1] of the video's wall-contact signal and the audio's per-frame loudness (audio-video only)."""

    differentiable = True

    def __call__(self, samples: Samples, prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        require_modality(samples, ("audio_video",), "av_sync")
        events, envelope = sync_signals(samples)
        return (_standardise(events) * _standardise(envelope)).mean(1)


__all__ = ["ObjectColorReward", "AudioVideoSyncReward", "best_lag", "sync_signals", "video_events", "audio_envelope",
           "object_colour", "object_track", "frames_of", "COLOURS"]
