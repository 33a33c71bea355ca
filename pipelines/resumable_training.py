"""Checkpoints of a pretraining loop, so a run of hours can be stopped and continued (``--save-every`` of
``pipelines/vvr_pretrain.py``): the trained weights, the optimizer, the weight average, the loop's noise generator,
the step and the seconds trained. A continued run whose schedule is set by its step count matches an uninterrupted
one exactly; one stopped by its time budget continues from the seconds it had trained."""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from diffusers.training_utils import EMAModel

from visalign.core.errors import CheckpointError
from visalign.trainer.state import load_state_dict, publish, save_state_dict, seal, verify


@dataclass
class LoopState:
    """Where a training loop stands: optimizer steps taken, seconds trained (across stops), the smoothed loss shown,
    and the seconds of those trained before this process continued the loop (0 for a loop started here)."""

    step: int = 0
    seconds: float = 0.0
    shown_loss: float | None = None
    earlier_seconds: float = 0.0


def frozen_names(model: torch.nn.Module) -> set[str]:
    """Parameters training leaves alone (a frozen pretrained text encoder's): not saved, not restored."""
    return {name for name, p in model.named_parameters() if not p.requires_grad}


class LoopCheckpoint:
    """One loop's checkpoint in ``folder`` (``state.safetensors`` + ``state.json`` + a manifest), written every
    ``every`` steps to a temporary folder and renamed into place, so a run killed while writing keeps the last one.
    ``options`` (the run's settings) are stored with it: a run with other options refuses to continue it."""

    def __init__(self, folder: Path, every: int, options: dict[str, Any]) -> None:
        if every < 1:
            raise ValueError(f"checkpoint every must be >= 1 step, got {every}")
        self.folder, self.every, self.options = Path(folder), every, options

    def due(self, step: int) -> bool:
        return step % self.every == 0

    def save(self, loop: LoopState, model: torch.nn.Module, opt: torch.optim.Optimizer, ema: EMAModel | None,
             generator: torch.Generator) -> None:
        frozen = frozen_names(model)
        state = {"loop": {"step": loop.step, "seconds": loop.seconds, "shown_loss": loop.shown_loss},
                 "options": self.options,
                 "model": {k: v for k, v in model.state_dict().items() if k not in frozen},
                 "optimizer": opt.state_dict(), "ema": ema.state_dict() if ema is not None else None,
                 "generator": generator.get_state(), "torch_rng": torch.get_rng_state()}
        tmp = self.folder.with_name(f".{self.folder.name}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        save_state_dict(state, tmp / "state")
        seal(tmp)
        publish(tmp, self.folder)

    def restore(self, model: torch.nn.Module, opt: torch.optim.Optimizer, ema: EMAModel | None,
                generator: torch.Generator) -> LoopState:
        """The saved loop state, loaded into ``model``, ``opt``, ``ema`` and ``generator``; a fresh state if there is
        no checkpoint. A corrupt checkpoint or one saved with other options is refused, naming what differs."""
        if not self.folder.exists():
            return LoopState()
        verify(self.folder)
        state = load_state_dict(self.folder / "state")
        if state["options"] != self.options:
            differing = sorted(k for k in {*state["options"], *self.options}
                               if state["options"].get(k) != self.options.get(k))
            raise CheckpointError(f"{self.folder} was saved by a run with other options ({', '.join(differing)}); "
                                  "continue it with the same options or delete the folder to start over")
        if (state["ema"] is None) != (ema is None):
            raise CheckpointError(f"{self.folder}: the saved run {'had no' if state['ema'] is None else 'had a'} "
                                  "weight average")
        missing, unexpected = model.load_state_dict(state["model"], strict=False)
        if set(missing) != frozen_names(model) or unexpected:
            raise CheckpointError(f"{self.folder} does not match the model: missing "
                                  f"{sorted(set(missing) - frozen_names(model))[:5]}, unexpected {sorted(unexpected)[:5]}")
        opt.load_state_dict(state["optimizer"])
        if ema is not None:
            ema.load_state_dict(state["ema"])
        generator.set_state(state["generator"])
        torch.set_rng_state(state["torch_rng"])
        loop = state["loop"]
        return LoopState(int(loop["step"]), float(loop["seconds"]), loop["shown_loss"], float(loop["seconds"]))
