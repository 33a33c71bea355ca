"""visalign's VVR v2 splits in the paper's task format, deterministic and sha256-checked, and task-file IO
(JSONL or Parquet, v2 rows or v1 tasks).

| split | tasks | what |
|---|---|---|
| ``bench`` (VVRBench v2) | 10,000 | primary type ``i mod 46``, difficulty bin ``(i // 46) mod 5 + 1`` (complexity 3-48) |
| ``challenge`` | 720 | 20 per complexity level 45-80 |
| ``fast`` | 920 | 20 per complexity level 3-48 |
| ``extension`` | 500 | visalign's extension types (parity, symmetric, same/different colour, overlap), complexity 6-30 |
| ``easy`` / ``matched`` | unbounded (training) | complexity <= 20 / the bench's distribution, seeds below 1e9 |

These are visalign's own tasks: numbers on them are not comparable with the paper's (its files are on a model hub;
score them with ``visalign bench vvr --tasks FILE``).
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from ..core.errors import InputError
from .benchmark import cache_dir, jsonl_bytes, sha256
from .spec import EXTENSION_TYPES
from .spec_sampler import BINS, CHALLENGE_RANGE, TASK_TYPES, difficulty_bin, minimum_complexity
from .spec_task import TASK_VERSION_2, SpecTask, is_v2_row, make_task

TRAIN_SEED_LIMIT = 1_000_000_000
EVAL_SEED_BASE = 3_000_000_000


@dataclass(frozen=True)
class SplitV2:
    name: str
    size: int | None  # None: a training pool (unbounded)
    base_seed: int
    prefix: str


SPLITS_V2: dict[str, SplitV2] = {
    "bench": SplitV2("bench", 10_000, 1_100_000_000, "vvrbench2"),
    "challenge": SplitV2("challenge", 720, 2_100_000_000, "vvrchallenge2"),
    "fast": SplitV2("fast", 920, 1_200_000_000, "vvrfast2"),
    "extension": SplitV2("extension", 500, 1_300_000_000, "vvrext2"),
    "easy": SplitV2("easy", None, 0, "vvreasy2"),
    "matched": SplitV2("matched", None, 400_000_000, "vvrmatched2"),
}
EVAL_SPLITS = tuple(k for k, v in SPLITS_V2.items() if v.size is not None)
POOLS = tuple(k for k, v in SPLITS_V2.items() if v.size is None)
EASY_MAX = 20
PREFIX_LINES = 92

#: sha256 of each split's canonical JSONL and of its first PREFIX_LINES lines
EXPECTED_SHA256_V2: dict[str, str] = {
    "bench": "52ce16946674a73b0ae0b51eaa17d63345385a1f28301225fef19957e1eef9b9",
    "challenge": "7b42a46ac8d04fdfc63409d5e01213731f6349b927a1a179c8467e44fbeda985",
    "fast": "40baa42a4d752e60537bb5cfbf43cd409d77086015f93bd4d971d666e2c9c79c",
    "extension": "ed71503f57b41d5b7a04bbaa8d0a073a9cd7dd5fa92c884f597387eeb6df35a2",
}
EXPECTED_PREFIX_SHA256_V2: dict[str, str] = {
    "bench": "a95d6b92760d80346a9aefc772cd2a995ccc210603720636a4e98ab7c6bc2865",
    "challenge": "3b4d6d29cc7fe88c194854fd00476572bcae1d80e4246371279d487642f072e4",
    "fast": "0e4a53f502ea262ed0cc27c0d1182aff03c11e5f546b62da8f6aaed0c5f0ee94",
    "extension": "9e3b0069085f643b9c6a8404a8a6afbb58841fccba5d7d92f6cb68215f6d2568",
}


def _split(name: str) -> SplitV2:
    if name not in SPLITS_V2:
        raise ValueError(f"unknown VVR v2 split {name!r}; choose from {', '.join(SPLITS_V2)}")
    return SPLITS_V2[name]


def _eligible(level: int, types: Sequence[str]) -> list[str]:
    return [t for t in types if minimum_complexity(t) <= level]


def plan(split: str, index: int) -> tuple[str, int, int]:
    """(primary type, complexity, seed) of task ``index`` of a split; pools take any index >= 0."""
    sp = _split(split)
    if index < 0 or (sp.size is not None and index >= sp.size):
        raise IndexError(f"{split} has {sp.size} tasks, no index {index}")
    seed = sp.base_seed + index
    rng = random.Random(seed * 7919 + 17)
    if split in ("bench", "matched"):
        primary = TASK_TYPES[index % len(TASK_TYPES)]
        lo, hi = BINS[(index // len(TASK_TYPES)) % len(BINS)]
        lo = max(lo, minimum_complexity(primary))
        hi = max(hi, lo)
        return primary, rng.randint(lo, hi), seed
    if split == "challenge":
        level = CHALLENGE_RANGE[0] + index // 20
        return TASK_TYPES[index % len(TASK_TYPES)], level, seed
    if split == "fast":
        level = BINS[0][0] + index // 20
        types = _eligible(level, TASK_TYPES)
        return types[index % len(types)], level, seed
    if split == "extension":
        primary = tuple(EXTENSION_TYPES)[index % len(EXTENSION_TYPES)]
        return primary, rng.randint(max(6, minimum_complexity(primary)), 30), seed
    level = rng.randint(BINS[0][0], EASY_MAX)  # easy
    types = _eligible(level, TASK_TYPES)
    return types[index % len(types)], level, seed


def split_task(split: str, index: int) -> SpecTask:
    primary, complexity, seed = plan(split, index)
    return make_task(seed, primary, complexity, f"{_split(split).prefix}-{index:05d}")


def bench_tasks_per_bin(bins: Sequence[int], per_bin: int) -> dict[int, list[SpecTask]]:
    """The first ``per_bin`` VVRBench v2 tasks (bench order) of each difficulty bin in ``bins``, chosen from the
    split's plan (no task is generated that is not returned). Held out from every training pool: the bench's seeds
    are its own."""
    picked: dict[int, list[int]] = {b: [] for b in bins}
    for i in range(SPLITS_V2["bench"].size):
        b = difficulty_bin(plan("bench", i)[1])
        if b in picked and len(picked[b]) < per_bin:
            picked[b].append(i)
        if all(len(v) == per_bin for v in picked.values()):
            break
    return {b: [split_task("bench", i) for i in picked[b]] for b in bins}


def generate_split_v2(split: str, limit: int | None = None, start: int = 0, progress: bool = False) -> list[SpecTask]:
    sp = _split(split)
    if sp.size is None and limit is None:
        raise ValueError(f"{split} is an unbounded training pool: give a limit")
    stop = start + limit if limit is not None else sp.size
    if sp.size is not None:
        stop = min(stop, sp.size)
    indices: Iterable[int] = range(start, stop)
    if progress:
        from tqdm import tqdm

        indices = tqdm(indices, desc=f"generating {split} (v2)", unit="task")
    return [split_task(split, i) for i in indices]


def write_split_v2(split: str, out_dir: str | Path, progress: bool = True) -> Path:
    """Write ``<out_dir>/<split>-vvr-2.jsonl``, checked against the expected hash when known."""
    data = jsonl_bytes(generate_split_v2(split, progress=progress))
    digest = sha256(data)
    want = EXPECTED_SHA256_V2.get(split)
    if want and digest != want:
        raise RuntimeError(f"generated {split} (v2) has sha256 {digest}, expected {want}: generation is not "
                           "deterministic here")
    path = Path(out_dir) / f"{split}-{TASK_VERSION_2}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def load_split_v2(split: str, limit: int | None = None) -> list[SpecTask]:
    """Tasks of a v2 split, from the cache (``$VISALIGN_CACHE/vvr``) or generated and cached on first use."""
    sp = _split(split)
    if sp.size is None and limit is None:
        raise ValueError(f"{split} is an unbounded training pool: give a limit")
    if sp.size is None or (limit is not None and limit < sp.size):
        return generate_split_v2(split, limit)
    path = cache_dir() / f"{split}-{TASK_VERSION_2}.jsonl"
    if path.is_file():
        want = EXPECTED_SHA256_V2.get(split)
        if not want or sha256(path.read_bytes()) == want:
            return read_spec_tasks(path)
    write_split_v2(split, path.parent, progress=True)
    return read_spec_tasks(path)


# ---------------------------------------------------------------- task files


class TaskFileError(InputError):
    """A task file that cannot be read: missing, unreadable, wrong format, or a bad row (named by line / row)."""


def _rows(path: Path) -> Iterator[tuple[str, Any]]:
    if not path.is_file():
        raise FileNotFoundError(f"VVR task file not found: {path}")
    if path.suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError as err:
            raise TaskFileError(f"{path}: reading Parquet needs pyarrow; install it with "
                                "pip install 'visalign[parquet]' (or convert the file to JSONL)") from err
        try:
            table = pq.read_table(path)
        except Exception as err:  # noqa: BLE001 - pyarrow raises several types for corrupt files
            raise TaskFileError(f"{path}: not a readable Parquet file ({type(err).__name__}: {err})") from err
        for k, row in enumerate(table.to_pylist()):
            yield f"{path}: row {k}", row
        return
    if path.suffix not in (".jsonl", ".json"):
        raise TaskFileError(f"{path}: unknown task file type {path.suffix!r}; use .jsonl or .parquet")
    for k, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield f"{path}:{k}", json.loads(line)
        except json.JSONDecodeError as err:
            raise TaskFileError(f"{path}:{k}: not valid JSON ({err})") from err


def read_task_file(path: str | Path) -> list[Any]:
    """Tasks of a JSONL or Parquet file: v2 rows (``visual_spec_json``) as :class:`SpecTask`, v1 tasks as
    :class:`~visalign.vvr.task.Task`. A file holds one version; every spec is validated and errors name the row."""
    from .task import Task

    path = Path(path)
    tasks: list[Any] = []
    kinds = set()
    for where, row in _rows(path):
        try:
            if is_v2_row(row):
                tasks.append(SpecTask.from_row(row, where))
                kinds.add("v2")
            else:
                tasks.append(Task.from_dict(row))
                kinds.add("v1")
        except (ValueError, KeyError, TypeError) as err:
            msg = str(err)
            raise TaskFileError(msg if msg.startswith(where) else f"{where}: bad VVR task: {msg}") from err
    if len(kinds) > 1:
        raise TaskFileError(f"{path}: mixes v1 tasks and v2 (visual_spec_json) rows; use one version per file")
    ids = [t.id for t in tasks]
    if len(set(ids)) != len(ids):
        dup = sorted({i for i in ids if ids.count(i) > 1})[:5]
        raise TaskFileError(f"{path}: duplicate task id(s) {dup}")
    return tasks


def read_spec_tasks(path: str | Path) -> list[SpecTask]:
    tasks = read_task_file(path)
    if tasks and not isinstance(tasks[0], SpecTask):
        raise TaskFileError(f"{path}: holds v1 tasks, expected v2 rows with visual_spec_json")
    return tasks


def write_task_file(tasks: Sequence[SpecTask], path: str | Path) -> Path:
    """Write v2 rows as JSONL (canonical bytes) or Parquet (the released files' layout, needs pyarrow)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError as err:
            raise TaskFileError("writing Parquet needs pyarrow; install it with pip install 'visalign[parquet]'") from err
        rows = [t.to_row() for t in tasks]
        for r in rows:
            if "witness" in r:
                r["witness"] = json.dumps(r["witness"], sort_keys=True)
        pq.write_table(pa.Table.from_pylist(rows), path)
        return path
    path.write_bytes(jsonl_bytes(tasks))
    return path


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m visalign.vvr.splits", description="Write visalign's VVR v2 splits.")
    p.add_argument("--out", default="vvr_bench", help="output folder")
    p.add_argument("--split", choices=EVAL_SPLITS, action="append", help="split(s) to write (default: all)")
    p.add_argument("--pool", choices=POOLS, help="write N tasks of a training pool instead (with --n)")
    p.add_argument("--n", type=int, default=1000)
    args = p.parse_args(argv)
    if args.pool:
        path = write_task_file(generate_split_v2(args.pool, args.n, progress=True), Path(args.out) / f"{args.pool}-{args.n}.jsonl")
        print(f"{path}  sha256={sha256(path.read_bytes())}  tasks={args.n}")
        return 0
    for split in args.split or EVAL_SPLITS:
        path = write_split_v2(split, args.out)
        print(f"{path}  sha256={sha256(path.read_bytes())}  tasks={SPLITS_V2[split].size}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
