"""Unconditional generators on low-dimensional points (2-D toys with exact tilted targets)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import nn

from ..core.config import check, option
from ..core.generator import Generator, register_generator
from ..core.flow import FlowModel


def mlp(inp: int, out: int, hidden: int, layers: int) -> nn.Sequential:
    mods: list[nn.Module] = []
    width = inp
    for _ in range(layers):
        mods += [nn.Linear(width, hidden), nn.SiLU()]
        width = hidden
    mods.append(nn.Linear(width, out))
    return nn.Sequential(*mods)


@dataclass
class ToyConfig:
    dim: int = option(2, "dimension of the points")
    hidden: int = option(128, "MLP width")
    layers: int = option(3, "MLP hidden layers")
    num_steps: int = option(4, "flow: Euler sampling steps")
    shift: float = option(1.0, "flow: timestep shift of the schedule (1: uniform)")

    def __post_init__(self) -> None:
        check(self.dim >= 1, f"dim must be >= 1, got {self.dim}")
        check(self.hidden >= 1 and self.layers >= 1, "hidden and layers must be >= 1")
        check(self.num_steps >= 1, f"num_steps must be >= 1, got {self.num_steps}")


@register_generator("toy_one_step")
class ToyOneStepGenerator(Generator):
    """One-step implicit generator ``x = f(z)`` with an MLP; prompts are ignored."""

    kind: ClassVar[str] = "one_step"
    config_class = ToyConfig

    def __init__(self, config: ToyConfig | None = None) -> None:
        super().__init__(config or ToyConfig())
        self.net = mlp(self.config.dim, self.config.dim, self.config.hidden, self.config.layers)

    @property
    def noise_shape(self) -> tuple[int, ...]:
        return (self.config.dim,)

    def generate(self, noise: torch.Tensor, cond: Any = None) -> torch.Tensor:
        return self.net(noise)

    def shard_units(self) -> list[nn.Module]:
        return [self.net]


@register_generator("toy_flow")
class ToyFlowGenerator(FlowModel):
    """Few-step flow-matching generator with an MLP velocity field ``v(x, t)``; prompts are ignored."""

    config_class = ToyConfig

    def __init__(self, config: ToyConfig | None = None) -> None:
        super().__init__(config or ToyConfig())
        self.net = mlp(self.config.dim + 1, self.config.dim, self.config.hidden, self.config.layers)

    @property
    def noise_shape(self) -> tuple[int, ...]:
        return (self.config.dim,)

    def velocity(self, x: torch.Tensor, t: torch.Tensor, cond: Any = None) -> torch.Tensor:
        return self.net(torch.cat([x, t[:, None].to(x.dtype)], dim=1))

    def shard_units(self) -> list[nn.Module]:
        return [self.net]
