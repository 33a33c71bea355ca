"""One trainer for generators and language models: sample -> reward -> loss -> step, on accelerate."""
from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import shutil
import sys
import uuid
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from ..core.algorithm import Algorithm, TrainContext, UpdatePlan
from ..core.config import ConfigError
from ..core.errors import CheckpointError
from ..core.integrity import read_json, write_text_atomic
from ..core.policy import Policy
from ..core.prompts import PromptSource
from ..core.reward import Reward
from ..core.types import PromptBatch, Rollout
from . import sharding, state as ckpt
from .callbacks import TrainerCallback
from .config import TrainerConfig
from .lock import RunLock
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
CONFIG_FILE = "config.yaml"  # the resolved run config, in the output folder and in every checkpoint
RUN_FILE = "run.json"  # a checkpoint's run id, step, parts and optimiser settings (compared on resume)
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


@dataclass
class TrainedModel:
    """One optimised model of a run: its parameters, optimizer, LR schedule, gradient clipping and optional EMA."""

    module: nn.Module
    params: list[nn.Parameter]
    optimizer: Any
    scheduler: torch.optim.lr_scheduler.LambdaLR
    max_grad_norm: float | None
    ema: Any = None
    ema_decay: float | None = None

    def ema_swap(self):
        """Context: the EMA weights in place of the trained ones (a no-op without EMA)."""
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


class Trainer:
    """Optimises ``policy`` with ``algorithm`` against ``reward`` on prompts from ``prompts``.

    The model, sampler (inside the algorithm's rollout), reward and objective stay separate parts, so the same
    loop serves one-step image generators, flow models, video and audio-video models and causal LMs. Gradients are
    all-reduced explicitly after backward (one flat bucket), because objectives call several methods of the policy,
    not just ``forward``. Models an algorithm owns (``Algorithm.owned_models``: reward models, critics) get their own
    optimizer, schedule, gradient sync, EMA and checkpoints. ``callbacks`` hook into the loop.
    """

    def __init__(
        self,
        policy: Policy,
        algorithm: Algorithm,
        reward: Reward,
        prompts: PromptSource,
        config: TrainerConfig | None = None,
        reference: Policy | None = None,
        eval_reward: Reward | None = None,
        accelerator: Any = None,
        callbacks: Sequence[TrainerCallback] = (),
        run_config: dict[str, Any] | None = None,
    ) -> None:
        """``run_config`` is the resolved run config (``build_trainer`` passes it), saved as ``config.yaml`` into the
        output folder and every checkpoint; without it, the trainer section and the parts' names are saved."""
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
        self.callbacks = list(callbacks)
        torch.manual_seed(cfg.seed + self.accelerator.process_index)
        self.policy = policy.to(self.accelerator.device)
        self.algorithm = algorithm
        self.reward = reward
        self.eval_reward = eval_reward or reward
        self.prompts = prompts
        if reference is None and algorithm.needs_reference:
            reference = policy.frozen_copy()
        self.reference = reference.to(self.accelerator.device) if reference is not None else None
        if cfg.gradient_checkpointing:
            self.policy.enable_gradient_checkpointing()
        self.shard_units = self._shard()
        self.ctx = TrainContext(self.policy, self.reference, reward, self.accelerator.device, autocast=self.accelerator.autocast,
                                any_rank=self._any_rank)
        algorithm.setup(self.ctx)

        self.trained = self._optimised(policy.trainable_module(), cfg.learning_rate, cfg.weight_decay, tuple(cfg.adam_betas),
                                       cfg.max_grad_norm, cfg.ema_decay, "the policy", prepare=not self.shard_units)
        self.owned = {name: self._optimised(spec.module.to(self.accelerator.device), spec.learning_rate, spec.weight_decay,
                                            tuple(spec.betas), spec.max_grad_norm, spec.ema_decay, f"owned model {name!r}")
                      for name, spec in algorithm.owned_models().items()}
        self.step = 0
        self.samples_seen = 0
        self.history: list[dict[str, float]] = []
        self.run_id = uuid.uuid4().hex  # marks this run's checkpoints, so pruning never touches another run's
        self.run_config = _plain(run_config) if run_config is not None else None
        self._check_output_dir()
        if cfg.resume_from:
            self.load_checkpoint(self._resolve_checkpoint(cfg.resume_from))

    def _optimised(self, module: nn.Module, lr: float, weight_decay: float, betas: tuple[float, float],
                   max_grad_norm: float | None, ema_decay: float | None, what: str, prepare: bool = True) -> TrainedModel:
        cfg = self.config
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise ValueError(f"{what} has no trainable parameters")
        optimizer = torch.optim.AdamW(params, lr=lr, betas=betas, weight_decay=weight_decay)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_factor(cfg, s))
        ema = None
        if ema_decay:
            from diffusers.training_utils import EMAModel

            ema = EMAModel(params, decay=ema_decay)
        return TrainedModel(module, params, self.accelerator.prepare(optimizer) if prepare else optimizer, scheduler, max_grad_norm,
                            ema, ema_decay)

    def _check_output_dir(self) -> None:
        """Refuse an output folder that cannot be written, or that holds files while neither resuming nor overwriting.

        Every process checks (so all of them raise together) before any of them writes (the barrier after it)."""
        cfg, out = self.config, self.output_dir
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"trainer.output_dir {out} cannot be created ({exc.strerror or exc})") from exc
        if not os.access(out, os.W_OK | os.X_OK):
            raise ConfigError(f"trainer.output_dir {out} is not writable")
        entries = sorted(p.name for p in out.iterdir())
        if entries and not (cfg.resume_from or cfg.overwrite):
            shown = ", ".join(entries[:5]) + (", ..." if len(entries) > 5 else "")
            raise ConfigError(
                f"trainer.output_dir {out} is not empty ({shown}); continue that run with trainer.resume_from=latest, "
                "write over it with trainer.overwrite=true (visalign train --overwrite), or choose another folder")
        self.accelerator.wait_for_everyone()

    def _shard(self) -> list[nn.Module]:
        """FSDP2-shard the policy when ``trainer.sharding`` asks for it (see :mod:`visalign.trainer.sharding`);
        returns the sharded units (none: gradients are all-reduced explicitly)."""
        from accelerate.utils import DistributedType

        cfg, acc = self.config, self.accelerator
        if acc.distributed_type == DistributedType.DEEPSPEED:
            raise ConfigError("the Trainer does not drive a DeepSpeed engine (objectives call several policy methods, "
                              "not one forward); launch with configs/accelerate/fsdp_full_shard.yaml or a DDP config")
        # accelerate turns an FSDP launch into MULTI_CPU on CPU; the launcher's flag still says what was asked for
        fsdp_launch = acc.distributed_type == DistributedType.FSDP or os.environ.get("ACCELERATE_USE_FSDP", "").lower() in ("1", "true")
        wanted = cfg.sharding == "fsdp" or (cfg.sharding == "auto" and fsdp_launch)
        if not wanted or acc.num_processes == 1:
            return []
        if cfg.ema_decay:
            raise ConfigError("trainer.ema_decay is not supported with FSDP sharding (trainer.sharding); unset one of them")
        self._export_copy = self.policy.frozen_copy().cpu() if acc.is_main_process else None
        return sharding.shard_policy(self.policy, acc.device, acc.num_processes, cfg.mixed_precision)

    def _export(self, path: Path) -> None:
        """``save_pretrained`` of the policy (EMA weights if enabled) into a temporary folder renamed onto ``path``;
        when sharded, the gathered full weights are loaded into an unsharded CPU copy kept on rank 0 for this
        (collective)."""
        tmp = path.with_name(f".tmp_{path.name}")
        state = sharding.full_model_state(self.policy) if self.shard_units else None
        if not self.accelerator.is_main_process:
            return
        shutil.rmtree(tmp, ignore_errors=True)
        if state is None:
            with self.trained.ema_swap():
                self.policy.save_pretrained(tmp)
        else:
            self._export_copy.load_state_dict(state)
            self._export_copy.save_pretrained(tmp)
        ckpt.publish(tmp, path)

    @property
    def params(self) -> list[nn.Parameter]:
        """The policy's trainable parameters."""
        return self.trained.params

    @property
    def optimizer(self) -> Any:
        return self.trained.optimizer

    @property
    def scheduler(self) -> torch.optim.lr_scheduler.LambdaLR:
        return self.trained.scheduler

    @property
    def ema(self) -> Any:
        return self.trained.ema

    # ------------------------------------------------------------------ loop
    def train(self) -> dict[str, float]:
        """Run until ``config.steps``; returns the final metrics summary (also written to ``summary.json``) and saves
        the policy (EMA weights if enabled) to ``output_dir/final`` for ``visalign sample`` / ``load_generator``.

        The output folder is locked while the run writes to it (a second run into it fails with an error)."""
        lock = RunLock(self.output_dir) if self.accelerator.is_main_process else None
        if lock is not None:
            lock.acquire()
        try:
            return self._train()
        finally:
            if lock is not None:
                lock.release()

    def _train(self) -> dict[str, float]:
        cfg, acc = self.config, self.accelerator
        if acc.is_main_process:
            self.output_dir.mkdir(parents=True, exist_ok=True)
            write_text_atomic(self.output_dir / CONFIG_FILE, self._config_yaml())
            self._truncate_metrics_file()
        if cfg.log_with:
            acc.init_trackers("visalign")
        for cb in self.callbacks:
            cb.on_train_begin(self)
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
        self._export(self.output_dir / "final")
        if acc.is_main_process:
            plot_reward_curve(self.history, self.output_dir / "reward_curve.png")
            (self.output_dir / "summary.json").write_text(json.dumps(summary, indent=2))
        acc.wait_for_everyone()
        for cb in self.callbacks:
            cb.on_train_end(self, summary)
        return summary

    def close(self) -> None:
        """End trackers and the process group (call once at the end of a script, as ``visalign train`` does)."""
        self.accelerator.wait_for_everyone()
        self.accelerator.end_training()

    def train_step(self) -> dict[str, float]:
        """One optimizer step: ``grad_accum`` rollouts, ``algorithm.updates_per_rollout`` updates on them, then the
        refits of the algorithm's owned models that are due."""
        cfg, acc = self.config, self.accelerator
        self.policy.train()
        self.ctx.step = self.step
        self.ctx.reward_components.clear()
        rollouts = []
        for micro in range(cfg.grad_accum):
            rng = step_generator(cfg.seed, self.step, acc.process_index, micro)
            batch = self.prompts.sample(cfg.prompts_per_step, rng)
            for cb in self.callbacks:
                cb.on_rollout_begin(self)
            with acc.autocast():
                rollout = self.algorithm.rollout(self.ctx, batch, rng)
            for cb in self.callbacks:
                cb.on_rollout_end(self, rollout)
            rollouts.append(rollout)
        metrics: dict[str, list[float]] = {}
        plan = self.algorithm.update_plan(self.ctx, rollouts)
        if plan.reset_optimizer:
            self.trained.optimizer.state.clear()
        if plan.skip:
            metrics["skipped"] = [1.0]
        for _ in range(0 if plan.skip else self.algorithm.updates_per_rollout):
            for rollout in rollouts:
                with acc.autocast():
                    loss, m = self.algorithm.loss(self.ctx, rollout)
                self._backward(loss, 1 / cfg.grad_accum, f"{self.algorithm.name}: non-finite loss {{}} at step {self.step}")
                for k, v in {"loss": loss.item(), **m}.items():
                    metrics.setdefault(k, []).append(float(v))
            self._update(self.trained, metrics, "grad_norm", self._frozen_params(plan))
        self.trained.scheduler.step()
        self._refit_owned(rollouts, metrics)
        self.step += 1
        out = {k: float(np.mean(v)) for k, v in metrics.items()}
        out.update(self._reward_metrics(rollouts))
        for cb in self.callbacks:
            cb.on_step_end(self, out)
        return out

    def _backward(self, loss: torch.Tensor, scale: float, message: str) -> None:
        if not torch.isfinite(loss):
            raise FloatingPointError(message.format(loss.item()))
        self.accelerator.backward(loss * scale)

    def _frozen_params(self, plan: UpdatePlan) -> list[nn.Parameter]:
        """The policy parameters ``plan`` freezes this step; an unknown name is an error."""
        if not plan.frozen:
            return []
        named = dict(self.policy.trainable_module().named_parameters())
        unknown = sorted(set(plan.frozen) - set(named))
        if unknown:
            raise KeyError(f"{self.algorithm.name}: update plan freezes unknown parameters {unknown[:5]}")
        return [named[n] for n in plan.frozen]

    def _any_rank(self, flag: bool) -> bool:
        """True when ``flag`` is True on any rank."""
        if self.accelerator.num_processes == 1:
            return bool(flag)
        import torch.distributed as dist

        value = torch.tensor([float(flag)], device=self.accelerator.device)
        dist.all_reduce(value, op=dist.ReduceOp.MAX)
        return bool(value.item() > 0)

    def _update(self, model: TrainedModel, metrics: dict[str, list[float]], norm_key: str,
                frozen: Sequence[nn.Parameter] = ()) -> None:
        """Sync gradients across ranks (FSDP already reduce-scattered a sharded policy's), drop the gradients of
        ``frozen`` parameters (AdamW then skips them), clip, step, clear, and update the EMA."""
        sharded = bool(self.shard_units) and model is self.trained
        if not sharded:
            self._all_reduce_grads(model.params)
        for p in frozen:
            p.grad = None
        clip = torch.nn.utils.clip_grad_norm_ if sharded else self.accelerator.clip_grad_norm_
        norm = clip(model.params, model.max_grad_norm or math.inf)  # max_norm inf: the norm only, gradients untouched
        if not math.isfinite(float(norm)) and self.accelerator.scaler is None:  # fp16's GradScaler skips such a step itself
            raise FloatingPointError(f"{self.algorithm.name}: non-finite gradient norm {float(norm)} ({norm_key}) at step "
                                     f"{self.step} with a finite loss: the backward overflowed; the weights were not updated")
        if model.max_grad_norm:
            metrics.setdefault(norm_key, []).append(float(norm))
        model.optimizer.step()
        model.optimizer.zero_grad(set_to_none=True)
        if model.ema is not None:
            model.ema.step(model.params)

    def _refit_owned(self, rollouts: list[Rollout], metrics: dict[str, list[float]]) -> None:
        """Optimizer steps of the algorithm's owned models that are due this step. Gradients that reach the policy
        during a refit are discarded, so a refit never moves the policy (nor a policy step an owned model)."""
        specs = self.algorithm.owned_models()
        for name, model in self.owned.items():
            spec = specs[name]
            if (self.step + 1) % spec.every:
                continue
            for refit_step in range(spec.steps):
                model.optimizer.zero_grad(set_to_none=True)
                with self.accelerator.autocast():
                    loss, m = self.algorithm.refit_loss(self.ctx, name, rollouts, refit_step)
                self._backward(loss, 1.0, f"{self.algorithm.name}: non-finite loss {{}} of owned model {name!r} at step {self.step}")
                self.trained.optimizer.zero_grad(set_to_none=True)
                for k, v in {f"{name}/loss": loss.item(), **m}.items():
                    metrics.setdefault(k, []).append(float(v))
                self._update(model, metrics, f"{name}/grad_norm")
            model.scheduler.step()

    def _reward_metrics(self, rollouts: list[Rollout]) -> dict[str, float]:
        acc = self.accelerator
        rewards = acc.gather(torch.cat([r.rewards.detach().float().reshape(-1) for r in rollouts]).to(acc.device))
        out = {"reward/mean": rewards.mean().item(), "reward/std": rewards.std().item() if rewards.numel() > 1 else 0.0,
               "reward/max": rewards.max().item(), "reward/min": rewards.min().item(), "lr": self.trained.scheduler.get_last_lr()[0],
               "samples_seen": float(self._count_samples(rewards.numel()))}
        for name, values in self.ctx.reward_components.items():
            component = acc.gather(torch.cat(values).to(acc.device))
            out[f"reward/{name}"] = component.mean().item()
        return out

    def _count_samples(self, new: int) -> int:
        """Scored policy samples so far, over all ranks (the budget that methods are compared under)."""
        self.samples_seen += new
        return self.samples_seen

    def _all_reduce_grads(self, params: list[nn.Parameter]) -> None:
        """Average gradients over ranks in one flat all-reduce (parameters without a gradient count as zero)."""
        if self.accelerator.num_processes == 1:
            return
        import torch.distributed as dist

        for p in params:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        grads = [p.grad for p in params]
        flat = torch._utils._flatten_dense_tensors(grads)
        dist.all_reduce(flat)
        flat.div_(self.accelerator.num_processes)
        for grad, synced in zip(grads, torch._utils._unflatten_dense_tensors(flat, grads)):
            grad.copy_(synced)

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
        with contextlib.ExitStack() as stack:
            for model in self._models().values():
                stack.enter_context(model.ema_swap())
            with torch.no_grad(), acc.autocast():
                result = self.algorithm.evaluate(eval_ctx, batch, rng)
            self.policy.train()
            rewards = acc.gather(result.rewards.detach().float().reshape(-1).to(acc.device))
            metrics = {"eval/reward_mean": rewards.mean().item(), "eval/reward_std": rewards.std().item() if rewards.numel() > 1 else 0.0,
                       **{k: float(v) for k, v in result.metrics.items()}}
            if save and tag and acc.is_main_process:
                save_samples(result.samples, self.output_dir / "samples" / f"{tag}.png", batch.prompts, max_images=PREVIEW_IMAGES,
                             rewards=result.rewards.detach().float().cpu())
            if log:
                self._log(metrics)
            for cb in self.callbacks:  # inside the swap: a callback measuring the policy sees the evaluated weights
                cb.on_evaluate(self, tag, metrics)
        return {"step": self.step, **metrics}

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
    def _models(self) -> dict[str, TrainedModel]:
        """Every optimised model by checkpoint prefix: the policy and each owned model."""
        return {"": self.trained, **{f"owned_{name}_": model for name, model in self.owned.items()}}

    def save_checkpoint(self, path: str | Path | None = None) -> Path:
        """Policy, owned models, optimizers, schedulers, EMAs, algorithm state, RNG states, step, run config —
        safetensors + JSON only.

        Every file goes into a hidden temporary folder, sealed with a sha256 manifest, renamed into place; only then
        does ``latest`` (replaced atomically) point at it, and only this run's older checkpoints are pruned. A write
        interrupted at any point leaves the previous checkpoint and ``latest`` intact."""
        acc = self.accelerator
        path = Path(path) if path else self.output_dir / "checkpoints" / f"step_{self.step:06d}"
        tmp = path.with_name(f".tmp_{path.name}")
        acc.wait_for_everyone()
        gathered = {}
        if self.shard_units:  # collective: every rank gathers, rank 0 writes
            gathered = {"policy": sharding.full_model_state(self.policy),
                        "optimizer": sharding.full_optimizer_state(self.trained.module, self.trained.optimizer)}
        if acc.is_main_process:
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
        acc.wait_for_everyone()
        ckpt.save_state_dict(ckpt.rng_state(), tmp / f"rng_{acc.process_index}")
        acc.wait_for_everyone()
        if acc.is_main_process:
            self._write_checkpoint_files(tmp, gathered)
            ckpt.seal(tmp)
            ckpt.publish(tmp, path)
            ckpt.point_latest(path.parent, path.name)
            self._prune_checkpoints(path.parent, keep=path)
        acc.wait_for_everyone()
        for cb in self.callbacks:
            cb.on_save(self, path)
        return path

    def _write_checkpoint_files(self, folder: Path, gathered: dict[str, Any]) -> None:
        """Every file of a checkpoint; ``gathered`` holds the sharded policy's full model and optimizer states."""
        if gathered:
            ckpt.save_tensors(gathered["policy"], folder / "policy.safetensors")
        else:
            ckpt.save_module(self.policy, folder / "policy.safetensors")
        for prefix, model in self._models().items():
            if prefix:
                ckpt.save_module(model.module, folder / f"{prefix}model.safetensors")
            optimizer_state = gathered["optimizer"] if gathered and not prefix else model.optimizer.state_dict()
            ckpt.save_state_dict(optimizer_state, folder / f"{prefix}optimizer")
            ckpt.write_json(model.scheduler.state_dict(), folder / f"{prefix}scheduler.json")
            if model.ema is not None:
                ckpt.save_state_dict(model.ema.state_dict(), folder / f"{prefix}ema")
        ckpt.save_state_dict({"state": self.algorithm.state_dict()}, folder / "algorithm_state")
        ckpt.write_json({"step": self.step, "samples_seen": self.samples_seen, "history": self.history},
                        folder / "trainer_state.json")
        ckpt.write_text(self._config_yaml(), folder / CONFIG_FILE)
        ckpt.write_json({"run_id": self.run_id, "step": self.step, "processes": self.accelerator.num_processes,
                         **self._identity(), "models": self._model_settings()}, folder / RUN_FILE)

    def load_checkpoint(self, path: str | Path) -> None:
        """Restore everything ``save_checkpoint`` wrote; the run continues exactly as if uninterrupted.

        The checkpoint must be complete with intact files (sha256 manifest) and come from the same algorithm, policy
        class and reward; changed optimiser settings (learning rate, weight decay, betas, clipping, EMA decay) are
        applied from the resume on, with a warning; EMA switched on or off is refused."""
        path = Path(path)
        ckpt.verify(path)
        info = read_json(path / RUN_FILE, "checkpoint file")
        self._check_resumable(info, path)
        rng_file = path / f"rng_{self.accelerator.process_index}"
        if not rng_file.with_suffix(".json").is_file():
            raise CheckpointError(f"checkpoint {path} has no RNG state for process {self.accelerator.process_index} "
                                  f"(it was saved by {info.get('processes')} process(es); resume with as many)")
        if self.shard_units:
            sharding.load_full_model_state(self.policy, ckpt.load_tensors(path / "policy.safetensors"))
        else:
            ckpt.load_module(self.policy, path / "policy.safetensors")
        for prefix, model in self._models().items():
            if prefix:
                ckpt.load_module(model.module, path / f"{prefix}model.safetensors")
            self._load_optimizer(model, path, prefix)
            if model.ema is not None:
                model.ema.load_state_dict(ckpt.load_state_dict(path / f"{prefix}ema"))
                model.ema.decay = model.ema_decay
        self.algorithm.load_state_dict(ckpt.load_state_dict(path / "algorithm_state")["state"])
        state = read_json(path / "trainer_state.json", "checkpoint file")
        self.step, self.samples_seen, self.history = state["step"], state["samples_seen"], state["history"]
        ckpt.set_rng_state(ckpt.load_state_dict(rng_file))
        self.run_id = info["run_id"]

    def _identity(self) -> dict[str, Any]:
        """What a resumed run must share with the checkpoint: algorithm, policy class, reward, which models have EMA."""
        policy = type(self.policy)
        return {"algorithm": self.algorithm.name, "policy": f"{policy.__module__}.{policy.__qualname__}",
                "reward": self.reward.name,
                "ema": sorted(self._model_label(prefix) for prefix, m in self._models().items() if m.ema is not None)}

    def _model_settings(self) -> dict[str, dict[str, Any]]:
        return {self._model_label(prefix): {"max_grad_norm": m.max_grad_norm, "ema_decay": m.ema_decay}
                for prefix, m in self._models().items()}

    @staticmethod
    def _model_label(prefix: str) -> str:
        return prefix.removeprefix("owned_").removesuffix("_") or "policy"

    def _check_resumable(self, info: dict[str, Any], path: Path) -> None:
        """Refuse a checkpoint of another algorithm, policy or reward, or one whose EMA this run would drop or invent."""
        mine = self._identity()
        for key, what in (("algorithm", "algorithm"), ("policy", "policy (generator) class"), ("reward", "reward")):
            if info.get(key) != mine[key]:
                raise ConfigError(f"cannot resume {path}: it was trained with {what} {info.get(key)!r}, this run uses "
                                  f"{mine[key]!r}; use the same {key} to resume, or start a new run in another "
                                  "trainer.output_dir")
        saved_ema, new_ema = set(info.get("ema", [])), set(mine["ema"])
        if saved_ema - new_ema:
            raise ConfigError(f"cannot resume {path}: it keeps EMA weights of {sorted(saved_ema - new_ema)} but this run "
                              "has no EMA (trainer.ema_decay is null); set the EMA decay again to resume")
        if new_ema - saved_ema:
            raise ConfigError(f"cannot resume {path}: it has no EMA weights of {sorted(new_ema - saved_ema)} but this run "
                              "asks for EMA (trainer.ema_decay); resume without EMA or start a new run")
        for label, now in self._model_settings().items():
            before = info.get("models", {}).get(label, {})
            for key, value in now.items():
                if key in before and before[key] != value:
                    self._warn_changed(path, label, key, before[key], value)

    @staticmethod
    def _warn_changed(path: Path, label: str, key: str, before: Any, after: Any) -> None:
        where = "trainer" if label == "policy" else f"owned model {label!r}"
        warnings.warn(f"resuming {path}: {where} {key} changed from {before!r} to {after!r}; the new value applies "
                      "from the resumed step on", UserWarning, stacklevel=4)

    def _load_optimizer(self, model: TrainedModel, path: Path, prefix: str) -> None:
        """Load optimizer and schedule state, then re-apply this run's learning rate, weight decay and betas where
        they differ from the checkpoint's (with a warning): the new settings win, as for every optimiser setting."""
        groups = model.optimizer.param_groups
        wanted = [{"initial_lr": g["initial_lr"], "weight_decay": g["weight_decay"], "betas": tuple(g["betas"])} for g in groups]
        optimizer_state = ckpt.load_state_dict(path / f"{prefix}optimizer")
        if self.shard_units and not prefix:
            sharding.load_full_optimizer_state(model.module, model.optimizer, optimizer_state)
        else:
            model.optimizer.load_state_dict(optimizer_state)
        model.scheduler.load_state_dict(read_json(path / f"{prefix}scheduler.json", "checkpoint file"))
        label = self._model_label(prefix)
        for i, (group, new) in enumerate(zip(model.optimizer.param_groups, wanted)):
            for key, value in new.items():
                old = tuple(group[key]) if key == "betas" else group[key]
                if old == value:
                    continue
                name = {"initial_lr": "learning_rate", "betas": "adam_betas"}.get(key, key)
                self._warn_changed(path, label, name, old, value)
                group[key] = value
                if key == "initial_lr":
                    model.scheduler.base_lrs[i] = value
                    group["lr"] = value * model.scheduler.lr_lambdas[i](model.scheduler.last_epoch)
        model.scheduler._last_lr = [g["lr"] for g in model.optimizer.param_groups]

    def _config_yaml(self) -> str:
        import yaml

        config = self.run_config if self.run_config is not None else {
            "trainer": _plain(dataclasses.asdict(self.config)), **self._identity(),
            "eval_reward": self.eval_reward.name}
        return yaml.safe_dump(config, sort_keys=False)

    def _truncate_metrics_file(self) -> None:
        """Make the metrics file hold exactly this run's records so far (after a resume: those up to the checkpoint,
        as in an uninterrupted run; in a fresh run: none, so an overwritten folder never mixes two runs' logs)."""
        (self.output_dir / METRICS_FILE).write_text("".join(json.dumps(r) + "\n" for r in self.history))

    def _resolve_checkpoint(self, spec: str) -> Path:
        if spec != "latest":
            return Path(spec)
        latest = self.output_dir / "checkpoints" / "latest"
        if not latest.is_file():
            raise FileNotFoundError(f"resume_from=latest but {latest} does not exist")
        target = latest.parent / latest.read_text().strip()
        if not target.is_dir():
            raise CheckpointError(f"{latest} points at {target}, which does not exist")
        return target

    def _prune_checkpoints(self, folder: Path, keep: Path) -> None:
        """Delete this run's checkpoints beyond ``keep_checkpoints`` (oldest first); never ``keep`` (the one just
        written), never another run's."""
        mine = []
        for candidate in folder.glob("step_*"):
            if candidate == keep or not candidate.is_dir():
                continue
            try:
                info = json.loads((candidate / RUN_FILE).read_text())
            except (OSError, ValueError):
                continue
            if isinstance(info, dict) and info.get("run_id") == self.run_id:
                mine.append((info.get("step", -1), candidate))
        mine.sort()
        for _, old in mine[: max(0, len(mine) - (self.config.keep_checkpoints - 1))]:
            shutil.rmtree(old, ignore_errors=True)


def _plain(value: Any) -> Any:
    """Tuples to lists (recursively), so a config can be written as safe YAML."""
    return json.loads(json.dumps(value, default=str))


def _allow_new_precision(mixed_precision: str) -> None:
    """accelerate keeps one process-wide state; in a single process, let a later Trainer pick another precision."""
    from accelerate.state import AcceleratorState, PartialState

    state = AcceleratorState._shared_state
    if state and state.get("_mixed_precision") != mixed_precision and PartialState().num_processes == 1:
        AcceleratorState._reset_state()
