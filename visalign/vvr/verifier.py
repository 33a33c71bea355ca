"""Verifier: parse an image and check every constraint of a task."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from PIL import Image

from .constraints import Check, check
from .parse import ParsedImage, parse_image
from .task import Task


@dataclass
class VerifyResult:
    """Per-constraint outcome plus the summary numbers and what the parser saw."""

    task_id: str
    checks: list[Check]
    gate: float
    parsed: ParsedImage

    @property
    def passed(self) -> list[bool]:
        return [c.passed and self.gate > 0 for c in self.checks]

    @property
    def fraction(self) -> float:
        """Fraction of constraints satisfied (0 when the image is not a valid scene)."""
        return float(np.mean(self.passed)) if self.checks else 0.0

    @property
    def all_satisfied(self) -> bool:
        return bool(self.checks) and all(self.passed)

    def reward(self, weights: Sequence[float] | None = None, strict: bool = False) -> float:
        """Soft gate x weighted partial credit, or the all-satisfied bit when ``strict``."""
        if strict:
            return float(self.all_satisfied)
        w = np.ones(len(self.checks)) if weights is None else np.asarray(weights, float)
        credit = np.array([c.credit for c in self.checks])
        return float(self.gate * (w * credit).sum() / max(w.sum(), 1e-9))

    def to_dict(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "passed": self.passed, "fraction": self.fraction,
                "all_satisfied": self.all_satisfied, "gate": round(self.gate, 4), "reward": round(self.reward(), 4),
                "margins": [round(max(c.margin, -99.0), 4) for c in self.checks],
                "objects": [o.to_dict() for o in self.parsed.objects]}


def verify(image: np.ndarray | Image.Image, task: Any, tolerances: str = "default") -> Any:
    """Check ``image`` (uint8 ``H x W x 3``, PIL, or float in [-1, 1]) against ``task``: a v2 task (``SpecTask``,
    a row with ``visual_spec_json`` or a ``VisualSpec``; closed world, returns a ``SpecResult``) or a v1 task
    (open world, returns a :class:`VerifyResult`). Both results have ``all_satisfied``."""
    from .spec import VisualSpec
    from .spec_task import SpecTask, is_v2_row
    from .spec_verifier import verify_spec

    if isinstance(task, VisualSpec) or is_v2_row(task):
        spec = task if isinstance(task, VisualSpec) else SpecTask.from_row(task).spec
        return verify_spec(image, spec, tolerances)
    task = Task.from_dict(task) if isinstance(task, dict) else task
    parsed = parse_image(image)
    gate = parsed.gate()
    checks = [check(parsed, c) for c in task.constraints]
    if gate <= 0:
        checks = [Check(False, c.margin, 0.0) for c in checks]
    return VerifyResult(task.id, checks, gate, parsed)
