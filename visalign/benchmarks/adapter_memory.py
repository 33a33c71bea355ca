"""Peak memory and step time of one flow-model adapter: the figures a ``visalign bench memory`` command prints.

:func:`measure_adapter_step` times the two costs every flow method is made of, on one batch:
``sample`` (the Euler ODE from noise to decoded samples, no grad) and ``train_step`` (``grad_steps`` differentiable
velocity calls on recorded states, backward, AdamW step: what Flow-GRPO / RWR / DRaFT-K spend per update). The
trainable weights and the optimizer are restored / dropped afterwards, so the model is left as it was.
"""
from __future__ import annotations

import resource
import sys
import time
from typing import Any, Sequence

import torch

from ..core.flow import FlowModel


def _peak_bytes(device: torch.device) -> tuple[int, str]:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device), "cuda_max_allocated"
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss * (1 if sys.platform == "darwin" else 1024), "process_max_rss"


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure_adapter_step(generator: FlowModel, prompts: Sequence[str] = ("a photo of a cat",), *, batch_size: int = 1,
                         num_steps: int | None = None, grad_steps: int = 1, repeats: int = 2, seed: int = 0) -> dict[str, Any]:
    """Peak memory and mean seconds of sampling and of one training step at ``batch_size`` (prompts cycled).

    On CUDA the peak is ``torch.cuda.max_memory_allocated`` over the measured calls (reset first); on CPU it is the
    process's maximum resident set size so far (an upper bound: it includes everything the process ever held)."""
    if batch_size < 1 or grad_steps < 1 or repeats < 1:
        raise ValueError(f"batch_size, grad_steps and repeats must be >= 1, got {batch_size}, {grad_steps}, {repeats}")
    if not prompts:
        raise ValueError("measure_adapter_step needs at least one prompt")
    device = generator.device
    batch = [prompts[i % len(prompts)] for i in range(batch_size)]
    params = [p for p in generator.trainable_module().parameters() if p.requires_grad]
    if not params:
        raise ValueError(f"{type(generator).__name__} has no trainable parameters")
    saved = [p.detach().clone() for p in params]
    optimizer = torch.optim.AdamW(params, lr=1e-6)
    rng = torch.Generator().manual_seed(seed)
    sigmas = generator.sigmas(num_steps)
    total_steps = len(sigmas) - 1
    if grad_steps > total_steps:
        raise ValueError(f"grad_steps {grad_steps} > the {total_steps} sampling steps")

    def sample() -> torch.Tensor:
        with torch.no_grad():
            noise = generator.make_noise(batch_size, rng)
            return generator.decode(generator.sample_latents(noise, generator.encode(batch), num_steps))

    def train_step() -> None:
        with torch.no_grad():
            traj = generator.sample_sde(generator.make_noise(batch_size, rng), batch, generator=rng, num_steps=num_steps)
        loss = sum(-generator.sde_log_prob(traj, k).mean() for k in range(total_steps - grad_steps, total_steps))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    was_training = generator.training
    generator.train()
    try:
        timings = {}
        for name, fn in (("sample", sample), ("train_step", train_step)):
            fn()  # warm-up (prompt cache, kernels)
            _sync(device)
            start = time.perf_counter()
            for _ in range(repeats):
                fn()
            _sync(device)
            timings[name] = (time.perf_counter() - start) / repeats
        peak, kind = _peak_bytes(device)
    finally:
        with torch.no_grad():
            for p, value in zip(params, saved):
                p.copy_(value)
        generator.train(was_training)
    total = sum(p.numel() for p in generator.parameters())
    return {
        "adapter": type(generator).__name__, "device": str(device), "batch_size": batch_size,
        "noise_shape": list(generator.noise_shape), "num_steps": total_steps, "grad_steps": grad_steps,
        "trainable_params": sum(p.numel() for p in params), "total_params": total,
        "sample_s": timings["sample"], "train_step_s": timings["train_step"],
        "peak_memory_mb": peak / 2**20, "peak_memory_kind": kind,
    }


__all__ = ["measure_adapter_step"]
