"""A toy two-tower audio-video flow model on a tiny latent, rendered into real audio-video clips.

Latent of one item: ``[video: one position per frame | audio: an envelope value per half frame, a pitch logit]``.
:func:`render_av` turns it into ``{"video": B×3×T×H×W, "audio": B×1×L, ...}``: a red blob moving left-right at
those positions, and a tone (256 Hz for a negative pitch logit, 640 Hz otherwise) shaped by the envelope. The
velocity towers are MLPs on the whole flat latent (so each reads the other modality: the "cross-attention into" it)
plus a shared time / pitch-word context. Cheap enough for AV-GRPO tests and CPU comparisons where the tiny
transformer AV generator is too slow; :func:`toy_av_data` draws bouncing clips whose audio bursts are late or early
by up to ``max_jitter`` half frames, so a model pretrained on them starts out of sync.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, Sequence

import torch
from torch import nn

from ..core.audio_video import AudioVideoFlowModel
from ..core.config import check, option
from ..core.generator import register_generator
from ..generators.toy import mlp

PITCH_WORDS = ("low", "high")
TONES = (256.0, 640.0)


@dataclass
class ToyAVConfig:
    frames: int = option(8, "frames per clip")
    size: int = option(8, "frame height and width in pixels")
    fps: float = option(8.0, "frames per second of the clip (sets the audio length too)")
    sample_rate: int = option(2048, "audio samples per second (mono)")
    hidden: int = option(64, "hidden width of each tower's MLP")
    layers: int = option(2, "transformer blocks")
    num_steps: int = option(4, "Euler sampling steps")
    shift: float = option(1.0, "timestep shift of the flow schedule (1 = uniform)")

    def __post_init__(self) -> None:
        check(self.frames >= 2 and self.size >= 4, f"frames >= 2 and size >= 4 needed, got {self.frames}, {self.size}")
        length = self.frames / self.fps * self.sample_rate
        check(abs(length - round(length)) < 1e-6 and round(length) % (2 * self.frames) == 0,
              f"frames / fps * sample_rate = {length} must be a whole multiple of 2·frames")
        check(self.hidden >= 1 and self.layers >= 1 and self.num_steps >= 1, "hidden, layers, num_steps must be >= 1")

    @property
    def audio_dims(self) -> int:
        return 2 * self.frames + 1

    @property
    def audio_length(self) -> int:
        return round(self.frames / self.fps * self.sample_rate)


def pitch_condition(prompts: Sequence[str] | None, n: int) -> torch.Tensor:
    """``n×2`` one-hot of the pitch word ("low" / "high" beep) of each prompt; zeros when none."""
    out = torch.zeros(n, 2)
    for i, p in enumerate(prompts or []):
        for j, word in enumerate(PITCH_WORDS):
            if f"{word} beep" in p.lower():
                out[i, j] = 1.0
    return out


def render_av(latents: torch.Tensor, config: ToyAVConfig) -> dict:
    """Flat toy latents ``[B, T + 2T + 1]`` -> audio-video dict (differentiable except for the pitch switch)."""
    c, b = config, latents.shape[0]
    pos, env, pitch = latents[:, : c.frames], latents[:, c.frames: 3 * c.frames], latents[:, -1]
    grid = torch.arange(c.size, dtype=latents.dtype, device=latents.device)
    centre = (pos.clamp(-1, 1) + 1) / 2 * (c.size - 1)
    blob = torch.exp(-((grid.view(1, 1, -1) - centre.unsqueeze(2)) ** 2) / 1.5)  # B×T×W
    rows = torch.exp(-((grid - (c.size - 1) / 2) ** 2) / 1.5)  # H
    mask = blob.unsqueeze(2) * rows.view(1, 1, -1, 1)  # B×T×H×W
    colour = torch.tensor([1.0, 0.0, 0.0], dtype=latents.dtype, device=latents.device).view(1, 3, 1, 1, 1)
    video = mask.unsqueeze(1) * (colour * 2) - 1
    n = c.audio_length
    t = torch.arange(n, dtype=latents.dtype, device=latents.device) / c.sample_rate
    amplitude = env.clamp(0, 1).repeat_interleave(n // env.shape[1], dim=1)
    freq = torch.where(pitch < 0, TONES[0], TONES[1]).unsqueeze(1)
    audio = (amplitude * torch.sin(2 * math.pi * freq * t)).unsqueeze(1)
    return {"video": video, "audio": audio, "sample_rate": c.sample_rate, "fps": c.fps}


def toy_av_data(prompts: Sequence[str], config: ToyAVConfig, generator: torch.Generator, max_jitter: int = 1) -> torch.Tensor:
    """Clean toy latents for ``prompts``: a triangle-wave bounce (random phase, first moving right, one round trip
    per clip), an audio
    burst (1.0 then 0.4) at each wall contact shifted by a random -max_jitter..max_jitter half frames, floor 0.05, and
    the prompt's pitch (random when none)."""
    c, b = config, len(prompts)
    k = torch.arange(c.frames, dtype=torch.float32)
    phase = torch.randint(c.frames // 2, (b, 1), generator=generator).float()  # first moves right
    u = ((k + phase) % c.frames) / c.frames
    pos = 0.8 * (2 * (1 - (2 * u - 1).abs()) - 1)
    env = torch.full((b, 2 * c.frames), 0.05)
    jitter = torch.randint(-max_jitter, max_jitter + 1, (b,), generator=generator) if max_jitter else torch.zeros(b, dtype=torch.long)
    for i in range(b):
        for f in range(c.frames):
            if (f + int(phase[i])) % (c.frames // 2) == 0:
                start = 2 * f + int(jitter[i])
                for offset, value in ((0, 1.0), (1, 0.4)):
                    if 0 <= start + offset < env.shape[1]:
                        env[i, start + offset] = value
    cond = pitch_condition(prompts, b)
    random_pitch = torch.randint(2, (b,), generator=generator).float()
    pitch = torch.where(cond.sum(1) > 0, cond[:, 1], random_pitch) * 1.6 - 0.8
    return torch.cat([pos, env * 1.6 - 0.8, pitch.unsqueeze(1)], dim=1)


@register_generator("toy_av_flow")
class ToyAVFlow(AudioVideoFlowModel):
    """Two MLP towers (``video_tower``, ``audio_tower``) on the flat toy latent and a shared ``context`` layer; the
    latent is stored centred (envelope ``e`` as ``1.6e − 0.8``) and decoded by :func:`render_av`."""

    kind: ClassVar[str] = "few_step"
    config_class = ToyAVConfig

    def __init__(self, config: ToyAVConfig | None = None) -> None:
        super().__init__(config or ToyAVConfig())
        c = self.config
        self.context = nn.Linear(3, 16)
        self.video_tower = mlp(c.frames + c.audio_dims + 16, c.frames, c.hidden, c.layers)
        self.audio_tower = mlp(c.frames + c.audio_dims + 16, c.audio_dims, c.hidden, c.layers)

    @property
    def noise_shape(self) -> tuple[int, ...]:
        return (self.config.frames + self.config.audio_dims,)

    def encode(self, prompts: Sequence[str] | None) -> torch.Tensor | None:
        return None if prompts is None else pitch_condition(prompts, len(prompts)).to(self.device)

    def latent_slices(self) -> dict[str, slice]:
        f = self.config.frames
        return {"video": slice(0, f), "audio": slice(f, f + self.config.audio_dims)}

    def tower_patterns(self) -> dict[str, list[str]]:
        return {"video": [r"^video_tower\."], "audio": [r"^audio_tower\."]}

    def velocity(self, x: torch.Tensor, t: torch.Tensor, cond: Any = None) -> torch.Tensor:
        cond = torch.zeros(x.shape[0], 2, device=x.device, dtype=x.dtype) if cond is None else cond.to(x.dtype)
        h = torch.cat([x, torch.tanh(self.context(torch.cat([t[:, None].to(x.dtype), cond], dim=1)))], dim=1)
        return torch.cat([self.video_tower(h), self.audio_tower(h)], dim=1)

    def decode(self, latents: torch.Tensor) -> dict:
        c = self.config
        parts = self.split_latents(latents)
        audio = torch.cat([(parts["audio"][:, :-1] + 0.8) / 1.6, parts["audio"][:, -1:]], dim=1)
        return render_av(torch.cat([parts["video"], audio], dim=1), c)


__all__ = ["ToyAVConfig", "ToyAVFlow", "render_av", "toy_av_data", "pitch_condition"]
