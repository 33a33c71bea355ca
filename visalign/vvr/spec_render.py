"""Draw VVR v2 witness scenes in the v2 vocabulary (8 colours, 7 backgrounds)."""
from __future__ import annotations

from typing import Any

import numpy as np

from .colour_model import BACKGROUND_COLOURS, OBJECT_COLOURS
from .render import render_scene
from .spec_task import SpecTask
from .task import Scene


def render_spec_task(task: SpecTask | dict[str, Any], size: int = 256, noise_std: float = 0.0, seed: int = 0,
                     scene: Scene | None = None) -> np.ndarray:
    """A ``size x size x 3`` uint8 image of the task's witness (or of ``scene``) that satisfies its spec."""
    task = SpecTask.from_row(task) if isinstance(task, dict) else task
    scene = scene or task.witness
    if scene is None:
        raise ValueError(f"task {task.id} has no witness scene to render (rows from released files do not)")
    return render_scene(scene, size, task.background, noise_std, seed, colours=OBJECT_COLOURS,
                        backgrounds=BACKGROUND_COLOURS)


def write_spec_renders(tasks: list[SpecTask], folder: str, size: int = 256, fmt: str = "png") -> list[str]:
    """Render each task's witness to ``folder/<task_id>.<fmt>`` (reference solutions, e.g. to test the bench)."""
    from pathlib import Path

    from PIL import Image

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for t in tasks:
        p = out / f"{t.id}.{fmt}"
        Image.fromarray(render_spec_task(t, size)).save(p)
        paths.append(str(p))
    return paths
