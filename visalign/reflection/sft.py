"""Cold-start SFT of the tiny reflection model on the scripted teacher's trajectories (counting toy).

Each batch mixes the three kinds of supervision of a reflection trajectory: controller turns (cross-entropy on the
teacher's tokens for an image of the teacher's first-render distribution, one or two dots off), first renders and
revisions (flow matching on the teacher's target slots, weighted ``flow_weight``)."""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.nn import functional as F

from .counting import (ADD, INSTRUCTIONS, MAX_DOTS, NUM_SITES, REMOVE, TeacherConfig, lit_slots, prompt_for,
                       slots_to_image, teacher_edit, teacher_first_counts, teacher_turn)
from .tiny import MAX_ROUNDS, TinyReflectionModel, encode_turn


@dataclass
class TeacherBatch:
    turn_prompts: list[str]
    turn_images: torch.Tensor
    turn_rounds: torch.Tensor
    turn_tokens: torch.Tensor
    render_prompts: list[str]
    render_slots: torch.Tensor
    edit_prompts: list[str]
    edit_images: torch.Tensor
    edit_instructions: list[str]
    edit_slots: torch.Tensor


def teacher_batch(size: int, generator: torch.Generator, cfg: TeacherConfig | None = None) -> TeacherBatch:
    """``size`` controller turns, first renders and revisions written by the scripted teacher."""
    cfg = cfg or TeacherConfig()
    targets = torch.randint(1, MAX_DOTS + 1, (size,), generator=generator)
    render_slots = lit_slots(teacher_first_counts(targets, cfg, generator), generator, cfg.slot_noise)
    # controller turns look at first renders and at images one or two dots further off
    drift = torch.randint(-1, 2, (size,), generator=generator) * (torch.rand(size, generator=generator) < 0.3)
    seen_counts = (teacher_first_counts(targets, cfg, generator) + drift).clamp(0, NUM_SITES)
    seen = slots_to_image(lit_slots(seen_counts, generator, cfg.slot_noise))
    tokens = torch.tensor([encode_turn(teacher_turn(int(c), int(n), cfg, generator))
                           for c, n in zip(seen_counts.tolist(), targets.tolist())])
    before_counts = torch.randint(0, NUM_SITES + 1, (size,), generator=generator)
    before = lit_slots(before_counts, generator, cfg.slot_noise)
    instructions = [ADD if (c == 0 or (c < NUM_SITES and float(torch.rand((), generator=generator)) < 0.5)) else REMOVE
                    for c in before_counts.tolist()]
    prompts = [prompt_for(n) for n in targets.tolist()]
    return TeacherBatch(prompts, seen, torch.randint(0, MAX_ROUNDS, (size,), generator=generator), tokens, prompts,
                        render_slots, prompts, slots_to_image(before), instructions,
                        teacher_edit(before, instructions, cfg, generator))


def sft_loss(model: TinyReflectionModel, batch: TeacherBatch, generator: torch.Generator,
             flow_weight: float = 2.0) -> tuple[torch.Tensor, dict[str, float]]:
    """Cross-entropy on controller tokens + ``flow_weight`` × flow matching on first renders and revisions."""
    ce = []
    for r in range(MAX_ROUNDS):
        rows = (batch.turn_rounds == r).nonzero().squeeze(1)
        if rows.numel():
            logp = model.controller.all_log_probs([batch.turn_prompts[i] for i in rows.tolist()], batch.turn_images[rows],
                                                  r, batch.turn_tokens[rows])
            ce.append(F.nll_loss(logp.flatten(0, 1), batch.turn_tokens[rows].flatten(), reduction="sum"))
    ce_loss = sum(ce) / batch.turn_tokens.numel()
    editor = model.editor
    render = model.renderer.flow_matching_loss(batch.render_slots, model.render_condition(batch.render_prompts),
                                               generator)
    edit = editor.flow_matching_loss(batch.edit_slots, model.edit_condition(batch.edit_prompts, batch.edit_images,
                                                                            batch.edit_instructions), generator)
    loss = ce_loss + flow_weight * (render + edit) / 2
    return loss, {"ce": float(ce_loss.detach()), "render_fm": float(render.detach()), "edit_fm": float(edit.detach())}


def train_sft(model: TinyReflectionModel, steps: int, batch_size: int = 256, lr: float = 3e-3, seed: int = 0,
              cfg: TeacherConfig | None = None, progress: bool = False) -> list[dict[str, float]]:
    """SFT with one AdamW over all parameters and a cosine decay; returns the per-step metrics."""
    from tqdm.auto import tqdm

    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, steps, eta_min=lr * 0.05)
    history = []
    for _ in tqdm(range(steps), desc="sft", disable=not progress):
        loss, metrics = sft_loss(model, teacher_batch(batch_size, generator, cfg), generator)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        schedule.step()
        history.append(metrics)
    return history


__all__ = ["TeacherBatch", "teacher_batch", "sft_loss", "train_sft"]
