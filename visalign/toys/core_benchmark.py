"""The CoRe benchmark's shared machinery (``pipelines/core_compare_images.py``, ``pipelines/core_video.py``): the
arms, one training run per arm and seed, the per-run figures, the issue's claim checks, the printed table, result
rows and the curves picture. What differs per modality (data, base generator, judge, the judge's parts) stays in the
pipeline."""
from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Callable

import numpy as np

from ..algorithms.core_coevolve import CoRe, CoReConfig
from ..core.generator import load_generator
from ..core.prompts import PromptSource
from ..core.reward import Reward
from ..results import ResultRow, Tolerance, write_results
from ..trainer import Trainer, TrainerCallback, TrainerConfig

ARMS = ("fixed", "core", "anchor_only", "generator_only", "oracle", "oracle_core")
REFIT = {"fixed": "none", **{arm: arm for arm in ARMS[1:]}}
TABLE_KEYS = ["lrm_gain_sd", "judge_base", "judge_peak", "judge_end", "escape_end_x", "spearman_second_half"]

History = list[dict[str, float]]


def add_arguments(parser: argparse.ArgumentParser, **defaults) -> None:
    """The options every CoRe benchmark shares (``defaults`` overrides a default by its dest name)."""
    def add(flag: str, **kw) -> None:
        dest = flag.lstrip("-").replace("-", "_")
        kw["default"] = defaults.get(dest, kw.get("default"))
        parser.add_argument(flag, **kw)

    add("--arms", nargs="*", default=list(ARMS), choices=ARMS)
    add("--seeds", nargs="*", type=int, default=[0, 1, 2])
    add("--steps", type=int, default=200)
    add("--eval-every", type=int, default=20)
    add("--eval-batch", type=int, default=128)
    add("--batch", type=int, default=16, help="generator samples per step")
    add("--lr", type=float, default=5e-5)
    add("--kl-weight", type=float, default=1.0)
    add("--every", type=int, default=5, help="M")
    add("--lrm-steps", type=int, default=10, help="k")
    add("--gen-weight", type=float, default=0.5, help="λ_gen")
    add("--proximal", type=float, default=3.0,
        help="μ (0 lets the refitted LRM drift freely between refits; on images CoRe's judge then falls after ~375 steps)")
    add("--anchor-weight", type=float, default=1.0, help="a")
    add("--r1", type=float, default=0.0, help="γ: R1 penalty on the real latents of the real-vs-generated term")
    add("--ema-decay", type=float, default=None, help="evaluate an EMA of the generator's weights (trainer.ema_decay)")
    add("--lrm-lr", type=float, default=1e-4, help="LRM learning rate during refits")
    add("--threads", type=int, default=1, help="torch CPU threads (1 is fastest on a shared machine)")
    add("--prepare-only", action="store_true")
    add("--report-only", action="store_true", help="rebuild the table and pictures from the run folders")
    add("--results", default=None, help="also write the result file (visalign.results format) here")


def parse_benchmark_args(parser: argparse.ArgumentParser, argv: list[str] | None) -> tuple[argparse.Namespace, Path]:
    """Parse, check that ``--results`` comes with a full run, set torch's threads (``--threads``) and create
    ``--out``."""
    import torch

    args = parser.parse_args(argv)
    if args.results and (args.report_only or args.prepare_only):
        parser.error("--results records a full run (not --report-only / --prepare-only)")
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    return args, out


class JudgeParts(TrainerCallback):
    """At each evaluation, ``measure(trainer)`` (the judge's parts on a fixed batch) appended to ``path`` as JSON
    lines with the step."""

    def __init__(self, path: Path, measure: Callable[[Trainer], dict[str, float]]) -> None:
        self.path, self.measure = path, measure

    def on_train_begin(self, trainer: Trainer) -> None:
        self.path.write_text("")

    def on_evaluate(self, trainer: Trainer, tag: str | None, metrics: dict[str, float]) -> None:
        record = {"step": trainer.step, **self.measure(trainer)}
        with self.path.open("a") as f:
            f.write(json.dumps(record) + "\n")


def run_arm(arm: str, seed: int, paths: dict[str, str], out: Path, args: argparse.Namespace, judge: Reward,
            prompts: PromptSource, measure: Callable[[Path], Callable[[Trainer], dict[str, float]]],
            prompts_per_step: int = 1) -> History:
    """Train ``arm`` from the base generator (``paths``: base, pairs, lrm) in ``out/arm/seed{seed}`` and return its
    evaluation records; ``measure(run_folder)`` gives the judge-parts measurement logged at each evaluation."""
    policy = load_generator(paths["base"])
    algorithm = CoRe(CoReConfig(lrm=paths["lrm"], pairs=paths["pairs"], refit=REFIT[arm], every=args.every,
                                lrm_steps=args.lrm_steps, gen_weight=args.gen_weight,
                                proximal=args.proximal, num_samples=args.batch, kl_weight=args.kl_weight,
                                lrm_learning_rate=args.lrm_lr, anchor_weight=args.anchor_weight, r1=args.r1))
    run = out / arm / f"seed{seed}"
    run.mkdir(parents=True, exist_ok=True)
    cfg = TrainerConfig(steps=args.steps, prompts_per_step=prompts_per_step, learning_rate=args.lr,
                        eval_every=args.eval_every, eval_batch_size=args.eval_batch, seed=seed, log_with=[],
                        ema_decay=args.ema_decay,
                        progress=False, output_dir=str(run))
    trainer = Trainer(policy, algorithm, judge, prompts, cfg, callbacks=[JudgeParts(run / "judge_parts.jsonl", measure(run))])
    trainer.train()
    return with_judge_parts([h for h in trainer.history if "eval/reward_mean" in h], run)


def run_benchmark(args: argparse.Namespace, out: Path, energy_part: str,
                  prepare: Callable[[Path, argparse.Namespace], dict[str, str]],
                  train: Callable[[str, int, dict[str, str]], History],
                  report: Callable[[dict, dict, Path, argparse.Namespace], None],
                  record: tuple[list[str], str, str, str, float] | None = None) -> dict[str, list[dict[str, float]]] | None:
    """``--report-only``: rebuild the report from the run folders. Otherwise ``prepare`` (cached in ``out``), then
    ``train(arm, seed, paths)`` for every arm and seed, printing each run's figures and reporting after each arm, and
    with ``--results`` the result file (``record``: argv, name, command, the note's opening, start time). Returns the
    figures per arm (None with ``--report-only`` / ``--prepare-only``)."""
    if args.report_only:
        curves = {arm: [read_history(out / arm / f"seed{seed}") for seed in args.seeds] for arm in args.arms}
        report({arm: [arm_figures(h, energy_part) for h in runs] for arm, runs in curves.items()}, curves, out, args)
        return None
    paths = prepare(out, args)
    if args.prepare_only:
        return None
    results: dict[str, list[dict[str, float]]] = {}
    curves: dict[str, list[History]] = {}
    for arm in args.arms:
        for seed in args.seeds:
            start = time.perf_counter()
            history = train(arm, seed, paths)
            figures = arm_figures(history, energy_part)
            results.setdefault(arm, []).append(figures)
            curves.setdefault(arm, []).append(history)
            print(f"{arm:15s} seed {seed}: " + ", ".join(f"{k} {v:.3f}" for k, v in figures.items())
                  + f"  ({time.perf_counter() - start:.0f} s)", flush=True)
        report(results, curves, out, args)
    if args.results and record is not None:
        argv, name, command, what, began = record
        write_benchmark_results(args, argv, name, command, results, what, time.perf_counter() - began)
    return results


def read_history(run: Path) -> History:
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()]
    return with_judge_parts([r for r in records if "eval/reward_mean" in r], run)


def with_judge_parts(history: History, run: Path) -> History:
    """Eval records with the judge's parts of the same step added as ``parts/...`` (when the run logged them)."""
    file = run / "judge_parts.jsonl"
    if not file.is_file():
        return history
    parts = {r["step"]: r for r in map(json.loads, file.read_text().splitlines())}
    return [{**h, **{f"parts/{k}": v for k, v in parts.get(h["step"], {}).items() if k != "step"}} for h in history]


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1]) if len(a) > 2 else float("nan")


def arm_figures(history: History, energy_part: str) -> dict[str, float]:
    """One run's figures: LRM gain in initial SDs (original LRM), judge base / peak / end, escape as a multiple of
    the base's, Spearman(LRM, judge) over the second half, and the judge's ``energy_part`` at the end."""
    lrm = np.array([h["eval/lrm_original"] for h in history])
    judge = np.array([h["eval/reward_mean"] for h in history])
    escape = np.array([h["eval/escape_knn"] for h in history])
    half = len(history) // 2
    energy = f"parts/{energy_part}"
    return {"lrm_gain_sd": float((lrm[-1] - lrm[0]) / history[0]["eval/lrm_original_std"]),
            "lrm_current_end": history[-1]["eval/lrm_current"],
            "judge_base": float(judge[0]), "judge_peak": float(judge.max()), "judge_end": float(judge[-1]),
            "escape_end_x": float(escape[-1] / escape[0]), "escape_max_x": float(escape.max() / escape[0]),
            "spearman_second_half": spearman(lrm[half:], judge[half:]),
            **({f"{energy_part}_end": history[-1][energy]} if energy in history[-1] else {})}


def claim_checks(results: dict[str, list[dict[str, float]]]) -> dict[str, list[bool]]:
    """The issue's must-show claims 1-2, per seed."""
    checks: dict[str, list[bool]] = {}
    if "fixed" not in results:
        return checks
    fx = results["fixed"]
    checks["fixed: LRM gain >= 2 initial SD"] = [r["lrm_gain_sd"] >= 2 for r in fx]
    checks["fixed: judge peaks above base then ends below base"] = [r["judge_peak"] > r["judge_base"] > r["judge_end"] for r in fx]
    checks["fixed: escape >= 3x"] = [r["escape_end_x"] >= 3 for r in fx]
    checks["fixed: Spearman(LRM, judge) second half < 0"] = [r["spearman_second_half"] < 0 for r in fx]
    if "core" in results:
        checks["core: judge end >= base + 20% of fixed peak gain"] = [
            c["judge_end"] >= c["judge_base"] + 0.2 * (f["judge_peak"] - f["judge_base"]) for c, f in zip(results["core"], fx)]
        checks["core: judge end >= 0.9 x own best (gains)"] = [
            c["judge_end"] - c["judge_base"] >= 0.9 * (c["judge_peak"] - c["judge_base"]) for c in results["core"]]
        checks["core: escape <= 1.5x"] = [c["escape_end_x"] <= 1.5 for c in results["core"]]
    return checks


def print_report(results: dict[str, list[dict[str, float]]], out: Path, args: argparse.Namespace) -> dict[str, list[bool]]:
    """Print the table (mean ± sd over seeds) and the claim checks; write ``results.json``; return the checks."""
    print("\n| arm | " + " | ".join(TABLE_KEYS) + " |\n|" + "---|" * (len(TABLE_KEYS) + 1))
    for arm, rows in results.items():
        cells = [f"{np.mean([r[k] for r in rows]):.3f} ± {np.std([r[k] for r in rows]):.3f}" for k in TABLE_KEYS]
        print(f"| {arm} | " + " | ".join(cells) + " |")
    checks = claim_checks(results)
    print()
    for name, passed in checks.items():
        print(f"{name}: {sum(passed)}/{len(passed)} seeds")
    (out / "results.json").write_text(json.dumps({"arms": results, "checks": checks, "args": vars(args)}, indent=2))
    return checks


def result_rows(results: dict[str, list[dict[str, float]]], seeds: list[int]) -> list[ResultRow]:
    """Per arm: every figure's mean over seeds and its SD (``_sd``); then the figures per seed (a Spearman
    correlation that is undefined, with too few evaluations, is left out)."""
    rows = []
    for arm, runs in results.items():
        keys = [k for k in runs[0] if all(math.isfinite(r[k]) for r in runs)]
        rows.append(ResultRow(arm, {**{k: float(np.mean([r[k] for r in runs])) for k in keys},
                                    **{f"{k}_sd": float(np.std([r[k] for r in runs])) for k in keys}}))
    rows += [ResultRow(f"seed {seed}/{arm}", {k: v for k, v in run.items() if math.isfinite(v)})
             for arm, runs in results.items() for seed, run in zip(seeds, runs)]
    return rows


def write_benchmark_results(args: argparse.Namespace, argv: list[str], name: str, command: str,
                            results: dict[str, list[dict[str, float]]], what: str, runtime_s: float) -> None:
    """The result file (``args.results``, visalign.results format) of a full benchmark run; ``what`` opens its note."""
    write_results(args.results, name, command, argv, result_rows(results, args.seeds),
                  tolerance=Tolerance(note="fixed seeds on one thread: compared exactly"),
                  note=f"{what}, {args.steps} generator steps: mean and population SD over seeds (LRM gain in initial "
                       "SDs of the original LRM, escape as a multiple of the base's); across platforms training "
                       "diverges, so no cross-platform tolerance",
                  runtime_s=runtime_s)


def plot_curves(curves: dict[str, list[History]], path: Path, energy_part: str, energy_title: str,
                judge_symlog: bool = True) -> None:
    """Original-LRM reward, judge, escape (and the judge's ``energy_part`` when every run logged it) over steps:
    mean over seeds, min-max band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    energy = f"parts/{energy_part}"
    panels = [("eval/lrm_original", "LRM reward (original LRM)"),
              ("eval/reward_mean", "held-out judge (symlog scale)" if judge_symlog else "held-out judge"),
              ("eval/escape_knn", "escape: kNN distance / base")]
    if all(energy in run[0] for runs in curves.values() for run in runs):
        panels.append((energy, energy_title))
    symlog = {"eval/reward_mean", energy} if judge_symlog else {energy}
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4))
    for arm, runs in curves.items():
        steps = [h["step"] for h in runs[0]]
        for ax, (key, title) in zip(axes, panels):
            values = np.array([[h[key] / (run[0][key] if key == "eval/escape_knn" else 1) for h in run] for run in runs])
            line, = ax.plot(steps, values.mean(0), label=arm)
            ax.fill_between(steps, values.min(0), values.max(0), color=line.get_color(), alpha=0.15)
            ax.set_title(title)
            if key in symlog:
                ax.set_yscale("symlog", linthresh=1.0)
            ax.set_xlabel("generator step")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {path}")


__all__ = ["ARMS", "REFIT", "TABLE_KEYS", "add_arguments", "parse_benchmark_args", "JudgeParts", "run_arm", "run_benchmark", "read_history", "with_judge_parts",
           "spearman", "arm_figures", "claim_checks", "print_report", "result_rows", "write_benchmark_results", "plot_curves"]
