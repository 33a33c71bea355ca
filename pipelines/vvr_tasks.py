"""Write the easy VVR task files the demo and the VVR configs train and evaluate on.

``tasks_train.jsonl`` (training seeds) and ``tasks_eval.jsonl`` (held-out seeds from EVAL_SEED_BASE, never used for
training or pretraining) as prompt-file JSONL: ``{"prompt", "task", "task_id"}`` per line, which the built-in
``prompts: {name: file, path: ..., eval_path: ...}`` source turns into prompts with VVR metadata.

``--version 2`` (default) writes closed-world v2 tasks of the ``easy`` pool up to ``--max-complexity`` (the
distribution ``assets/tiny_one_step_vvr2`` was pretrained on); ``--version 1`` the v1 level-0 tasks.
``--fit N --checkpoint DIR`` also writes ``tasks_fit.jsonl``: the N training tasks the checkpoint solves most often
within 10-60% of noise draws (the demo's tasks: a group's rewards differ, so there is something to learn).

    python pipelines/vvr_tasks.py --out assets/tiny_one_step_vvr2 --fit 16 --checkpoint assets/tiny_one_step_vvr2
    python pipelines/vvr_tasks.py --version 1 --out assets/tiny_one_step_vvr --train 1024 --eval 128
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from pipelines.vvr_pretrain import MAX_COMPLEXITY, easy_tasks, easy_tasks_v2  # noqa: E402
from visalign.core import PromptBatch, load_generator  # noqa: E402
from visalign.core.prompts import _read_prompt_file  # noqa: E402
from visalign.rewards.vvr import VVRReward  # noqa: E402


def write(batch: PromptBatch, path: Path) -> None:
    with path.open("w") as f:
        for prompt, meta in zip(batch.prompts, batch.metadata):
            f.write(json.dumps({"prompt": prompt, "task": meta["task"], "task_id": meta["task_id"]},
                               sort_keys=True, separators=(",", ":")) + "\n")


@torch.no_grad()
def solve_rates(checkpoint: str | Path, batch: PromptBatch, draws: int, seed: int = 5) -> torch.Tensor:
    """Per task, the fraction of ``draws`` noise draws of the checkpoint that satisfy the task (strict)."""
    gen = load_generator(checkpoint).eval()
    repeated = batch.repeat_interleave(draws)
    g = torch.Generator().manual_seed(seed)
    out = [gen.sample(repeated.prompts[i:i + 64], generator=g) for i in range(0, len(repeated.prompts), 64)]
    solved = VVRReward(strict=True)(torch.cat(out), repeated.prompts, repeated.metadata).double()
    return solved.reshape(len(batch.prompts), draws).mean(1)


def learnable_tasks(checkpoint: str | Path, task_file: str | Path, n: int, pool: int = 384, draws: int = 16,
                    band: tuple[float, float] = (0.1, 0.6)) -> list[str]:
    """The lines of the ``n`` tasks, of the first ``pool`` in ``task_file``, that ``checkpoint`` solves most often
    within ``band`` of ``draws`` noise draws. Most easy tasks are (almost) never solved by a tiny checkpoint, so their
    groups carry equal rewards and no learning signal; on these a method can show whether it raises its reward."""
    lines = [line for line in Path(task_file).read_text().splitlines() if line.strip()][:pool]
    prompts, meta = (v[:pool] for v in _read_prompt_file(str(task_file)))
    rates = solve_rates(checkpoint, PromptBatch(prompts, meta), draws)
    ranked = [i for i in rates.argsort(descending=True).tolist() if band[0] <= rates[i] <= band[1]][:n]
    if len(ranked) < n:
        raise ValueError(f"only {len(ranked)} of {len(lines)} tasks of {task_file} are solved by {checkpoint} at a "
                         f"rate in {band}; ask for fewer tasks or search a larger pool")
    return [lines[i] for i in ranked]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", type=int, choices=(1, 2), default=2)
    p.add_argument("--max-complexity", type=int, default=MAX_COMPLEXITY, help="v2: largest task complexity")
    p.add_argument("--out", default="assets/tiny_one_step_vvr2")
    p.add_argument("--train", type=int, default=1024)
    p.add_argument("--eval", type=int, default=128)
    p.add_argument("--seed", type=int, default=20240)
    p.add_argument("--fit", type=int, default=0, help="also write this many learnable training tasks (needs --checkpoint)")
    p.add_argument("--fit-pool", type=int, default=512, help="training tasks searched for --fit")
    p.add_argument("--checkpoint", default=None, help="generator whose solve rates choose the --fit tasks")
    args = p.parse_args(argv)
    if args.fit and not args.checkpoint:
        p.error("--fit needs --checkpoint")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tasks = (lambda n, seed: easy_tasks_v2(n, seed, args.max_complexity)) if args.version == 2 else easy_tasks
    write(tasks(args.train, args.seed), out / "tasks_train.jsonl")
    write(tasks(args.eval, None), out / "tasks_eval.jsonl")
    print(f"wrote {out / 'tasks_train.jsonl'} ({args.train}) and {out / 'tasks_eval.jsonl'} ({args.eval})")
    if args.fit:
        lines = learnable_tasks(args.checkpoint, out / "tasks_train.jsonl", args.fit, args.fit_pool)
        (out / "tasks_fit.jsonl").write_text("".join(line + "\n" for line in lines))
        print(f"wrote {out / 'tasks_fit.jsonl'} ({args.fit} tasks {args.checkpoint} solves in 10-60% of draws)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
