"""Align the shipped VVR generators with RWTD, FestDPO, RWR and Flow-GRPO under one sample budget and print a table.

Each method runs from its own config (``configs/vvr_<method>.yaml``, v2; ``--mode v1``: ``configs/v1/``; the configs
differ only in the algorithm section, and the flow methods in the generator, which must be a flow model with an SDE
sampler: ``assets/tiny_flow_vvr2``, v1 ``assets/tiny_flow_vvr``)
through the shared Trainer, with the same prompt stream, steps and seed. Budget: ``--samples-per-step`` generator
samples per step (default 64) for every method; each method's prompts per step is that budget over its config's
``samples_per_prompt`` (RWTD 32 current + 32 reference: 1 prompt; FestDPO 8 reference pair candidates + 4 reference
+ 4 policy KDE centres: 4 prompts; RWR 16: 4 prompts; Flow-GRPO a group of 16 SDE trajectories of ``num_steps``
steps: 4 prompts).

Columns: VVR accuracy before / after (all-satisfied rate and mean soft reward on the evaluated tasks, ``--eval-n``
of the held-out stream or the fit tasks, x ``--eval-draws`` noise draws; same noise and prompts before and after, so the change
comes with a paired standard error), generator samples used in training (counted by the trainer's ``SampleCounter``
callback through the policy's and reference's draw hooks), images the reward scored in rollouts, the distance of the aligned model's outputs to the reference's for the same noise + prompts (mean
L2 in the frozen random conv feature space ``conv``, and pixel RMSE), and wall time per training step.

``--mode`` picks the tasks trained on and scored:

* ``v1`` (default; the README's v1 tables, standard errors over images): train on the v1 training tasks of the config, score ``--eval-n`` held-out
  easy v1 tasks. ``--fit-tasks N`` instead trains and evaluates on N training tasks the checkpoint solves sometimes
  (10–60% of draws): does a method raise the reward it is trained on where a group's rewards differ at all?
* ``heldout`` (VVR v2): train on the ``easy`` pool (prompts ``{name: vvr2, pool: easy}``, complexity <= 20), score
  held-out VVRBench v2 tasks, ``--per-bin`` of each difficulty bin 1-5 (the first bench tasks of each bin).
* ``same_template`` (VVR v2): train on the ``easy`` pool, score ``--eval-n`` unseen tasks of that same distribution
  (the pool's held-out index stream).
* ``easy_to_hard`` (VVR v2): train on bins 1-2 of the ``matched`` pool (the bench's distribution restricted to
  complexity <= 20: ``{name: vvr2, pool: matched, bins: [1, 2]}``), score ``--per-bin`` bench tasks of bins 3-5.

``--train-bins`` trains on those difficulty bins only (e.g. ``--train-bins 1`` where a base pretrained on bin 1 has
signal): ``same_template`` then scores unseen tasks of the same bins, ``easy_to_hard`` the bench bins above them.
``--score-bins`` (same_template) scores unseen tasks of other bins of the pool instead (``--train-bins 1
--score-bins 2``: easy to hard within the easy pool, where a base pretrained on it can solve some harder tasks).

The v2 modes also report every column per difficulty bin, and their paired standard errors count tasks (the changes
of a task's noise draws are averaged first: draws of one task are correlated). ``--checkpoint`` / ``--flow-checkpoint`` replace the
configs' one-step / flow generator (e.g. a v2-pretrained base); the reference is always that checkpoint.

Reward backprop (ReFL / DRaFT) is left out: the VVR reward is a non-differentiable parser.

``--save-every N`` writes a resumable checkpoint of each method's run every N steps, and a rerun with the same
arguments continues each method from its last checkpoint: the result equals an uninterrupted run's (the trainer's
exact resume; sample counts and seconds per step continue too). Runs of hours can so be stopped and picked up again.

    python pipelines/vvr_compare.py                        # v1 held-out mode, ~10 min on 2 CPU cores
    python pipelines/vvr_compare.py --mode heldout --checkpoint assets/tiny_one_step_vvr2 --steps 300 --out runs/vvr2_heldout
    python pipelines/vvr_compare.py --fit-tasks 16 --eval-draws 32 --steps 300 --out runs/vvr_fit
    python pipelines/vvr_compare.py --steps 5 --eval-n 32  # smoke run
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
from tqdm import tqdm

from visalign.core import PromptBatch, build_prompt_source, load_generator
from visalign.core.algorithm import build_algorithm
from visalign.core.prompts import _read_prompt_file
from visalign.features import build_features
from visalign.results import ResultRow, Tolerance, write_results
from visalign.rewards.vvr import vvr_scores
from visalign.vvr.source import task_batch
from visalign.vvr.splits import bench_tasks_per_bin
from visalign.run import build_trainer, load_run_config
from visalign.trainer import SampleCounter, TrainerCallback

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from pipelines import vvr_tasks  # noqa: E402
from pipelines.vvr_pretrain import easy_tasks  # noqa: E402

V1_ONE_STEP = ROOT / "assets" / "tiny_one_step_vvr"

METHODS = ("rwtd", "festdpo", "rwr", "flow_grpo", "diffusion_nft")
V1_METHODS = ("rwtd", "festdpo", "rwr", "flow_grpo")  # the v1 tables' methods (the default of --mode v1)
FLOW_METHODS = ("flow_grpo", "diffusion_nft")  # these train the flow teacher (--flow-checkpoint)
MODES = ("v1", "heldout", "same_template", "easy_to_hard")
TRAIN_SOURCES = {"heldout": {"name": "vvr2", "pool": "easy"}, "same_template": {"name": "vvr2", "pool": "easy"},
                 "easy_to_hard": {"name": "vvr2", "pool": "matched", "bins": [1, 2]}}
ALL_BINS = (1, 2, 3, 4, 5)
EASY_POOL_BINS = (1, 2)  # the easy pool's complexity <= 20


def train_source(mode: str, train_bins: list[int] | None) -> dict:
    """The prompt source a v2 mode trains on; ``train_bins`` replaces its difficulty bins (same_template also
    scores unseen tasks of these bins)."""
    source = dict(TRAIN_SOURCES[mode])
    if train_bins:
        source["bins"] = sorted(set(train_bins))
    return source


def scored_bins(mode: str, source: dict) -> tuple[int, ...]:
    """The bench bins a mode scores: every bin (heldout), or the bins above the highest one trained on (easy_to_hard)."""
    if mode == "heldout":
        return ALL_BINS
    return tuple(b for b in ALL_BINS if b > max(source["bins"]))


@torch.no_grad()
def outputs(gen, prompts: list[str], seed: int = 99) -> torch.Tensor:
    """``gen``'s samples for ``prompts``, 64 at a time from one seeded noise stream."""
    gen.eval()
    out = []
    g = torch.Generator().manual_seed(seed)
    for i in tqdm(range(0, len(prompts), 64), desc="sample", disable=len(prompts) <= 256):
        ps = prompts[i:i + 64]
        out.append(gen.sample(ps, generator=g))
    return torch.cat(out)


def scores(x: torch.Tensor, prompts, meta, batch: int = 256) -> dict[str, torch.Tensor]:
    """Per-image all-satisfied bit and soft reward (scored ``batch`` images at a time)."""
    parts = [vvr_scores(x[i:i + batch], prompts[i:i + batch], meta[i:i + batch])
             for i in tqdm(range(0, len(prompts), batch), desc="score", disable=len(prompts) <= batch)]
    return {"acc": torch.cat([s["strict"] for s in parts]).double(), "soft": torch.cat([s["soft"] for s in parts]).double()}


def paired_se(after: torch.Tensor, before: torch.Tensor, draws: int = 1) -> float:
    """Standard error of the mean before→after change over the same tasks and noise (paired); with ``draws`` > 1
    the changes are first averaged over each task's consecutive draws, so the error counts tasks, not images (draws
    of one task are correlated)."""
    d = after - before
    d = d.reshape(-1, draws).mean(1)
    return float(d.std() / len(d) ** 0.5)


def evaluated_tasks(mode: str, source: dict, eval_n: int, per_bin: int,
                    score_bins: list[int] | None = None) -> tuple[PromptBatch, str]:
    """The tasks a v2 mode trained on ``source`` scores before and after training, and a line saying what they are.
    ``score_bins`` (same_template): ``eval_n`` unseen tasks of each of these bins of the pool instead of the bins
    trained on (e.g. train on bin 1, score bin 2: easy to hard within the pool)."""
    if mode == "same_template":
        if score_bins:
            bins = sorted(set(score_bins))
            batches = [build_prompt_source({**source, "bins": [b]}).eval_batch(eval_n) for b in bins]
            return (PromptBatch([p for b in batches for p in b.prompts], [m for b in batches for m in b.metadata]),
                    f"{eval_n} unseen tasks of each of bins {bins} of the v2 {source['pool']} pool")
        within = f" (bins {source['bins']})" if "bins" in source else ""
        return build_prompt_source(source).eval_batch(eval_n), f"{eval_n} unseen tasks of the v2 {source['pool']} pool{within}"
    bins = scored_bins(mode, source)
    by_bin = bench_tasks_per_bin(bins, per_bin)
    return (task_batch([t for b in bins for t in by_bin[b]]),
            f"{per_bin} VVRBench v2 tasks per difficulty bin {list(bins)}")


def bin_stats(before: dict[str, torch.Tensor], after: dict[str, torch.Tensor], meta: list[dict], draws: int) -> dict[str, dict]:
    """Before / after accuracy and soft reward with paired standard errors (over tasks), per difficulty bin."""
    bins = torch.tensor([m["task"]["difficulty_bin"] for m in meta])
    out = {}
    for b in sorted(set(bins.tolist())):
        sel = bins == b
        out[str(b)] = {"n": int(sel.sum()), **change_stats({k: v[sel] for k, v in before.items()},
                                                             {k: v[sel] for k, v in after.items()}, draws)}
    return out


def change_stats(before: dict[str, torch.Tensor], after: dict[str, torch.Tensor], draws: int = 1) -> dict[str, float]:
    """Means before and after, and the paired standard error of the change (``draws``: see :func:`paired_se`)."""
    return {"acc_before": before["acc"].mean().item(), "acc_after": after["acc"].mean().item(),
            "acc_change_se": paired_se(after["acc"], before["acc"], draws),
            "soft_before": before["soft"].mean().item(), "soft_after": after["soft"].mean().item(),
            "soft_change_se": paired_se(after["soft"], before["soft"], draws)}


def learnable_tasks(out: Path, n: int, pool: int = 384) -> Path:
    """Write the ``n`` of the first ``pool`` v1 training tasks that the v1 one-step checkpoint solves in 10-60% of
    draws (``pipelines/vvr_tasks.learnable_tasks``) to ``out/fit_tasks.jsonl``: tasks where a group's rewards differ,
    so the question is whether a method raises the reward it is trained on."""
    lines = vvr_tasks.learnable_tasks(V1_ONE_STEP, V1_ONE_STEP / "tasks_train.jsonl", n, pool)
    path = out / "fit_tasks.jsonl"
    path.write_text("".join(line + "\n" for line in lines))
    return path


class TrainingClock(TrainerCallback):
    """Training seconds across resumes: every checkpoint records the seconds trained up to its step in ``path``
    (step -> seconds), and a resumed run starts from the seconds recorded at its step, or the last one before it
    (no file: this run only)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self.before, self.start = 0.0, time.perf_counter()

    def on_train_begin(self, trainer) -> None:
        self.start = time.perf_counter()
        if self.path is None:
            return
        recorded = json.loads(self.path.read_text()) if trainer.step and self.path.is_file() else {}
        recorded = {k: v for k, v in recorded.items() if int(k) <= trainer.step}
        self.before = float(recorded[max(recorded, key=int)]) if recorded else 0.0  # a kill may fall between the two saves
        self.path.write_text(json.dumps(recorded) + "\n")

    def seconds(self) -> float:
        return self.before + time.perf_counter() - self.start

    def on_save(self, trainer, path) -> None:
        if self.path is None:
            return
        recorded = json.loads(self.path.read_text())
        recorded[str(trainer.step)] = self.seconds()
        self.path.write_text(json.dumps(recorded) + "\n")


def resumable(folder: Path, argv: list[str]) -> bool:
    """Whether ``folder`` holds a checkpoint of a run started with these same arguments (then it is continued);
    records the arguments for the next rerun."""
    settings = folder / "compare_args.json"
    same = (folder / "checkpoints" / "latest").is_file() and settings.is_file() and json.loads(settings.read_text()) == argv
    folder.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps(argv) + "\n")
    return same


def config_path(mode: str, method: str) -> Path:
    """v1 runs the v1 configs (v1 generators and task files, ``configs/v1/``); the v2 modes the current ones."""
    return ROOT / "configs" / ("v1" if mode == "v1" else "") / f"vvr_{method}.yaml"


def prompts_per_step(algorithm: dict, samples_per_step: int, grad_accum: int = 1) -> int:
    """Prompts per rollout that spend ``samples_per_step`` generator samples per optimizer step with this algorithm
    config when ``grad_accum`` rollouts make one step."""
    per_prompt = build_algorithm(algorithm).samples_per_prompt * grad_accum
    if samples_per_step % per_prompt:
        raise ValueError(f"--samples-per-step {samples_per_step} is not a multiple of {algorithm['name']}'s "
                         f"{per_prompt} samples per prompt group (samples per prompt x trainer.grad_accum {grad_accum})")
    return samples_per_step // per_prompt


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", default="v1", choices=MODES,
                   help="v1: the v1 tables; heldout / same_template / easy_to_hard: VVR v2 (see above)")
    p.add_argument("--methods", nargs="*", default=None, choices=METHODS,
                   help=f"default: {' '.join(V1_METHODS)} in mode v1, all in the v2 modes")
    p.add_argument("--checkpoint", default=None,
                   help="one-step generator checkpoint for every method but the flow ones (default: the configs')")
    p.add_argument("--flow-checkpoint", default=None,
                   help=f"flow generator checkpoint for {', '.join(FLOW_METHODS)} (default: the configs')")
    p.add_argument("--per-bin", type=int, default=100, help="heldout / easy_to_hard: bench tasks scored per difficulty bin")
    p.add_argument("--train-bins", type=int, nargs="+", default=None,
                   help="v2 modes: train only on tasks of these difficulty bins (same_template also scores them; "
                        "easy_to_hard scores the bins above; default: the mode's pool)")
    p.add_argument("--score-bins", type=int, nargs="+", default=None,
                   help="same_template: score --eval-n unseen tasks of each of these bins of the easy pool (1, 2) "
                        "instead of the bins trained on (e.g. --train-bins 1 --score-bins 2: easy to hard)")
    p.add_argument("--steps", type=int, default=60, help="training steps per method (same for all)")
    p.add_argument("--samples-per-step", type=int, default=64,
                   help="generator samples per training step for every method (prompts per step follow from each config)")
    p.add_argument("--eval-n", type=int, default=512,
                   help="v1 / same_template: held-out tasks for before/after (the eval stream's first n)")
    p.add_argument("--eval-draws", type=int, default=2, help="noise draws per evaluated task")
    p.add_argument("--fit-tasks", type=int, default=0,
                   help="train and evaluate on this many training tasks the checkpoint solves sometimes (0: held-out mode)")
    p.add_argument("--fit-pool", type=int, default=384, help="training tasks searched for --fit-tasks")
    p.add_argument("--out", default="runs/vvr_compare")
    p.add_argument("--save-every", type=int, default=0,
                   help="checkpoint each method's run every N steps; a rerun with the same arguments continues from there")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--results", default=None, help="also write the result file (visalign.results format) here")
    p.add_argument("overrides", nargs="*", help="extra key=value overrides applied to every method's config")
    args = p.parse_args(argv)
    start = time.perf_counter()
    given = sys.argv[1:] if argv is None else list(argv)
    if args.save_every < 0:
        p.error(f"--save-every must be >= 0, got {args.save_every}")
    if args.mode != "v1" and args.fit_tasks:
        p.error("--fit-tasks belongs to --mode v1")
    if args.train_bins is not None:
        reachable = {"v1": (), "heldout": EASY_POOL_BINS, "same_template": EASY_POOL_BINS,
                     "easy_to_hard": (1, 2, 3, 4)}[args.mode]
        if not set(args.train_bins) <= set(reachable):
            p.error(f"--train-bins {args.train_bins}: --mode {args.mode} trains on bins from {list(reachable)}"
                    + {"v1": " (v1 tasks have no difficulty bins)", "easy_to_hard": " (it scores the bins above them)"}
                    .get(args.mode, " (the easy pool has complexity <= 20)"))
    if args.score_bins is not None and (args.mode != "same_template"
                                        or not set(args.score_bins) <= set(EASY_POOL_BINS)):
        p.error(f"--score-bins {args.score_bins}: only --mode same_template takes it, with bins of the easy pool "
                f"({', '.join(map(str, EASY_POOL_BINS))}; the other modes score VVRBench bins)")
    methods = args.methods if args.methods is not None else list(V1_METHODS if args.mode == "v1" else METHODS)
    if any(o.startswith("trainer.prompts_per_step=") for o in args.overrides):
        p.error("trainer.prompts_per_step is set per method from --samples-per-step; change that (or the method's samples per prompt)")
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fit_path = learnable_tasks(out, args.fit_tasks, args.fit_pool) if args.fit_tasks else None
    if args.mode != "v1":
        source = train_source(args.mode, args.train_bins)
        evaluated, what = evaluated_tasks(args.mode, source, args.eval_n, args.per_bin, args.score_bins)
    elif fit_path:
        evaluated, what = PromptBatch(*_read_prompt_file(str(fit_path))), f"{args.fit_tasks} fit (training) tasks"
    else:
        evaluated, what = easy_tasks(args.eval_n), f"{args.eval_n} held-out easy VVR tasks"
    evaluated = evaluated.repeat_interleave(args.eval_draws)
    eval_prompts, eval_meta = evaluated.prompts, evaluated.metadata
    se_draws = 1 if args.mode == "v1" else args.eval_draws  # v1: per image, as the README's v1 tables
    phi = build_features("conv").eval()
    rows = []
    for method in methods:
        saving = [f"trainer.save_every={args.save_every}"] if args.save_every else []
        resume = ["trainer.resume_from=latest"] if args.save_every and resumable(out / method, given) else []
        cfg = load_run_config(config_path(args.mode, method), [
            f"trainer.steps={args.steps}", "trainer.eval_batch_size=4", f"trainer.output_dir={out / method}",
            "trainer.progress=true", "trainer.overwrite=true", *args.overrides, *saving, *resume])
        cfg.trainer.prompts_per_step = prompts_per_step(cfg.algorithm, args.samples_per_step, cfg.trainer.grad_accum)
        chosen = args.flow_checkpoint if method in FLOW_METHODS else args.checkpoint
        cfg.generator["checkpoint"] = str(Path(chosen).resolve() if chosen else ROOT / cfg.generator["checkpoint"])
        if args.mode != "v1":
            cfg.prompts = dict(source)
        else:
            for key in ("path", "eval_path"):
                cfg.prompts[key] = str(ROOT / cfg.prompts[key])
        if fit_path:
            cfg.prompts["path"] = cfg.prompts["eval_path"] = str(fit_path)
        counter, clock = SampleCounter(), TrainingClock(out / method / "clock.json" if args.save_every else None)
        trainer = build_trainer(cfg, callbacks=[counter, clock])
        if resume:
            print(f"== {method}: continuing from step {trainer.step} ({out / method})")
        reference = load_generator(cfg.generator["checkpoint"]).eval()
        x_ref = outputs(reference, eval_prompts)
        before = scores(x_ref, eval_prompts, eval_meta)
        print(f"== {method}: {args.steps} steps x {cfg.trainer.prompts_per_step} prompts")
        trainer.train()
        seconds = clock.seconds()
        x = outputs(trainer.policy, eval_prompts)
        after = scores(x, eval_prompts, eval_meta)
        with torch.no_grad():
            feat_dist = (phi(x) - phi(x_ref)).norm(dim=1).mean().item()
        rmse = (x - x_ref).pow(2).mean().sqrt().item()
        row = {"method": method, "mode": args.mode, "generator": cfg.generator["checkpoint"].rsplit("/", 1)[-1],
               "prompts_per_step": cfg.trainer.prompts_per_step, **change_stats(before, after, se_draws),
               "samples_policy": counter.counts["policy"], "samples_reference": counter.counts["reference"],
               "samples_total": counter.counts["policy"] + counter.counts["reference"], "scored": counter.counts["scored"],
               "feat_dist_to_ref": feat_dist, "pixel_rmse_to_ref": rmse, "sec_per_step": seconds / max(args.steps, 1)}
        if args.mode != "v1":
            row["bins"] = bin_stats(before, after, eval_meta, se_draws)
        rows.append(row)
        print(json.dumps(row))
    (out / "table.json").write_text(json.dumps(rows, indent=2) + "\n")
    head = ("method", "generator", "prompts/step", "acc before→after (±SE)", "soft before→after (±SE)", "gen samples (pol+ref)", "scored",
            "conv-feat dist to ref", "pixel RMSE to ref", "s/step")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        lines.append(f"| {r['method']} | {r['generator']} | {r['prompts_per_step']} | {r['acc_before']:.3f} → {r['acc_after']:.3f} (±{r['acc_change_se']:.3f}) | "
                     f"{r['soft_before']:.3f} → {r['soft_after']:.3f} (±{r['soft_change_se']:.3f}) | {r['samples_total']} "
                     f"({r['samples_policy']}+{r['samples_reference']}) | {r['scored']} | {r['feat_dist_to_ref']:.3f} | "
                     f"{r['pixel_rmse_to_ref']:.3f} | {r['sec_per_step']:.2f} |")
    if args.mode != "v1":
        lines += ["", "| method | bin | tasks x draws | acc before→after (±SE) | soft before→after (±SE) |", "|---|---|---|---|---|"]
        for r in rows:
            for b, st in r["bins"].items():
                lines.append(f"| {r['method']} | {b} | {st['n']} | {st['acc_before']:.3f} → {st['acc_after']:.3f} "
                             f"(±{st['acc_change_se']:.3f}) | {st['soft_before']:.3f} → {st['soft_after']:.3f} "
                             f"(±{st['soft_change_se']:.3f}) |")
    table = "\n".join(lines)
    (out / "table.md").write_text(table + "\n")
    print(f"\nmode {args.mode}: {what} x {args.eval_draws} noise draws; steps per method: {args.steps}; "
          f"generator samples per step: {args.samples_per_step}\n")
    print(table)
    if args.results:
        write_results(args.results, "vvr_compare", "python pipelines/vvr_compare.py", sys.argv[1:] if argv is None else argv,
                      [result_row(r) for r in rows],
                      tolerance=Tolerance(note="fixed seeds and threads: compared exactly on the platform that wrote it"),
                      platform_tolerance=Tolerance(se_multiple=2.0, note="elsewhere: after values within 2 combined "
                                                   "paired standard errors; before values and distances exactly"),
                      note=f"{what} x {args.eval_draws} noise draws; {args.steps} steps; "
                           f"{args.samples_per_step} generator samples per step",
                      runtime_s=time.perf_counter() - start)
    return 0


def result_row(row: dict) -> ResultRow:
    """A table row as a result row: accuracies, rewards, distances and sample counts are compared (the after values
    and the changes with their paired standard errors); prompts per step and seconds per step are ``info``."""
    compared = ("acc_before", "acc_after", "soft_before", "soft_after", "feat_dist_to_ref", "pixel_rmse_to_ref",
                "samples_policy", "samples_reference", "scored")
    values = {k: float(row[k]) for k in compared}
    values["acc_change"] = row["acc_after"] - row["acc_before"]
    values["soft_change"] = row["soft_after"] - row["soft_before"]
    se = {"acc_after": row["acc_change_se"], "acc_change": row["acc_change_se"],
          "soft_after": row["soft_change_se"], "soft_change": row["soft_change_se"]}
    for b, st in row.get("bins", {}).items():
        for key in ("acc", "soft"):
            values[f"bin{b}_{key}_before"], values[f"bin{b}_{key}_after"] = st[f"{key}_before"], st[f"{key}_after"]
            se[f"bin{b}_{key}_after"] = st[f"{key}_change_se"]
    return ResultRow(row["method"], values, se, info={"generator": row["generator"], "prompts_per_step": row["prompts_per_step"],
                                                      "sec_per_step": row["sec_per_step"]})


if __name__ == "__main__":
    raise SystemExit(main())
