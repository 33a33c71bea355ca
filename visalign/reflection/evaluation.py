"""Reflection metrics as the paper reports them, and the best-of-n single-shot baseline at the same image budget."""
from __future__ import annotations

from typing import Sequence

import torch

from ..core.reflection import ReflectionPolicy, parse_turn
from .rollout import QualityFn, Trajectories


def reflection_metrics(traj: Trajectories, prefix: str = "reflection/") -> dict[str, float]:
    """Accuracy at every edit budget b (the image after at most b edits), repair rate (right at the end among those
    wrong at round 0), damage rate (wrong at the end among those right at round 0), parse-gated accuracy (right at
    the end and no malformed turn), malformed / premature-done rates and mean edits."""
    correct = traj.quality >= 1.0
    start, end = correct[:, 0], correct.gather(1, traj.num_edits[:, None]).squeeze(1)
    out = {f"{prefix}acc@{b}": float(correct[:, b].float().mean()) for b in range(correct.shape[1])}
    wrong0 = ~start
    out[f"{prefix}repair_rate"] = float((end & wrong0).sum() / wrong0.sum().clamp(min=1))
    out[f"{prefix}damage_rate"] = float((~end & start).sum() / start.sum().clamp(min=1))
    out[f"{prefix}parse_gated_acc"] = float((end & ~traj.malformed).float().mean())
    out[f"{prefix}malformed_rate"] = float(traj.malformed.float().mean())
    out[f"{prefix}done_while_wrong"] = float(traj.done_while_wrong.float().mean())
    out[f"{prefix}mean_edits"] = float(traj.num_edits.float().mean())
    return out


def best_of_n(policy: ReflectionPolicy, prompts: Sequence[str], quality: QualityFn, n: int = 4, *,
              temperature: float = 0.5, generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Single-shot baseline at an ``n``-image budget: ``n`` first renders per prompt, each scored by the model's own
    round-0 SCORE (a malformed turn scores −1; ties go to the earlier render). Returns (chosen images, their
    quality)."""
    prompts = list(prompts)
    expanded = [p for p in prompts for _ in range(n)]
    with torch.no_grad():
        images = policy.render(expanded, generator)
        turns = policy.controller.propose(expanded, images, 0, generator=generator, temperature=temperature)
    scores = torch.tensor([(t.score if t is not None else -1) for t in map(parse_turn, turns.texts)], dtype=torch.float)
    scores = scores.view(len(prompts), n) - torch.arange(n) * 1e-3
    pick = scores.argmax(1) + torch.arange(len(prompts)) * n
    chosen = images[pick.to(images.device)]
    return chosen, quality(chosen, pick.to(images.device))


__all__ = ["reflection_metrics", "best_of_n"]
