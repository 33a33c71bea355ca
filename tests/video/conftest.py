"""Fixtures for the video / audio-video tests: single-threaded torch and very small built-in generators."""
from __future__ import annotations

import pytest
import torch

from visalign.generators import (TinyAudioVideoConfig, TinyAudioVideoFlowGenerator, TinyVideoFlowConfig,
                                 TinyVideoFlowGenerator, TinyVideoOneStepConfig, TinyVideoOneStepGenerator)
from visalign.toys.moving_shapes import WorldConfig

SMALL = dict(image_size=8, frames=4, fps=4.0, patch_size=4, width=32, layers=1, heads=2, text_hidden=16, text_layers=1,
             text_heads=2, vocab_buckets=64, max_length=12)
SMALL_AV = dict(SMALL, sample_rate=2048, audio_patch=256)
VIDEO_PROMPTS = ["a red circle bouncing left to right", "a blue square bouncing top to bottom"]
AV_PROMPTS = ["a red circle bouncing left to right with a high beep", "a green square bouncing bottom to top with a low beep"]


@pytest.fixture(autouse=True)
def single_thread():
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


@pytest.fixture
def small_world() -> WorldConfig:
    return WorldConfig(size=8, frames=4, fps=4.0, sample_rate=2048, radius=1.5)


@pytest.fixture
def video_one_step() -> TinyVideoOneStepGenerator:
    torch.manual_seed(0)
    return TinyVideoOneStepGenerator(TinyVideoOneStepConfig(**SMALL))


@pytest.fixture
def video_flow() -> TinyVideoFlowGenerator:
    torch.manual_seed(0)
    return TinyVideoFlowGenerator(TinyVideoFlowConfig(**SMALL, num_steps=2))


@pytest.fixture
def av_flow() -> TinyAudioVideoFlowGenerator:
    torch.manual_seed(0)
    return TinyAudioVideoFlowGenerator(TinyAudioVideoConfig(**SMALL_AV, num_steps=2))
