"""VVR v2 tasks as rows of the paper's task files: ``id``, ``prompt``, ``visual_spec_json``, ``active_criteria``,
``difficulty_bin`` (plus ``active_families``, ``tier``, ``complexity``), and visalign's fields ``version``
(``"vvr-2"``), ``primary`` and ``witness`` (a scene that satisfies the spec, for rendering reference images)."""
from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

from .spec import EXTENSION_TYPES, IMAGE_TYPES, SpecError, VisualSpec, parse_spec
from .spec_prompts import write_spec_prompt
from .spec_sampler import difficulty_bin, generate_spec_task
from .task import Contact, Obj, Scene

TASK_VERSION_2 = "vvr-2"
#: the format's construction groups (used for ``active_families``); the extension gets its own
CONSTRUCTION_GROUPS: dict[str, tuple[str, ...]] = {
    "quantity": ("exact_count", "same_count", "more_than_count", "fewer_than_count", "times_as_many"),
    "binding": ("color_attribute", "shape_attribute", "color_shape_binding"),
    "size": ("larger_than", "smaller_than", "same_size", "all_larger_than", "all_smaller_than", "all_same_size",
             "not_all_same_size", "largest", "smallest"),
    "location": ("absolute_region",),
    "direction_order": ("left_of", "right_of", "above", "below", "leftmost", "rightmost", "topmost", "bottommost",
                        "all_left_of", "all_right_of", "all_above", "all_below"),
    "proximity": ("closer_than", "farther_than"),
    "topology": ("inside", "contains", "each_inside", "each_contains", "touching", "not_touching"),
    "between": ("between",),
    "structured_layout": ("same_row", "same_column", "all_same_row", "all_same_column", "not_all_same_row",
                          "not_all_same_column", "grid_occupancy"),
    "visalign_extension": tuple(EXTENSION_TYPES),
}
_GROUP_OF = {t: g for g, ts in CONSTRUCTION_GROUPS.items() for t in ts}
_TIERS = {1: "single_family", 2: "two_family", 3: "three_family"}


def families(criteria: list[str]) -> list[str]:
    return sorted({_GROUP_OF[c] for c in criteria if c in _GROUP_OF})


def tier(criteria: list[str]) -> str:
    """Family-count tier over the five verifier families (grounding, cardinality, spatial, size, topology)."""
    fams = {IMAGE_TYPES.get(c) or EXTENSION_TYPES.get(c) for c in criteria} - {None}
    return _TIERS.get(len(fams), "four_or_more_family")


@dataclass
class SpecTask:
    """One v2 task: the spec, its prompt, what it checks, and (for generated tasks) a witness scene."""

    id: str
    prompt: str
    spec: VisualSpec
    active_criteria: list[str]
    difficulty_bin: int
    complexity: int | None = None
    primary: str = ""
    witness: Scene | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # other columns of a released row, kept as they are
    version: str = TASK_VERSION_2

    @property
    def background(self) -> str:
        return self.spec.background or "white"

    def to_row(self) -> dict[str, Any]:
        row: dict[str, Any] = {**self.extra, "id": self.id, "prompt": self.prompt, "visual_spec_json": self.spec.to_json(),
                               "active_criteria": list(self.active_criteria), "difficulty_bin": self.difficulty_bin,
                               "active_families": families(self.active_criteria), "tier": tier(self.active_criteria),
                               "version": self.version}
        if self.complexity is not None:
            row["complexity"] = self.complexity
        if self.primary:
            row["primary"] = self.primary
        if self.witness is not None:
            row["witness"] = {"objects": [o.to_dict() for o in self.witness.objects],
                              "contacts": [c.to_dict() for c in self.witness.contacts]}
        return row

    def to_json(self) -> str:
        """Canonical one-line JSON (sorted keys, ASCII): identical bytes on every machine."""
        return json.dumps(self.to_row(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)

    def to_dict(self) -> dict[str, Any]:
        return self.to_row()

    @classmethod
    def from_row(cls, row: dict[str, Any], where: str = "") -> "SpecTask":
        """Read a row (a released file's or visalign's); errors name ``where`` and the problem."""
        if isinstance(row, SpecTask):
            return row
        if not isinstance(row, dict):
            raise ValueError(f"{where}: a task row must be an object, got {type(row).__name__}")
        missing = [k for k in ("id", "prompt", "visual_spec_json") if k not in row]
        if missing:
            raise ValueError(f"{where}: task row is missing column(s) {missing}")
        where = f"{where} (task {row['id']})" if where else f"task {row['id']}"
        spec = parse_spec(row["visual_spec_json"], where)
        criteria = row.get("active_criteria")
        if criteria is None:
            criteria = spec.criteria()
        criteria = [str(c) for c in criteria]
        unknown = [c for c in criteria if c not in IMAGE_TYPES and c not in EXTENSION_TYPES and c != "twice_as_many"]
        if unknown:
            raise SpecError([f"active_criteria: unknown type(s) {unknown}"], where)
        criteria = ["times_as_many" if c == "twice_as_many" else c for c in criteria]
        dbin = row.get("difficulty_bin")
        if dbin is None:
            dbin = difficulty_bin(int(row["complexity"])) if row.get("complexity") is not None else 0
        witness = None
        w = json.loads(row["witness"]) if isinstance(row.get("witness"), str) else row.get("witness")
        if isinstance(w, dict):
            witness = Scene([Obj.from_dict(o) for o in w.get("objects", [])],
                            [Contact(str(c["kind"]), int(c["a"]), int(c["b"])) for c in w.get("contacts", [])])
        known = {"id", "prompt", "visual_spec_json", "active_criteria", "difficulty_bin", "complexity", "primary",
                 "witness", "version", "active_families", "tier"}
        extra = {k: v for k, v in row.items() if k not in known}
        for k in ("active_families", "tier"):
            if k in row and row[k] != (families(criteria) if k == "active_families" else tier(criteria)):
                extra[k] = row[k]  # a released row's own construction groups / tier are kept as given
        return cls(str(row["id"]), str(row["prompt"]), spec, criteria, int(dbin),
                   int(row["complexity"]) if row.get("complexity") is not None else None,
                   str(row.get("primary", "")), witness, extra, str(row.get("version", TASK_VERSION_2)))

    @classmethod
    def from_json(cls, line: str) -> "SpecTask":
        return cls.from_row(json.loads(line))


def make_task(seed: int, primary: str, complexity: int, task_id: str) -> SpecTask:
    """Generate the task for ``seed`` (spec + witness + prompt); the same seed gives the same row bytes."""
    g = generate_spec_task(seed, primary, complexity, task_id)
    prompt = write_spec_prompt(g.spec, random.Random(seed ^ 0x5EED))
    return SpecTask(task_id, prompt, g.spec, g.criteria, difficulty_bin(complexity), complexity, primary, g.scene)


def is_v2_row(d: Any) -> bool:
    """Does this dict look like a v2 (spec-format) row rather than a v1 task?"""
    return isinstance(d, (dict, SpecTask)) and (isinstance(d, SpecTask) or "visual_spec_json" in d)
