"""Fixtures for the alignment-objective tests: single-threaded torch, pretrained toy references, a tiny image generator."""
from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch
from torch import nn

from visalign.core.generator import Generator
from visalign.generators import ToyFlowGenerator, ToyOneStepGenerator
from visalign.generators.toy import ToyConfig
from visalign.toys import ring_mixture
from visalign.toys.pretrain import pretrain_flow, pretrain_one_step


@pytest.fixture(autouse=True)
def single_thread():
    """Tiny MLPs run several times faster on one thread than on two contended ones."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


@pytest.fixture(scope="session")
def mixture():
    return ring_mixture(num_modes=8, radius=2.0, std=0.2)


@pytest.fixture(scope="session")
def one_step_reference(mixture):
    torch.manual_seed(0)
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    gen = ToyOneStepGenerator(ToyConfig(hidden=64, layers=3))
    pretrain_one_step(gen, mixture.sample, steps=300, batch_size=256, lr=3e-3)
    torch.set_num_threads(old)
    return gen.frozen_copy()


@pytest.fixture(scope="session")
def flow_reference(mixture):
    torch.manual_seed(0)
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    gen = ToyFlowGenerator(ToyConfig(hidden=64, layers=3, num_steps=4))
    pretrain_flow(gen, mixture.sample, steps=800, batch_size=256, lr=3e-3)
    torch.set_num_threads(old)
    return gen.frozen_copy()


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


def _train(policy, algorithm, reward, reference, phases, output_dir, batch_size: int = 1):
    """Run the shared Trainer in phases of (steps, learning_rate) — a step-decayed schedule."""
    from visalign.core import Unconditional
    from visalign.trainer import Trainer, TrainerConfig

    for i, (steps, lr) in enumerate(phases):
        cfg = TrainerConfig(steps=steps, batch_size=batch_size, learning_rate=lr, log_with=[], progress=False,
                            output_dir=str(output_dir / f"phase{i}"), max_grad_norm=None, eval_batch_size=8)
        Trainer(policy, algorithm, reward, Unconditional(), cfg, reference=reference).train()
    return policy


@pytest.fixture(scope="session")
def trainable_copy():
    return _trainable_copy


@pytest.fixture(scope="session")
def train():
    return _train
