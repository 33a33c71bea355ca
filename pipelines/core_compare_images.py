"""CoRe vs a fixed latent reward model on tiny images: is the fixed LRM hacked, and does co-evolving it prevent that?

Preparation (cached in ``--out``): synthetic "real" images with a known density (``visalign.toys.smooth_images``), a
tiny flow generator (``tiny_flow``, SD3 blocks, 8 px, 4 Euler steps) pretrained on them by flow matching, real
preference pairs labelled by the deterministic smooth-image judge (which the generator never optimises), and a
standalone latent reward model fitted to those pairs at random noise levels (``--lrm-kind backbone`` puts its head on
the generator's frozen first block instead).

Arms, all with the same PRFL generator step and budget: ``fixed`` (the LRM never changes), ``core`` (anchor + real vs
generated), ``anchor_only``, ``generator_only``, ``oracle`` (anchor + fresh samples ranked by the judge) and
``oracle_core`` (CoRe + those judge-ranked pairs), each over ``--seeds``. Printed per arm (mean ± sd over seeds): LRM reward gain in initial standard deviations (original LRM),
held-out judge (base, peak, end), escape (kNN distance to the LRM's training images, as a multiple of the base
model's), Spearman(LRM, judge) over the second half of evaluations, and the issue's pass/fail checks; writes
``curves.png`` (with the judge's off-data energy, logged per run in ``judge_parts.jsonl``), ``samples.png`` and
``results.json``. The proximal weight μ defaults to 3 (``--proximal 0``: the refitted LRM drifts and CoRe's judge
falls after ~375 steps).

    python pipelines/core_compare_images.py --out runs/core_images             # 6 arms x 3 seeds, 500 steps (~13 min)
    python pipelines/core_compare_images.py --arms core --proximal 0           # CoRe without the proximal term
    python pipelines/core_compare_images.py --arms fixed core --seeds 0 --steps 200   # a quick look
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

from visalign.core import Unconditional
from visalign.generators.tiny import TinyFlowConfig, TinyFlowGenerator
from visalign.rewards.latent import (LRMTrainingConfig, LatentRewardConfig, LatentPairs, build_lrm, save_lrm,
                                     save_pairs, train_lrm)
from visalign.rewards.smooth_images import SmoothImageJudge
from visalign.toys.core_benchmark import (add_arguments, parse_benchmark_args, plot_curves, print_report, run_arm,
                                          run_benchmark)
from visalign.toys.pretrain import pretrain_flow
from visalign.toys.smooth_images import SmoothImages
from visalign.trainer import Trainer

ENERGY = "off_data_energy"
RESULT = ("core_compare_images", "python pipelines/core_compare_images.py", "CoRe vs a fixed LRM on 8 px smooth images")


def prepare(out: Path, args: argparse.Namespace) -> dict[str, str]:
    """Base generator, real preference pairs and the LRM (reused when already in ``out``)."""
    data = SmoothImages()
    base, pairs_file, lrm_dir = out / "base_generator", out / "pairs.safetensors", out / f"lrm_{args.lrm_kind}"
    if not (base / "generator.json").is_file():
        print("pretraining the base generator on smooth images ...", flush=True)
        torch.manual_seed(0)
        gen = TinyFlowGenerator(TinyFlowConfig(image_size=8, patch_size=2, layers=2, heads=2, head_dim=32, num_steps=4))
        losses = pretrain_flow(gen, lambda n, g: data.sample(n, g), steps=args.pretrain_steps, batch_size=64, lr=2e-3)
        print(f"  flow-matching loss {np.mean(losses[:20]):.3f} -> {np.mean(losses[-50:]):.3f}")
        gen.save_pretrained(base)
    if not pairs_file.is_file():
        winners, losers = data.ranked_pairs(args.pairs, torch.Generator().manual_seed(1))
        save_pairs(LatentPairs(winners, losers, [""] * args.pairs, judge="smooth_image_judge"), pairs_file)
    if not (lrm_dir / "lrm.json").is_file():
        print(f"training the {args.lrm_kind} latent reward model ...", flush=True)
        from visalign.rewards.latent import load_pairs

        pairs = load_pairs(pairs_file)
        torch.manual_seed(0)
        cfg = LatentRewardConfig(kind=args.lrm_kind, latent_shape=pairs.latent_shape,
                                 generator=str(base) if args.lrm_kind == "backbone" else None)
        model = build_lrm(cfg)
        metrics = train_lrm(model, pairs, LRMTrainingConfig(steps=args.lrm_train_steps), progress=False)
        print("  " + ", ".join(f"{k} {v:.3f}" for k, v in metrics.items()))
        save_lrm(model, lrm_dir, {"training": metrics, "judge": "smooth_image_judge"})
    return {"base": str(base), "pairs": str(pairs_file), "lrm": str(lrm_dir)}


def judge_parts(size: int):
    """The judge's parts on a fixed batch of ``size`` clean samples, for each evaluation: brightness term tanh(z_0),
    typicality ½·mean z², off-data energy β·(ρ² − 1), and the current LRM's mean score of real minus generated images
    at t = 0 (> 0: it still tells them apart)."""
    data = SmoothImages()
    real = data.sample(size, torch.Generator().manual_seed(7))

    def measure(trainer: Trainer) -> dict[str, float]:
        flow, lrm = trainer.policy, trainer.algorithm.lrm
        prompts = [""] * size
        with torch.no_grad():
            noise = flow.make_noise(size, torch.Generator().manual_seed(123))
            x = flow.sample_latents(noise, flow.encode(prompts))
            z, rho2 = data.coordinates(x)
            t0 = torch.zeros(size, device=x.device)
            gap = lrm(real.to(x.device), t0, prompts).mean() - lrm(x, t0, prompts).mean()
        return {"brightness": float(torch.tanh(z[:, 0]).mean()), "typicality": float(0.5 * z.pow(2).mean(1).mean()),
                ENERGY: float(data.config.beta * (rho2 - 1).mean()), "lrm_real_minus_generated": float(gap)}

    return measure


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/core_images")
    add_arguments(parser, steps=500, eval_every=25)
    parser.add_argument("--pairs", type=int, default=4096)
    parser.add_argument("--pretrain-steps", type=int, default=1000)
    parser.add_argument("--lrm-train-steps", type=int, default=800)
    parser.add_argument("--lrm-kind", default="standalone", choices=["standalone", "backbone"])
    began = time.perf_counter()
    args, out = parse_benchmark_args(parser, argv)

    run_benchmark(args, out, ENERGY, prepare,
                  lambda arm, seed, paths: run_arm(arm, seed, paths, out, args, SmoothImageJudge(), Unconditional(),
                                                   lambda run: judge_parts(args.eval_batch)),
                  report, (sys.argv[1:] if argv is None else argv, *RESULT, began))


def report(results, curves, out: Path, args: argparse.Namespace) -> None:
    print_report(results, out, args)
    plot_curves(curves, out / "curves.png", ENERGY, "judge part: off-data energy β(ρ²−1) (symlog)")
    sample_sheet(out, list(results), args.seeds[0])


def sample_sheet(out: Path, arms: list[str], seed: int) -> None:
    """Base samples, then each arm's final samples (same eval noise), one labelled row each."""
    from PIL import Image, ImageDraw

    rows = [("base", out / arms[0] / f"seed{seed}" / "samples" / "before.png")]
    rows += [(arm, out / arm / f"seed{seed}" / "samples" / "after.png") for arm in arms]
    images = [(name, Image.open(path).convert("RGB")) for name, path in rows if path.is_file()]
    if not images:
        return
    crop = [(name, im.crop((0, 0, im.width, min(im.height, im.width // 8 * 2)))) for name, im in images]
    crop = [(name, im.resize((im.width // 2, im.height // 2), Image.NEAREST)) for name, im in crop]
    label = 100
    sheet = Image.new("RGB", (label + max(im.width for _, im in crop), sum(im.height for _, im in crop)), "white")
    y = 0
    for name, im in crop:
        sheet.paste(im, (label, y))
        ImageDraw.Draw(sheet).text((5, y + im.height // 2 - 5), name, fill="black")
        y += im.height
    sheet.save(out / "samples.png")


if __name__ == "__main__":
    main()
