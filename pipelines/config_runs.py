"""Run shipped configs as they are (``visalign train CONFIG``) and record each one's eval reward before → after.

The video and audio-video configs run 6 steps each: a check that every part of a run fits together on the shipped
checkpoints, not a result about the methods. Each run goes to ``--out/<config name>`` (a fresh folder per run).

    python pipelines/config_runs.py                        # the six video / audio-video configs (~1-2 min)
    python pipelines/config_runs.py --configs configs/demo.yaml --out runs/configs
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from visalign.results import ResultRow, Tolerance, write_results
from visalign.run import build_trainer, load_run_config
from visalign.trainer import TrainerCallback

VIDEO_CONFIGS = ("video_flow_grpo", "video_reward_backprop", "video_rwr", "video_rwtd", "av_flow_grpo", "av_rwr")


class EvalRewards(TrainerCallback):
    """Keeps the eval reward of each tagged evaluation ("before", "after")."""

    def __init__(self) -> None:
        self.by_tag: dict[str, float] = {}

    def on_evaluate(self, trainer, tag, metrics) -> None:
        if tag:
            self.by_tag[tag] = metrics["eval/reward_mean"]


def run_config(path: Path, out: Path) -> dict[str, float]:
    """Train ``path`` with its own settings into ``out``; the eval reward before and after."""
    rewards = EvalRewards()
    trainer = build_trainer(load_run_config(path, [f"trainer.output_dir={out}", "trainer.progress=false"]), [rewards])
    try:
        trainer.train()
    finally:
        trainer.close()
    return {"before": rewards.by_tag["before"], "after": rewards.by_tag["after"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", nargs="+", type=Path, default=[Path(f"configs/{c}.yaml") for c in VIDEO_CONFIGS])
    parser.add_argument("--out", type=Path, default=Path("runs/config_runs"))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--results", default=None, help="also write the result file (visalign.results format) here")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    began, rows = time.perf_counter(), []
    for path in args.configs:
        if not path.is_file():
            parser.error(f"no config file {path}")
        folder = args.out / path.stem
        if folder.exists() and any(folder.iterdir()):
            parser.error(f"{folder} is not empty: pick another --out (runs are never written over)")
        start = time.perf_counter()
        rewards = run_config(path, folder)
        print(f"{path.stem:24s} eval reward {rewards['before']:.3f} -> {rewards['after']:.3f}  "
              f"({time.perf_counter() - start:.0f} s)", flush=True)
        rows.append(ResultRow(path.stem, rewards))
    if args.results:
        write_results(args.results, "config_runs", "python pipelines/config_runs.py", sys.argv[1:] if argv is None else argv,
                      rows, tolerance=Tolerance(note="fixed seeds, one thread: compared exactly on the platform that wrote it"),
                      note="each config as shipped (its own steps, seed and eval prompts): eval reward before and after",
                      runtime_s=time.perf_counter() - began)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
