"""CoRe vs a fixed latent reward model on the tiny built-in video generator: is the fixed LRM hacked, and does
co-evolving it prevent that?

Preparation (cached in ``--out``): the shipped ``tiny_video_flow`` (16×16 px, 8 frames, 4 Euler steps in pixel space,
pretrained on the moving-shapes world by ``pipelines/pretrain_video.py``) is the base generator as is; "real" clips are
rendered by the same world (a coloured circle or square bouncing, random phase and cross-axis offset); real
preference pairs (two renders of one prompt) are labelled by the deterministic ``shapes_judge`` (which the generator
never optimises: position preference tanh(z_pos) + object_color − β·(off-palette energy ρ − 1)); a standalone latent
reward model is fitted to those pairs at random noise levels.

Arms, all with the same PRFL generator step and budget: ``fixed``, ``core``, ``anchor_only``, ``generator_only``,
``oracle`` and ``oracle_core`` (as in ``pipelines/core_compare_images.py``, whose machinery ``visalign.toys.core_benchmark`` this shares),
each over ``--seeds``, with prompts drawn from the world; every evaluation (judge, LRM scores, escape, judge parts,
pictures) reads an EMA of the generator's weights (``--ema-decay``, 0.98). Printed per arm (mean ± sd over seeds): LRM gain in initial
standard deviations (original LRM), held-out judge (base, peak, end), escape (kNN distance to the LRM's training
clips, as a multiple of the base model's), Spearman(LRM, judge) over the second half, and the issue's checks; writes
``curves.png`` (with the judge's off-palette energy, logged per run in ``judge_parts.jsonl``), ``samples.png`` +
``samples.gif`` (base, CoRe and fixed after training, same noise) and ``results.json``.

    python pipelines/core_video.py --out runs/core_video --arms fixed core      # the issue's claims 1-2, 3 seeds
    python pipelines/core_video.py --arms anchor_only generator_only oracle oracle_core   # ablations
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from visalign.rewards.latent import (LRMTrainingConfig, LatentPairs, LatentRewardConfig, build_lrm, load_pairs,
                                     save_lrm, save_pairs, train_lrm)
from visalign.rewards.shapes_judge import ShapesJudge, ShapesJudgeConfig, ShapesJudgeReward
from visalign.toys.core_benchmark import (add_arguments, parse_benchmark_args, plot_curves, print_report, run_arm,
                                          run_benchmark)
from visalign.toys.moving_shapes import MovingShapesPrompts, WorldConfig, all_prompts, render_batch
from visalign.trainer import Trainer
from visalign.trainer.media import save_video

ENERGY = "off_palette"
BASE = Path(__file__).resolve().parents[1] / "assets" / "video" / "tiny_video_flow"
SHOWN = 4  # clips per row of the samples picture
RESULT = ("core_compare_video", "python pipelines/core_video.py", "CoRe vs a fixed LRM on the tiny video flow (16 px, 8 frames)")


def ranked_pairs(n: int, judge: ShapesJudge, generator: torch.Generator) -> LatentPairs:
    """``n`` pairs of renders of one prompt each (the world's prompts in turn), ordered by the judge."""
    prompts = [all_prompts()[i % len(all_prompts())] for i in range(n)]
    world = WorldConfig()
    a, b = render_batch(prompts, world, generator), render_batch(prompts, world, generator)
    first = (judge(a, prompts) >= judge(b, prompts)).view(-1, 1, 1, 1, 1)
    return LatentPairs(torch.where(first, a, b), torch.where(first, b, a), prompts, judge="shapes_judge")


def prepare(out: Path, args: argparse.Namespace) -> dict[str, str]:
    """Real preference pairs and the LRM (reused when already in ``out``); the base is the shipped generator."""
    pairs_file, lrm_dir = out / "pairs.safetensors", out / "lrm_standalone"
    if not pairs_file.is_file():
        save_pairs(ranked_pairs(args.pairs, ShapesJudge(judge_config(args)), torch.Generator().manual_seed(1)), pairs_file)
    if not (lrm_dir / "lrm.json").is_file():
        print("training the standalone latent reward model ...", flush=True)
        pairs = load_pairs(pairs_file)
        torch.manual_seed(0)
        model = build_lrm(LatentRewardConfig(kind="standalone", latent_shape=pairs.latent_shape, hidden=args.lrm_hidden))
        metrics = train_lrm(model, pairs, LRMTrainingConfig(steps=args.lrm_train_steps), progress=False)
        print("  " + ", ".join(f"{k} {v:.3f}" for k, v in metrics.items()))
        save_lrm(model, lrm_dir, {"training": metrics, "judge": "shapes_judge"})
    return {"base": str(args.base), "pairs": str(pairs_file), "lrm": str(lrm_dir)}


def judge_config(args: argparse.Namespace) -> ShapesJudgeConfig:
    return ShapesJudgeConfig(gamma=args.judge_gamma, colour_weight=args.judge_colour, beta=args.judge_beta)


def judge_parts(size: int, run: Path, last_step: int, config: ShapesJudgeConfig):
    """The judge's parts on a fixed batch (fixed noise, the world's prompts in turn) at each evaluation: position
    term tanh(z_pos), object_color, off-palette energy ρ, and the current LRM's mean score of real minus generated
    clips at t = 0. The first ``SHOWN`` clips at the first and the last step go to ``clips.safetensors``."""
    judge, prompts = ShapesJudge(config), [all_prompts()[i % len(all_prompts())] for i in range(size)]
    real = render_batch(prompts, WorldConfig(), torch.Generator().manual_seed(7))
    clips: dict[str, torch.Tensor] = {}

    def measure(trainer: Trainer) -> dict[str, float]:
        flow, lrm = trainer.policy, trainer.algorithm.lrm
        with torch.no_grad():
            x = flow.sample_latents(flow.make_noise(size, torch.Generator().manual_seed(123)), flow.encode(prompts))
            parts = judge.parts(flow.decode(x), prompts)
            t0 = torch.zeros(size, device=x.device)
            gap = lrm(real.to(x.device), t0, prompts).mean() - lrm(x, t0, prompts).mean()
        if trainer.step in (0, last_step):
            clips["before" if trainer.step == 0 else "after"] = flow.decode(x)[:SHOWN].contiguous().cpu()
            save_file(dict(clips), str(run / "clips.safetensors"))
        return {"position": float(torch.tanh(parts["position"]).mean()), "object_color": float(parts["object_color"].mean()),
                ENERGY: float(parts[ENERGY].mean()), "lrm_real_minus_generated": float(gap)}

    return measure


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/core_video")
    parser.add_argument("--base", default=str(BASE), help="base tiny_video_flow checkpoint folder")
    add_arguments(parser, steps=500, eval_every=25, eval_batch=32, batch=8, lr=1e-5, ema_decay=0.98)
    parser.add_argument("--pairs", type=int, default=2048)
    parser.add_argument("--lrm-train-steps", type=int, default=800)
    parser.add_argument("--lrm-hidden", type=int, default=128)
    parser.add_argument("--judge-gamma", type=float, default=3.0, help="judge: weight of the position preference")
    parser.add_argument("--judge-colour", type=float, default=1.0, help="judge: weight of object_color")
    parser.add_argument("--judge-beta", type=float, default=0.2, help="judge: weight of the off-palette energy")
    began = time.perf_counter()
    args, out = parse_benchmark_args(parser, argv)

    run_benchmark(args, out, ENERGY, prepare,
                  lambda arm, seed, paths: run_arm(arm, seed, paths, out, args, ShapesJudgeReward(**vars(judge_config(args))),
                                                   MovingShapesPrompts(), lambda run: judge_parts(args.eval_batch, run, args.steps,
                                                                                                  judge_config(args))),
                  report, (sys.argv[1:] if argv is None else argv, *RESULT, began))


def report(results, curves, out: Path, args: argparse.Namespace) -> None:
    print_report(results, out, args)
    plot_curves(curves, out / "curves.png", ENERGY, "judge part: off-palette energy ρ (symlog)")
    sample_sheet(out, list(results), args)


def sample_sheet(out: Path, arms: list[str], args: argparse.Namespace) -> None:
    """Contact sheet + GIF: the base model's clips, then CoRe's and the fixed LRM's (or each arm's) after training,
    from the same noise and prompts."""
    order = [a for a in ("core", "fixed") if a in arms] or arms
    files = {arm: out / arm / f"seed{args.seeds[0]}" / "clips.safetensors" for arm in order}
    loaded = {arm: load_file(str(f)) for arm, f in files.items() if f.is_file()}
    if not loaded or any("after" not in c for c in loaded.values()):
        return
    prompts = [all_prompts()[i % len(all_prompts())] for i in range(SHOWN)]
    rows = [("base", next(iter(loaded.values()))["before"])] + [(arm, c["after"]) for arm, c in loaded.items()]
    judge = ShapesJudge(judge_config(args))
    video = torch.cat([clips for _, clips in rows])
    captions = [f"{name}: {p.removeprefix('a ').replace(' bouncing', '')}" for name, _ in rows for p in prompts]
    scores = judge(video, prompts * len(rows)).tolist()
    for path in save_video(video, out / "samples.png", captions, scores):
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
