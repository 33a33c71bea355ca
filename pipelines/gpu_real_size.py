"""Real-size check of the diffusers adapters: training steps of each shipped diffusers config on its model family at
the published size (random weights, bf16, LoRA, gradient checkpointing), with peak GPU memory and step times.

    python pipelines/gpu_real_size.py --out runs/real_size                 # on a GPU: every family (README: what one H200 showed)
    python pipelines/gpu_real_size.py --tiny --out runs/real_size_tiny     # the same code on CPU with tiny widths
    python pipelines/gpu_real_size.py --from-disk wan2.1-t2v-1.3b      # Wan also: save, then `visalign train` on the folder
    python pipelines/gpu_real_size.py --isolate --family-timeout 240 --steps 1   # each family in its own process

Per family it builds the pipeline (``visalign.benchmarks.real_size``), builds the adapter and the trainer from the
shipped YAML (the adapter gets the in-memory pipeline; ``generator.path`` is only recorded; ``--steps`` steps, 2 by
default since the first one warms up; no eval), runs them and records: denoiser and LoRA parameters, each step's
rollout and update seconds, ``torch.cuda.max_memory_allocated`` over training, whether every loss was finite and
whether only LoRA weights moved (the frozen base unchanged). ``--from-disk FAMILY`` additionally saves that pipeline with
``save_pretrained`` and runs ``python -m visalign.cli train CONFIG generator.path=FOLDER`` in a fresh process: the path
a user with real weights takes. Results go to ``OUT/real_size.json`` (one record per family, written as each ends).
"""
from __future__ import annotations

import argparse
import gc
import json
import math
import subprocess
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from visalign.benchmarks.real_size import FAMILIES, build_real_size  # noqa: E402
from visalign.core.algorithm import build_algorithm  # noqa: E402
from visalign.core.config import from_dict  # noqa: E402
from visalign.core.generator import GENERATORS  # noqa: E402
from visalign.core.prompts import build_prompt_source  # noqa: E402
from visalign.core.reward import build_reward  # noqa: E402
from visalign.run import load_run_config  # noqa: E402
from visalign.trainer import Trainer, TrainerCallback  # noqa: E402

CHECK_OVERRIDES = ("trainer.eval_every=0", "trainer.save_every=0", "trainer.progress=false")


class StepTimer(TrainerCallback):
    """Seconds of each step's rollout (sampling + rewards) and update (loss, backward, optimizer), device synced."""

    def __init__(self, device: torch.device) -> None:
        self.device, self.marks, self.steps = device, {}, []

    def _now(self) -> float:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return time.perf_counter()

    def on_rollout_begin(self, trainer) -> None:
        self.marks["begin"] = self._now()

    def on_rollout_end(self, trainer, rollout) -> None:
        self.marks["rollout"] = self._now()

    def on_step_end(self, trainer, metrics) -> None:
        end = self._now()
        self.steps.append(dict(rollout_s=round(self.marks["rollout"] - self.marks["begin"], 2),
                               update_s=round(end - self.marks["rollout"], 2)))


def _overrides(family: str, tiny: bool, run_dir: Path, extra: list[str], steps: int) -> list[str]:
    spec = FAMILIES[family]
    return [f"trainer.steps={steps}", *CHECK_OVERRIDES, *spec.overrides, *(spec.tiny_overrides if tiny else ()), *extra, f"trainer.output_dir={run_dir}",
            "trainer.overwrite=true"]


def _frozen_fingerprint(module: torch.nn.Module) -> torch.Tensor:
    """Float64 sum of every frozen parameter: changes when any frozen weight moves (the base under a LoRA)."""
    sums = [p.detach().double().sum() for p in module.parameters() if not p.requires_grad]
    return torch.stack(sums) if sums else torch.zeros(0, dtype=torch.float64)


def _gb(n: int) -> float:
    return round(n / 2**30, 2)


def check_in_memory(family: str, tiny: bool, out: Path, device: torch.device, from_disk: bool = False,
                    extra: list[str] = (), steps: int = 2) -> dict:
    """Build the family, train ``steps`` steps of its shipped config, and record what they cost."""
    spec = FAMILIES[family]
    overrides = _overrides(family, tiny, out / family / "run", list(extra), steps)
    config = load_run_config(ROOT / spec.config, overrides)
    section = dict(config.generator)
    name = section.pop("name")
    baseline = torch.cuda.memory_allocated(device) if device.type == "cuda" else 0
    start = time.perf_counter()
    pipeline = build_real_size(family, tiny=tiny, device=device)
    cls = GENERATORS.get(name)
    generator_config = from_dict(cls.config_class, section, prefix=f"generator({name})")
    saved = save_pipeline(pipeline, generator_config.dtype, out / family / "pipeline") if from_disk else None
    generator = cls(generator_config, pipeline=pipeline)
    build_s = time.perf_counter() - start
    denoiser = generator.trainable_module()
    trainable = {n: p.detach().clone() for n, p in denoiser.named_parameters() if p.requires_grad}
    frozen_sums = _frozen_fingerprint(denoiser)  # per-tensor sums, not a copy: a real-size base would not fit twice
    trainer = Trainer(generator, build_algorithm(config.algorithm), build_reward(config.reward),
                      build_prompt_source(config.prompts), config.trainer, callbacks=[timer := StepTimer(device)])
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        held = torch.cuda.memory_allocated(device) - baseline
    start = time.perf_counter()
    summary = trainer.train()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    train_s = time.perf_counter() - start
    moved = [n for n, p in denoiser.named_parameters() if n in trainable and not torch.equal(p.detach(), trainable[n])]
    losses = [v for h in trainer.history for k, v in h.items() if k.endswith("loss") and isinstance(v, float)]
    record = dict(
        family=family, config=spec.config, overrides=overrides, device=str(device),
        denoiser_params_b=round(sum(p.numel() for p in denoiser.parameters()) / 1e9, 3),
        lora_params=sum(p.numel() for p in trainable.values()),
        noise_shape=list(generator.noise_shape), build_s=round(build_s, 1), train_s=round(train_s, 1), steps=timer.steps,
        losses=losses, loss_finite=bool(losses) and all(math.isfinite(v) for v in losses),
        moved=len(moved), trainable=len(trainable), only_lora_moved=bool(moved) and all("lora" in n for n in moved),
        frozen_unchanged=torch.equal(_frozen_fingerprint(denoiser), frozen_sums), summary_keys=sorted(summary)[:12])
    if device.type == "cuda":
        record.update(weights_gb=_gb(held), peak_gb=_gb(torch.cuda.max_memory_allocated(device) - baseline),
                      leftover_gb=_gb(baseline))
    trainer.close()
    if saved is not None:
        del trainer, generator, pipeline
        if device.type == "cuda":
            torch.cuda.empty_cache()
        record["from_disk"] = check_from_disk(family, saved, tiny, out, list(extra), steps)
    return record


def save_pipeline(pipeline, dtype: str, folder: Path) -> dict:
    """The untouched pipeline in the config's weight dtype, saved as a user's diffusers folder (before any LoRA)."""
    from visalign.generators.diffusers_flow.base import DTYPES

    start = time.perf_counter()
    pipeline.to(dtype=DTYPES[dtype])
    pipeline.save_pretrained(str(folder))
    return dict(folder=folder, save_s=round(time.perf_counter() - start, 1))


def check_from_disk(family: str, saved: dict, tiny: bool, out: Path, extra: list[str], steps: int) -> dict:
    """Run the shipped config on the saved folder through the CLI, in a fresh process."""
    folder = saved["folder"]
    cmd = [sys.executable, "-m", "visalign.cli", "train", str(ROOT / FAMILIES[family].config), f"generator.path={folder}",
           *_overrides(family, tiny, out / family / "cli_run", extra, steps)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    return dict(command=" ".join(cmd[1:]), rc=proc.returncode, save_s=saved["save_s"], run_s=round(time.perf_counter() - start, 1),
                tail=(proc.stdout + proc.stderr)[-1500:])


def check_isolated(family: str, argv: list[str], out: Path, limit_s: float) -> dict:
    """One family in a child process of this script (``--families FAMILY``, the other options as given) under
    ``limit_s`` seconds: a CUDA error or a leak in one family cannot reach the next. Its record, or why there is none."""
    cmd = [sys.executable, str(Path(__file__).resolve()), *argv, "--families", family, "--out", str(out / family)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=limit_s)
    except subprocess.TimeoutExpired:
        return dict(family=family, error=f"over its {limit_s:g} s limit (--family-timeout)")
    result = out / family / "real_size.json"
    if not result.is_file():
        return dict(family=family, error=f"the child process exited {proc.returncode} without a record",
                    traceback=(proc.stdout + proc.stderr)[-3000:])
    return json.loads(result.read_text())["results"][0]


def child_argv(args: argparse.Namespace) -> list[str]:
    """The options a family's child process repeats from this run (the parent sets its family and folder)."""
    argv = ["--steps", str(args.steps)]
    if args.tiny:
        argv.append("--tiny")
    if args.set:
        argv += ["--set", *args.set]
    if args.from_disk:
        argv += ["--from-disk", *args.from_disk]
    return argv


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    parser.add_argument("--tiny", action="store_true", help="tiny widths and depths (CPU tests of this script)")
    parser.add_argument("--from-disk", nargs="*", default=[], choices=list(FAMILIES), metavar="FAMILY",
                        help="these families are also saved and trained through the CLI from the folder")
    parser.add_argument("--out", type=Path, default=Path("runs/real_size"))
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="extra config overrides for every family")
    parser.add_argument("--steps", type=int, default=2, help="training steps per family (the first one warms up)")
    parser.add_argument("--budget-s", type=float, default=0, help="skip the remaining families after this many seconds (0: none)")
    parser.add_argument("--isolate", action="store_true", help="run each family in its own child process (a CUDA error or "
                        "leftover memory in one cannot reach the next)")
    parser.add_argument("--family-timeout", type=float, default=600, help="with --isolate: seconds each family may take")
    return parser


def main() -> int:
    args = build_parser().parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    args.out.mkdir(parents=True, exist_ok=True)
    results, start = [], time.perf_counter()
    for family in args.families:
        if args.budget_s and time.perf_counter() - start > args.budget_s:
            results.append(dict(family=family, skipped=f"over the {args.budget_s} s budget"))
            continue
        if args.isolate:
            left = args.budget_s - (time.perf_counter() - start) if args.budget_s else math.inf
            record = check_isolated(family, child_argv(args), args.out, min(args.family_timeout, left))
        else:
            try:
                record = check_in_memory(family, args.tiny, args.out, device, family in args.from_disk, args.set, args.steps)
            except Exception as exc:  # one family's failure must not hide the others' figures
                import traceback

                record = dict(family=family, error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc()[-3000:])
        results.append(record)
        print(json.dumps({k: v for k, v in record.items() if k not in ("traceback", "overrides")}), flush=True)
        (args.out / "real_size.json").write_text(json.dumps(dict(device=torch.cuda.get_device_name() if device.type == "cuda"
                                                                 else "cpu", torch=torch.__version__, results=results), indent=1))
        gc.collect()  # a failed family's trainer sits in reference cycles: free its weights before the next build
        if device.type == "cuda":
            torch.cuda.empty_cache()
    failed = [r["family"] for r in results if "error" in r or not r.get("loss_finite", True) or not r.get("only_lora_moved", True)
              or not r.get("frozen_unchanged", True) or r.get("from_disk", {}).get("rc", 0) != 0]
    print("failed:", failed or "none")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
