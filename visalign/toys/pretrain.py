"""Fit toy reference generators to data: one-step maps by OT regression, flow models by flow matching."""
from __future__ import annotations

from typing import Callable

import torch

from ..core.generator import Generator
from ..algorithms.transport import transport_targets


def _fit(generator: Generator, loss_fn: Callable[[torch.Generator], torch.Tensor], steps: int, lr: float, seed: int) -> list[float]:
    """Adam with cosine decay on ``loss_fn(rng)``; returns the loss curve."""
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(generator.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    losses = []
    for _ in range(steps):
        loss = loss_fn(g)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
    return losses


def pretrain_one_step(
    generator: Generator,
    data: Callable[[int, torch.Generator], torch.Tensor],
    steps: int = 1000,
    batch_size: int = 256,
    lr: float = 2e-3,
    seed: int = 0,
) -> list[float]:
    """Transport regression: each step, exact OT between G(z) and a data batch; regress G(z) onto its partner
    (the unweighted special case of RWTD's fixed point). Returns the loss curve."""
    uniform = torch.full((batch_size,), 1.0 / batch_size, dtype=torch.float64)

    def loss_fn(g: torch.Generator) -> torch.Tensor:
        x = generator(generator.make_noise(batch_size, g))
        target = transport_targets(x.detach(), data(batch_size, g).to(x), uniform, solver="emd").targets
        return (x - target).pow(2).sum(1).mean()

    return _fit(generator, loss_fn, steps, lr, seed)


def pretrain_flow(
    generator: Generator,
    data: Callable[[int, torch.Generator], torch.Tensor],
    steps: int = 2000,
    batch_size: int = 256,
    lr: float = 2e-3,
    seed: int = 0,
) -> list[float]:
    """Conditional flow matching on data batches (``generator.flow_matching_loss``). Returns the loss curve."""
    return _fit(generator, lambda g: generator.flow_matching_loss(data(batch_size, g), generator=g), steps, lr, seed)
