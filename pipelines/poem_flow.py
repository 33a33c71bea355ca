"""PoEM on a tiny flow image generator: four bases tuned by Flow-GRPO on toy image rewards (brightness, redness,
horizontal centre of mass, contrast), then new rewards predicted by mixing their velocities
``v̂ = v_ref + Σ ĉ_k (v_k − v_ref)`` with ĉ from a reward regression on reference samples, against a direct
Flow-GRPO run on each new reward.

Generator: visalign's ``tiny_flow`` with a small config (16 px, SD3 backbone with 3 layers of width 64, patch 2,
4 Euler steps, unconditional, 0.3M parameters), pretrained here by flow matching on synthetic scenes (one disc of random
colour, size and place on a random background); it learns the colour fields and draws blobs rather than clean discs. The shipped 32 px UNet ``tiny_flow_vvr`` costs ~19 s per Flow-GRPO step of 32 samples on the two
shared cores, the small SD3 config ~1 s.

New rewards: ``0.5·brightness + 0.5·mean_redness`` (in the span) and ``centre_of_mass_y`` (vertical, outside it).
Each new reward gets coverage and ĉ (OLS on z-scored rewards: Flow-GRPO normalises advantages per group, so each
basis tilts by r_k/σ_k) from 256 reference samples; every model is scored on the same 512 noise draws (ODE).
Writes ``results.json`` and ``samples.png`` (rows: reference, direct RL, PoEM for each new reward).

    python pipelines/poem_flow.py                      # ~25 min on one core (13 of them pretraining)
    python pipelines/poem_flow.py --seed 1 --reference runs/poem_flow/reference --out runs/poem_flow_seed1
    python pipelines/poem_flow.py --pretrain-steps 50 --rl-steps 2 --eval 64   # smoke run
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from visalign.algorithms import FlowGRPO, FlowGRPOConfig
from visalign.results import ResultRow, Tolerance, write_results
from visalign.core import PromptList, Reward, WeightedReward, get_reward, load_generator, score
from visalign.generators import TinyFlowConfig, TinyFlowGenerator
from visalign.poem import ComposedFlowGenerator, calibrate_flow, fit_calibration
from visalign.trainer import Trainer, TrainerConfig

CONFIG = dict(image_size=16, patch_size=2, layers=3, heads=4, head_dim=16, text_hidden=32, text_layers=1, text_heads=2,
              vocab_buckets=64, max_length=4, num_steps=4)
BASES = ("brightness", "mean_redness", "centre_of_mass_x", "contrast")


def scenes(n: int, size: int, generator: torch.Generator) -> torch.Tensor:
    """``n`` images in [-1, 1]: a disc (radius 2-5 px) of one random colour on a background of another."""
    bg = torch.rand(n, 3, 1, 1, generator=generator) * 2 - 1
    fg = torch.rand(n, 3, 1, 1, generator=generator) * 2 - 1
    centre = torch.rand(n, 2, generator=generator) * (size - 1)
    radius = 2 + 3 * torch.rand(n, generator=generator)
    yy, xx = torch.meshgrid(torch.arange(size, dtype=torch.float32), torch.arange(size, dtype=torch.float32), indexing="ij")
    dist = ((xx - centre[:, 0, None, None]) ** 2 + (yy - centre[:, 1, None, None]) ** 2).sqrt()
    mask = (radius[:, None, None] - dist).clamp(0, 1)[:, None]  # anti-aliased edge
    return bg + mask * (fg - bg)


def pretrain(folder: Path, steps: int, seed: int) -> TinyFlowGenerator:
    """Flow matching on synthetic scenes (reused when ``folder`` holds a checkpoint)."""
    if (folder / "generator.json").is_file():
        return load_generator(folder)
    torch.manual_seed(seed)
    gen = TinyFlowGenerator(TinyFlowConfig(**CONFIG))
    opt = torch.optim.AdamW(gen.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    g = torch.Generator().manual_seed(seed)
    from tqdm.auto import tqdm

    for _ in tqdm(range(steps), desc="pretrain"):
        loss = gen.flow_matching_loss(scenes(64, CONFIG["image_size"], g), gen.encode([""] * 64), g)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    gen.save_pretrained(folder)
    return gen


def train(reference: Path, reward: Reward, out: Path, args: argparse.Namespace) -> TinyFlowGenerator:
    """Flow-GRPO from the reference checkpoint (reused when ``out/final`` exists)."""
    if (out / "final" / "generator.json").is_file():
        return load_generator(out / "final")
    policy = load_generator(reference)
    algo = FlowGRPO(FlowGRPOConfig(group_size=args.group_size, num_steps=CONFIG["num_steps"], kl_beta=args.kl_beta))
    cfg = TrainerConfig(steps=args.rl_steps, prompts_per_step=args.prompts_per_step, learning_rate=args.lr, max_grad_norm=1.0,
                        eval_batch_size=64, output_dir=str(out), seed=args.seed, log_with=[], cpu=True, progress=True)
    Trainer(policy, algo, reward, PromptList([""]), cfg).train()
    return policy


@torch.no_grad()
def mean_reward(model, reward: Reward, noise: torch.Tensor) -> float:
    samples = model.sample(noise=noise, prompts=[""] * len(noise))
    return float(score(reward, samples, [""] * len(noise), [{}] * len(noise)).mean())


def save_rows(rows: list[torch.Tensor], labels: list[str], path: Path) -> None:
    """One labelled row of images per model (same noise in every column)."""
    from PIL import Image, ImageDraw

    from visalign.trainer.visuals import image_grid, to_uint8_images

    grids = [image_grid(to_uint8_images(r), cols=len(r), scale=4) for r in rows]
    label_h = 14
    sheet = Image.new("RGB", (grids[0].width, len(grids) * (grids[0].height + label_h)), "white")
    draw = ImageDraw.Draw(sheet)
    for i, (grid, label) in enumerate(zip(grids, labels)):
        top = i * (grid.height + label_h)
        draw.text((4, top + 1), label, fill="black")
        sheet.paste(grid, (0, top + label_h))
    sheet.save(path)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="runs/poem_flow")
    ap.add_argument("--reference", default=None, help="reference checkpoint (default: OUT/reference, pretrained if absent)")
    ap.add_argument("--pretrain-steps", type=int, default=4000)
    ap.add_argument("--rl-steps", type=int, default=100)
    ap.add_argument("--prompts-per-step", type=int, default=4)
    ap.add_argument("--group-size", type=int, default=8)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--kl-beta", type=float, default=0.04)
    ap.add_argument("--calibration", type=int, default=256)
    ap.add_argument("--eval", type=int, default=512, help="noise draws every model is scored on")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (on a busy shared machine one is fastest)")
    ap.add_argument("--results", default=None, help="also write the result file (visalign.results format) here")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    t0 = time.time()
    ref_folder = Path(args.reference) if args.reference else out / "reference"
    reference = pretrain(ref_folder, args.pretrain_steps, args.seed)
    noise = reference.make_noise(args.eval, torch.Generator().manual_seed(123))
    rewards = {name: get_reward(name) for name in BASES}
    bases = {}
    for name, reward in rewards.items():
        bases[name] = train(ref_folder, reward, out / f"basis_{name}", args)
        print(f"basis {name:16s} {mean_reward(reference, reward, noise):+.4f} -> {mean_reward(bases[name], reward, noise):+.4f}", flush=True)
    news = {"0.5*brightness+0.5*mean_redness": WeightedReward([(rewards["brightness"], 0.5), (rewards["mean_redness"], 0.5)]),
            "centre_of_mass_y": get_reward("centre_of_mass_y")}
    results: dict = {"config": CONFIG, "rl_steps": args.rl_steps, "samples_per_run": args.rl_steps * args.prompts_per_step * args.group_size}
    rows, labels = [reference.sample(noise=noise[:16], prompts=[""] * 16)], ["reference"]
    for new_name, reward in news.items():
        slug = new_name.replace("*", "").replace("+", "_")
        direct = train(ref_folder, reward, out / f"direct_{slug}", args)
        cal = calibrate_flow(reference, list(bases.values()), reward, PromptList([""]), args.calibration, args.calibration // 2,
                             torch.Generator().manual_seed(7), list(rewards.values()))
        fit, _ = fit_calibration(cal, standardize=True, names=list(bases))
        composed = ComposedFlowGenerator.compose(reference, list(bases.values()), fit.coef)
        composed.save_pretrained(out / f"composed_{slug}")
        e_ref, e_direct, e_comp = (mean_reward(m, reward, noise) for m in (reference, direct, composed))
        rec = (e_comp - e_ref) / (e_direct - e_ref)
        results[new_name] = {"coverage": fit.coverage, "coef": fit.coef.tolist(), "E_ref": e_ref, "E_direct": e_direct,
                             "E_poem": e_comp, "share_of_direct_gain": rec}
        print(f"{new_name:32s} coverage {fit.coverage:.3f}  ĉ {[round(c, 3) for c in fit.coef.tolist()]}  E_ref {e_ref:+.4f}  "
              f"direct RL {e_direct:+.4f}  PoEM {e_comp:+.4f}  share of direct gain {rec:.2f}", flush=True)
        rows += [direct.sample(noise=noise[:16], prompts=[""] * 16), composed.sample(noise=noise[:16], prompts=[""] * 16)]
        labels += [f"direct RL: {new_name}", f"PoEM: {new_name} (coverage {fit.coverage:.2f})"]
    save_rows(rows, labels, out / "samples.png")
    results["seconds"] = round(time.time() - t0)
    (out / "results.json").write_text(json.dumps(results, indent=2))
    print(f"wrote {out / 'results.json'} and {out / 'samples.png'} ({results['seconds']}s)")
    if args.results:
        write_results(args.results, "poem_flow", "python pipelines/poem_flow.py", sys.argv[1:] if argv is None else argv,
                      result_rows(results, list(news)),
                      tolerance=Tolerance(note="fixed seeds on one thread: compared exactly"),
                      note=f"PoEM on the tiny flow generator, seed {args.seed}: coverage, ĉ and mean rewards on "
                           f"{args.eval} shared ODE draws; across platforms RL diverges, so no cross-platform tolerance",
                      runtime_s=time.time() - t0)


def result_rows(results: dict, rewards: list[str]) -> list[ResultRow]:
    """Per new reward: coverage, the reference's, direct RL's and PoEM's mean reward and PoEM's share of the direct
    gain (ĉ as info, in basis order)."""
    return [ResultRow(name, {k: results[name][k] for k in ("coverage", "E_ref", "E_direct", "E_poem", "share_of_direct_gain")},
                      info={"coef": results[name]["coef"], "bases": list(BASES)}) for name in rewards]


if __name__ == "__main__":
    main()
