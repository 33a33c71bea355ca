"""Fixtures for the alignment-objective tests: single-threaded torch, the shipped pretrained toy references
(``assets/toy``), a tiny image generator, a cosine-schedule training helper."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from torch import nn

from visalign.core.generator import Generator, load_generator
from visalign.toys import ring_mixture


@pytest.fixture(autouse=True)
def single_thread():
    """Tiny MLPs run several times faster on one thread than on two contended ones."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


ASSETS = Path(__file__).resolve().parents[2] / "assets" / "toy"


@pytest.fixture(scope="session")
def mixture():
    return ring_mixture(num_modes=8, radius=2.0, std=0.2)


@pytest.fixture(scope="session")
def one_step_reference():
    """The shipped one-step MLP fitted to the 8-mode ring (``pipelines/toy_references.py``)."""
    return load_generator(ASSETS / "one_step_ring").frozen_copy()


@pytest.fixture(scope="session")
def flow_reference():
    """The shipped 4-step flow-matching MLP fitted to the 8-mode ring (``pipelines/toy_references.py``)."""
    return load_generator(ASSETS / "flow_ring").frozen_copy()


def _trainable_copy(reference: Generator) -> Generator:
    import copy

    policy = copy.deepcopy(reference)
    policy.requires_grad_(True)
    return policy.train()


@dataclass
class TinyImageConfig:
    channels: int = 3
    size: int = 8


class TinyImageGenerator(Generator):
    """A linear noise -> 3×8×8 image map: the cheapest stand-in for an image generator."""

    config_class = TinyImageConfig

    def __init__(self, config: TinyImageConfig | None = None) -> None:
        super().__init__(config or TinyImageConfig())
        c, s = self.config.channels, self.config.size
        self.net = nn.Linear(16, c * s * s)

    @property
    def noise_shape(self) -> tuple[int, ...]:
        return (16,)

    def generate(self, noise: torch.Tensor, cond=None) -> torch.Tensor:
        c, s = self.config.channels, self.config.size
        return torch.tanh(self.net(noise)).reshape(-1, c, s, s)


@pytest.fixture
def image_generator():
    torch.manual_seed(0)
    return TinyImageGenerator()


def _train(policy, algorithm, reward, reference, steps, lr, output_dir, prompts_per_step: int = 1, min_lr_ratio: float = 0.1):
    """Run the shared Trainer with a cosine learning-rate decay from ``lr`` to ``min_lr_ratio·lr``."""
    from visalign.core import Unconditional
    from visalign.trainer import Trainer, TrainerConfig

    cfg = TrainerConfig(steps=steps, prompts_per_step=prompts_per_step, learning_rate=lr, lr_schedule="cosine", min_lr_ratio=min_lr_ratio,
                        log_with=[], progress=False, output_dir=str(output_dir), max_grad_norm=None, eval_batch_size=8)
    Trainer(policy, algorithm, reward, Unconditional(), cfg, reference=reference).train()
    return policy


@pytest.fixture(scope="session")
def trainable_copy():
    return _trainable_copy


@pytest.fixture(scope="session")
def train():
    return _train
