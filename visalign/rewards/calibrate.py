"""``visalign calibrate``: freeze each reward's mean and scale on base-model samples of the training prompts.

The run config's generator (the base model, before any training), prompts and reward are built as for training;
``num_prompts`` prompts are drawn, each gets ``samples_per_prompt`` samples, every component of the reward is
scored, and ``{"rewards": {name: {"mean", "scale"}}, "total": {"mean", "scale"}, ...}`` is written. A ``multi``
reward then loads it with ``calibration: FILE``; RWTD's fixed-temperature regime with ``reward_scale: FILE``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

from ..core.config import ConfigError
from .multi import measure_calibration, save_calibration


def calibrate(config: Any, out: str | Path, num_prompts: int = 16, samples_per_prompt: int = 8, batch_size: int = 32,
              seed: int = 0, source: str = "") -> dict[str, Any]:
    """Measure and save the calibration; returns what was written."""
    from ..core.generator import build_generator
    from ..core.prompts import build_prompt_source
    from ..core.reward import build_reward, score
    from ..core.types import PromptBatch

    if config.policy:
        raise ConfigError("calibrate works on generator runs; this config trains a language-model policy")
    if num_prompts < 1 or samples_per_prompt < 1 or batch_size < 1:
        raise ConfigError("calibrate needs num_prompts, samples_per_prompt and batch_size >= 1")
    generator = build_generator(config.generator)
    reward = build_reward(config.reward)
    rng = torch.Generator().manual_seed(seed)
    batch = build_prompt_source(config.prompts).sample(num_prompts, rng).repeat_interleave(samples_per_prompt)
    scores: dict[str, list[torch.Tensor]] = {}
    totals: list[torch.Tensor] = []
    for start in tqdm(range(0, len(batch), batch_size), desc="calibrate", unit="batch"):
        chunk = PromptBatch(batch.prompts[start:start + batch_size], batch.metadata[start:start + batch_size])
        with torch.no_grad():
            samples = generator.sample(chunk.prompts, generator=rng)
            total = score(reward, samples, chunk.prompts, chunk.metadata)
        totals.append(total.detach().float().cpu())
        for name, values in (reward.components() or {reward.name: total}).items():
            scores.setdefault(name, []).append(values.detach().float().cpu())
    calibration = measure_calibration({k: torch.cat(v) for k, v in scores.items()})
    whole = measure_calibration({"total": torch.cat(totals)})["total"]
    info = {"total": {"mean": whole.mean, "scale": whole.scale}, "source": source, "num_prompts": num_prompts, "samples_per_prompt": samples_per_prompt, "seed": seed,
            "num_samples": len(batch)}
    save_calibration(out, calibration, info)
    return {"rewards": {k: {"mean": c.mean, "scale": c.scale} for k, c in calibration.items()}, **info}
