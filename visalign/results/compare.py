"""Compare a fresh result with the stored one and say, per row, what moved and by how much it was allowed to."""
from __future__ import annotations

from dataclasses import dataclass, field

from .provenance import platform_differences
from .table import ResultTable, Tolerance


@dataclass
class Moved:
    row: str
    column: str
    stored: float | None
    fresh: float | None
    allowed: float | None = None

    def __str__(self) -> str:
        if self.column == "row":
            return f"row {self.row!r} is " + ("new" if self.stored is None else "gone")
        if self.stored is None:
            return f"{self.row}: {self.column} is new ({self.fresh:.6g})"
        if self.fresh is None:
            return f"{self.row}: {self.column} is gone (was {self.stored:.6g})"
        return f"{self.row}: {self.column} {self.stored:.6g} -> {self.fresh:.6g} (allowed ±{self.allowed:.3g})"


@dataclass
class Comparison:
    """``status``: ``unchanged``, ``moved``, ``not yet regenerated`` (stored file was reconstructed, never written by
    a run) or ``arguments differ`` (the runs are not the same commands, so their numbers are not comparable)."""

    name: str
    status: str
    moved: list[Moved] = field(default_factory=list)
    platform: list[str] = field(default_factory=list)
    tolerance: Tolerance | None = None
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "unchanged"

    def report(self) -> str:
        lines = [f"{self.name}: {self.status}" + (f" ({self.detail})" if self.detail else "")]
        if self.platform:
            lines.append("  platform differs from the stored run: " + "; ".join(self.platform))
        lines += [f"  moved: {m}" for m in self.moved]
        return "\n".join(lines)


def _runs_key(table: ResultTable) -> list[tuple[str, tuple[str, ...], str | None]]:
    return [(r.command, tuple(r.args), r.label) for r in table.runs]


def compare(stored: ResultTable, fresh: ResultTable) -> Comparison:
    """Rows and values that moved beyond the stored tolerance (``platform_tolerance`` when the platforms differ and
    the stored file states one). Every value of every row is compared; ``info`` never is."""
    same_runs = _runs_key(stored) == _runs_key(fresh)
    if stored.regenerated and not same_runs:
        return Comparison(stored.name, "arguments differ",
                          detail=f"stored runs {_runs_key(stored)}, fresh runs {_runs_key(fresh)}")
    differences = platform_differences(stored.platform, fresh.platform)
    tolerance = stored.platform_tolerance if differences and stored.platform_tolerance is not None else stored.tolerance
    moved: list[Moved] = []
    fresh_rows = {r.row: r for r in fresh.rows}
    for old in stored.rows:
        new = fresh_rows.pop(old.row, None)
        if new is None:
            moved.append(Moved(old.row, "row", 0.0, None))  # stored, no fresh: gone
            continue
        for column in sorted(set(old.values) | set(new.values)):
            s, f = old.values.get(column), new.values.get(column)
            if s is None or f is None:
                moved.append(Moved(old.row, column, s, f))
                continue
            s_se, f_se = old.se.get(column, 0.0), new.se.get(column, 0.0)
            if not tolerance.allows(s, f, s_se, f_se):
                moved.append(Moved(old.row, column, s, f, tolerance.allowed(s, s_se, f_se)))
    moved += [Moved(name, "row", None, 0.0) for name in fresh_rows]
    if not stored.regenerated:
        status = "not yet regenerated"
        detail = "stored numbers were reconstructed, not written by a run" + (
            f"; the fresh run differs in {len(moved)} value(s)" if moved else "; the fresh run agrees with them") + (
            "" if same_runs else "; its arguments differ from the stored ones")
    else:
        status, detail = ("moved" if moved else "unchanged"), ""
        if moved and differences and stored.platform_tolerance is None:
            detail = ("the stored result states no tolerance across platforms: its numbers are exact only on the "
                      "platform that wrote them")
    return Comparison(stored.name, status, moved, differences, tolerance, detail)
