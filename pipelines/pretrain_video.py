"""Pretrain the tiny built-in video generators shipped in ``assets/video/`` on the moving-shapes world (CPU, minutes).

1. ``tiny_video_flow``: conditional flow matching on freshly rendered clips (16×16 px, 8 frames at 8 fps; a coloured
   circle or square bouncing left/right or up/down, described by its prompt).
2. ``tiny_video_one_step``: copies the flow's weights (``flow_residual``: ``x = tanh(z - f(z))``) and regresses its
   one-step output onto the flow's ``--teacher-steps``-step ODE endpoint for the same noise and prompt.
3. Measures the ``object_color`` reward (and the flow-matching / distillation loss at the start and the end) for the
   renders, a random-init model, the flow and the one-step student on every prompt of the world, writes
   ``pretrain_metrics.json`` beside the checkpoints and contact sheets + GIFs to ``--out``.

    python pipelines/pretrain_video.py                                   # ~6 min on 2 CPU cores, writes assets/video/
    python pipelines/pretrain_video.py --flow-minutes 0.2 --distill-minutes 0.2 --assets /tmp/v   # smoke run
    python pipelines/pretrain_video.py --pictures-only                   # measure and draw the shipped models
    python pipelines/pretrain_video.py --resume-flow --distill-minutes 8 # re-distil the one-step model only
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from visalign.core.generator import load_generator
from visalign.generators.tiny_video import (TinyVideoFlowConfig, TinyVideoFlowGenerator, TinyVideoOneStepConfig,
                                            TinyVideoOneStepGenerator)
from visalign.results import ResultRow, Tolerance, write_results
from visalign.rewards.video import ObjectColorReward
from visalign.toys.moving_shapes import WorldConfig, all_prompts, render_batch
from visalign.toys.video_pretrain import (BUDGET_NOTE, MEASURED_TOLERANCE, distill_loss, fit, flow_loss, shipped_training,
                                          training_record)
from visalign.trainer.visuals import save_samples

MODEL = dict(image_size=16, frames=8, fps=8.0, patch_size=4, width=64, layers=2, heads=4, text_hidden=32,
             text_layers=2, text_heads=2, vocab_buckets=256, max_length=16)


@torch.no_grad()
def measure(sample_fn, prompts: list[str], seed: int = 1234, errors: dict[str, float] | None = None,
            name: str = "") -> tuple[float, object]:
    """Mean ``object_color`` over ``prompts`` (one sample each) and the samples; its standard error over the prompts
    goes to ``errors[name]`` when given."""
    x = sample_fn(prompts, torch.Generator().manual_seed(seed))
    r = ObjectColorReward()(x, prompts, [{}] * len(prompts))
    if errors is not None:
        errors[name] = float(r.std() / len(r) ** 0.5)
    return round(r.mean().item(), 4), x


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--flow-minutes", type=float, default=3.5)
    p.add_argument("--flow-steps", type=int, default=2000)
    p.add_argument("--distill-minutes", type=float, default=2.0)
    p.add_argument("--distill-steps", type=int, default=1000)
    p.add_argument("--teacher-steps", type=int, default=4)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (1 is fastest on a shared 2-core machine)")
    p.add_argument("--assets", type=Path, default=Path("assets/video"))
    p.add_argument("--out", type=Path, default=Path("runs/pretrain_video"))
    p.add_argument("--pictures-only", action="store_true",
                   help="train nothing: measure and draw the checkpoints in --assets (their training figures come from "
                        "the pretrain_metrics.json beside them)")
    p.add_argument("--resume-flow", action="store_true", help="load the flow from --assets and only (re)distil the one-step model")
    p.add_argument("--results", default=None, help="also write the result file (visalign.results format) here")
    args = p.parse_args(argv)
    began, errors = time.perf_counter(), {}
    torch.set_num_threads(args.threads)
    world = WorldConfig(size=MODEL["image_size"], frames=MODEL["frames"], fps=MODEL["fps"])
    metrics: dict[str, object] = {}
    torch.manual_seed(args.seed)
    random_student = TinyVideoOneStepGenerator(TinyVideoOneStepConfig(**MODEL))
    if args.pictures_only:
        flow, student = load_generator(args.assets / "tiny_video_flow"), load_generator(args.assets / "tiny_video_one_step")
        metrics.update(shipped_training(args.assets, ("flow", "one_step")))
    else:
        if args.resume_flow:
            flow = load_generator(args.assets / "tiny_video_flow")
            metrics["flow"] = json.loads((args.assets / "pretrain_metrics.json").read_text())["flow"]
        else:
            flow = TinyVideoFlowGenerator(TinyVideoFlowConfig(**MODEL, num_steps=args.teacher_steps))
            start = time.perf_counter()
            losses = fit(flow, flow_loss(flow, world, args.batch), args.flow_steps, args.lr, args.flow_minutes, args.seed,
                         "video flow matching")
            metrics["flow"] = training_record(losses, time.perf_counter() - start)
        student = TinyVideoOneStepGenerator(TinyVideoOneStepConfig(**MODEL, parametrization="flow_residual"))
        student.backbone.load_state_dict(flow.backbone.state_dict())
        flow.requires_grad_(False)
        start = time.perf_counter()
        losses = fit(student, distill_loss(student, flow, args.batch, args.teacher_steps), args.distill_steps, args.lr / 2,
                     args.distill_minutes, args.seed + 1, "one-step distillation")
        flow.requires_grad_(True)
        metrics["one_step"] = training_record(losses, time.perf_counter() - start)
        flow.save_pretrained(args.assets / "tiny_video_flow")
        student.save_pretrained(args.assets / "tiny_video_one_step")
    metrics["random_init_one_step_object_color"], _ = measure(lambda ps, g: random_student.sample(ps, generator=g), all_prompts(),
                                                              errors=errors, name="random init")
    prompts = all_prompts()
    metrics["renders_object_color"], renders = measure(lambda ps, g: render_batch(ps, world, g), prompts, errors=errors,
                                                       name="renders")
    metrics["flow_object_color"], flow_x = measure(lambda ps, g: flow.sample(ps, generator=g), prompts, errors=errors,
                                                   name="tiny_video_flow")
    metrics["one_step_object_color"], student_x = measure(lambda ps, g: student.sample(ps, generator=g), prompts,
                                                          errors=errors, name="tiny_video_one_step")
    print(json.dumps(metrics, indent=2))
    if not args.pictures_only:
        (args.assets / "pretrain_metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    rows = torch.tensor([0, 5, 10, 15, 16, 21, 26, 31])  # 8 prompts: every colour, both shapes, every motion
    for name, x in (("renders", renders), ("flow", flow_x), ("one_step", student_x)):
        r = ObjectColorReward()(x, prompts, [{}] * len(prompts))
        path = save_samples(x[rows], args.out / f"{name}.png", [prompts[i] for i in rows], rewards=r[rows])
        print("wrote", path, "and", path.with_suffix(".gif"))
    if args.results:
        write_results(args.results, "pretrain_video", "python pipelines/pretrain_video.py",
                      sys.argv[1:] if argv is None else argv, result_rows(metrics, errors),
                      tolerance=MEASURED_TOLERANCE if args.pictures_only else Tolerance(se_multiple=2.0, note=BUDGET_NOTE),
                      platform_tolerance=Tolerance(se_multiple=2.0),
                      note=f"object_color on the world's {len(prompts)} prompts (one sample each, seed 1234); losses are "
                           "the mean of the first / last 20 training steps",
                      runtime_s=time.perf_counter() - began)
    return 0


def result_rows(metrics: dict, errors: dict[str, float]) -> list[ResultRow]:
    """The flow and the one-step student (with their training losses as info), the renders and the random init."""
    def row(name: str, key: str, training: dict | None = None) -> ResultRow:
        return ResultRow(name, {"object_color": metrics[key]}, se={"object_color": errors[name]}, info=training or {})

    rows = [row("tiny_video_flow", "flow_object_color", metrics["flow"]),
            row("tiny_video_one_step", "one_step_object_color", metrics["one_step"]), row("renders", "renders_object_color")]
    if "random_init_one_step_object_color" in metrics:  # not measured with --resume-flow
        rows.append(row("random init", "random_init_one_step_object_color"))
    return rows
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
