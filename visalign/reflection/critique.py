"""Does the critique carry the fix? Instruction-direction measures on the counting toy.

A reflection loop can raise accuracy without its critique doing the work: an editor that sees the prompt can repair
toward the target whatever the instruction says, and a controller can then stop writing the right direction. Two
measures tell these apart:

- :func:`instruction_metrics` (from recorded trajectories): how often the controller's instruction points toward the
  target on the wrong images it edits, and how often the editor moves the dot count the way it was told;
- :func:`editor_probe` (a counterfactual): every wrong image is edited once with each instruction, so half of the
  instructions point away from the target; an editor that follows the instruction moves the count the way it is told,
  one that repairs from the prompt moves toward the target when told otherwise.
"""
from __future__ import annotations

from typing import Sequence

import torch

from ..core.reflection import ReflectionPolicy
from .counting import ADD, REMOVE, count_dots, image_to_slots, slots_to_image, target_count
from .rollout import Trajectories


def _sign(instructions: Sequence[str]) -> torch.Tensor:
    unknown = sorted({i for i in instructions if i not in (ADD, REMOVE)})
    if unknown:
        raise ValueError(f"counting instructions are {ADD!r} and {REMOVE!r}, not {unknown}")
    return torch.tensor([1 if i == ADD else -1 for i in instructions])


def _targets(prompts: Sequence[str]) -> torch.Tensor:
    return torch.tensor([target_count(p) for p in prompts])


def _rate(hits: torch.Tensor, mask: torch.Tensor) -> float:
    """Share of ``hits`` among ``mask`` (NaN when the mask is empty: nothing to measure)."""
    return float((hits & mask).sum() / mask.sum()) if mask.any() else float("nan")


def instruction_metrics(traj: Trajectories, prefix: str = "") -> dict[str, float]:
    """``instr_right``: share of edits of wrong images whose instruction points toward the prompt's count;
    ``edit_obeys``: share of all edits that moved the count the instructed way."""
    right, wrong_before, obeys = [], [], []
    for rnd in traj.edit_rounds:
        before = count_dots(rnd.images).cpu()
        after = count_dots(traj.images[rnd.round_index + 1][rnd.rows]).cpu()
        sign, target = _sign(rnd.instructions), _targets(rnd.prompts)
        right.append(sign == torch.sign(target - before))
        wrong_before.append(before != target)
        obeys.append(torch.sign(after - before) == sign)
    if not right:
        return {f"{prefix}instr_right": float("nan"), f"{prefix}edit_obeys": float("nan")}
    right_t, wrong_t, obeys_t = torch.cat(right), torch.cat(wrong_before), torch.cat(obeys)
    return {f"{prefix}instr_right": _rate(right_t, wrong_t),
            f"{prefix}edit_obeys": _rate(obeys_t, torch.ones_like(obeys_t))}


PROBE_KEYS = ("probe_obeys_right", "probe_obeys_wrong", "probe_defies_wrong", "instruction_effect")


def editor_probe(policy: ReflectionPolicy, prompts: Sequence[str], images: torch.Tensor,
                 generator: torch.Generator | None = None, prefix: str = "") -> dict[str, float]:
    """Edit each wrong image of ``images`` (one per prompt) once with each instruction (ODE sampler). Returns
    ``probe_obeys_right`` / ``probe_obeys_wrong``: the count moved the instructed way, among instructions that point
    toward / away from the target; ``probe_defies_wrong``: among the latter, the count moved toward the target instead
    (the editor repaired without the instruction); ``instruction_effect``: ``probe_obeys_right −
    probe_defies_wrong``, how much more often the count moves toward the target when the instruction says so than
    when it says otherwise (1 for an editor that does what it is told, 0 for one that ignores the instruction)."""
    prompts = list(prompts)
    if images.shape[0] != len(prompts):
        raise ValueError(f"{images.shape[0]} images for {len(prompts)} prompts")
    counts = count_dots(images).cpu()
    keep = (counts != _targets(prompts)).nonzero().squeeze(1).tolist()
    if not keep:
        return {f"{prefix}{key}": float("nan") for key in PROBE_KEYS}
    rows = [i for i in keep for _ in (ADD, REMOVE)]
    instructions = [ins for _ in keep for ins in (ADD, REMOVE)]
    probe_prompts = [prompts[i] for i in rows]
    before = images[rows]
    editor = policy.editor
    with torch.no_grad():
        cond = policy.edit_condition(probe_prompts, before, instructions)
        after = editor.decode(editor.sample_latents(editor.make_noise(len(rows), generator), cond))
    moved = torch.sign(count_dots(after).cpu() - counts[rows])
    sign = _sign(instructions)
    toward = torch.sign(_targets(probe_prompts) - counts[rows])
    wrong = sign != toward
    obeys_right, defies_wrong = _rate(moved == sign, ~wrong), _rate(moved == toward, wrong)
    return {f"{prefix}probe_obeys_right": obeys_right, f"{prefix}probe_obeys_wrong": _rate(moved == sign, wrong),
            f"{prefix}probe_defies_wrong": defies_wrong, f"{prefix}instruction_effect": obeys_right - defies_wrong}


def binarised(images: torch.Tensor) -> torch.Tensor:
    """``images`` redrawn with clean dots (each site fully lit or dark, as the counter reads it): an editor probed on
    these cannot read the target from faint, uncounted dots of the previous image."""
    return slots_to_image((image_to_slots(images) > 0.5).to(images.dtype))


__all__ = ["instruction_metrics", "editor_probe", "binarised", "PROBE_KEYS"]
