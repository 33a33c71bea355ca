"""The reflection loop: render a first image, then up to ``max_rounds`` times let the controller critique it and, on
``edit``, let the editor re-render it conditioned on the previous image and the instruction.

:func:`run_trajectories` drives any :class:`ReflectionPolicy` and records what training needs: every round's
controller tokens with their sampling log-probs and, for every revision, the editor's SDE trajectory (on the SDE
window) with its inputs. The first image is drawn by the ODE sampler and shared by ``group_size`` siblings; it
carries no log-prob. A turn that breaks the protocol ends its trajectory and marks it malformed.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import torch

from ..core.flow import SDETrajectory
from ..core.reflection import ControllerTurns, ReflectionPolicy, Turn, parse_turn

QualityFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
"""``(images [n, ...], trajectory rows [n]) -> graded quality [n]`` in [0, 1] (1 exactly when the verifier passes)."""


@dataclass
class ControllerRound:
    """One round of controller turns: which trajectories spoke, what they saw, what they wrote."""

    round_index: int
    rows: torch.Tensor
    prompts: list[str]
    images: torch.Tensor
    turns: ControllerTurns


@dataclass
class EditRound:
    """One round of revisions: the trajectories that edited, the editor's inputs and its recorded SDE path."""

    round_index: int
    rows: torch.Tensor
    prompts: list[str]
    images: torch.Tensor
    instructions: list[str]
    trajectory: SDETrajectory | None


@dataclass
class Trajectories:
    """Reflection trajectories of a batch: ``images[t]`` is every trajectory's image after t edits (frozen once it
    stops), ``quality [N, max_rounds + 1]`` likewise; ``num_edits``, ``done`` (the controller said done),
    ``malformed`` (a turn failed to parse) and ``first_score`` (SCORE of the round-0 turn, −1 if malformed) per
    trajectory; ``texts[i]`` the turns trajectory i wrote."""

    prompts: list[str]
    group_size: int
    images: list[torch.Tensor]
    quality: torch.Tensor
    num_edits: torch.Tensor
    done: torch.Tensor
    malformed: torch.Tensor
    first_score: torch.Tensor
    texts: list[list[str]]
    controller_rounds: list[ControllerRound] = field(default_factory=list)
    edit_rounds: list[EditRound] = field(default_factory=list)

    @property
    def final_images(self) -> torch.Tensor:
        return self.images[-1]

    @property
    def final_quality(self) -> torch.Tensor:
        return self.quality.gather(1, self.num_edits[:, None]).squeeze(1)

    @property
    def done_while_wrong(self) -> torch.Tensor:
        return self.done & (self.final_quality < 1)


def run_trajectories(policy: ReflectionPolicy, prompts: Sequence[str], *, quality: QualityFn | None = None,
                     group_size: int = 1, max_rounds: int = 3, temperature: float = 0.5,
                     sde_steps: Sequence[int] | None = None, noise_level: float = 1.0,
                     generator: torch.Generator | None = None, first_images: torch.Tensor | None = None) -> Trajectories:
    """Run ``group_size`` sibling trajectories per prompt (rows ``i*K .. i*K+K-1``). Revisions use the SDE on
    ``sde_steps`` and record their log-probs when ``sde_steps`` is given, the ODE otherwise. ``first_images``
    (one per prompt) replaces the first render. Without ``quality`` the quality columns are NaN."""
    prompts = list(prompts)
    rows_prompts = [p for p in prompts for _ in range(group_size)]
    n = len(rows_prompts)
    with torch.no_grad():
        first = policy.render(prompts, generator) if first_images is None else first_images
        if first.shape[0] != len(prompts):
            raise ValueError(f"{first.shape[0]} first images for {len(prompts)} prompts")
        current = first.repeat_interleave(group_size, 0)
        device = current.device
        q = torch.full((n, max_rounds + 1), float("nan"), device=device)
        if quality is not None:
            q[:, 0] = _checked(quality(first, torch.arange(0, n, group_size, device=device)), len(prompts)
                               ).repeat_interleave(group_size)
        active = torch.ones(n, dtype=torch.bool, device=device)
        num_edits = torch.zeros(n, dtype=torch.long, device=device)
        done = torch.zeros(n, dtype=torch.bool, device=device)
        malformed = torch.zeros(n, dtype=torch.bool, device=device)
        first_score = torch.full((n,), -1, dtype=torch.long, device=device)
        texts: list[list[str]] = [[] for _ in range(n)]
        images, controller_rounds, edit_rounds = [current.clone()], [], []
        for r in range(max_rounds):
            rows = active.nonzero().squeeze(1)
            if rows.numel() == 0:
                images.append(current.clone())
                q[:, r + 1] = q[:, r]
                continue
            round_prompts = [rows_prompts[i] for i in rows.tolist()]
            seen = current[rows]
            turns = policy.controller.propose(round_prompts, seen, r, generator=generator, temperature=temperature)
            controller_rounds.append(ControllerRound(r, rows, round_prompts, seen, turns))
            parsed: list[Turn | None] = [parse_turn(t) for t in turns.texts]
            edit_local = []
            for local, (row, turn, text) in enumerate(zip(rows.tolist(), parsed, turns.texts)):
                texts[row].append(text)
                if turn is None:
                    malformed[row], active[row] = True, False
                    continue
                if r == 0:
                    first_score[row] = turn.score
                if turn.action == "done":
                    done[row], active[row] = True, False
                else:
                    edit_local.append(local)
            edit_rows = rows[edit_local] if edit_local else rows[:0]
            if edit_rows.numel():
                instructions = [parsed[i].instruction for i in edit_local]  # type: ignore[union-attr]
                edit_prompts = [round_prompts[i] for i in edit_local]
                before = seen[edit_local]
                edited, traj = _edit(policy, edit_prompts, before, instructions, generator, sde_steps, noise_level)
                edit_rounds.append(EditRound(r, edit_rows, edit_prompts, before, instructions, traj))
                current[edit_rows] = edited.to(current.dtype)
                num_edits[edit_rows] += 1
            q[:, r + 1] = q[:, r]
            if quality is not None and edit_rows.numel():
                q[edit_rows, r + 1] = _checked(quality(current[edit_rows], edit_rows), edit_rows.numel())
            images.append(current.clone())
    return Trajectories(rows_prompts, group_size, images, q, num_edits, done, malformed, first_score, texts,
                        controller_rounds, edit_rounds)


def _edit(policy: ReflectionPolicy, prompts: list[str], images: torch.Tensor, instructions: list[str],
          generator: torch.Generator | None, sde_steps: Sequence[int] | None,
          noise_level: float) -> tuple[torch.Tensor, SDETrajectory | None]:
    editor = policy.editor
    cond = policy.edit_condition(prompts, images, instructions)
    noise = editor.make_noise(len(prompts), generator)
    policy.record_draws(len(prompts))
    if sde_steps is None:
        return editor.decode(editor.sample_latents(noise, cond)), None
    traj = editor.sample_sde(noise, cond=cond, generator=generator, noise_level=noise_level, sde_steps=sde_steps)
    return editor.decode(traj.final), traj


def _checked(values: torch.Tensor, n: int) -> torch.Tensor:
    values = torch.as_tensor(values).float().reshape(-1)
    if values.shape[0] != n:
        raise ValueError(f"quality returned {values.shape[0]} values for {n} images")
    if not torch.isfinite(values).all() or (values < 0).any() or (values > 1).any():
        raise ValueError(f"graded quality must be finite and in [0, 1], got {values.tolist()}")
    return values


__all__ = ["run_trajectories", "Trajectories", "ControllerRound", "EditRound", "QualityFn"]
