"""Write the easy VVR task files the demo and the VVR configs train and evaluate on.

``tasks_train.jsonl`` (training seeds) and ``tasks_eval.jsonl`` (held-out seeds from EVAL_SEED_BASE, never used for
training or pretraining) as prompt-file JSONL: ``{"prompt", "task", "task_id"}`` per line, which the built-in
``prompts: {name: file, path: ..., eval_path: ...}`` source turns into prompts with VVR metadata.

    python pipelines/vvr_tasks.py --out assets/tiny_one_step_vvr --train 1024 --eval 128
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from pipelines.vvr_pretrain import easy_tasks  # noqa: E402


def write(batch, path: Path) -> None:
    with path.open("w") as f:
        for prompt, meta in zip(batch.prompts, batch.metadata):
            f.write(json.dumps({"prompt": prompt, "task": meta["task"], "task_id": meta["task_id"]},
                               sort_keys=True, separators=(",", ":")) + "\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="assets/tiny_one_step_vvr")
    p.add_argument("--train", type=int, default=1024)
    p.add_argument("--eval", type=int, default=128)
    p.add_argument("--seed", type=int, default=20240)
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write(easy_tasks(args.train, args.seed), out / "tasks_train.jsonl")
    write(easy_tasks(args.eval), out / "tasks_eval.jsonl")
    print(f"wrote {out / 'tasks_train.jsonl'} ({args.train}) and {out / 'tasks_eval.jsonl'} ({args.eval})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
