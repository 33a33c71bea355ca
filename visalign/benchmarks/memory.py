"""Peak memory and step time of one training step, per generator, for a chosen algorithm.

``visalign bench memory --generator tiny_flow --generator tiny_one_step --set generator.image_size=64``.
A generator is a registered name (``tiny_flow``, ``diffusers``, ...) or a YAML file (a run config's ``generator:``
section, or a bare generator mapping); ``--set key.path=value`` overrides any run-config key (generator size,
``algorithm.*``, ``trainer.mixed_precision=bf16``, ``trainer.gradient_checkpointing=true``). Each generator is
measured in a fresh Python process unless ``--in-process``. torch is imported lazily (``visalign --help`` stays fast).

Memory, by device:
* CUDA: ``torch.cuda.max_memory_allocated`` over the measured steps (weights, optimizer state, activations: what the
  caching allocator handed out), and its growth over the allocation before the first step.
* CPU: resident set size (``/proc/self/statm``) sampled every millisecond in a thread: the peak during the measured
  steps, and its growth over the RSS before the first (cold) step, which includes the AdamW state and the activations.
  RSS also counts allocator caching and freed-but-kept pages, so it is an upper-bound estimate, not tensor bytes.
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Sequence

DEFAULT_PROMPTS = ["a red circle", "a blue square", "a green triangle above a red circle", "a yellow star"]
MB = 2**20


class PeakRSS:
    """Context: samples this process's resident set size every ``interval`` seconds; ``peak`` in bytes."""

    def __init__(self, interval: float = 1e-3) -> None:
        self.interval = interval
        self.peak = rss_bytes()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_bytes())
            time.sleep(self.interval)

    def __enter__(self) -> "PeakRSS":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_bytes())


def rss_bytes() -> int:
    """Current resident set size of this process (Linux ``/proc/self/statm``)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")


def generator_section(spec: str) -> dict[str, Any]:
    """``{name: spec}`` for a registered name; the ``generator:`` section (or the whole mapping) of a YAML file."""
    from ..core.config import ConfigError, load_yaml

    if spec.endswith((".yaml", ".yml")):
        data = load_yaml(spec)
        section = data.get("generator", data)
        if not isinstance(section, dict) or not ({"name", "checkpoint"} & set(section)):
            raise ConfigError(f"{spec}: needs a generator section with a name or checkpoint")
        return dict(section)
    return {"name": spec}


def measure(generator: dict[str, Any], algorithm: str = "rwr", reward: str = "brightness", prompts_per_step: int = 2,
            steps: int = 2, overrides: Sequence[str] = ()) -> dict[str, Any]:
    """One warm-up (cold) training step, then ``steps`` measured ones, of ``algorithm`` on ``generator``."""
    import torch

    from ..core.config import apply_overrides, from_dict
    from ..run import RunConfig, build_trainer

    with tempfile.TemporaryDirectory() as out:
        data = {"generator": generator, "reward": reward, "algorithm": {"name": algorithm},
                "prompts": {"name": "list", "prompts": DEFAULT_PROMPTS},
                "trainer": {"steps": steps + 1, "prompts_per_step": prompts_per_step, "log_with": [], "progress": False,
                            "output_dir": out, "eval_batch_size": 1}}
        config = from_dict(RunConfig, apply_overrides(data, list(overrides)))
        torch.manual_seed(0)
        trainer = build_trainer(config)
        device = trainer.accelerator.device
        cuda = device.type == "cuda"
        result: dict[str, Any] = {
            "generator": generator.get("name") or generator.get("checkpoint"), "algorithm": algorithm,
            "device": str(device), "overrides": list(overrides),
            "trainable_params_m": sum(p.numel() for p in trainer.params) / 1e6,
            "total_params_m": sum(p.numel() for p in trainer.policy.parameters()) / 1e6,
        }
        if cuda:
            torch.cuda.synchronize(device)
            before = torch.cuda.memory_allocated(device)
            trainer.train_step()
            torch.cuda.synchronize(device)
            torch.cuda.reset_peak_memory_stats(device)
            start = time.perf_counter()
            for _ in range(steps):
                trainer.train_step()
            torch.cuda.synchronize(device)
            elapsed = time.perf_counter() - start
            peak = torch.cuda.max_memory_allocated(device)
            result.update(memory="cuda max_memory_allocated", peak_mb=peak / MB, growth_mb=(peak - before) / MB)
        else:
            before = rss_bytes()
            with PeakRSS() as cold:
                trainer.train_step()
            with PeakRSS() as warm:
                start = time.perf_counter()
                for _ in range(steps):
                    trainer.train_step()
                elapsed = time.perf_counter() - start
            result.update(memory="cpu peak RSS (sampled)", peak_mb=max(cold.peak, warm.peak) / MB,
                          growth_mb=(max(cold.peak, warm.peak) - before) / MB)
        result["step_s"] = elapsed / steps
    return result


def format_table(rows: Sequence[dict[str, Any]]) -> str:
    header = f"{'generator':<20} {'algorithm':<14} {'trainable M':>11} {'total M':>8} {'step s':>8} {'peak MB':>9} {'growth MB':>9}  memory"
    lines = [header, "-" * len(header)]
    for r in rows:
        lines.append(f"{str(r['generator'])[:20]:<20} {r['algorithm']:<14} {r['trainable_params_m']:>11.3f} {r['total_params_m']:>8.3f} "
                     f"{r['step_s']:>8.3f} {r['peak_mb']:>9.1f} {r['growth_mb']:>9.1f}  {r['memory']}")
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--generator", action="append", default=None,
                        help="a registered generator name or a YAML file with a generator section (repeatable; default tiny_flow)")
    parser.add_argument("--algorithm", default="rwr", help="algorithm of the training step (default rwr)")
    parser.add_argument("--reward", default="brightness", help="reward name (default brightness)")
    parser.add_argument("--prompts-per-step", type=int, default=2)
    parser.add_argument("--steps", type=int, default=2, help="measured steps after one warm-up step")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="run-config override, e.g. generator.image_size=64 or trainer.mixed_precision=bf16")
    parser.add_argument("--json", default=None, help="also write the rows to this JSON file")
    parser.add_argument("--threads", type=int, default=None, help="torch threads")
    parser.add_argument("--in-process", action="store_true",
                        help="measure every generator in this process (default: a fresh process each, so memory freed "
                             "by one does not hide the next one's)")


def _isolated(spec: str, args: argparse.Namespace) -> dict[str, Any]:
    """``measure`` in a fresh Python process, so one generator's freed memory does not hide the next one's."""
    import subprocess
    import sys

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "row.json"
        cmd = [sys.executable, "-m", "visalign.benchmarks.memory", "--in-process", "--generator", spec, "--algorithm", args.algorithm,
               "--reward", args.reward, "--prompts-per-step", str(args.prompts_per_step), "--steps", str(args.steps),
               "--json", str(out), *[f"--set={o}" for o in args.overrides]]
        if args.threads:
            cmd += ["--threads", str(args.threads)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"bench memory of {spec!r} failed:\n{proc.stderr[-3000:]}")
        return json.loads(out.read_text())[0]


def run(args: argparse.Namespace) -> int:
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    rows = []
    for spec in args.generator or ["tiny_flow"]:
        if args.in_process:
            row = measure(generator_section(spec), args.algorithm, args.reward, args.prompts_per_step, args.steps, args.overrides)
        else:
            row = _isolated(spec, args)
        rows.append(row)
        lines = format_table([row]).splitlines()
        print("\n".join(lines if len(rows) == 1 else lines[-1:]), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    raise SystemExit(run(parser.parse_args()))
