"""The counting toy of UMM-Reflection: "draw N dots" on a 1×8×8 image with 6 fixed dot sites, judged by a
deterministic counter, and a scripted teacher that writes cold-start trajectories from the counter's diagnosis.

A site is lit when the mean of its 2×2 block is above 0 (in [-1, 1]); ``count`` counts lit sites. Graded quality
(``dot_count`` reward): q = 1 when count == N, else 0.5·max(0, 1 − |count − N|/6), strictly below 0.5.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import torch

from ..core.reflection import Turn
from ..core.reward import Reward, register_reward

SIZE = 8
SITES = ((1, 0), (1, 3), (1, 6), (5, 0), (5, 3), (5, 6))
NUM_SITES = len(SITES)
MAX_DOTS = 5
PROMPT = re.compile(r"draw (\d) dots?")
ADD, REMOVE = "add one dot", "remove one dot"
INSTRUCTIONS = (ADD, REMOVE)


def prompt_for(n: int) -> str:
    return f"draw {n} dot" + ("" if n == 1 else "s")


def target_count(prompt: str) -> int:
    """N of a "draw N dots" prompt (clear error for anything else)."""
    match = PROMPT.fullmatch(prompt)
    if match is None or not 1 <= int(match.group(1)) <= MAX_DOTS:
        raise ValueError(f"not a counting prompt 'draw N dots' with N in 1..{MAX_DOTS}: {prompt!r}")
    return int(match.group(1))


def slots_to_image(slots: torch.Tensor) -> torch.Tensor:
    """Slot intensities ``[B, 6]`` (lit ≈ 1, dark ≈ 0) -> images ``[B, 1, 8, 8]`` in [-1, 1] (background −1)."""
    image = torch.full((slots.shape[0], 1, SIZE, SIZE), -1.0, dtype=slots.dtype, device=slots.device)
    values = 2 * slots.clamp(0, 1) - 1
    for i, (r, c) in enumerate(SITES):
        image[:, 0, r:r + 2, c:c + 2] = values[:, i, None, None]
    return image


def image_to_slots(images: torch.Tensor) -> torch.Tensor:
    """Images ``[B, 1, 8, 8]`` -> slot intensities ``[B, 6]`` in [0, 1] (mean of each site's block)."""
    if images.dim() != 4 or images.shape[1:] != (1, SIZE, SIZE):
        raise ValueError(f"counting images must be [B, 1, {SIZE}, {SIZE}], got {tuple(images.shape)}")
    return torch.stack([(images[:, 0, r:r + 2, c:c + 2].mean((1, 2)) + 1) / 2 for r, c in SITES], 1)


def count_dots(images: torch.Tensor) -> torch.Tensor:
    """Lit sites per image ``[B]`` (the deterministic counter)."""
    return (image_to_slots(images) > 0.5).sum(1)


def graded_quality(counts: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """1 where count == target, else 0.5·max(0, 1 − |count − target|/6) (< 0.5)."""
    miss = (counts - targets).abs().float()
    return torch.where(miss == 0, torch.ones_like(miss), 0.5 * (1 - miss / 6).clamp(min=0))


@register_reward("dot_count")
class DotCountReward(Reward):
    """Graded counting verifier for "draw N dots" prompts (1 exactly when the count is right)."""

    def __call__(self, samples: torch.Tensor, prompts: Sequence[str], metadata=None) -> torch.Tensor:
        targets = torch.tensor([target_count(p) for p in prompts], device=samples.device)
        return graded_quality(count_dots(samples), targets)


# ---------------------------------------------------------------------------------------------- scripted teacher


@dataclass
class TeacherConfig:
    """The cold-start teacher: a biased first renderer, a controller right ``controller_accuracy`` of the time and
    an editor that succeeds ``edit_success`` of the time (no-op ``edit_noop``, otherwise the wrong direction)."""

    first_correct: tuple[float, ...] = (0.9, 0.8, 0.6, 0.45, 0.3)
    undercount: float = 0.7
    controller_accuracy: float = 0.7
    edit_success: float = 0.35
    edit_noop: float = 0.45
    slot_noise: float = 0.05


def lit_slots(counts: torch.Tensor, generator: torch.Generator, noise: float) -> torch.Tensor:
    """Slot vectors with the first ``counts[i]`` sites lit (the teacher fills sites in reading order), plus
    Gaussian jitter."""
    slots = (torch.arange(NUM_SITES)[None, :] < counts[:, None]).float()
    return slots + noise * torch.randn(slots.shape, generator=generator)


def teacher_first_counts(targets: torch.Tensor, cfg: TeacherConfig, generator: torch.Generator) -> torch.Tensor:
    """Dot counts of the teacher's first renders: right with probability ``first_correct[N-1]``, else off by one
    (under with probability ``undercount``)."""
    p = torch.tensor(cfg.first_correct)[targets - 1]
    right = torch.rand(targets.shape, generator=generator) < p
    under = torch.rand(targets.shape, generator=generator) < cfg.undercount
    off = torch.where(under, targets - 1, targets + 1).clamp(0, NUM_SITES)
    return torch.where(right, targets, off)


def correct_turn(count: int, target: int) -> Turn:
    """What a perfect critic writes given the counter's diagnosis."""
    if count == target:
        return Turn(10, "done", None)
    q = float(graded_quality(torch.tensor([count]), torch.tensor([target]))[0])
    return Turn(round(10 * q), "edit", ADD if count < target else REMOVE)


def teacher_turn(count: int, target: int, cfg: TeacherConfig, generator: torch.Generator) -> Turn:
    """The correct turn with probability ``controller_accuracy``, otherwise one of the other two turns."""
    right = correct_turn(count, target)
    if float(torch.rand((), generator=generator)) < cfg.controller_accuracy:
        return right
    wrong = [t for t in (Turn(10, "done", None), Turn(4, "edit", ADD), Turn(4, "edit", REMOVE))
             if (t.action, t.instruction) != (right.action, right.instruction)]
    return wrong[int(torch.randint(len(wrong), (1,), generator=generator))]


def teacher_edit(slots: torch.Tensor, instructions: Sequence[str], cfg: TeacherConfig,
                 generator: torch.Generator) -> torch.Tensor:
    """Target slots of the teacher's revisions: one dot more or fewer in the asked direction with probability
    ``edit_success``, the image as it is with ``edit_noop``, otherwise one dot the wrong way (dots stay in reading
    order)."""
    counts = (slots > 0.5).sum(1)
    u = torch.rand(counts.shape, generator=generator)
    sign = torch.tensor([1 if i == ADD else -1 for i in instructions])
    step = torch.where(u < cfg.edit_success, sign, torch.where(u < cfg.edit_success + cfg.edit_noop, 0, -sign))
    return lit_slots((counts + step).clamp(0, NUM_SITES), generator, cfg.slot_noise)


__all__ = ["DotCountReward", "TeacherConfig", "count_dots", "graded_quality", "slots_to_image", "image_to_slots",
           "prompt_for", "target_count", "teacher_first_counts", "teacher_turn", "teacher_edit", "correct_turn",
           "lit_slots", "ADD", "REMOVE", "INSTRUCTIONS", "NUM_SITES", "MAX_DOTS"]
