"""Pretrain the tiny prompt-conditioned VVR generators shipped in ``assets/`` (CPU, about 45 minutes).

1. Render easy VVR tasks (level 0: 1-3 large objects, one constraint, the constraint types that stay readable at
   32 px) into a pool of (prompt, 32×32 image) pairs.
2. ``tiny_flow``: conditional flow matching on the pool (``flow_matching_loss``), cosine LR, time budget. The
   denoiser is a small UNet (``--backbone unet``): the 3-layer SD3 transformer of the same size learns speckle
   (scattered coloured patches that pass colour checks by chance), the UNet's convolutions learn solid shapes.
3. ``tiny_one_step``: one-step distillation of the flow's ODE map. Noise z and training prompts are pushed
   through the teacher's Euler ODE (``--teacher-steps``; once, for ``--distill-pairs`` fixed triples), and
   G(z, prompt) is regressed onto the result (MSE, rectified-flow style). The student copies the teacher's
   weights and reads its output as ``tanh(z - f(z))`` (``--parametrization flow_residual``), so it starts at
   the teacher's one-step Euler sample instead of at ``tanh(velocity)``: held-out accuracy 13.0% vs 7.3%.
4. Measure, with the VVR verifier, on held-out tasks (seeds >= EVAL_SEED_BASE, never trained on): the renders
   themselves (the verifier's own accuracy at 32 px), the flow, the one-step student and a random-init one-step
   generator. Prints all-satisfied rate and mean soft reward; writes ``pretrain_metrics.json`` next to the
   checkpoints and sample grids to ``--out``.

    python pipelines/vvr_pretrain.py                            # ~45 min on 2 CPU cores, writes assets/
    python pipelines/vvr_pretrain.py --flow-minutes 1 --distill-minutes 1 --assets /tmp/a   # smoke run
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch
from tqdm import tqdm

from visalign.generators.tiny import TinyFlowConfig, TinyFlowGenerator, TinyOneStepConfig, TinyOneStepGenerator
from visalign.results import ResultRow, Tolerance, write_results
from visalign.rewards.vvr import VVRReward
from visalign.vvr.render import render_task, to_tensor
from visalign.vvr.sampler import LOW_RES_TYPES
from visalign.core.types import PromptBatch
from visalign.vvr.benchmark import EVAL_SEED_BASE, TRAIN_SEED_LIMIT
from visalign.vvr.source import VVRPromptSource, task_batch

LEVEL = 0
#: the model shipped in assets/: a UNet denoiser (channels 32, 64, 64) and a 2-layer text encoder, 1.8M parameters
MODEL = dict(image_size=32, patch_size=4, layers=3, heads=4, head_dim=16, text_hidden=48, text_layers=2, text_heads=2,
             vocab_buckets=1024, max_length=24, backbone="unet")


def easy_source() -> VVRPromptSource:
    """The easy VVR prompt source used everywhere in the VVR image pipeline."""
    return VVRPromptSource(level=LEVEL, types=LOW_RES_TYPES)


def easy_tasks(n: int, seed: int | None = None) -> PromptBatch:
    """``n`` easy tasks: training tasks from ``seed`` (seeds < TRAIN_SEED_LIMIT), or the held-out stream when ``seed``
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


def render_pool(n: int, seed: int, size: int = 32) -> tuple[list[str], torch.Tensor]:
    """``n`` fresh training tasks (seeded, disjoint from the held-out stream), each rendered once at ``size``."""
    batch = easy_tasks(n, seed)
    images = [render_task(m["task"], size, seed=seed + i) for i, m in enumerate(tqdm(batch.metadata, desc="render", leave=False))]
    return batch.prompts, to_tensor(images)


def cosine_lr(opt: torch.optim.Optimizer, base: float, frac: float, warmup: float = 0.03) -> None:
    lr = base * (frac / warmup if frac < warmup else 0.5 * (1 + math.cos(math.pi * min(1.0, frac))))
    for g in opt.param_groups:
        g["lr"] = max(lr, base * 0.02)


@torch.no_grad()
def evaluate(sample_fn, n: int, batch: int = 64, seed: int = 1234) -> dict[str, float]:
    """All-satisfied rate and mean soft VVR reward of ``sample_fn(noise, prompts)`` on ``n`` held-out tasks."""
    soft, strict = VVRReward(), VVRReward(strict=True)
    ev = easy_tasks(n)
    g = torch.Generator().manual_seed(seed)
    acc, rew = [], []
    for i in range(0, n, batch):
        prompts, meta = ev.prompts[i:i + batch], ev.metadata[i:i + batch]
        x = sample_fn(torch.randn(len(prompts), 3, 32, 32, generator=g), prompts)
        acc.append(strict(x, prompts, meta))
        rew.append(soft(x, prompts, meta))
    return {"all_satisfied": round(torch.cat(acc).mean().item(), 4), "soft_reward": round(torch.cat(rew).mean().item(), 4), "n": n}


def eval_renders(n: int) -> dict[str, float]:
    ev = easy_tasks(n)
    images = to_tensor([render_task(m["task"], 32, seed=i) for i, m in enumerate(ev.metadata)])
    strict, soft = VVRReward(strict=True)(images, ev.prompts, ev.metadata), VVRReward()(images, ev.prompts, ev.metadata)
    return {"all_satisfied": round(strict.mean().item(), 4), "soft_reward": round(soft.mean().item(), 4), "n": n}


def budgeted_training(model: torch.nn.Module, loss_fn, minutes: float, max_steps: int, lr: float, seed: int, desc: str) -> int:
    """AdamW on ``loss_fn(generator)`` until ``max_steps`` or the time budget, cosine lr over whichever ends first."""
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    g = torch.Generator().manual_seed(seed)
    budget, start, step = minutes * 60, time.perf_counter(), 0
    bar = tqdm(total=max_steps, desc=desc)
    ema = None
    while step < max_steps and time.perf_counter() - start < budget:
        cosine_lr(opt, lr, max(step / max_steps, (time.perf_counter() - start) / budget))
        loss = loss_fn(g)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        ema = loss.item() if ema is None else 0.98 * ema + 0.02 * loss.item()
        bar.update(1)
        bar.set_postfix(loss=f"{ema:.4f}", lr=f"{opt.param_groups[0]['lr']:.1e}")
    bar.close()
    return step


def train_flow(flow: TinyFlowGenerator, prompts: list[str], images: torch.Tensor, minutes: float, max_steps: int,
               batch: int, lr: float, seed: int) -> int:
    """Conditional flow matching on (prompt, render) pairs."""

    def loss_fn(g: torch.Generator) -> torch.Tensor:
        idx = torch.randint(len(prompts), (batch,), generator=g)
        return flow.flow_matching_loss(images[idx], flow.encode([prompts[i] for i in idx]), generator=g)

    return budgeted_training(flow, loss_fn, minutes, max_steps, lr, seed, "flow matching")


@torch.no_grad()
def teacher_pairs(teacher: TinyFlowGenerator, prompts: list[str], n: int, batch: int, teacher_steps: int,
                  generator: torch.Generator) -> tuple[torch.Tensor, list[str], torch.Tensor]:
    """``n`` (noise, training prompt, teacher ODE endpoint) triples, the endpoints computed ``batch`` at a time."""
    idx = torch.randint(len(prompts), (n,), generator=generator)
    ps = [prompts[i] for i in idx]
    z = torch.randn(n, 3, 32, 32, generator=generator)
    targets = [teacher.generate(z[i:i + batch], teacher.encode(ps[i:i + batch]), teacher_steps)
               for i in tqdm(range(0, n, batch), desc="teacher pairs", leave=False, disable=n <= batch)]
    return z, ps, torch.cat(targets).clamp(-0.995, 0.995)


def distill(student: TinyOneStepGenerator, teacher: TinyFlowGenerator, prompts: list[str], minutes: float, max_steps: int,
            batch: int, lr: float, teacher_steps: int, seed: int, pairs: int = 0) -> int:
    """Regress G(z, p) onto the teacher's ODE endpoint (stop-gradient): for fresh z and training prompts p at every
    step, or, with ``pairs > 0``, for a fixed set of that many triples computed once (reflow-style; the teacher's
    ``teacher_steps`` forward passes then leave the training step)."""
    if pairs > 0:
        z_pool, p_pool, target_pool = teacher_pairs(teacher, prompts, pairs, batch, teacher_steps, torch.Generator().manual_seed(seed))

    def loss_fn(g: torch.Generator) -> torch.Tensor:
        if pairs > 0:
            idx = torch.randint(pairs, (batch,), generator=g)
            z, ps, target = z_pool[idx], [p_pool[i] for i in idx], target_pool[idx]
        else:
            z, ps, target = teacher_pairs(teacher, prompts, batch, batch, teacher_steps, g)
        return ((student.generate(z, student.encode(ps)) - target) ** 2).mean()

    return budgeted_training(student, loss_fn, minutes, max_steps, lr, seed, "one-step distillation")


def save_grid(fn, path: Path, n: int = 16) -> None:
    from visalign.trainer.visuals import save_samples

    ev = easy_tasks(n)
    with torch.no_grad():
        x = fn(torch.randn(n, 3, 32, 32, generator=torch.Generator().manual_seed(7)), ev.prompts)
    save_samples(x, path, ev.prompts)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--assets", default="assets", help="writes <assets>/tiny_flow_vvr and <assets>/tiny_one_step_vvr")
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
    p.add_argument("--backbone", choices=("sd3", "unet"), default=MODEL["backbone"], help="denoiser of both generators")
    p.add_argument("--parametrization", choices=("image", "flow_residual"), default="flow_residual",
                   help="one-step output; flow_residual starts the student at the teacher's one-step Euler sample")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="1 is fastest on a shared 2-core machine")
    p.add_argument("--skip-flow", action="store_true", help="reuse <assets>/tiny_flow_vvr as the teacher")
    p.add_argument("--results", default=None, help="also write the result file (visalign.results format) here")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    assets, out = Path(args.assets), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    model = dict(MODEL, backbone=args.backbone)
    metrics: dict[str, object] = {"level": LEVEL, "types": list(LOW_RES_TYPES), "model": model}

    metrics["renders_32px"] = eval_renders(args.eval_n)
    print(f"verifier on 32 px renders of held-out tasks: {metrics['renders_32px']}")
    prompts, images = render_pool(args.pool, args.seed)
    print(f"rendered {len(prompts)} training pairs in {time.perf_counter() - t0:.0f}s")

    if args.skip_flow:
        from visalign.core import load_generator

        flow = load_generator(assets / "tiny_flow_vvr")
    else:
        flow = TinyFlowGenerator(TinyFlowConfig(**model, num_steps=8))
        t = time.perf_counter()
        metrics["flow_steps"] = train_flow(flow, prompts, images, args.flow_minutes, args.flow_steps, args.batch, args.lr, args.seed)
        metrics["flow_seconds"] = round(time.perf_counter() - t, 1)
        flow.eval()
        flow.save_pretrained(assets / "tiny_flow_vvr")
    flow.eval().requires_grad_(False)
    for k in (4, 8):
        metrics[f"flow_{k}step"] = evaluate(lambda z, ps, k=k: flow.generate(z, flow.encode(ps), k), args.eval_n)
        print(f"tiny_flow ({k} Euler steps) on held-out tasks: {metrics[f'flow_{k}step']}")
    save_grid(lambda z, ps: flow.generate(z, flow.encode(ps), 8), out / "flow_samples.png")

    student = TinyOneStepGenerator(TinyOneStepConfig(**model, parametrization=args.parametrization))
    student.backbone.load_state_dict(flow.backbone.state_dict())
    student.train()
    t = time.perf_counter()
    metrics["distill_steps"] = distill(student, flow, prompts, args.distill_minutes, args.distill_steps, args.batch,
                                       args.distill_lr, args.teacher_steps, args.seed + 1, args.distill_pairs)
    metrics["distill_seconds"] = round(time.perf_counter() - t, 1)
    student.eval()
    student.save_pretrained(assets / "tiny_one_step_vvr")
    metrics["one_step"] = evaluate(lambda z, ps: student.generate(z, student.encode(ps)), args.eval_n)
    print(f"tiny_one_step (distilled) on held-out tasks: {metrics['one_step']}")
    save_grid(lambda z, ps: student.generate(z, student.encode(ps)), out / "one_step_samples.png")
    rand = TinyOneStepGenerator(TinyOneStepConfig(**model, parametrization=args.parametrization)).eval()
    metrics["one_step_random_init"] = evaluate(lambda z, ps: rand.generate(z, rand.encode(ps)), args.eval_n)
    print(f"tiny_one_step (random init) on held-out tasks: {metrics['one_step_random_init']}")
    metrics["total_seconds"] = round(time.perf_counter() - t0, 1)
    (assets / "tiny_one_step_vvr" / "pretrain_metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    print(json.dumps(metrics, indent=2))
    if args.results:
        write_results(args.results, "vvr_pretrain", "python pipelines/vvr_pretrain.py", sys.argv[1:] if argv is None else argv,
                      result_rows(metrics),
                      tolerance=Tolerance(se_multiple=2.0, note="training runs on a time budget, so its step count "
                                          "varies: all-satisfied rates within 2 combined binomial standard errors"),
                      platform_tolerance=Tolerance(se_multiple=2.0),
                      note=f"held-out all-satisfied rate and soft reward on {args.eval_n} easy tasks",
                      runtime_s=time.perf_counter() - t0)
    return 0


RESULT_ROWS = {"renders_32px": "renders 32 px", "flow_4step": "flow 4 steps", "flow_8step": "flow 8 steps",
               "one_step": "one-step", "one_step_random_init": "one-step random init"}


def result_rows(metrics: dict) -> list[ResultRow]:
    """One row per measured generator (or the renders): all-satisfied rate with its binomial standard error, soft reward."""
    rows = []
    for key, name in RESULT_ROWS.items():
        if key not in metrics:  # --skip-flow leaves no flow training, but the flow is still evaluated
            continue
        m = metrics[key]
        p, n = m["all_satisfied"], m["n"]
        rows.append(ResultRow(name, {"all_satisfied": p, "soft_reward": m["soft_reward"]},
                              {"all_satisfied": math.sqrt(p * (1 - p) / n)}, info={"n": n}))
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
