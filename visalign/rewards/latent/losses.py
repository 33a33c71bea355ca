"""Pairwise preference losses on reward differences, and the shared-t noising of pairs."""
from __future__ import annotations

import math
from typing import Literal

import torch
import torch.nn.functional as F

from ...core.flow import noise_latents

PairLoss = Literal["bradley_terry", "thurstone"]
PAIR_LOSSES: tuple[str, ...] = ("bradley_terry", "thurstone")


def bradley_terry_loss(r_win: torch.Tensor, r_lose: torch.Tensor) -> torch.Tensor:
    """Mean of ``-log σ(r_w − r_l)``: the winner is preferred with probability σ of the score gap."""
    return -F.logsigmoid(r_win - r_lose).mean()


def thurstone_loss(r_win: torch.Tensor, r_lose: torch.Tensor) -> torch.Tensor:
    """Mean of ``-log Φ((r_w − r_l)/√2)``: each score is the mean of a unit-variance Gaussian utility (DiNa-LRM)."""
    z = (r_win - r_lose) / math.sqrt(2.0)
    return -torch.special.log_ndtr(z).mean()


def pair_loss(kind: str, r_win: torch.Tensor, r_lose: torch.Tensor) -> torch.Tensor:
    if kind == "bradley_terry":
        return bradley_terry_loss(r_win, r_lose)
    if kind == "thurstone":
        return thurstone_loss(r_win, r_lose)
    raise ValueError(f"unknown pair loss {kind!r}; choose one of {list(PAIR_LOSSES)}")


def noise_pair(first: torch.Tensor, second: torch.Tensor, t: torch.Tensor, eps: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Both members of each pair noised to the same ``t`` with the same ``ε``, so only their content differs."""
    if first.shape != second.shape:
        raise ValueError(f"pair members must have one shape, got {tuple(first.shape)} and {tuple(second.shape)}")
    return noise_latents(first, t, eps), noise_latents(second, t, eps)


def draw_noise_level(n: int, generator: torch.Generator, t_max: float = 1.0) -> torch.Tensor:
    """``t ~ U(0, t_max)`` per pair."""
    return torch.rand((n,), generator=generator) * t_max


__all__ = ["bradley_terry_loss", "thurstone_loss", "pair_loss", "noise_pair", "draw_noise_level", "PAIR_LOSSES", "PairLoss"]
