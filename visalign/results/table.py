"""Result files: the rows behind one README table, with the command that made them and how far they may move.

A result file (JSON under ``assets/results/``) records the runs that produced a table (command + arguments), the
git commit and platform they ran on, one row per table line (``values`` are compared between runs, ``se`` are their
standard errors where outcomes are random, ``info`` is shown but never compared, e.g. wall times), and the tolerance
a fresh run is compared with. ``regenerated: false`` marks a file reconstructed by hand (e.g. from the README's
numbers) that no run of the mechanism has written yet.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from visalign.core.config import check

SCHEMA_VERSION = 1


@dataclass
class Tolerance:
    """A fresh value ``f`` matches a stored value ``s`` when
    ``|f − s| ≤ abs + rel·|s| + se_multiple·sqrt(se_s² + se_f²)``; all zero means exact equality."""

    abs: float = 0.0
    rel: float = 0.0
    se_multiple: float = 0.0
    note: str = ""

    def __post_init__(self) -> None:
        for key in ("abs", "rel", "se_multiple"):
            value = getattr(self, key)
            check(isinstance(value, (int, float)) and math.isfinite(value) and value >= 0,
                  f"tolerance.{key} must be a finite number >= 0, got {value!r}")

    def allows(self, stored: float, fresh: float, stored_se: float = 0.0, fresh_se: float = 0.0) -> bool:
        return abs(fresh - stored) <= self.allowed(stored, stored_se, fresh_se)

    def allowed(self, stored: float, stored_se: float = 0.0, fresh_se: float = 0.0) -> float:
        return self.abs + self.rel * abs(stored) + self.se_multiple * math.hypot(stored_se, fresh_se)

    @property
    def exact(self) -> bool:
        return self.abs == self.rel == self.se_multiple == 0.0


@dataclass
class ResultRow:
    """One table line: ``values`` are compared, ``se`` holds standard errors of some of them, ``info`` is not compared."""

    row: str
    values: dict[str, float]
    se: dict[str, float] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check(isinstance(self.row, str) and bool(self.row), f"row name must be a non-empty string, got {self.row!r}")
        for kind in ("values", "se"):
            for key, value in getattr(self, kind).items():
                check(isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value),
                      f"row {self.row!r}: {kind}.{key} must be a finite number, got {value!r}")
        unknown = sorted(set(self.se) - set(self.values))
        check(not unknown, f"row {self.row!r}: standard errors for values it does not have: {unknown}")


@dataclass
class Run:
    """One command that contributed rows (``label`` prefixes its row names when a table merges several runs)."""

    command: str
    args: list[str] = field(default_factory=list)
    label: str | None = None


@dataclass
class ResultTable:
    name: str
    runs: list[Run]
    rows: list[ResultRow]
    tolerance: Tolerance = field(default_factory=Tolerance)
    platform_tolerance: Tolerance | None = None
    commit: str = "unknown"
    dirty: bool = False
    platform: dict[str, Any] = field(default_factory=dict)
    regenerated: bool = True
    note: str = ""
    runtime_s: float | None = None
    schema: int = SCHEMA_VERSION

    def __post_init__(self) -> None:
        check(isinstance(self.name, str) and bool(self.name), f"result name must be a non-empty string, got {self.name!r}")
        check(self.schema == SCHEMA_VERSION, f"{self.name}: schema {self.schema!r} is not the supported {SCHEMA_VERSION}")
        check(bool(self.runs), f"{self.name}: a result needs the command that produced it (runs is empty)")
        names = [r.row for r in self.rows]
        dupes = sorted({n for n in names if names.count(n) > 1})
        check(not dupes, f"{self.name}: duplicate row names {dupes}")

    def row(self, name: str) -> ResultRow:
        for r in self.rows:
            if r.row == name:
                return r
        raise KeyError(f"{self.name}: no row {name!r} (rows: {[r.row for r in self.rows]})")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "result") -> "ResultTable":
        if not isinstance(data, dict):
            raise ValueError(f"{source}: top level must be a JSON object, got {type(data).__name__}")
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"{source}: unknown keys {unknown}")
        for key in ("name", "runs", "rows"):
            if key not in data:
                raise ValueError(f"{source}: missing key {key!r}")
        data = dict(data)
        data["runs"] = [Run(**r) for r in data["runs"]]
        data["rows"] = [ResultRow(**r) for r in data["rows"]]
        data["tolerance"] = Tolerance(**data.get("tolerance", {}))
        if data.get("platform_tolerance") is not None:
            data["platform_tolerance"] = Tolerance(**data["platform_tolerance"])
        return cls(**data)

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n")
        return path


def load_results(path: str | Path) -> ResultTable:
    """Read a result file; a missing, unparsable or malformed file raises an error naming it."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"result file not found: {path}")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err})") from err
    try:
        return ResultTable.from_dict(data, source=str(path))
    except TypeError as err:  # a row or run with unknown / missing keys
        raise ValueError(f"{path}: {err}") from err
