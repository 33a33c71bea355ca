"""Trainer configuration (mirrored by the ``trainer:`` section of the YAML configs)."""
from __future__ import annotations

import math
from dataclasses import InitVar, dataclass
from typing import Literal

from ..core.config import ConfigError, check, option

TRACKERS = ("tensorboard", "wandb", "mlflow", "comet_ml", "aim", "clearml", "dvclive")


@dataclass
class TrainerConfig:
    """How long and how to optimise; everything about *what* is optimised lives in the algorithm config."""

    steps: int = option(100, "optimizer steps to run (each: rollouts of prompts_per_step prompts x grad_accum, then updates)")
    prompts_per_step: int = option(16, "prompts drawn per micro-batch on each process; the algorithm draws its "
                                       "samples_per_prompt samples for each")
    grad_accum: int = option(1, "micro-batches (rollouts) accumulated into one optimizer step")
    learning_rate: float = option(1e-4, "AdamW learning rate of the policy's trainable parameters")
    weight_decay: float = option(0.0, "AdamW weight decay")
    adam_betas: tuple[float, float] = option((0.9, 0.999), "AdamW betas")
    warmup_steps: int = option(0, "linear learning-rate warm-up steps")
    lr_schedule: Literal["constant", "cosine", "linear"] = option("constant", "learning-rate schedule after warm-up")
    min_lr_ratio: float = option(0.0, "final learning rate as a fraction of learning_rate (cosine / linear)")
    max_grad_norm: float | None = option(1.0, "clip the gradient norm to this value (null: no clipping)")
    mixed_precision: Literal["no", "bf16", "fp16"] = option("no", "autocast precision of rollouts and losses (bf16 on GPUs)")
    gradient_checkpointing: bool = option(False, "recompute the policy's activations in backward (less memory, more "
                                                 "compute); the policy must support it")
    sharding: Literal["auto", "none", "fsdp"] = option(
        "auto", "multi-process runs: fsdp shards the policy's shard_units() with torch FSDP2 (gradients reduce-"
                "scattered); none all-reduces full gradients; auto is fsdp under an accelerate FSDP launch, else none")
    ema_decay: float | None = option(None, "EMA of the policy's trainable weights, used for evaluation and the export")
    eval_every: int = option(0, "evaluate every N steps (0: only before and after training)")
    eval_batch_size: int = option(32, "prompts in the fixed held-out evaluation batch")
    save_every: int = option(0, "write a resumable checkpoint every N steps (0: never)")
    keep_checkpoints: int = option(2, "checkpoints kept on disk (older ones of this run are pruned)")
    preview_every: int = option(0, "save a sample grid every N steps (0: only before and after)")
    log_every: int = option(1, "log training metrics every N steps")
    output_dir: str = option("runs/default", "run folder: metrics, pictures, checkpoints, final export")
    seed: int = option(0, "seed of every training draw (prompts, noise), distinct per step, rank and micro-batch")
    eval_seed: int = option(1234, "seed of the evaluation noise, apart from seed, so runs are scored on the same draws")
    log_with: list[str] = option(help="trackers for accelerate (tensorboard, wandb, ...); [] for metrics.jsonl only",
                                 factory=lambda: ["tensorboard"])
    cpu: bool = option(False, "force the CPU even when an accelerator is present")
    resume_from: str | None = option(None, "checkpoint folder to resume from, or 'latest'")
    overwrite: bool = option(False, "write into a non-empty output_dir that is not resumed (its files are replaced)")
    progress: bool = option(True, "show a tqdm progress bar")
    batch_size: InitVar[int | None] = None

    def __post_init__(self, batch_size: int | None) -> None:
        if batch_size is not None:
            raise ConfigError("trainer.batch_size was renamed to trainer.prompts_per_step (prompts per micro-batch; "
                              "each algorithm draws its samples_per_prompt samples for every prompt)")
        check(self.steps >= 0, f"trainer.steps must be >= 0, got {self.steps}")
        check(self.prompts_per_step >= 1, f"trainer.prompts_per_step must be >= 1, got {self.prompts_per_step}")
        check(self.grad_accum >= 1, f"trainer.grad_accum must be >= 1, got {self.grad_accum}")
        check(math.isfinite(self.learning_rate) and self.learning_rate > 0,
              f"trainer.learning_rate must be a finite number > 0, got {self.learning_rate}")
        for name, value in (("weight_decay", self.weight_decay), ("min_lr_ratio", self.min_lr_ratio),
                            ("max_grad_norm", self.max_grad_norm), *zip(("adam_betas[0]", "adam_betas[1]"), self.adam_betas)):
            check(value is None or math.isfinite(value), f"trainer.{name} must be finite, got {value}")
        check(self.weight_decay >= 0, f"trainer.weight_decay must be >= 0, got {self.weight_decay}")
        check(all(0 <= b < 1 for b in self.adam_betas), f"trainer.adam_betas must be in [0, 1), got {self.adam_betas}")
        check(self.seed >= 0, f"trainer.seed must be >= 0, got {self.seed}")
        check(self.eval_seed >= 0, f"trainer.eval_seed must be >= 0, got {self.eval_seed}")
        check(self.max_grad_norm is None or self.max_grad_norm > 0, "trainer.max_grad_norm must be > 0 or null")
        check(self.ema_decay is None or 0 < self.ema_decay < 1, f"trainer.ema_decay must be in (0, 1), got {self.ema_decay}")
        for name, value in (("eval_every", self.eval_every), ("save_every", self.save_every),
                            ("preview_every", self.preview_every), ("warmup_steps", self.warmup_steps)):
            check(value >= 0, f"trainer.{name} must be >= 0, got {value}")
        check(0 <= self.min_lr_ratio <= 1, f"trainer.min_lr_ratio must be in [0, 1], got {self.min_lr_ratio}")
        check(self.log_every >= 1, "trainer.log_every must be >= 1")
        check(self.keep_checkpoints >= 1, "trainer.keep_checkpoints must be >= 1")
        check(self.eval_batch_size >= 1, f"trainer.eval_batch_size must be >= 1, got {self.eval_batch_size}")
        unknown = set(self.log_with) - set(TRACKERS)
        check(not unknown, f"trainer.log_with has unknown tracker(s) {sorted(unknown)}")
