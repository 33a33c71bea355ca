"""VVRBench (10,000 tasks, levels 0-3) and VVRBench-Challenge (720 tasks, levels 4-5): deterministic generation,
JSONL files with a version field, a hash check and an on-disk cache."""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ..core.errors import InputError
from .constraints import CONSTRAINT_NAMES
from .sampler import generate_task
from .task import TASK_VERSION, Task


@dataclass(frozen=True)
class Split:
    name: str
    size: int
    base_seed: int
    levels: tuple[int, ...]
    prefix: str


SPLITS: dict[str, Split] = {
    "bench": Split("bench", 10_000, 1_000_000_000, (0, 1, 2, 3), "vvrbench"),
    "challenge": Split("challenge", 720, 2_000_000_000, (4, 5), "vvrchallenge"),
}
#: seeds of training tasks are drawn below this; held-out evaluation tasks start at EVAL_SEED_BASE
TRAIN_SEED_LIMIT = 1_000_000_000
EVAL_SEED_BASE = 3_000_000_000

#: sha256 of the canonical JSONL (one task per line, ``\n`` endings) of each split, and of its first 320 lines.
EXPECTED_SHA256: dict[str, str] = {
    "bench": "134cd1706e4b42f1c6782157cf06a37a278fe84c2a6c0066cb04de748fe6782d",
    "challenge": "994e6f74815ea73421d3bcfd84950185584cb14269b32c0cc76c1588d29e9eda",
}
EXPECTED_PREFIX_SHA256: dict[str, str] = {
    "bench": "ebcd97a406e37ee55eadba5c9c9f81d2c0864b3966aeeb7a9c72a45963b89605",
    "challenge": "ae53f6d6e69f248bc4342782ad718ca66d35aa9cc9792a630eb2f7057c16c4e9",
}
PREFIX_LINES = 320


def _split(name: str) -> Split:
    if name not in SPLITS:
        raise ValueError(f"unknown VVR split {name!r}; choose from {sorted(SPLITS)}")
    return SPLITS[name]


def split_task(split: str, index: int) -> Task:
    """Task ``index`` of a split: types cycle through all 32, levels cycle within each block of 32."""
    sp = _split(split)
    if not 0 <= index < sp.size:
        raise IndexError(f"{split} has {sp.size} tasks, no index {index}")
    primary = CONSTRAINT_NAMES[index % len(CONSTRAINT_NAMES)]
    level = sp.levels[(index // len(CONSTRAINT_NAMES)) % len(sp.levels)]
    return generate_task(sp.base_seed + index, level, primary, f"{sp.prefix}-{index:05d}")


def generate_split(split: str, limit: int | None = None, progress: bool = False) -> list[Task]:
    n = _split(split).size if limit is None else min(limit, _split(split).size)
    indices: Iterable[int] = range(n)
    if progress:
        from tqdm import tqdm

        indices = tqdm(indices, desc=f"generating {split}", unit="task")
    return [split_task(split, i) for i in indices]


def jsonl_bytes(tasks: Iterable[Task]) -> bytes:
    return "".join(t.to_json() + "\n" for t in tasks).encode("ascii")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_split(split: str, out_dir: str | Path, progress: bool = True) -> Path:
    """Write ``<out_dir>/<split>.jsonl`` and return its path (checked against the expected hash when known)."""
    data = jsonl_bytes(generate_split(split, progress=progress))
    digest = sha256(data)
    want = EXPECTED_SHA256.get(split)
    if want and digest != want:
        raise RuntimeError(f"generated {split} has sha256 {digest}, expected {want}: generation is not deterministic here")
    path = Path(out_dir) / f"{split}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def cache_dir() -> Path:
    root = os.environ.get("VISALIGN_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "visalign")
    return Path(root) / "vvr"


def read_tasks(path: str | Path) -> list[Task]:
    """Read tasks from a JSONL file; errors name the file and line."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"VVR task file not found: {path}")
    tasks = []
    for k, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            tasks.append(Task.from_dict(json.loads(line)))
        except (ValueError, KeyError, TypeError) as err:
            raise InputError(f"{path}:{k}: bad VVR task: {err}") from err
    return tasks


def load_split(split: str, limit: int | None = None) -> list[Task]:
    """Tasks of a split from the cache (``$VISALIGN_CACHE/vvr``), generating and caching them on first use."""
    sp = _split(split)
    if limit is not None and limit < sp.size:
        return generate_split(split, limit)
    path = cache_dir() / f"{split}-{TASK_VERSION}.jsonl"
    if path.is_file():
        data = path.read_bytes()
        want = EXPECTED_SHA256.get(split)
        if not want or sha256(data) == want:
            return read_tasks(path)
    write_split(split, path.parent, progress=True).rename(path)
    return read_tasks(path)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m visalign.vvr.benchmark", description="Write the VVR benchmark JSONL files.")
    parser.add_argument("--out", default="vvr_bench", help="output folder")
    parser.add_argument("--split", choices=sorted(SPLITS), action="append", help="split(s) to write (default: all)")
    args = parser.parse_args(argv)
    for split in args.split or sorted(SPLITS):
        path = write_split(split, args.out)
        print(f"{path}  sha256={sha256(path.read_bytes())}  tasks={SPLITS[split].size}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
