"""Pretraining of the tiny video / audio-video generators on the moving-shapes world (fresh renders every step).

Flow models: conditional flow matching on rendered clips. One-step video models: regression of ``G(z, prompt)`` onto
the flow teacher's Euler-ODE endpoint for the same noise and prompt (the student copies the teacher's weights and
reads its output as ``tanh(z - f(z))``, so it starts at the teacher's one-step sample). :func:`fit` runs AdamW with a
cosine learning rate until a step count or a time budget, whichever ends first.
"""
from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any, Callable

import torch
from tqdm import tqdm

from ..core.audio_video import AudioVideoFlowModel
from ..core.coupling import ot_coupled_noise
from ..core.flow import FlowModel, flow_noise, noise_latents
from ..core.generator import Generator
from ..results import Tolerance
from .moving_shapes import WorldConfig, all_prompts, render_batch

LossFn = Callable[[torch.Generator], torch.Tensor]


# how a result of ``fit`` under ``minutes`` compares between runs (pipelines/pretrain_video.py, pretrain_av.py)
BUDGET_NOTE = ("training runs on a wall-clock budget (the step count and the LR schedule follow elapsed time, so they "
               "depend on machine load): rewards within 2 combined standard errors over prompts; losses and steps are info")
# how a measurement of saved checkpoints compares (fixed sampling seed; the same weights give the same samples)
MEASURED_TOLERANCE = Tolerance(note="saved checkpoints measured with a fixed sampling seed: compared exactly")


def shipped_training(folder: Path, keys: tuple[str, ...]) -> dict[str, dict]:
    """The training figures (steps, seconds, losses) recorded under ``keys`` in ``folder/pretrain_metrics.json``,
    which the pretraining run wrote beside its checkpoints."""
    path = Path(folder) / "pretrain_metrics.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: it records how the checkpoints in {folder} were trained")
    recorded = json.loads(path.read_text())
    missing = [k for k in keys if k not in recorded]
    if missing:
        raise KeyError(f"{path} has no {missing} (has {sorted(recorded)})")
    return {k: recorded[k] for k in keys}


def fit(model: torch.nn.Module, loss_fn: LossFn, max_steps: int, lr: float = 1e-3, minutes: float | None = None,
        seed: int = 0, desc: str = "pretrain", warmup: float = 0.03) -> list[float]:
    """AdamW on ``loss_fn(rng)`` (gradient norm clipped at 1) with warmup + cosine decay over ``max_steps`` or
    ``minutes``, whichever ends first; returns the loss curve."""
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    g = torch.Generator().manual_seed(seed)
    start, losses = time.perf_counter(), []
    budget = math.inf if minutes is None else minutes * 60
    bar = tqdm(total=max_steps, desc=desc, disable=max_steps < 50)
    while len(losses) < max_steps and time.perf_counter() - start < budget:
        frac = max(len(losses) / max_steps, (time.perf_counter() - start) / budget)
        scale = frac / warmup if frac < warmup else 0.5 * (1 + math.cos(math.pi * min(frac, 1.0)))
        for group in opt.param_groups:
            group["lr"] = lr * max(scale, 0.02)
        loss = loss_fn(g)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        bar.update(1)
        bar.set_postfix(loss=f"{sum(losses[-20:]) / len(losses[-20:]):.4f}")
    bar.close()
    return losses


def training_record(losses: list[float], seconds: float) -> dict[str, float]:
    """Steps, seconds and the mean loss of the first and of the last 20 steps (fewer when the run was shorter)."""
    first, last = losses[:20], losses[-20:]
    return {"steps": len(losses), "seconds": round(seconds, 1), "loss_first20": round(sum(first) / len(first), 4),
            "loss_last20": round(sum(last) / len(last), 4)}


def world_latents(model: FlowModel, prompts: list[str], world: WorldConfig, generator: torch.Generator,
                  audio: bool) -> torch.Tensor:
    """Rendered clips for ``prompts`` as ``model``'s latents (the flat ``[video | audio]`` vector for audio-video)."""
    clips = render_batch(prompts, world, generator, audio=audio)
    return model.encode_samples(clips) if audio else clips


def flow_loss(model: FlowModel, world: WorldConfig, batch: int, audio: bool = False,
              loss: Callable[..., torch.Tensor] | None = None, clips_per_prompt: int = 1,
              ot_coupling: bool = False) -> LossFn:
    """Flow-matching loss on ``batch`` fresh clips: ``batch / clips_per_prompt`` prompts drawn uniformly from the
    world's, each rendered ``clips_per_prompt`` times (other phases and offsets). With ``ot_coupling`` the noise is
    paired with the clips of each prompt by minibatch optimal transport (:func:`ot_coupled_noise`), otherwise drawn
    independently. ``loss`` replaces ``model.flow_matching_loss`` (same arguments, ``noise`` included), e.g. an
    audio-video model's loss with per-modality noise levels."""
    if clips_per_prompt < 1 or batch % clips_per_prompt:
        raise ValueError(f"clips_per_prompt must divide the batch ({batch}), got {clips_per_prompt}")
    if ot_coupling and clips_per_prompt == 1:
        raise ValueError("ot_coupling pairs noise with several clips of one prompt: set clips_per_prompt > 1")
    prompts = all_prompts(audio)
    loss = model.flow_matching_loss if loss is None else loss

    def loss_fn(g: torch.Generator) -> torch.Tensor:
        idx = torch.randint(len(prompts), (batch // clips_per_prompt,), generator=g).repeat_interleave(clips_per_prompt)
        ps = [prompts[i] for i in idx.tolist()]
        x0 = world_latents(model, ps, world, g, audio).to(model.device)
        if not ot_coupling:
            return loss(x0, model.encode(ps), generator=g)
        noise = ot_coupled_noise(x0, flow_noise(x0, None, g), ps)
        return loss(x0, model.encode(ps), generator=g, noise=noise)

    return loss_fn


def distill_loss(student: Generator, teacher: FlowModel, batch: int, teacher_steps: int, audio: bool = False) -> LossFn:
    """MSE between the one-step student and the teacher's ``teacher_steps``-step ODE endpoint (no grad into it)."""
    prompts = all_prompts(audio)

    def loss_fn(g: torch.Generator) -> torch.Tensor:
        idx = torch.randint(len(prompts), (batch,), generator=g).tolist()
        ps = [prompts[i] for i in idx]
        z = student.make_noise(batch, g)
        with torch.no_grad():
            target = teacher.generate(z, teacher.encode(ps), teacher_steps).clamp(-0.995, 0.995)
        return (student.generate(z, student.encode(ps)) - target).pow(2).mean()

    return loss_fn


@torch.no_grad()
def sample_given(model: AudioVideoFlowModel, x0: torch.Tensor, given: str, noise: torch.Tensor, cond: Any = None,
                 num_steps: int | None = None) -> torch.Tensor:
    """Euler ODE from ``noise`` in which the ``given`` modality is held on the forward path ``(1 - σ) x0 + σ ε`` of
    the clean latents ``x0`` (ε: that part of ``noise``) at every step and ends at ``x0``: the other modality is
    generated for a known partner, at the same noise level the joint sampler would see it. Returns latents."""
    slot = model.latent_slices()[given]
    sigmas = model.sigmas(num_steps).tolist()
    x = noise.clone()
    for sigma, sigma_next in zip(sigmas[:-1], sigmas[1:]):
        t = model.time(sigma, x)
        x[:, slot] = noise_latents(x0[:, slot], t, noise[:, slot])
        x = model.ode_step(x, model.velocity(x, t, cond), sigma, sigma_next)
    x[:, slot] = x0[:, slot]
    return x


__all__ = ["fit", "flow_loss", "distill_loss", "training_record", "world_latents", "sample_given"]
