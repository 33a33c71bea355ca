"""Measure the verifier on rendered solutions: clean 256 px, JPEG q75, Gaussian noise, 64 px, and mutation catch rate.

``python -m visalign.vvr.accuracy --split bench [--limit N] [--workers 2]``
"""
from __future__ import annotations

import argparse
import io
import json
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np
from PIL import Image

CONDITIONS = ("clean256", "jpeg75", "noise10", "clean64", "mutation")


def jpeg(img: np.ndarray, quality: int = 75) -> np.ndarray:
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, "JPEG", quality=quality)
    return np.asarray(Image.open(buf).convert("RGB"))


def measure_task(task_dict: dict[str, Any], seed: int = 0) -> dict[str, Any]:
    """Outcome of every condition for one task (``True`` = verifier right)."""
    from .mutations import mutate
    from .render import layout, render_scene
    from .task import Task
    from .verifier import verify

    task = Task.from_dict(task_dict)
    scene = layout(task, seed)
    img256 = render_scene(scene, 256, seed=seed)
    out: dict[str, Any] = {"id": task.id, "primary": task.primary, "level": task.level}
    out["clean256"] = verify(img256, task).all_satisfied
    out["jpeg75"] = verify(jpeg(img256), task).all_satisfied
    out["noise10"] = verify(render_scene(scene, 256, noise_std=10.0, seed=seed), task).all_satisfied
    out["clean64"] = verify(render_scene(scene, 64, seed=seed), task).all_satisfied
    mut = mutate(task, scene, seed)
    if mut is not None:
        out["mutation"] = not verify(render_scene(mut[0], 256, seed=seed), task).all_satisfied
        out["mutation_kind"] = mut[1]
    return out


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    summary: dict[str, Any] = {"tasks": len(rows)}
    for cond in CONDITIONS:
        vals = [r[cond] for r in rows if cond in r]
        summary[cond] = {"n": len(vals), "rate": round(float(np.mean(vals)), 5) if vals else None}
    fails = Counter((c, r["primary"]) for r in rows for c in CONDITIONS if c in r and not r[c])
    summary["failures_by_type"] = {f"{c}/{t}": n for (c, t), n in sorted(fails.items())}
    return summary


def main(argv: list[str] | None = None) -> int:
    from tqdm import tqdm

    from .benchmark import load_split

    p = argparse.ArgumentParser(prog="python -m visalign.vvr.accuracy", description=__doc__)
    p.add_argument("--split", default="bench", choices=["bench", "challenge"])
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--out", default=None, help="write the summary JSON here")
    p.add_argument("--results", default=None, help="also write the result file (visalign.results format) here")
    args = p.parse_args(argv)
    tasks = [t.to_dict() for t in load_split(args.split, args.limit)]
    with ProcessPoolExecutor(args.workers) as pool:
        rows = list(tqdm(pool.map(measure_task, tasks, chunksize=16), total=len(tasks), desc="verifying"))
    summary = summarize(rows)
    text = json.dumps(summary, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    if args.results:
        import sys

        from visalign.results import ResultRow, Tolerance, write_results

        result_rows = [ResultRow(cond, {"rate": summary[cond]["rate"]}, info={"n": summary[cond]["n"]})
                       for cond in CONDITIONS if summary[cond]["rate"] is not None]
        write_results(args.results, "vvr_verifier_accuracy", "python -m visalign.vvr.accuracy",
                      sys.argv[1:] if argv is None else argv, result_rows,
                      tolerance=Tolerance(note="renders and verifier are deterministic: compared exactly"),
                      note=f"verifier right on rendered solutions of {len(tasks)} {args.split} tasks")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
