"""Which VVR base to align from: checkpoints compared on the same unseen tasks and noise, per bin of the easy pool.

Every checkpoint (a flow sampled with its own step count, or a one-step generator) draws ``--eval-draws`` samples for
``--eval-n`` unseen tasks of each of ``--bins`` (the tasks ``vvr_compare.py --mode same_template --score-bins``
scores), from one seeded noise stream. Per bin: strict (all-satisfied) accuracy and soft reward, and each
checkpoint's change from the first one with its paired standard error over tasks (the draws of a task are averaged
first). A pretraining run's own held-out figure uses a few hundred tasks; this is the comparison a method's
before → after sits on.

    python pipelines/vvr_bases.py --checkpoints longer=assets/vvr2_longer/tiny_flow_vvr2 \\
        ema=assets/vvr2_ema/tiny_flow_vvr2 --eval-n 2048
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from visalign.core.generator import load_generator
from visalign.results import ResultRow, Tolerance, write_results

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from pipelines.checkpoint_args import parse_checkpoints  # noqa: E402
from pipelines.vvr_compare import EASY_POOL_BINS, bin_stats, evaluated_tasks, outputs, scores  # noqa: E402

SOURCE = {"name": "vvr2", "pool": "easy"}


def solved_group_rate(acc: torch.Tensor, draws: int) -> tuple[float, float]:
    """Fraction of tasks with at least one solved image among their ``draws`` consecutive draws, and its binomial
    standard error over tasks. A group-relative method (Flow-GRPO's group of 16 samples per prompt) gets strict-reward
    signal only from such groups: in the others every sample fails alike."""
    hit = (acc.reshape(-1, draws).amax(1) > 0).double()
    rate = hit.mean().item()
    return rate, (rate * (1 - rate) / len(hit)) ** 0.5


def compare_bases(named: dict[str, Path], bins: list[int], eval_n: int, draws: int) -> list[dict]:
    """Per checkpoint and bin: accuracy and soft reward, and the change from the first checkpoint (paired SE); with
    several draws, also the fraction of tasks whose draws hold a solved image (:func:`solved_group_rate`)."""
    evaluated, _ = evaluated_tasks("same_template", SOURCE, eval_n, 0, bins)
    evaluated = evaluated.repeat_interleave(draws)
    task_bins = torch.tensor([m["task"]["difficulty_bin"] for m in evaluated.metadata])
    first, rows = None, []
    for name, path in named.items():
        gen = load_generator(path).eval()
        scored = scores(outputs(gen, evaluated.prompts), evaluated.prompts, evaluated.metadata)
        if first is None:
            first = scored
        for b, st in bin_stats(first, scored, evaluated.metadata, draws).items():
            rows.append({"base": name, "checkpoint": str(path), "bin": int(b), "tasks": st["n"] // draws, "draws": draws,
                         "acc": st["acc_after"], "soft": st["soft_after"],
                         "acc_change": st["acc_after"] - st["acc_before"], "acc_change_se": st["acc_change_se"],
                         "soft_change": st["soft_after"] - st["soft_before"], "soft_change_se": st["soft_change_se"]})
            if draws > 1:
                rate, se = solved_group_rate(scored["acc"][task_bins == int(b)], draws)
                rows[-1].update(solved_group=rate, solved_group_se=se)
        print(json.dumps(rows[-len(bins):]))
    return rows


def result_row(row: dict) -> ResultRow:
    """One (checkpoint, bin) row: accuracy, soft reward and the changes from the first checkpoint, with paired SEs."""
    values = {k: round(float(row[k]), 6) for k in ("acc", "soft", "acc_change", "soft_change")}
    se = {"acc_change": row["acc_change_se"], "soft_change": row["soft_change_se"]}
    if "solved_group" in row:
        values["solved_group"], se["solved_group"] = round(float(row["solved_group"]), 6), row["solved_group_se"]
    return ResultRow(f"{row['base']}/bin {row['bin']}", values, se,
                     info={"checkpoint": row["checkpoint"], "tasks": row["tasks"], "draws": row["draws"]})


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoints", nargs="+", required=True,
                   help="name=path of VVR v2 generator checkpoints; changes are measured from the first")
    p.add_argument("--bins", type=int, nargs="+", default=list(EASY_POOL_BINS), help="bins of the easy pool scored")
    p.add_argument("--eval-n", type=int, default=2048, help="unseen tasks per bin (the eval stream's first n)")
    p.add_argument("--eval-draws", type=int, default=1, help="noise draws per task")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--results", default=None, help="also write the result file (visalign.results format) here")
    args = p.parse_args(argv)
    named = parse_checkpoints(args.checkpoints)
    if not set(args.bins) <= set(EASY_POOL_BINS):
        p.error(f"--bins {args.bins}: the easy pool has bins {list(EASY_POOL_BINS)}")
    if args.eval_n < 2 or args.eval_draws < 1:
        p.error(f"--eval-n must be at least 2 and --eval-draws at least 1, got {args.eval_n} and {args.eval_draws}")
    start = time.perf_counter()
    torch.set_num_threads(args.threads)
    rows = compare_bases(named, sorted(set(args.bins)), args.eval_n, args.eval_draws)
    print("\n| base | bin | tasks x draws | strict | change (± paired SE) | soft | change (± paired SE) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['base']} | {r['bin']} | {r['tasks']} x {r['draws']} | {r['acc']:.4f} | {r['acc_change']:+.4f} "
              f"(±{r['acc_change_se']:.4f}) | {r['soft']:.4f} | {r['soft_change']:+.4f} "
              f"(±{r['soft_change_se']:.4f}) |")
    if args.results:
        argv_seen = sys.argv[1:] if argv is None else argv
        write_results(args.results, "vvr_bases", "python pipelines/vvr_bases.py", argv_seen,
                      [result_row(r) for r in rows],
                      tolerance=Tolerance(note="fixed seeds and threads: compared exactly on the platform that "
                                          "wrote it"),
                      platform_tolerance=Tolerance(se_multiple=2.0),
                      note=f"{args.eval_n} unseen tasks of each of bins {sorted(set(args.bins))} of the v2 easy pool x "
                           f"{args.eval_draws} noise draws; changes from {next(iter(named))}",
                      runtime_s=time.perf_counter() - start)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
