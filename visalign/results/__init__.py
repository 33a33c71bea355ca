"""Result files behind the README's tables: written by the commands that make them, compared between runs, and
rendered into the README's marked blocks (``pipelines/reproduce.py`` drives all three)."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from .compare import Comparison, Moved, compare
from .provenance import git_commit, platform_differences, platform_fingerprint
from .readme import read_blocks, replace_blocks
from .table import ResultRow, ResultTable, Run, Tolerance, load_results

ROOT = Path(__file__).resolve().parents[2]


def command_args(argv: Sequence[str], flag: str = "--results") -> list[str]:
    """``argv`` without ``flag PATH`` (where the result goes is not part of what was run)."""
    args, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == flag:
            skip = True
        elif not a.startswith(f"{flag}="):
            args.append(a)
    return args


def write_results(path: str | Path, name: str, command: str, argv: Sequence[str], rows: Sequence[ResultRow],
                  tolerance: Tolerance | None = None, platform_tolerance: Tolerance | None = None, note: str = "",
                  runtime_s: float | None = None) -> Path:
    """Write the result file of one command run: ``argv`` as the command saw it (``--results PATH`` is dropped), the
    git commit of this checkout and the platform fingerprint are filled in."""
    commit, dirty = git_commit(ROOT)
    table = ResultTable(name=name, runs=[Run(command, command_args(argv))], rows=list(rows),
                        tolerance=tolerance or Tolerance(), platform_tolerance=platform_tolerance, commit=commit,
                        dirty=dirty, platform=platform_fingerprint(), note=note,
                        runtime_s=None if runtime_s is None else round(runtime_s, 1))
    return table.save(path)


__all__ = ["Comparison", "Moved", "ResultRow", "ResultTable", "Run", "Tolerance", "command_args", "compare", "git_commit",
           "load_results", "platform_differences", "platform_fingerprint", "read_blocks", "replace_blocks", "write_results"]
