"""Verify an image against a visual spec (closed world): strict all-satisfied, the dense partial credit and the RL
reward of the method's paper.

- **strict** (the benchmark metric): every group has its exact count, its shape and its layout; every relation
  holds; the background is the named one; no forbidden colour; no coloured object the spec does not list.
- **dense** (partial credit, not an accuracy): 0.55 objects (0.45 count, 0.20 shape, 0.20 layout, renormalised:
  absolute size is not part of the format) + 0.15 relations + 0.15 forbidden + 0.10 extras + 0.05 background.
- **reward** (RL): dense x valid x (0.40 + 0.60 count) x (0.40 + 0.60 shape) x (0.50 + 0.50 relations)
  x 1 / (1 + 0.20 extras) x forbidden, clipped to [0, 1]. ``valid`` is 0 for images with no coloured object or
  with objects covering more than three quarters of the image (blank, noise, a single colour).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PIL import Image

from .predicates import Assignment, Outcome, describe, evaluate, listed_shapes
from .segment import Segmentation, segment
from .spec import ANY, GROUP_CRITERIA, VisualSpec, parse_spec
from .tolerances import Tolerances


@dataclass
class SpecResult:
    """Everything the verifier found for one image and one spec."""

    spec: VisualSpec
    seg: Segmentation
    assignment: Assignment
    groups: dict[str, dict[str, Outcome]]
    relations: list[Outcome]
    background_ok: bool
    forbidden_found: list[str]
    valid: bool
    scores: dict[str, float] = field(default_factory=dict)

    @property
    def extras(self) -> int:
        return len(self.assignment.extras)

    @property
    def strict(self) -> bool:
        return (self.valid and self.background_ok and not self.forbidden_found and self.extras == 0
                and all(o.passed for checks in self.groups.values() for o in checks.values())
                and all(o.passed for o in self.relations))

    @property
    def all_satisfied(self) -> bool:
        """Same as :attr:`strict` (the name v1 results use)."""
        return self.strict

    def criteria(self) -> dict[str, bool]:
        """Per atomic type in the spec: do all its checks pass (group criteria over every group)?"""
        out: dict[str, bool] = {}
        for checks in self.groups.values():
            for name, o in checks.items():
                out[name] = out.get(name, True) and o.passed and self.valid
        for r, o in zip(self.spec.relations, self.relations):
            out[r.type] = out.get(r.type, True) and o.passed and self.valid
        return out

    @property
    def dense(self) -> float:
        return self.scores["dense"]

    @property
    def reward(self) -> float:
        return self.scores["reward"]

    def to_dict(self) -> dict[str, Any]:
        return {"strict": self.strict, "dense": round(self.dense, 4), "reward": round(self.reward, 4),
                "valid": self.valid, "background": self.seg.background_name, "background_ok": self.background_ok,
                "extras": self.extras, "forbidden_found": self.forbidden_found,
                "criteria": self.criteria(), "scores": {k: round(v, 4) for k, v in self.scores.items()},
                "groups": {g: {k: describe(o) for k, o in c.items()} for g, c in self.groups.items()},
                "relations": [dict(type=r.type, **describe(o)) for r, o in zip(self.spec.relations, self.relations)],
                "objects": [o.to_dict() for o in self.seg.components]}


def _group_scores(res: SpecResult) -> tuple[float, float, float]:
    """Mean count, shape and layout score over the groups (each in [0, 1])."""
    count, shape, layout = [], [], []
    n_obj = res.seg.objects
    for g in res.spec.groups:
        mem = res.assignment.members[g.id]
        found = len(mem)
        if g.count_mode == "exact":
            count.append(max(0.0, 1.0 - abs(found - g.count) / g.count))
        else:
            count.append(1.0 if 1 <= found <= g.max_count else 0.0)
        listed = listed_shapes(res.spec, g.color)
        stray = [i for i in res.assignment.by_color.get(g.color, []) if ANY not in listed and n_obj[i].shape not in listed]
        shape.append(found / (found + len(stray)) if found else 0.0)
        lay = [o for k, o in res.groups[g.id].items() if k not in GROUP_CRITERIA[:4]]
        layout.append(lay[0].credit if lay else 1.0)
    return float(np.mean(count)), float(np.mean(shape)), float(np.mean(layout))


def score(res: SpecResult) -> dict[str, float]:
    count, shape, layout = _group_scores(res)
    relations = float(np.mean([o.credit for o in res.relations])) if res.relations else 1.0
    forbidden = 1.0 - len(set(res.forbidden_found)) / len(res.spec.forbidden) if res.spec.forbidden else 1.0
    extras = 1.0 / (1.0 + res.extras)
    background = 1.0 if res.background_ok else 0.0
    objects = (0.45 * count + 0.20 * shape + 0.20 * layout) / 0.85
    dense = 0.55 * objects + 0.15 * relations + 0.15 * forbidden + 0.10 * extras + 0.05 * background
    valid = 1.0 if res.valid else 0.0
    reward = (dense * valid * (0.40 + 0.60 * count) * (0.40 + 0.60 * shape) * (0.50 + 0.50 * relations)
              / (1.0 + 0.20 * res.extras) * forbidden)
    return {"count": count, "shape": shape, "layout": layout, "relations": relations, "forbidden": forbidden,
            "extras": extras, "background": background, "dense": dense * valid, "reward": float(np.clip(reward, 0, 1))}


def verify_spec(image: np.ndarray | Image.Image, spec: VisualSpec | dict[str, Any] | str,
                tolerances: str = "default") -> SpecResult:
    """Check ``image`` (uint8 ``H x W x 3``, PIL, or float in [-1, 1]) against ``spec``. ``tolerances``:
    ``"default"`` (resolution-independent) or ``"paper"`` (the format's pixel tolerances at the image's size)."""
    spec = spec if isinstance(spec, VisualSpec) else parse_spec(spec)
    seg = segment(image)
    return verify_segmentation(seg, spec, tolerances)


def verify_segmentation(seg: Segmentation, spec: VisualSpec, tolerances: str = "default") -> SpecResult:
    """:func:`verify_spec` on an image already segmented (video frames reuse their parses)."""
    tol = Tolerances(tolerances, seg.native_side)
    a, groups, rels = evaluate(seg, spec, tol)
    bg_ok = spec.background is None or seg.background_name == spec.background
    forbidden = sorted({o.color for o in seg.components if o.color in spec.forbidden})
    valid = bool(seg.components) and seg.background_fraction >= 0.25
    res = SpecResult(spec, seg, a, groups, rels, bg_ok, forbidden, valid)
    res.scores = score(res)
    return res
