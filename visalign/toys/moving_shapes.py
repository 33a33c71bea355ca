"""A synthetic video / audio-video world: one coloured shape bouncing between two walls, described by a prompt.

Prompts read ``"a red circle bouncing left to right"`` (video) or ``"... with a high beep"`` (audio-video). The
shape's centre follows a triangle wave along the motion axis (one round trip per ``frames`` frames, random phase,
initial direction from the prompt); each wall contact is an *event*: in the audio track a decaying tone burst
starts at that frame's time, its pitch from the prompt. Pixels are in [-1, 1] on a black background; audio is mono
in [-1, 1]. Everything is seeded by a ``torch.Generator``, so pretraining data and tests are reproducible.
"""
from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from typing import Sequence

import torch

from ..core.config import check
from ..core.prompts import PromptSource, register_prompt_source
from ..core.types import PromptBatch
from ..rewards.image_stats import COLOURS

SHAPE_COLOURS = ("red", "green", "blue", "yellow")
SHAPES = ("circle", "square")
MOTIONS = {  # words -> (axis: 0 horizontal / 1 vertical, starts at the low end and moves up)
    "left to right": (0, True), "right to left": (0, False), "top to bottom": (1, True), "bottom to top": (1, False),
}
PITCHES = {"low": 256.0, "high": 640.0}


@dataclass(frozen=True)
class ClipSpec:
    """What a prompt asks for."""

    colour: str
    shape: str
    motion: str
    pitch: str | None = None

    @property
    def prompt(self) -> str:
        text = f"a {self.colour} {self.shape} bouncing {self.motion}"
        return text if self.pitch is None else f"{text} with a {self.pitch} beep"


@dataclass(frozen=True)
class WorldConfig:
    """Clip geometry: ``frames`` frames of ``size``×``size`` px at ``fps``; audio at ``sample_rate`` for the same
    duration (``frames / fps`` seconds).

    ``fixed_motion``: the prompt fixes the motion (the phase follows from its colour, shape and motion words, the
    shape crosses the middle), so a model need not pick one of several motions. ``fixed_offset``: the shape crosses
    the middle but the phase stays random, so a prompt allows ``frames // 2`` motions and no continuum of cross-axis
    positions (a discrete choice to commit to). ``audio_jitter``: every clip's tone
    bursts start up to this many frames (uniform, either way) off the wall contacts, so a model trained on such clips
    starts out of sync, as the AV toy's does."""

    size: int = 16
    frames: int = 8
    fps: float = 8.0
    sample_rate: int = 2048
    radius: float = 3.0
    fixed_motion: bool = False
    fixed_offset: bool = False
    audio_jitter: float = 0.0

    def __post_init__(self) -> None:
        check(0.0 <= self.audio_jitter < 1.0, f"audio_jitter is in frames, in [0, 1), got {self.audio_jitter}")
        check(not (self.fixed_motion and self.fixed_offset), "fixed_motion already fixes the offset: drop fixed_offset")
        check(self.size >= 4 and self.frames >= 2 and self.frames % 2 == 0,
              f"size must be >= 4 and frames an even number >= 2, got size {self.size}, frames {self.frames}")
        check(self.fps > 0 and 0 < self.radius < self.size / 2, f"fps must be > 0 and radius in (0, size/2), got {self.fps}, {self.radius}")
        check(self.sample_rate > 2 * max(PITCHES.values()),
              f"sample_rate {self.sample_rate} must exceed twice the highest pitch ({max(PITCHES.values()):g} Hz)")

    @property
    def audio_length(self) -> int:
        return round(self.frames / self.fps * self.sample_rate)


_PROMPT = re.compile(r"a (\w+) (\w+) bouncing (\w+ to \w+)(?: with a (\w+) beep)?")


def parse_prompt(prompt: str) -> ClipSpec:
    """The :class:`ClipSpec` of a world prompt; a ``ValueError`` names what is not understood."""
    match = _PROMPT.fullmatch(prompt.strip().lower())
    if match is None:
        raise ValueError(f"not a moving-shapes prompt: {prompt!r} (expected e.g. 'a red circle bouncing left to right "
                         "with a high beep')")
    colour, shape, motion, pitch = match.groups()
    for value, known, what in ((colour, SHAPE_COLOURS, "colour"), (shape, SHAPES, "shape"), (motion, MOTIONS, "motion")):
        if value not in known:
            raise ValueError(f"unknown {what} {value!r} in {prompt!r}; known: {sorted(known)}")
    if pitch is not None and pitch not in PITCHES:
        raise ValueError(f"unknown pitch {pitch!r} in {prompt!r}; known: {sorted(PITCHES)}")
    return ClipSpec(colour, shape, motion, pitch)


def all_prompts(audio: bool = False) -> list[str]:
    """Every prompt of the world (32 video prompts, 64 audio-video prompts)."""
    pitches = list(PITCHES) if audio else [None]
    return [ClipSpec(c, s, m, p).prompt for c, s, m, p in itertools.product(SHAPE_COLOURS, SHAPES, MOTIONS, pitches)]


def event_frames(phase: int, frames: int) -> list[int]:
    """Frames at which the shape touches a wall: the triangle wave ``u(k) = tri((k + phase) / frames)`` is 0 or 1."""
    half = frames // 2
    return [k for k in range(frames) if (k + phase) % half == 0]


def track(phase: int, frames: int) -> torch.Tensor:
    """Position in [0, 1] along the motion axis per frame: 0 -> 1 over ``frames / 2`` frames and back."""
    half = frames / 2
    k = (torch.arange(frames, dtype=torch.float32) + phase) % frames
    return torch.where(k <= half, k / half, 2 - k / half)


def render_video(spec: ClipSpec, world: WorldConfig, phase: int, offset: float) -> torch.Tensor:
    """``3×T×S×S`` in [-1, 1]: the shape (anti-aliased edge) at its track position; ``offset`` in [0, 1] places it
    across the motion axis."""
    s, r = world.size, world.radius
    u = track(phase, world.frames)
    axis, forward = MOTIONS[spec.motion]
    along = r + (s - 1 - 2 * r) * (u if forward else 1 - u)
    across = torch.full_like(along, r + (s - 1 - 2 * r) * offset)
    cx, cy = (along, across) if axis == 0 else (across, along)
    grid = torch.arange(s, dtype=torch.float32)
    dx = grid.view(1, 1, s) - cx.view(-1, 1, 1)
    dy = grid.view(1, s, 1) - cy.view(-1, 1, 1)
    dist = (dx**2 + dy**2).sqrt() if spec.shape == "circle" else torch.maximum(dx.abs(), dy.abs())
    mask = (r + 0.5 - dist).clamp(0, 1)  # T×S×S coverage
    colour = torch.tensor(COLOURS[spec.colour]).view(3, 1, 1, 1)
    return mask.unsqueeze(0) * colour * 2 - 1


def prompt_phase(spec: ClipSpec, frames: int) -> int:
    """The phase a :attr:`WorldConfig.fixed_motion` world gives a prompt: every phase towards the far wall occurs
    among the prompts, and a prompt's two pitches share it."""
    words = SHAPE_COLOURS.index(spec.colour) + SHAPES.index(spec.shape) + list(MOTIONS).index(spec.motion)
    return words % (frames // 2)


def render_audio(spec: ClipSpec, world: WorldConfig, phase: int, shift: float = 0.0) -> torch.Tensor:
    """``1×L`` in [-1, 1]: a tone burst (pitch from the prompt, 30 ms decay) starting at every event frame, ``shift``
    frames later (earlier when negative)."""
    if spec.pitch is None:
        raise ValueError(f"prompt {spec.prompt!r} names no pitch; audio needs '... with a low/high beep'")
    n = world.audio_length
    t = torch.arange(n, dtype=torch.float32) / world.sample_rate
    audio = torch.zeros(n)
    for k in event_frames(phase, world.frames):
        onset = (k + shift) / world.fps
        dt = (t - onset).clamp_min(0)
        audio += (t >= onset).float() * torch.exp(-dt / 0.03) * torch.sin(2 * math.pi * PITCHES[spec.pitch] * dt)
    return (0.8 * audio).clamp(-1, 1).unsqueeze(0)


def render_batch(prompts: Sequence[str], world: WorldConfig, generator: torch.Generator,
                 audio: bool = False) -> torch.Tensor | dict:
    """Clips for ``prompts`` with random phase (initial direction kept) and cross-axis offset, or the prompt's own
    (``world.fixed_motion``; the offset alone with ``world.fixed_offset``), and bursts jittered by ``world.audio_jitter``: video ``B×3×T×S×S``, or with ``audio``
    the audio-video dict."""
    videos, tracks = [], []
    half = world.frames // 2
    for prompt in prompts:
        spec = parse_prompt(prompt)
        phase = int(torch.randint(half, (1,), generator=generator))  # phases 0..T/2-1 move towards the far wall
        offset = float(torch.rand((), generator=generator)) * 0.6 + 0.2
        if world.fixed_motion:
            phase, offset = prompt_phase(spec, world.frames), 0.5
        elif world.fixed_offset:
            offset = 0.5
        videos.append(render_video(spec, world, phase, offset))
        if audio:
            shift = 0.0
            if world.audio_jitter:
                shift = (float(torch.rand((), generator=generator)) * 2 - 1) * world.audio_jitter
            tracks.append(render_audio(spec, world, phase, shift))
    video = torch.stack(videos)
    if not audio:
        return video
    return {"video": video, "audio": torch.stack(tracks), "sample_rate": world.sample_rate, "fps": world.fps}


@register_prompt_source("moving_shapes")
class MovingShapesPrompts(PromptSource):
    """Uniform draws from every prompt of the world (``audio``: with a pitch); evaluation cycles through all of
    them in a fixed order."""

    def __init__(self, audio: bool = False) -> None:
        self.prompts = all_prompts(audio)

    def sample(self, n: int, generator: torch.Generator) -> PromptBatch:
        idx = torch.randint(len(self.prompts), (n,), generator=generator).tolist()
        return PromptBatch([self.prompts[i] for i in idx])

    def eval_batch(self, n: int) -> PromptBatch:
        return PromptBatch([self.prompts[i % len(self.prompts)] for i in range(n)])


__all__ = ["ClipSpec", "WorldConfig", "parse_prompt", "all_prompts", "event_frames", "track", "prompt_phase",
           "render_video", "render_audio", "render_batch", "MovingShapesPrompts", "SHAPE_COLOURS", "SHAPES", "MOTIONS", "PITCHES"]
