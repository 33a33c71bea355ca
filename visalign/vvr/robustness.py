"""Robustness of the v2 verifier to how generators draw: correct scenes rendered with shifted palettes, warm
gradient backgrounds and lighting, shaded objects, soft edges and any rotation must still pass.

``python -m visalign.vvr.robustness [--split bench] [--n 300]`` prints one pass rate per condition (strict, default
tolerances, 256 px)."""
from __future__ import annotations

import argparse
import json
import random
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

from .colour_model import BACKGROUND_COLOURS, OBJECT_COLOURS
from .geometry import outline
from .predicates import evaluate
from .render import render_scene
from .spec_geometry import WitnessView
from .spec_sampler import LAYOUT_MARGIN, TOLERANCES, TRUTH_MARGIN
from .spec_task import SpecTask
from .task import Obj, Scene

#: colours as image generators tend to draw them (CSS-like names, lime greens, cyan-blue, violet, true purple)
SHIFTED_PALETTES: dict[str, dict[str, tuple[int, int, int]]] = {
    "web": {"red": (255, 0, 0), "orange": (255, 165, 0), "yellow": (255, 215, 0), "green": (50, 205, 50),
            "cyan": (0, 206, 209), "blue": (0, 145, 240), "purple": (128, 0, 128), "pink": (255, 105, 180)},
    "diffusion": {"red": (200, 30, 45), "orange": (235, 110, 20), "yellow": (240, 200, 60), "green": (90, 190, 60),
                  "cyan": (40, 170, 200), "blue": (30, 70, 170), "purple": (138, 43, 226), "pink": (240, 130, 170)},
    "muted": {"red": (190, 60, 55), "orange": (210, 130, 60), "yellow": (220, 195, 80), "green": (70, 150, 90),
              "cyan": (70, 175, 185), "blue": (70, 100, 190), "purple": (120, 80, 170), "pink": (215, 110, 160)},
}
CONDITIONS = ("palette_web", "palette_diffusion", "palette_muted", "warm_gradient", "shading", "soft_edges",
              "rotated", "all_at_once")


def _rotated(task: SpecTask, seed: int) -> Scene:
    """The witness with every object not in contact with another turned to a random angle (kept only where the
    spec still holds on the witness with its margins, else that object keeps its angle)."""
    rng = random.Random(seed)
    scene = Scene([Obj(**vars(o)) for o in task.witness.objects], list(task.witness.contacts))
    free = [i for i, o in enumerate(scene.objects)
            if o.shape != "circle" and not any(i in (c.a, c.b) for c in scene.contacts)]
    for i in free:
        old = scene.objects[i].rot
        scene.objects[i].rot = rng.randrange(0, 360)
        if not _holds(scene, task):
            scene.objects[i].rot = old
    return scene


def _holds(scene: Scene, task: SpecTask) -> bool:
    view = WitnessView(scene)
    for tol in TOLERANCES:
        a, groups, rels = evaluate(view, task.spec, tol)
        if any(o.margin < LAYOUT_MARGIN for c in groups.values() for k, o in c.items()
               if k in ("absolute_region", "grid_occupancy")):
            return False
        if any(o.margin < TRUTH_MARGIN[r.type] for r, o in zip(task.spec.relations, rels)):
            return False
    return True


def _gradient(img: np.ndarray, background: str, seed: int) -> np.ndarray:
    """Lighting that falls off across the image with a warm tint (brighter and warmer in one corner)."""
    rng = np.random.default_rng(seed)
    h, w = img.shape[:2]
    ang = rng.uniform(0, 2 * np.pi)
    yy, xx = np.mgrid[0:h, 0:w] / max(h, w)
    ramp = (np.cos(ang) * (xx - 0.5) + np.sin(ang) * (yy - 0.5)) + 0.5  # 0..1 across the image
    lo = 0.9 if background in ("white", "pale pink", "pale cyan") else 0.8
    gain = lo + (1.0 - lo) * ramp + (0.08 if background in ("black", "dark gray") else 0.0)
    out = img.astype(np.float32) * gain[..., None]
    out[..., 0] += 10 * ramp
    out[..., 2] -= 10 * ramp
    return np.clip(out, 0, 255).round().astype(np.uint8)


def _shaded(img: np.ndarray, scene: Scene, seed: int) -> np.ndarray:
    """Each object lit from one side: its colour scaled from 1.15 to 0.7 across it (as a shaded 3-D body)."""
    rng = np.random.default_rng(seed)
    size = img.shape[0]
    out = img.astype(np.float32)
    k = size / 1000.0
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
    for o in scene.objects:
        m = Image.new("L", (size, size), 0)
        ImageDraw.Draw(m).polygon([tuple(p) for p in outline(o.shape, o.x * k, o.y * k, o.s * k, o.rot)], fill=255)
        mask = np.asarray(m, np.float32) / 255.0
        ang = rng.uniform(0, 2 * np.pi)
        r = max(o.s * k, 1.0)
        t = np.clip((np.cos(ang) * (xx - o.x * k) + np.sin(ang) * (yy - o.y * k)) / r, -1, 1)
        gain = 0.925 + 0.225 * t
        out = out * (1 - mask[..., None]) + np.clip(out * gain[..., None], 0, 255) * mask[..., None]
    return np.clip(out, 0, 255).round().astype(np.uint8)


def variants(task: SpecTask, seed: int, size: int = 256) -> dict[str, np.ndarray]:
    """The correct scene of ``task`` drawn under every condition of :data:`CONDITIONS`."""
    bg = task.background

    def draw(scene: Scene, colours: dict[str, tuple[int, int, int]] = OBJECT_COLOURS) -> np.ndarray:
        return render_scene(scene, size, bg, colours=colours, backgrounds=BACKGROUND_COLOURS)

    base = draw(task.witness)
    rot = _rotated(task, seed)
    out = {f"palette_{k}": draw(task.witness, p) for k, p in SHIFTED_PALETTES.items()}
    out["warm_gradient"] = _gradient(base, bg, seed)
    out["shading"] = _shaded(base, task.witness, seed)
    out["soft_edges"] = np.asarray(Image.fromarray(base).filter(ImageFilter.GaussianBlur(1.5)))
    out["rotated"] = draw(rot)
    palette = list(SHIFTED_PALETTES.values())[seed % len(SHIFTED_PALETTES)]
    combo = _shaded(draw(rot, palette), rot, seed)
    out["all_at_once"] = np.asarray(Image.fromarray(_gradient(combo, bg, seed)).filter(ImageFilter.GaussianBlur(1.0)))
    return out


def measure(row: dict[str, Any]) -> dict[str, Any]:
    from .spec_verifier import verify_spec

    task = SpecTask.from_row(row)
    seed = int(task.id.rsplit("-", 1)[-1]) if task.id.rsplit("-", 1)[-1].isdigit() else 0
    out: dict[str, Any] = {"id": task.id}
    for name, img in variants(task, seed).items():
        res = verify_spec(img, task.spec)
        out[name] = res.strict
        if not res.strict:
            out[f"{name}/failed"] = sorted(k for k, v in res.criteria().items() if not v) + \
                (["extras"] if res.extras else []) + ([] if res.background_ok else ["background"])
    return out


def main(argv: list[str] | None = None) -> int:
    from concurrent.futures import ProcessPoolExecutor

    from tqdm import tqdm

    from .splits import load_split_v2

    p = argparse.ArgumentParser(prog="python -m visalign.vvr.robustness", description=__doc__)
    p.add_argument("--split", default="bench")
    p.add_argument("--n", type=int, default=300, help="tasks (every k-th of the split, spread over types and bins)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    tasks = load_split_v2(args.split)
    step = max(1, len(tasks) // args.n)
    rows_in = [t.to_row() for t in tasks[::step][: args.n]]
    with ProcessPoolExecutor(args.workers) as pool:
        rows = list(tqdm(pool.map(measure, rows_in, chunksize=4), total=len(rows_in), desc="robustness"))
    summary = {c: round(float(np.mean([r[c] for r in rows])), 5) for c in CONDITIONS}
    fails = {c: sorted({f for r in rows for f in r.get(f"{c}/failed", [])}) for c in CONDITIONS}
    print(f"correct scenes passing (strict, default tolerances, 256 px), {len(rows)} tasks of {args.split}:\n")
    print("| condition | pass |\n|---|---|")
    for c in CONDITIONS:
        print(f"| {c} | {100 * summary[c]:.2f}% |")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"tasks": len(rows), "pass": summary, "failed_checks": fails,
                       "failures": [r for r in rows if not all(r[c] for c in CONDITIONS)][:50]}, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
