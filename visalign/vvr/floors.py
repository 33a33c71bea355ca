"""Constant, prompt-independent images: the floor any VVR score must be read against.

A policy that ignores the prompt and always draws the same picture scores this much. ``blank`` (plain white),
``clutter`` (every shape in every colour, 24 objects) and ``dense_grid`` (a 6 x 6 grid of small objects cycling
through the colours and shapes)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .colour_model import BACKGROUND_COLOURS, COLOUR_NAMES, OBJECT_COLOURS
from .render import render_scene
from .spec import SHAPE_NAMES
from .task import Obj, Scene

FLOOR_NAMES = ("blank", "clutter", "dense_grid")


def floor_scene(name: str) -> Scene:
    if name == "blank":
        return Scene([])
    if name == "clutter":
        keys = [(c, s) for s in SHAPE_NAMES for c in COLOUR_NAMES]  # 24: 6 columns x 4 rows
        return Scene([Obj(s, c, 90 + 164 * (k % 6), 125 + 250 * (k // 6), 95, 15 * k) for k, (c, s) in enumerate(keys)])
    if name == "dense_grid":
        return Scene([Obj(SHAPE_NAMES[k % 3], COLOUR_NAMES[k % 8], 83 + 167 * (k % 6), 83 + 167 * (k // 6), 85, 0)
                      for k in range(36)])
    raise ValueError(f"unknown floor image {name!r}; known: {', '.join(FLOOR_NAMES)}")


def floor_image(name: str, size: int = 256) -> np.ndarray:
    return render_scene(floor_scene(name), size, "white", colours=OBJECT_COLOURS, backgrounds=BACKGROUND_COLOURS)


def floor_scores(tasks: Sequence[Any], size: int = 256, tolerances: str = "default") -> dict[str, dict[str, float]]:
    """Strict accuracy and mean reward of each constant image on ``tasks`` (v2 SpecTasks; each image parsed once)."""
    from .segment import segment
    from .spec_verifier import verify_segmentation

    out = {}
    for name in FLOOR_NAMES:
        seg = segment(floor_image(name, size))
        res = [verify_segmentation(seg, t.spec, tolerances) for t in tasks]
        out[name] = {"strict": float(np.mean([r.strict for r in res])) if res else 0.0,
                     "reward": float(np.mean([r.reward for r in res])) if res else 0.0,
                     "objects_read": len(seg.components)}
    return out
