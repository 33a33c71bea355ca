"""Minibatch optimal-transport coupling of noise and data for flow-matching training."""
from __future__ import annotations

from collections.abc import Hashable, Sequence

import torch
from scipy.optimize import linear_sum_assignment


def ot_coupled_noise(x0: torch.Tensor, noise: torch.Tensor, groups: Sequence[Hashable] | None = None) -> torch.Tensor:
    """``noise`` with its rows reordered, within each group of equal ``groups`` keys (e.g. the items' prompts), so
    that the summed ``‖ε_i − x0_i‖²`` is minimal (minibatch OT, Pooladian et al. / Tong et al. 2023).

    Independent pairs make the best velocity near pure noise point at the prompt's mean clip, whatever the noise;
    paired by transport, a noise draw points at one clip, so that target depends on the noise. Only rows of one
    group are exchanged, so each item's condition is kept and the noise stays a set of independent Gaussian draws.
    ``groups=None`` treats the batch as one group (unconditional data)."""
    if x0.shape != noise.shape:
        raise ValueError(f"x0 and noise must have the same shape, got {tuple(x0.shape)} and {tuple(noise.shape)}")
    if x0.dim() < 2:
        raise ValueError(f"x0 must be batch-first with at least one feature dimension, got shape {tuple(x0.shape)}")
    keys = [0] * x0.shape[0] if groups is None else list(groups)
    if len(keys) != x0.shape[0]:
        raise ValueError(f"groups has {len(keys)} keys for a batch of {x0.shape[0]}")
    order = torch.arange(x0.shape[0])
    flat_x0, flat_noise = x0.detach().flatten(1).double().cpu(), noise.detach().flatten(1).double().cpu()
    for key in dict.fromkeys(keys):
        rows = torch.tensor([i for i, k in enumerate(keys) if k == key])
        cost = torch.cdist(flat_x0[rows], flat_noise[rows]).pow(2)
        if not torch.isfinite(cost).all():
            raise ValueError("ot_coupled_noise got non-finite latents or noise")
        data_rows, noise_rows = linear_sum_assignment(cost.numpy())
        order[rows[torch.from_numpy(data_rows)]] = rows[torch.from_numpy(noise_rows)]
    return noise[order.to(noise.device)]


__all__ = ["ot_coupled_noise"]
