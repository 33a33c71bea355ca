"""One trainer for generators and language models: sample -> reward -> loss -> step, on accelerate."""
from __future__ import annotations

import copy
import json
import math
import shutil
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from ..core.algorithm import Algorithm, TrainContext
from ..core.prompts import PromptSource
from ..core.reward import Reward, score
from ..core.types import PromptBatch, Samples
from . import state as ckpt
from .config import TrainerConfig
from .visuals import plot_reward_curve, save_samples

if torch.distributed.is_available():
    # torch.distributed.nn binds the default process group as a default argument when it is first imported (accelerate
    # imports it in ``prepare``). Imported after the group exists, it keeps the group alive past destroy_process_group,
    # and gloo's threads then abort the process at exit now and then. Imported here, before any group, it holds none.
    if "torch.distributed.nn" not in sys.modules and torch.distributed.is_initialized():
        warnings.warn(
            "visalign.trainer was imported after the process group was created, so Trainer.close() cannot free it and "
            "the process may abort at exit; import visalign.trainer before creating the Accelerator",
            RuntimeWarning,
            stacklevel=2,
        )
    import torch.distributed.nn  # noqa: F401

METRICS_FILE = "metrics.jsonl"
PREVIEW_IMAGES = 64  # before/after grids show the first 64 evaluated samples


def step_generator(seed: int, step: int, rank: int, micro: int = 0, stream: int = 0) -> torch.Generator:
    """A CPU generator determined by (seed, step, rank, micro-step, stream): resumable and rank-distinct."""
    value = np.random.SeedSequence([seed, step, rank, micro, stream]).generate_state(1, dtype=np.uint64)[0]
    return torch.Generator().manual_seed(int(value) & ((1 << 63) - 1))


def lr_factor(cfg: TrainerConfig, step: int) -> float:
    """Linear warm-up, then constant, cosine or linear decay to ``min_lr_ratio`` at ``cfg.steps``."""
    if cfg.warmup_steps and step < cfg.warmup_steps:
        return (step + 1) / cfg.warmup_steps
    if cfg.lr_schedule == "constant":
        return 1.0
    span = max(1, cfg.steps - cfg.warmup_steps)
    progress = min(1.0, (step - cfg.warmup_steps) / span)
    shape = 0.5 * (1 + math.cos(math.pi * progress)) if cfg.lr_schedule == "cosine" else 1 - progress
    return cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * shape


class Trainer:
    """Optimises ``policy`` with ``algorithm`` against ``reward`` on prompts from ``prompts``.

    The model, sampler (inside the algorithm's rollout), reward and objective stay separate parts, so the same
    loop serves one-step image generators, flow models and causal LMs. Gradients are all-reduced explicitly
    after backward, because objectives call several methods of the policy, not just ``forward``.
    """

    def __init__(
        self,
        policy: nn.Module,
        algorithm: Algorithm,
        reward: Reward,
        prompts: PromptSource,
        config: TrainerConfig | None = None,
        reference: nn.Module | None = None,
        eval_reward: Reward | None = None,
        accelerator: Any = None,
    ) -> None:
        from accelerate import Accelerator
        from accelerate.utils import ProjectConfiguration

        self.config = config or TrainerConfig()
        cfg = self.config
        self.output_dir = Path(cfg.output_dir)
        if accelerator is None:
            _allow_new_precision(cfg.mixed_precision)
            accelerator = Accelerator(
                cpu=cfg.cpu,
                mixed_precision=cfg.mixed_precision,
                log_with=cfg.log_with or None,
                project_config=ProjectConfiguration(project_dir=str(self.output_dir), logging_dir=str(self.output_dir / "logs")),
            )
        self.accelerator = accelerator
        torch.manual_seed(cfg.seed + self.accelerator.process_index)
        self.policy = policy.to(self.accelerator.device)
        self.algorithm = algorithm
        self.reward = reward
        self.eval_reward = eval_reward or reward
        self.prompts = prompts
        if reference is None and algorithm.needs_reference:
            reference = policy.frozen_copy() if hasattr(policy, "frozen_copy") else _frozen_deepcopy(policy)
        self.reference = reference.to(self.accelerator.device) if reference is not None else None
        self.ctx = TrainContext(self.policy, self.reference, reward, self.accelerator.device, autocast=self.accelerator.autocast)
        algorithm.setup(self.ctx)
        for module in algorithm.modules().values():
            module.to(self.accelerator.device)

        trainable = policy.trainable_module() if hasattr(policy, "trainable_module") else policy
        self.params = [p for p in trainable.parameters() if p.requires_grad]
        if not self.params:
            raise ValueError("the policy has no trainable parameters")
        optimizer = torch.optim.AdamW(self.params, lr=cfg.learning_rate, betas=tuple(cfg.adam_betas), weight_decay=cfg.weight_decay)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_factor(cfg, s))
        self.optimizer = self.accelerator.prepare(optimizer)
        self.ema = None
        if cfg.ema_decay:
            from diffusers.training_utils import EMAModel

            self.ema = EMAModel(self.params, decay=cfg.ema_decay)
        self.step = 0
        self.samples_seen = 0
        self.history: list[dict[str, float]] = []
        if cfg.resume_from:
            self.load_checkpoint(self._resolve_checkpoint(cfg.resume_from))

    # ------------------------------------------------------------------ loop
    def train(self) -> dict[str, float]:
        """Run until ``config.steps``; returns the final metrics summary (also written to ``summary.json``) and saves
        the policy (EMA weights if enabled) to ``output_dir/final`` for ``visalign sample`` / ``load_generator``."""
        cfg, acc = self.config, self.accelerator
        if acc.is_main_process:
            self.output_dir.mkdir(parents=True, exist_ok=True)
        if cfg.log_with:
            acc.init_trackers("visalign")
        if self.step == 0:
            self._evaluate(tag="before")
        bar = tqdm(range(self.step, cfg.steps), initial=self.step, total=cfg.steps, disable=not (cfg.progress and acc.is_main_process), desc="train")
        for _ in bar:
            metrics = self.train_step()
            if self.step % cfg.log_every == 0 or self.step == cfg.steps:
                self._log(metrics)
                bar.set_postfix(reward=f"{metrics.get('reward/mean', float('nan')):.3f}", loss=f"{metrics.get('loss', float('nan')):.3g}")
            if cfg.eval_every and self.step % cfg.eval_every == 0 and self.step < cfg.steps:
                self._evaluate()
            if cfg.preview_every and self.step % cfg.preview_every == 0:
                self._evaluate(tag=f"step_{self.step:06d}", log=False)
            if cfg.save_every and self.step % cfg.save_every == 0:
                self.save_checkpoint()
        summary = self._evaluate(tag="after")
        if acc.is_main_process:
            if hasattr(self.policy, "save_pretrained"):
                with self._ema_weights():
                    self.policy.save_pretrained(self.output_dir / "final")
            plot_reward_curve(self.history, self.output_dir / "reward_curve.png")
            (self.output_dir / "summary.json").write_text(json.dumps(summary, indent=2))
        acc.wait_for_everyone()
        return summary

    def close(self) -> None:
        """End trackers and the process group (call once at the end of a script, as ``visalign train`` does)."""
        self.accelerator.wait_for_everyone()
        self.accelerator.end_training()

    def train_step(self) -> dict[str, float]:
        """One optimizer step (with grad accumulation and ``algorithm.updates_per_rollout`` updates)."""
        cfg, acc = self.config, self.accelerator
        self.policy.train()
        self.ctx.step = self.step
        rollouts = []
        for micro in range(cfg.grad_accum):
            rng = step_generator(cfg.seed, self.step, acc.process_index, micro)
            batch = self.prompts.sample(cfg.batch_size, rng)
            with acc.autocast():
                rollouts.append(self.algorithm.rollout(self.ctx, batch, rng))
        metrics: dict[str, list[float]] = {}
        for _ in range(int(getattr(self.algorithm, "updates_per_rollout", 1))):
            for rollout in rollouts:
                with acc.autocast():
                    loss, m = self.algorithm.loss(self.ctx, rollout)
                if not torch.isfinite(loss):
                    raise FloatingPointError(f"{self.algorithm.name}: non-finite loss {loss.item()} at step {self.step}")
                acc.backward(loss / cfg.grad_accum)
                for k, v in {"loss": loss.item(), **m}.items():
                    metrics.setdefault(k, []).append(float(v))
            self._all_reduce_grads()
            if cfg.max_grad_norm:
                norm = acc.clip_grad_norm_(self.params, cfg.max_grad_norm)
                metrics.setdefault("grad_norm", []).append(float(norm))
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
        self.scheduler.step()
        if self.ema is not None:
            self.ema.step(self.params)
        for rollout in rollouts:
            for k, v in self.algorithm.refit(self.ctx, rollout).items():
                metrics.setdefault(k, []).append(float(v))
        self.step += 1
        out = {k: float(np.mean(v)) for k, v in metrics.items()}
        rewards = acc.gather(torch.cat([r.rewards.detach().float().reshape(-1) for r in rollouts]).to(acc.device))
        out.update({"reward/mean": rewards.mean().item(), "reward/std": rewards.std().item() if rewards.numel() > 1 else 0.0,
                    "reward/max": rewards.max().item(), "reward/min": rewards.min().item(), "lr": self.scheduler.get_last_lr()[0],
                    "samples_seen": float(self._count_samples(rewards.numel()))})
        return out

    def _count_samples(self, new: int) -> int:
        """Scored policy samples so far, over all ranks (the budget that methods are compared under)."""
        self.samples_seen += new
        return self.samples_seen

    def _all_reduce_grads(self) -> None:
        if self.accelerator.num_processes == 1:
            return
        import torch.distributed as dist

        for p in self.params:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
            dist.all_reduce(p.grad)
            p.grad.div_(self.accelerator.num_processes)

    # ------------------------------------------------------------ evaluation
    def evaluate(self, batch: PromptBatch | None = None) -> dict[str, float]:
        """Mean eval reward of the policy (EMA weights if enabled) on a fixed held-out batch."""
        return self._evaluate(batch=batch, log=False, save=False)

    def _evaluate(self, tag: str | None = None, log: bool = True, batch: PromptBatch | None = None, save: bool = True) -> dict[str, float]:
        cfg, acc = self.config, self.accelerator
        batch = batch or self.prompts.eval_batch(cfg.eval_batch_size)
        rng = step_generator(cfg.eval_seed, 0, acc.process_index, stream=1)
        self.policy.eval()
        eval_ctx = TrainContext(self.policy, self.reference, self.eval_reward, acc.device, self.step, acc.autocast)
        with self._ema_weights(), torch.no_grad(), acc.autocast():
            if hasattr(self.algorithm, "evaluate"):
                result = self.algorithm.evaluate(eval_ctx, batch)
                samples, metrics = result if isinstance(result, tuple) else (None, result)
            else:
                samples = self.policy.sample(prompts=batch.prompts, generator=rng) if hasattr(self.policy, "sample") else None
                if samples is None:
                    samples = self.algorithm.rollout(eval_ctx, batch, rng).samples
                rewards = acc.gather(score(self.eval_reward, samples, batch.prompts, batch.metadata).float().to(acc.device))
                metrics = {"eval/reward_mean": rewards.mean().item(), "eval/reward_std": rewards.std().item() if rewards.numel() > 1 else 0.0}
        self.policy.train()
        metrics = {k: float(v) for k, v in metrics.items()}
        if save and tag and samples is not None and acc.is_main_process:
            save_samples(samples, self.output_dir / "samples" / f"{tag}.png", batch.prompts, max_images=PREVIEW_IMAGES)
        if log:
            self._log(metrics)
        return {"step": self.step, **metrics}

    def _ema_weights(self):
        import contextlib

        if self.ema is None:
            return contextlib.nullcontext()

        @contextlib.contextmanager
        def swap():
            self.ema.store(self.params)
            self.ema.copy_to(self.params)
            try:
                yield
            finally:
                self.ema.restore(self.params)

        return swap()

    # --------------------------------------------------------------- logging
    def _log(self, metrics: dict[str, float]) -> None:
        record = {"step": self.step, **metrics}
        self.history.append(record)
        acc = self.accelerator
        if self.config.log_with:
            acc.log(metrics, step=self.step)
        if acc.is_main_process:
            self.output_dir.mkdir(parents=True, exist_ok=True)
            with (self.output_dir / METRICS_FILE).open("a") as f:
                f.write(json.dumps(record) + "\n")

    # ----------------------------------------------------------- checkpoints
    def save_checkpoint(self, path: str | Path | None = None) -> Path:
        """Policy, optimizer, scheduler, EMA, algorithm state, RNG states and step — safetensors + JSON only."""
        acc = self.accelerator
        path = Path(path) if path else self.output_dir / "checkpoints" / f"step_{self.step:06d}"
        acc.wait_for_everyone()
        if acc.is_main_process:
            path.mkdir(parents=True, exist_ok=True)
            ckpt.save_module(self.policy, path / "policy.safetensors")
            ckpt.save_state_dict(self.optimizer.state_dict(), path / "optimizer")
            (path / "scheduler.json").write_text(json.dumps(self.scheduler.state_dict()))
            if self.ema is not None:
                ckpt.save_state_dict(self.ema.state_dict(), path / "ema")
            for name, module in self.algorithm.modules().items():
                ckpt.save_module(module, path / f"algorithm_{name}.safetensors")
            ckpt.save_state_dict({"state": self.algorithm.state_dict()}, path / "algorithm_state")
            (path / "trainer_state.json").write_text(json.dumps({"step": self.step, "samples_seen": self.samples_seen, "history": self.history}))
            (path.parent / "latest").write_text(path.name)
            self._prune_checkpoints(path.parent)
        acc.wait_for_everyone()
        ckpt.save_state_dict(ckpt.rng_state(), path / f"rng_{acc.process_index}")
        acc.wait_for_everyone()
        return path

    def load_checkpoint(self, path: str | Path) -> None:
        """Restore everything ``save_checkpoint`` wrote; the run continues exactly as if uninterrupted."""
        path = Path(path)
        if not (path / "trainer_state.json").is_file():
            raise FileNotFoundError(f"no training checkpoint at {path} (missing trainer_state.json)")
        ckpt.load_module(self.policy, path / "policy.safetensors")
        self.optimizer.load_state_dict(ckpt.load_state_dict(path / "optimizer"))
        self.scheduler.load_state_dict(json.loads((path / "scheduler.json").read_text()))
        if self.ema is not None:
            self.ema.load_state_dict(ckpt.load_state_dict(path / "ema"))
        for name, module in self.algorithm.modules().items():
            ckpt.load_module(module, path / f"algorithm_{name}.safetensors")
        self.algorithm.load_state_dict(ckpt.load_state_dict(path / "algorithm_state")["state"])
        state = json.loads((path / "trainer_state.json").read_text())
        self.step, self.samples_seen, self.history = state["step"], state["samples_seen"], state["history"]
        rng_file = path / f"rng_{self.accelerator.process_index}"
        if rng_file.with_suffix(".json").is_file():
            ckpt.set_rng_state(ckpt.load_state_dict(rng_file))
        if self.accelerator.is_main_process:
            self._truncate_metrics_file()

    def _truncate_metrics_file(self) -> None:
        """Drop records written after the checkpoint so the file matches an uninterrupted run."""
        (self.output_dir / METRICS_FILE).write_text("".join(json.dumps(r) + "\n" for r in self.history))

    def _resolve_checkpoint(self, spec: str) -> Path:
        if spec != "latest":
            return Path(spec)
        latest = self.output_dir / "checkpoints" / "latest"
        if not latest.is_file():
            raise FileNotFoundError(f"resume_from=latest but {latest} does not exist")
        return latest.parent / latest.read_text().strip()

    def _prune_checkpoints(self, folder: Path) -> None:
        steps = sorted(p for p in folder.glob("step_*") if p.is_dir())
        for old in steps[: -self.config.keep_checkpoints]:
            shutil.rmtree(old, ignore_errors=True)


def _allow_new_precision(mixed_precision: str) -> None:
    """accelerate keeps one process-wide state; in a single process, let a later Trainer pick another precision."""
    from accelerate.state import AcceleratorState, PartialState

    state = AcceleratorState._shared_state
    if state and state.get("_mixed_precision") != mixed_precision and PartialState().num_processes == 1:
        AcceleratorState._reset_state()


def _frozen_deepcopy(module: nn.Module) -> nn.Module:
    ref = copy.deepcopy(module)
    ref.requires_grad_(False)
    return ref.eval()
