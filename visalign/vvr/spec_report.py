"""VVR v2 benchmark report: strict accuracy overall, per difficulty bin and per criterion (the tables of the
paper), the mean dense score and RL reward, the constant-image floor, and a grid of annotated failures."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .report import annotated_grid, write_files
from .spec import EXTENSION_TYPES
from .spec_task import TASK_VERSION_2, SpecTask
from .spec_verifier import SpecResult


def task_row(task: SpecTask, res: SpecResult | None) -> dict[str, Any]:
    """One results line; ``res`` None for a missing image (a failure)."""
    if res is None:
        return {"task_id": task.id, "difficulty_bin": task.difficulty_bin, "active_criteria": task.active_criteria,
                "strict": False, "dense": 0.0, "reward": 0.0, "missing": True,
                "criteria_strict": {c: False for c in task.active_criteria}}
    crit = res.criteria()
    return {"task_id": task.id, "difficulty_bin": task.difficulty_bin, "active_criteria": task.active_criteria,
            "strict": res.strict, "dense": round(res.dense, 5), "reward": round(res.reward, 5), "extras": res.extras,
            "background_ok": res.background_ok, "forbidden_found": res.forbidden_found,
            "criteria_strict": {c: bool(crit.get(c, res.strict)) for c in task.active_criteria},
            "failed": sorted(k for k, v in crit.items() if not v), "objects": [o.to_dict() for o in res.seg.components]}


def _rate(xs: Sequence[bool]) -> float | None:
    return round(float(np.mean(xs)), 5) if len(xs) else None


def summarize(rows: Sequence[dict[str, Any]], split: str, source: str, tolerances: str,
              floors: dict[str, dict[str, float]] | None = None) -> dict[str, Any]:
    by_bin: dict[int, list[bool]] = defaultdict(list)
    by_crit: dict[str, list[bool]] = defaultdict(list)
    for r in rows:
        by_bin[r["difficulty_bin"]].append(r["strict"])
        for c, ok in r["criteria_strict"].items():
            by_crit[c].append(ok)
    return {
        "version": TASK_VERSION_2, "split": split, "source": source, "tolerances": tolerances, "tasks": len(rows),
        "missing": sum(bool(r.get("missing")) for r in rows),
        "strict_accuracy": _rate([r["strict"] for r in rows]),
        "dense": _rate([r["dense"] for r in rows]), "reward": _rate([r["reward"] for r in rows]),
        "strict_by_difficulty": {str(b): {"tasks": len(v), "strict": _rate(v)} for b, v in sorted(by_bin.items())},
        "strict_by_criterion": {c: {"tasks": len(v), "strict": _rate(v), "extension": c in EXTENSION_TYPES}
                                for c, v in sorted(by_crit.items())},
        "floors": floors or {},
    }


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.2f}%"


def markdown(s: dict[str, Any]) -> str:
    lines = [f"# VVR v2 report ({s['split']})", "", f"- source: `{s['source']}`", f"- tasks: {s['tasks']}"
             + (f" ({s['missing']} missing images, counted as failures)" if s["missing"] else ""),
             f"- tolerances: {s['tolerances']}",
             f"- **strict accuracy (everything satisfied, closed world): {_pct(s['strict_accuracy'])}**",
             f"- mean dense score (partial credit, not an accuracy): {s['dense']}; mean RL reward: {s['reward']}", ""]
    if s["floors"]:
        lines += ["## Against constant images (prompt-independent floor)", "", "| image | strict | mean reward |",
                  "|---|---|---|", f"| **this model** | {_pct(s['strict_accuracy'])} | {s['reward']} |"]
        lines += [f"| {k} | {_pct(v['strict'])} | {round(v['reward'], 4)} |" for k, v in s["floors"].items()]
        lines.append("")
    lines += ["## Per difficulty bin", "", "| bin | tasks | strict |", "|---|---|---|"]
    lines += [f"| {b} | {d['tasks']} | {_pct(d['strict'])} |" for b, d in s["strict_by_difficulty"].items()]
    lines += ["", "## Per criterion (tasks listing it; the criterion's own checks)", "", "| criterion | tasks | strict |",
              "|---|---|---|"]
    lines += [f"| {c}{' (visalign extension)' if d['extension'] else ''} | {d['tasks']} | {_pct(d['strict'])} |"
              for c, d in s["strict_by_criterion"].items()]
    return "\n".join(lines) + "\n"


def failure_grid(items: Sequence[tuple[np.ndarray, SpecTask, SpecResult]], path: str | Path, tile: int = 224) -> Path | None:
    """PNG grid of failed tasks: each image with the parsed objects boxed and labelled, and what failed."""
    tiles = []
    for img, task, res in items:
        failed = sorted(c for c, ok in res.criteria().items() if not ok)
        notes = ([f"extras: {res.extras}"] if res.extras else []) + \
                ([f"background: {res.seg.background_name}"] if not res.background_ok else []) + \
                ([f"forbidden: {', '.join(res.forbidden_found)}"] if res.forbidden_found else [])
        tiles.append((img, [(o.bbox, o.label()) for o in res.seg.components], [task.id] + [f"x {c}" for c in failed] + notes))
    return annotated_grid(tiles, path, tile)


def write_report(out: str | Path, summary: dict[str, Any], rows: Sequence[dict[str, Any]]) -> dict[str, Path]:
    return write_files(out, summary, markdown(summary), rows)
