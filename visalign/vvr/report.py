"""Benchmark report: aggregate verifier results into JSON + Markdown and draw a grid of annotated failures."""
from __future__ import annotations

import json
import random
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from PIL import Image, ImageDraw

from .constraints import CONSTRAINT_NAMES
from .prompts import sentence
from .task import TASK_VERSION, Task
from .verifier import VerifyResult


def task_row(task: Task, res: VerifyResult) -> dict[str, Any]:
    return {"task_id": task.id, "level": task.level, "primary": task.primary,
            "types": [c.type for c in task.constraints], **res.to_dict()}


def summarize(rows: Sequence[dict[str, Any]], split: str, source: str) -> dict[str, Any]:
    """Overall, per-constraint-type and per-complexity accuracy."""
    n = len(rows)
    per_type: dict[str, dict[str, Any]] = {}
    cons: dict[str, list[bool]] = defaultdict(list)
    prim: dict[str, list[bool]] = defaultdict(list)
    for r in rows:
        for t, ok in zip(r["types"], r["passed"]):
            cons[t].append(ok)
        prim[r["primary"]].append(r["all_satisfied"])
    for t in CONSTRAINT_NAMES:
        if cons[t] or prim[t]:
            per_type[t] = {"constraints": len(cons[t]), "constraint_accuracy": _rate(cons[t]),
                           "tasks": len(prim[t]), "task_accuracy": _rate(prim[t])}
    per_level: dict[str, dict[str, Any]] = {}
    for lv in sorted({r["level"] for r in rows}):
        sel = [r for r in rows if r["level"] == lv]
        per_level[str(lv)] = {"tasks": len(sel), "accuracy": _rate([r["all_satisfied"] for r in sel]),
                              "mean_fraction": _mean([r["fraction"] for r in sel])}
    return {"version": TASK_VERSION, "split": split, "source": source, "tasks": n,
            "accuracy": _rate([r["all_satisfied"] for r in rows]), "mean_fraction": _mean([r["fraction"] for r in rows]),
            "mean_reward": _mean([r["reward"] for r in rows]), "per_type": per_type, "per_level": per_level}


def _rate(xs: Sequence[bool]) -> float | None:
    return round(float(np.mean(xs)), 5) if len(xs) else None


def _mean(xs: Sequence[float]) -> float | None:
    return round(float(np.mean(xs)), 5) if len(xs) else None


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def markdown(summary: dict[str, Any]) -> str:
    lines = [f"# VVR benchmark report ({summary['split']})", "",
             f"- source: `{summary['source']}`", f"- tasks: {summary['tasks']}",
             f"- **accuracy (all constraints satisfied): {_pct(summary['accuracy'])}**",
             f"- mean fraction of constraints satisfied: {_pct(summary['mean_fraction'])}",
             f"- mean soft reward: {summary['mean_reward']}", "", "## Per complexity level", "",
             "| level | tasks | accuracy | mean fraction |", "|---|---|---|---|"]
    for lv, d in summary["per_level"].items():
        lines.append(f"| {lv} | {d['tasks']} | {_pct(d['accuracy'])} | {_pct(d['mean_fraction'])} |")
    lines += ["", "## Per constraint type", "",
              "| type | constraints | constraint accuracy | tasks (as primary) | task accuracy |", "|---|---|---|---|---|"]
    for t, d in summary["per_type"].items():
        lines.append(f"| {t} | {d['constraints']} | {_pct(d['constraint_accuracy'])} | {d['tasks']} | {_pct(d['task_accuracy'])} |")
    return "\n".join(lines) + "\n"


def annotated_grid(tiles: Sequence[tuple[np.ndarray, list[tuple[tuple[float, float, float, float], str]], list[str]]],
                   path: str | Path, tile: int = 224) -> Path | None:
    """PNG grid: each image with boxes (normalised x0, y0, x1, y1) labelled, and lines of text under it (the first
    black, the rest red)."""
    if not tiles:
        return None
    cols = min(4, len(tiles))
    rows = (len(tiles) + cols - 1) // cols
    text_h = 70
    grid = Image.new("RGB", (cols * tile, rows * (tile + text_h)), (255, 255, 255))
    draw = ImageDraw.Draw(grid)
    for k, (img, boxes, text) in enumerate(tiles):
        x0, y0 = (k % cols) * tile, (k // cols) * (tile + text_h)
        im = Image.fromarray(img).convert("RGB").resize((tile, tile), Image.NEAREST)
        d = ImageDraw.Draw(im)
        for (bx0, by0, bx1, by1), label in boxes:
            bx = (bx0 * tile, by0 * tile, bx1 * tile - 1, by1 * tile - 1)
            d.rectangle(bx, outline=(0, 0, 0))
            d.text((bx[0] + 1, max(0, bx[1] - 10)), label, fill=(0, 0, 0))
        grid.paste(im, (x0, y0))
        for j, line in enumerate(text[:5]):
            draw.text((x0 + 3, y0 + tile + 2 + 13 * j), line[:38], fill=(160, 0, 0) if j else (0, 0, 0))
    path = Path(path)
    grid.save(path)
    return path


def failure_grid(items: Sequence[tuple[np.ndarray, Task, VerifyResult]], path: str | Path, tile: int = 224) -> Path | None:
    """PNG grid of failed tasks: each image with the parsed objects boxed and labelled, and the failed constraints."""
    rng = random.Random(0)
    tiles = []
    for img, task, res in items:
        w, h = res.parsed.width, res.parsed.height
        boxes = [((o.bbox[0] / w, o.bbox[1] / h, o.bbox[2] / w, o.bbox[3] / h), o.label()) for o in res.parsed.objects]
        failed = [sentence(c, rng) for c, ok in zip(task.constraints, res.passed) if not ok]
        tiles.append((img, boxes, [task.id + (f"  gate={res.gate:.2f}" if res.gate < 1 else "")] + [f"x {s}" for s in failed]))
    return annotated_grid(tiles, path, tile)


def write_files(out: str | Path, summary: dict[str, Any], markdown_text: str, rows: Sequence[dict[str, Any]]) -> dict[str, Path]:
    """report.json, report.md and results.jsonl in ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "report.json", "markdown": out / "report.md", "results": out / "results.jsonl"}
    paths["json"].write_text(json.dumps(summary, indent=2) + "\n")
    paths["markdown"].write_text(markdown_text)
    paths["results"].write_text("".join(json.dumps(r, default=float) + "\n" for r in rows))
    return paths


def write_report(out: str | Path, summary: dict[str, Any], rows: Sequence[dict[str, Any]]) -> dict[str, Path]:
    return write_files(out, summary, markdown(summary), rows)
