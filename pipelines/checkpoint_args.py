"""``--checkpoints name=path ...`` of the scripts that compare several checkpoints on the same inputs."""
from __future__ import annotations

from pathlib import Path


def parse_checkpoints(items: list[str]) -> dict[str, Path]:
    """``name=path`` pairs in the given order, names unique; anything else exits with a message naming the item."""
    named = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise SystemExit(f"--checkpoints takes name=path pairs, got {item!r}")
        if name in named:
            raise SystemExit(f"--checkpoints names must be unique: {name!r} twice")
        named[name] = Path(path)
    return named
