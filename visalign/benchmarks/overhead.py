"""Trainer overhead: full-loop time per step vs the bare generator forward+backward on the same batch.

``visalign bench overhead --batch-size 64`` (or ``python -m visalign.benchmarks.overhead``).
"""
from __future__ import annotations

import argparse
import tempfile
import time

import torch


RATIO_TOLERANCE = 0.5  # a trainer/bare ratio within ±50% of the stored one counts as unchanged (busy shared cores)


def _time(fn, repeats: int) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - start) / repeats


def measure(batch_size: int = 64, steps: int = 20, algorithm: str = "rwr", group: int = 8) -> dict[str, float]:
    """Both sides see ``batch_size`` generator samples per step (``batch_size // group`` prompts × ``group``)."""
    from visalign.core import PromptList, build_algorithm, get_reward
    from visalign.generators import TinyOneStepGenerator
    from visalign.trainer import Trainer, TrainerConfig

    torch.manual_seed(0)
    prompts = PromptList(["a red circle", "a blue square", "a green triangle", "a yellow star"])
    policy = TinyOneStepGenerator()
    reward = get_reward("color_match")
    with tempfile.TemporaryDirectory() as out:
        if batch_size % group:
            raise ValueError(f"batch size {batch_size} must be a multiple of the group size {group}")
        cfg = TrainerConfig(steps=steps, prompts_per_step=batch_size // group, output_dir=out, log_with=[], progress=False, max_grad_norm=1.0)
        trainer = Trainer(policy, build_algorithm(_group_config(algorithm, group)), reward, prompts, cfg)
        optimizer = torch.optim.AdamW(policy.parameters(), lr=1e-4)
        batch = prompts.sample(batch_size, torch.Generator().manual_seed(0))
        noise = policy.make_noise(batch_size, torch.Generator().manual_seed(1))

        def bare() -> None:
            loss = policy(noise, batch.prompts).pow(2).mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

        bare_s = _time(bare, steps)
        step_s = _time(trainer.train_step, steps)
    return {"batch_size": batch_size, "bare_fwd_bwd_ms": bare_s * 1e3, "trainer_step_ms": step_s * 1e3, "ratio": step_s / bare_s}


def _group_config(algorithm: str, group: int) -> dict:
    keys = {"rwr": {"num_samples": group}, "rwtd": {"num_current": group, "num_reference": group},
            "festdpo": {"num_samples": group}, "flow_grpo": {"group_size": group}}
    return {"name": algorithm, **keys.get(algorithm, {})}


def run(args: argparse.Namespace) -> int:
    if args.threads:
        torch.set_num_threads(args.threads)
    start = time.perf_counter()
    r = measure(args.batch_size, args.steps, args.algorithm)
    print(f"tiny_one_step, {r['batch_size']} samples per step, algorithm {args.algorithm}")
    print(f"  bare generator fwd+bwd+AdamW : {r['bare_fwd_bwd_ms']:8.1f} ms")
    print(f"  full trainer step            : {r['trainer_step_ms']:8.1f} ms   (sample + reward + loss + step)")
    print(f"  ratio trainer / bare         : {r['ratio']:8.2f}x")
    if args.results:
        from visalign.results import ResultRow, Tolerance, write_results

        cli_args = ["--batch-size", str(args.batch_size), "--steps", str(args.steps), "--algorithm", args.algorithm,
                    *(["--threads", str(args.threads)] if args.threads else [])]
        row = ResultRow(f"{args.algorithm}, batch {args.batch_size}", {"ratio": r["ratio"]},
                        info={"bare_fwd_bwd_ms": round(r["bare_fwd_bwd_ms"], 1), "trainer_step_ms": round(r["trainer_step_ms"], 1)})
        write_results(args.results, "overhead", "visalign bench overhead", cli_args, [row],
                      tolerance=Tolerance(rel=RATIO_TOLERANCE, note="wall-time ratio measured side by side; the times "
                                          "themselves are info, not compared"),
                      platform_tolerance=Tolerance(rel=RATIO_TOLERANCE),
                      runtime_s=time.perf_counter() - start)
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--algorithm", default="rwr", help="objective used in the full loop")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (1 gives stable ratios on a busy machine)")
    parser.add_argument("--results", default=None, help="also write the ratio as a result file (visalign.results format)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    add_arguments(parser)
    raise SystemExit(run(parser.parse_args()))
