"""Weight-free verifiers for the synthetic bouncing-shape audio-video world (one shape bouncing between two walls, a
tone burst at every wall contact), as registered rewards on audio-video dicts.

* ``av_video_quality``: minus the RMS residual (fraction of the frame) of the object's track against the best
  triangle-wave motion model (constant speed, reflections at the walls, one round trip per ``period`` frames), minus
  the shortfall of the fitted travel below ``min_travel`` (a missing or still object fits any motion model); with
  ``tolerance_px``, residuals up to that many pixels count as none.
* ``av_audio_quality``: onset peak-to-floor ratio (dB, clipped to [0, 60]) of the audio's RMS envelope.
* ``av_video_alignment`` / ``av_audio_alignment``: the fraction of the prompt's asks that the modality meets: events
  counted equal the prompt's count (``"bouncing twice"``, ``"3 times"``; else ``metadata["events"]``; else the
  world's default), and the motion axis and initial direction (video) or the pitch (audio, ``"a low / high beep"``).
* ``av_desync``: minus |lag| (frames, quarter-frame resolution) at the peak of the cross-correlation between the
  wall contacts of the triangle-wave motion model fitted to the video and the audio's onset envelope (the rise of its
  RMS envelope from one window to the next).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import NamedTuple, Sequence

import torch

from ..core.reward import Reward, register_reward, require_modality
from ..core.types import Metadata, Samples
from .video import audio_envelope, frames_of, object_track, video_events

MOTIONS = {"left to right": (0, 1), "right to left": (0, -1), "top to bottom": (1, 1), "bottom to top": (1, -1)}
PITCHES = {"low": 256.0, "high": 640.0}
WORDS = {"once": 1, "twice": 2, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5}
_COUNT = re.compile(r"\b(once|twice)\b|\b(\d+|one|two|three|four|five) (?:times|bounces|beeps)\b")


@dataclass(frozen=True)
class Asks:
    """What a prompt asks of each modality (None: not asked)."""

    events: int
    motion: tuple[int, int] | None
    pitch: float | None


def parse_asks(prompt: str, metadata: dict, default_events: int) -> Asks:
    text = prompt.lower()
    match = _COUNT.search(text)
    if match:
        word = match.group(1) or match.group(2)
        events = int(word) if word.isdigit() else WORDS[word]
    else:
        events = int(metadata.get("events", default_events))
    motion = next((v for k, v in MOTIONS.items() if k in text), None)
    pitch = next((PITCHES[k] for k in PITCHES if f"{k} beep" in text), None)
    return Asks(events, motion, pitch)


def av_parts(samples: Samples, reward: str) -> tuple[torch.Tensor, torch.Tensor, int]:
    """(frames ``B×T×3×H×W`` in [0, 1], audio ``B×C×L``, sample rate) of audio-video samples, detached, float32, on the
    samples' device (the verifiers run there: at LTX-2 size a clip is 121×512×768 pixels)."""
    require_modality(samples, ("audio_video",), reward)
    return frames_of(samples, reward).detach().float(), samples["audio"].detach().float(), int(samples["sample_rate"])


def main_axis_track(frames: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(track ``B×T×2`` (x, y) as a fraction of the frame, axis ``B`` of larger variance, position along it ``B×T``)."""
    h, w = frames.shape[-2:]
    track = object_track(frames) / torch.tensor([max(w - 1, 1), max(h - 1, 1)], dtype=frames.dtype,
                                                  device=frames.device)
    axis = track.var(1).argmax(1)
    return track, axis, track.gather(2, axis.view(-1, 1, 1).expand(-1, track.shape[1], 1)).squeeze(2)


def rising_edges(mask: torch.Tensor) -> torch.Tensor:
    """``B`` count of runs of True in ``B×N`` (a run at the start counts)."""
    prev = torch.cat([torch.zeros_like(mask[:, :1]), mask[:, :-1]], dim=1)
    return (mask & ~prev).sum(1)


def onset_strength(env: torch.Tensor) -> torch.Tensor:
    """``B×N`` rise of the envelope from the previous window (the first window rises from the median floor)."""
    prev = torch.cat([env.median(1, keepdim=True).values, env[:, :-1]], dim=1)
    return (env - prev).clamp_min(0)


def count_onsets(env: torch.Tensor, level: float = 0.5) -> torch.Tensor:
    """Bursts in an envelope: runs above floor + ``level``·(peak − floor), floor the median window."""
    floor = env.median(1, keepdim=True).values
    peak = env.max(1, keepdim=True).values
    return rising_edges(env > floor + level * (peak - floor))


class BounceFit(NamedTuple):
    """The best triangle-wave fit of a track: ``B`` RMS residual, ``B`` phase φ in frames, ``B`` travel |b| (the
    fitted distance between the two walls, in the track's units)."""

    residual: torch.Tensor
    phase: torch.Tensor
    travel: torch.Tensor


def triangle_fit(position: torch.Tensor, period: int, phases_per_frame: int = 4) -> BounceFit:
    """Least-squares fit ``a + b·tri((k + φ) / period)`` of ``B×T`` positions over a grid of ``phases_per_frame``
    phases per frame (tri: 0 -> 1 -> 0 over one period)."""
    t = position.shape[1]
    k = torch.arange(t, dtype=position.dtype, device=position.device)
    phi = torch.arange(period * phases_per_frame, dtype=position.dtype, device=position.device) / phases_per_frame
    u = ((k[None] + phi[:, None]) % period) / period  # Φ×T in [0, 1)
    basis = 1 - (2 * u - 1).abs()
    design = torch.stack([torch.ones_like(basis), basis], dim=2)  # Φ×T×2
    coef = torch.einsum("pkt,bt->bpk", torch.linalg.pinv(design), position)
    residual = (torch.einsum("ptk,bpk->bpt", design, coef) - position[:, None]).pow(2).mean(2).sqrt()
    best = residual.min(1)
    travel = coef[torch.arange(position.shape[0], device=position.device), best.indices, 1].abs()
    return BounceFit(best.values, phi[best.indices], travel)


def contact_train(phase: torch.Tensor, frames: int, period: int, windows_per_frame: int) -> torch.Tensor:
    """``B×(frames·windows_per_frame)``: 1 in the window of each wall contact of the fitted motion (times
    ``m·period/2 − φ`` frames), 0 elsewhere."""
    n = frames * windows_per_frame
    out = torch.zeros(phase.shape[0], n, device=phase.device)
    half = period / 2
    for i, phi in enumerate(phase.tolist()):
        m = 0
        while m * half - phi < frames:
            time = m * half - phi
            if time >= 0:
                out[i, min(n - 1, round(time * windows_per_frame))] = 1.0
            m += 1
    return out


def lag_frames(video: torch.Tensor, onsets: torch.Tensor, windows_per_frame: int, max_lag: int) -> torch.Tensor:
    """``B`` lag (frames, audio later positive) maximising the cross-correlation of two standardised window-rate
    signals (video contacts, audio onsets) over lags of at most ``max_lag`` windows; ties go to the smaller |lag|."""
    n = video.shape[1]
    z = [(s - s.mean(1, keepdim=True)) / (s.std(1, keepdim=True, unbiased=False) + 1e-6) for s in (video, onsets)]
    lags = [0] + [s * i for i in range(1, max_lag + 1) for s in (1, -1)]
    scores = torch.stack([(z[0][:, : n - g] * z[1][:, g:]).mean(1) if g >= 0 else (z[0][:, -g:] * z[1][:, : n + g]).mean(1)
                          for g in lags], dim=1)
    return torch.tensor(lags, dtype=video.dtype, device=video.device)[scores.argmax(1)] / windows_per_frame


def dominant_frequency(audio: torch.Tensor, sample_rate: int) -> torch.Tensor:
    """``B`` frequency (Hz) of the largest FFT magnitude (DC excluded)."""
    spectrum = torch.fft.rfft(audio - audio.mean(1, keepdim=True), dim=1).abs()
    spectrum[:, 0] = 0
    return spectrum.argmax(1).to(audio.dtype) * sample_rate / audio.shape[1]


class AVVerifier(Reward):
    """Shared settings of the world's verifiers: events per clip when the prompt names none, envelope windows per
    video frame, the motion period in frames (default: the clip length, one round trip per clip)."""

    def __init__(self, default_events: int = 2, windows_per_frame: int = 4, period: int | None = None) -> None:
        if default_events < 0 or windows_per_frame < 1 or (period is not None and period < 2):
            raise ValueError(f"{self.name}: need default_events >= 0, windows_per_frame >= 1, period >= 2 or null; got "
                             f"{default_events}, {windows_per_frame}, {period}")
        self.default_events, self.windows_per_frame, self.period = default_events, windows_per_frame, period

    def asks(self, prompts: Sequence[str], metadata: Metadata) -> list[Asks]:
        return [parse_asks(p, m, self.default_events) for p, m in zip(prompts, metadata)]

    def onset_envelope(self, audio: torch.Tensor, frames: int) -> torch.Tensor:
        return audio_envelope(audio, frames * self.windows_per_frame)


@register_reward("av_video_quality")
class VideoQuality(AVVerifier):
    """−RMS residual of the object's track against the triangle-wave motion model − max(0, ``min_travel`` − fitted
    travel), both as fractions of the frame (0 is a clean bounce across at least ``min_travel`` of the frame). The
    travel term keeps objectless frames from winning: with no object the salience spreads over the frame, the track
    sits still in the middle and fits any motion model. The world's renders travel 0.6 of the frame.

    ``tolerance_px``: the residual counts only beyond this many pixels along the motion (default 0: all of it).
    A verifier with a resolution reads sub-pixel drifts no viewer sees as no change, so a paired standard error
    measures visible differences instead of the drift of a near-perfect base (the world's renders: ≤ 0.01 px)."""

    def __init__(self, min_travel: float = 0.3, tolerance_px: float = 0.0, **kwargs) -> None:
        super().__init__(**kwargs)
        if not 0 <= min_travel <= 1:
            raise ValueError(f"av_video_quality: min_travel is a fraction of the frame in [0, 1], got {min_travel}")
        if not (math.isfinite(tolerance_px) and tolerance_px >= 0):
            raise ValueError(f"av_video_quality: tolerance_px is a non-negative number of pixels, got {tolerance_px}")
        self.min_travel, self.tolerance_px = min_travel, tolerance_px

    def __call__(self, samples: Samples, prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        frames, _, _ = av_parts(samples, self.name)
        fit, pixels = bounce_fit(frames, self.period)
        tolerance = self.tolerance_px / pixels
        return -(fit.residual - tolerance).clamp_min(0) - (self.min_travel - fit.travel).clamp_min(0)


def bounce_fit(frames: torch.Tensor, period: int | None = None) -> tuple[BounceFit, torch.Tensor]:
    """The triangle-wave fit of each clip's main-axis track (fractions of the frame; ``period`` default: the clip
    length) and ``B`` pixels per frame along that axis (to read its residual in pixels)."""
    _, axis, position = main_axis_track(frames)
    h, w = frames.shape[-2:]
    pixels = torch.tensor([max(w - 1, 1), max(h - 1, 1)], dtype=position.dtype, device=frames.device)[axis]
    return triangle_fit(position, period or frames.shape[1]), pixels


@register_reward("av_audio_quality")
class AudioQuality(AVVerifier):
    """Onset peak-to-floor ratio of the audio envelope in dB (mean of the loudest ``events`` windows over the median
    window), clipped to [0, 60]."""

    def __call__(self, samples: Samples, prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        frames, audio, _ = av_parts(samples, self.name)
        env = self.onset_envelope(audio, frames.shape[1])
        k = max(1, max(a.events for a in self.asks(prompts, metadata)))
        peak = env.topk(min(k, env.shape[1]), dim=1).values.mean(1)
        floor = env.median(1).values
        return (20 * torch.log10(peak / (floor + 1e-4))).clamp(0, 60)


@register_reward("av_video_alignment")
class VideoAlignment(AVVerifier):
    """Fraction of asks met by the video: event count, motion axis, initial direction along it."""

    def __call__(self, samples: Samples, prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        frames, _, _ = av_parts(samples, self.name)
        track, axis, _ = main_axis_track(frames)
        counts = rising_edges(video_events(frames) > 0.8)
        out = []
        for i, ask in enumerate(self.asks(prompts, metadata)):
            met = [int(counts[i]) == ask.events]
            if ask.motion is not None:
                want_axis, sign = ask.motion
                moved = float(track[i, 1, want_axis] - track[i, 0, want_axis])
                met += [int(axis[i]) == want_axis, moved * sign > 0]
            out.append(sum(met) / len(met))
        return torch.tensor(out, device=frames.device)


@register_reward("av_audio_alignment")
class AudioAlignment(AVVerifier):
    """Fraction of asks met by the audio: onset count, pitch (dominant frequency nearer the asked pitch)."""

    def __call__(self, samples: Samples, prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        frames, audio, rate = av_parts(samples, self.name)
        counts = count_onsets(self.onset_envelope(audio, frames.shape[1]))
        freq = dominant_frequency(audio.mean(1), rate)
        out = []
        for i, ask in enumerate(self.asks(prompts, metadata)):
            met = [int(counts[i]) == ask.events]
            if ask.pitch is not None:
                nearest = min(PITCHES.values(), key=lambda f: abs(math.log(f / max(float(freq[i]), 1.0))))
                met.append(nearest == ask.pitch)
            out.append(sum(met) / len(met))
        return torch.tensor(out, device=frames.device)


@register_reward("av_desync")
class Desync(AVVerifier):
    """−|lag| in frames between the wall contacts of the motion model fitted to the video (so a jerky track cannot
    sharpen its event signal to win) and the audio's onsets (0: in sync). ``max_lag`` in frames must stay below half
    the event period (periodic events make lags a period apart equivalent)."""

    def __init__(self, max_lag: float = 1.75, **kwargs) -> None:
        super().__init__(**kwargs)
        if max_lag <= 0:
            raise ValueError(f"av_desync: max_lag must be > 0 frames, got {max_lag}")
        self.max_lag = max_lag

    def __call__(self, samples: Samples, prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        frames, audio, _ = av_parts(samples, self.name)
        t, period = frames.shape[1], self.period or frames.shape[1]
        _, _, position = main_axis_track(frames)
        contacts = contact_train(triangle_fit(position, period).phase, t, period, self.windows_per_frame)
        onsets = onset_strength(self.onset_envelope(audio, t))
        return -lag_frames(contacts, onsets, self.windows_per_frame, round(self.max_lag * self.windows_per_frame)).abs()


__all__ = ["VideoQuality", "AudioQuality", "VideoAlignment", "AudioAlignment", "Desync", "AVVerifier", "Asks",
           "parse_asks", "main_axis_track", "count_onsets", "onset_strength", "triangle_fit", "BounceFit", "contact_train", "lag_frames",
           "dominant_frequency", "PITCHES", "MOTIONS"]
