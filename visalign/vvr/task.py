"""Task model: objects, constraints, the witness scene and the JSON form written to benchmark files."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

TASK_VERSION = "vvr-1"


@dataclass
class Obj:
    """One object of a scene. Positions and sizes are in thousandths of the image side (integers in task files)."""

    shape: str
    color: str
    x: float  # centroid, 0..1000 left to right
    y: float  # centroid, 0..1000 top to bottom
    s: float  # sqrt(area / image area) * 1000
    rot: float = 0.0  # degrees

    def to_dict(self) -> dict[str, Any]:
        return {"shape": self.shape, "color": self.color, "x": int(round(self.x)), "y": int(round(self.y)),
                "s": int(round(self.s)), "rot": int(round(self.rot)) % 360}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Obj":
        return cls(str(d["shape"]), str(d["color"]), float(d["x"]), float(d["y"]), float(d["s"]), float(d.get("rot", 0)))


@dataclass
class Contact:
    """A deliberate contact between objects ``a`` (front / inner) and ``b`` (back / outer): touch, overlap or inside."""

    kind: str
    a: int
    b: int

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "a": self.a, "b": self.b}


@dataclass
class Scene:
    """A concrete arrangement of objects (a witness that satisfies a task, or a mutation of one)."""

    objects: list[Obj]
    contacts: list[Contact] = field(default_factory=list)

    def contact(self, i: int, j: int) -> str | None:
        for c in self.contacts:
            if {c.a, c.b} == {i, j}:
                return c.kind
        return None

    def copy(self) -> "Scene":
        return Scene([Obj(**vars(o)) for o in self.objects], [Contact(c.kind, c.a, c.b) for c in self.contacts])


@dataclass
class Constraint:
    """A checkable statement: ``type`` (one of the 32 constraint types) and its arguments (refs, numbers, words)."""

    type: str
    args: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **self.args}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Constraint":
        d = dict(d)
        if "type" not in d:
            raise ValueError(f"constraint has no 'type': {d}")
        t = d.pop("type")
        return cls(t, d)


@dataclass
class Task:
    """A VVR task: prompt, constraints to verify, and a witness scene the renderer can draw."""

    id: str
    prompt: str
    constraints: list[Constraint]
    scene: Scene
    level: int = 1
    primary: str = ""
    depth: int = 0
    version: str = TASK_VERSION

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "id": self.id,
            "level": self.level,
            "primary": self.primary or (self.constraints[0].type if self.constraints else ""),
            "depth": self.depth,
            "prompt": self.prompt,
            "constraints": [c.to_dict() for c in self.constraints],
            "objects": [o.to_dict() for o in self.scene.objects],
            "contacts": [c.to_dict() for c in self.scene.contacts],
        }

    def to_json(self) -> str:
        """Canonical one-line JSON (sorted keys, no spaces, ASCII): identical bytes on every machine."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Task":
        if isinstance(d, Task):
            return d
        if not isinstance(d, dict):
            raise TypeError(f"a VVR task must be a dict, got {type(d).__name__}")
        missing = [k for k in ("id", "constraints", "objects") if k not in d]
        if missing:
            raise ValueError(f"VVR task {d.get('id', '?')!r} is missing keys {missing}")
        version = d.get("version", TASK_VERSION)
        if version != TASK_VERSION:
            raise ValueError(f"VVR task {d['id']!r} has version {version!r}; this library reads {TASK_VERSION!r}")
        scene = Scene([Obj.from_dict(o) for o in d["objects"]],
                      [Contact(str(c["kind"]), int(c["a"]), int(c["b"])) for c in d.get("contacts", [])])
        return cls(
            id=str(d["id"]), prompt=str(d.get("prompt", "")),
            constraints=[Constraint.from_dict(c) for c in d["constraints"]], scene=scene,
            level=int(d.get("level", 1)), primary=str(d.get("primary", "")), depth=int(d.get("depth", 0)), version=version,
        )

    @classmethod
    def from_json(cls, line: str) -> "Task":
        return cls.from_dict(json.loads(line))
