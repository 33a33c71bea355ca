"""Trainer configuration (mirrored by the ``trainer:`` section of the YAML configs)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..core.config import check


@dataclass
class TrainerConfig:
    """How long and how to optimise; everything about *what* is optimised lives in the algorithm config.

    ``eval_seed`` fixes the evaluation noise apart from ``seed``, so runs that differ in training seed or method
    are scored on the same draws."""

    steps: int = 100
    batch_size: int = 16
    grad_accum: int = 1
    learning_rate: float = 1e-4
    weight_decay: float = 0.0
    adam_betas: tuple[float, float] = (0.9, 0.999)
    warmup_steps: int = 0
    lr_schedule: Literal["constant", "cosine", "linear"] = "constant"
    min_lr_ratio: float = 0.0
    max_grad_norm: float | None = 1.0
    mixed_precision: Literal["no", "bf16", "fp16"] = "no"
    ema_decay: float | None = None
    eval_every: int = 0
    eval_batch_size: int = 32
    save_every: int = 0
    keep_checkpoints: int = 2
    preview_every: int = 0
    log_every: int = 1
    output_dir: str = "runs/default"
    seed: int = 0
    eval_seed: int = 1234
    log_with: list[str] = field(default_factory=lambda: ["tensorboard"])
    cpu: bool = False
    resume_from: str | None = None
    progress: bool = True

    def __post_init__(self) -> None:
        check(self.steps >= 0, f"trainer.steps must be >= 0, got {self.steps}")
        check(self.batch_size >= 1, f"trainer.batch_size must be >= 1, got {self.batch_size}")
        check(self.grad_accum >= 1, f"trainer.grad_accum must be >= 1, got {self.grad_accum}")
        check(self.learning_rate > 0, f"trainer.learning_rate must be > 0, got {self.learning_rate}")
        check(self.max_grad_norm is None or self.max_grad_norm > 0, "trainer.max_grad_norm must be > 0 or null")
        check(self.ema_decay is None or 0 < self.ema_decay < 1, f"trainer.ema_decay must be in (0, 1), got {self.ema_decay}")
        for name in ("eval_every", "save_every", "preview_every", "warmup_steps"):
            check(getattr(self, name) >= 0, f"trainer.{name} must be >= 0")
        check(0 <= self.min_lr_ratio <= 1, f"trainer.min_lr_ratio must be in [0, 1], got {self.min_lr_ratio}")
        check(self.log_every >= 1, "trainer.log_every must be >= 1")
        check(self.keep_checkpoints >= 1, "trainer.keep_checkpoints must be >= 1")
        unknown = set(self.log_with) - {"tensorboard", "wandb", "mlflow", "comet_ml", "aim", "clearml", "dvclive"}
        check(not unknown, f"trainer.log_with has unknown tracker(s) {sorted(unknown)}")
