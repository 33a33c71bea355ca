"""Do RWTD's transport targets score higher than the samples they move? Scores both, group by group.

For each one-step checkpoint, RWTD (the algorithm section of ``configs/vvr_rwtd.yaml``) draws its current and
reference groups on bin-1 training tasks of the VVR v2 easy pool and transports the current samples to the tilted
mixture target. Regressing in sample space (``regression_space: samples``), each current image u has the target
(1 − η)·u + η·ū, ū the barycentric projection of the target images it is transported to. This script scores the
current images and their targets at η = 0.5 and η = 1 with the strict and soft VVR reward; the changes come with
standard errors over prompt groups (the images of one group share a transport plan). It trains nothing: it asks
whether the targets RWTD regresses onto are better images to begin with.

    python pipelines/rwtd_targets.py --checkpoints long=assets/vvr2_long/tiny_one_step_vvr2 \
        ema2=assets/vvr2_ema2/tiny_one_step_vvr2 --groups 24
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
from tqdm import tqdm

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "pipelines"))

from checkpoint_args import parse_checkpoints  # noqa: E402
from visalign.core import build_prompt_source, load_generator  # noqa: E402
from visalign.core.algorithm import TrainContext, build_algorithm  # noqa: E402
from visalign.core.reward import build_reward  # noqa: E402
from visalign.results import ResultRow, Tolerance, write_results  # noqa: E402
from visalign.rewards.vvr import vvr_scores  # noqa: E402
from visalign.run import load_run_config  # noqa: E402

STEP_SIZES = (0.5, 1.0)


def group_scores(checkpoint: Path, groups: int, seed: int) -> dict[str, torch.Tensor]:
    """Per prompt group (rows), the mean strict and soft reward of the current samples and of their targets at each
    step size in :data:`STEP_SIZES` (keys ``current_strict``, ``eta=0.5_soft``, ...)."""
    config = load_run_config(ROOT / "configs" / "vvr_rwtd.yaml", [])
    algo = build_algorithm({**config.algorithm, "regression_space": "samples", "step_size": 1.0})
    policy = load_generator(checkpoint).eval()
    ctx = TrainContext(policy, policy.frozen_copy(), build_reward(config.reward), torch.device("cpu"))
    algo.setup(ctx)
    source = build_prompt_source({"name": "vvr2", "pool": "easy", "bins": [1]})
    g = torch.Generator().manual_seed(seed)
    out: dict[str, list[float]] = {}
    for _ in tqdm(range(groups), desc=f"groups ({checkpoint.parent.name})"):
        with torch.no_grad():
            rollout = algo.rollout(ctx, source.sample(1, g), g)
        current = rollout.samples
        projected = rollout.extras["targets"].reshape(current.shape)  # η = 1: the barycentric projection ū
        images = {"current": current, **{f"eta={eta:g}": ((1 - eta) * current + eta * projected).clamp(-1, 1)
                                         for eta in STEP_SIZES}}
        for name, x in images.items():
            scored = vvr_scores(x, rollout.batch.prompts, rollout.batch.metadata)
            for kind in ("strict", "soft"):
                out.setdefault(f"{name}_{kind}", []).append(scored[kind].float().mean().item())
    return {k: torch.tensor(v) for k, v in out.items()}


def rows_for(name: str, scores: dict[str, torch.Tensor]) -> list[ResultRow]:
    rows = []
    for target in ("current", *(f"eta={eta:g}" for eta in STEP_SIZES)):
        values, se = {}, {}
        for kind in ("strict", "soft"):
            values[kind] = scores[f"{target}_{kind}"].mean().item()
            if target != "current":
                change = scores[f"{target}_{kind}"] - scores[f"current_{kind}"]
                values[f"{kind}_change"] = change.mean().item()
                se[f"{kind}_change"] = (change.std() / len(change) ** 0.5).item()
        rows.append(ResultRow(f"{name}/{target}", values, se, {"groups": len(scores["current_strict"])}))
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoints", nargs="+", required=True, metavar="NAME=PATH", help="one-step checkpoints")
    p.add_argument("--groups", type=int, default=24, help="prompt groups (one RWTD rollout each) per checkpoint")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--results", default=None, help="also write the result file (visalign.results format) here")
    args = p.parse_args(argv)
    if args.groups < 2:
        p.error(f"--groups must be >= 2 (standard errors over groups), got {args.groups}")
    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    rows = []
    for name, path in parse_checkpoints(args.checkpoints).items():
        rows += rows_for(name, group_scores(path, args.groups, args.seed))
    print("| checkpoint | images | strict | change (± SE over groups) | soft | change (± SE) |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        name, target = r.row.split("/")
        changes = [f"{r.values[f'{k}_change']:+.3f} (±{r.se[f'{k}_change']:.3f})" if f"{k}_change" in r.values else ""
                   for k in ("strict", "soft")]
        print(f"| {name} | {target} | {r.values['strict']:.3f} | {changes[0]} | {r.values['soft']:.3f} | {changes[1]} |")
    if args.results:
        write_results(args.results, "rwtd_targets", "python pipelines/rwtd_targets.py",
                      sys.argv[1:] if argv is None else argv, rows,
                      tolerance=Tolerance(se_multiple=3.0, note="sampled groups: changes within 3 SE"),
                      platform_tolerance=Tolerance(se_multiple=3.0),
                      note=f"RWTD's sample-space targets vs the current samples, {args.groups} bin-1 prompt groups of "
                           "32 current + 32 reference images per checkpoint",
                      runtime_s=time.perf_counter() - t0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
