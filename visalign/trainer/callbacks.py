"""Trainer callbacks: hooks into the loop instead of patching it (sample counting, custom logging, early stops)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.types import Rollout

if TYPE_CHECKING:
    from .trainer import Trainer


class TrainerCallback:
    """Every hook is optional (a no-op here). ``on_step_end`` may add entries to ``metrics`` before they are logged."""

    def on_train_begin(self, trainer: "Trainer") -> None: ...

    def on_rollout_begin(self, trainer: "Trainer") -> None: ...

    def on_rollout_end(self, trainer: "Trainer", rollout: Rollout) -> None: ...

    def on_step_end(self, trainer: "Trainer", metrics: dict[str, float]) -> None: ...

    def on_evaluate(self, trainer: "Trainer", tag: str | None, metrics: dict[str, float]) -> None: ...

    def on_save(self, trainer: "Trainer", path: Any) -> None: ...

    def on_train_end(self, trainer: "Trainer", summary: dict[str, float]) -> None: ...


class SampleCounter(TrainerCallback):
    """Counts the samples the policy and the reference draw inside rollouts (the training draws: the gradient
    recomputation in ``loss`` and evaluations are not counted), through the policies' draw hooks, and the samples the
    reward scored in rollouts. Adds ``samples/policy``, ``samples/reference`` and ``samples/scored`` (running totals on
    this process) to the step metrics. A resumed run continues the totals from the resumed history's last count, which
    must be at the checkpoint's step (save checkpoints at multiples of ``trainer.log_every``)."""

    def __init__(self) -> None:
        self.counts = {"policy": 0, "reference": 0, "scored": 0}
        self._handles: list[Any] = []
        self._scored_before = 0

    def on_train_begin(self, trainer: "Trainer") -> None:
        if trainer.step == 0:
            return
        counted = [r for r in trainer.history if all(f"samples/{k}" in r for k in self.counts)]
        if not counted or counted[-1]["step"] != trainer.step:
            found = f"the last count is at step {counted[-1]['step']}" if counted else "it holds no sample counts"
            raise ValueError(f"SampleCounter cannot continue its totals at resumed step {trainer.step}: {found} (the "
                             "run was trained without SampleCounter, or saved between trainer.log_every steps)")
        self.counts = {k: int(counted[-1][f"samples/{k}"]) for k in self.counts}

    def on_rollout_begin(self, trainer: "Trainer") -> None:
        self._scored_before = trainer.ctx.num_scored
        for key, model in (("policy", trainer.policy), ("reference", trainer.reference)):
            if model is not None:
                self._handles.append(model.register_draw_hook(lambda _gen, n, _key=key: self._add(_key, n)))

    def _add(self, key: str, n: int) -> None:
        self.counts[key] += n

    def on_rollout_end(self, trainer: "Trainer", rollout: Rollout) -> None:
        self.counts["scored"] += trainer.ctx.num_scored - self._scored_before
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def on_step_end(self, trainer: "Trainer", metrics: dict[str, float]) -> None:
        metrics.update({f"samples/{k}": float(v) for k, v in self.counts.items()})
