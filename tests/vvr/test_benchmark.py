"""Benchmark files: deterministic bytes (hash), version field, balance over the 32 types."""
from __future__ import annotations

import json
from collections import Counter

import pytest

from visalign.vvr.benchmark import (EXPECTED_PREFIX_SHA256, EXPECTED_SHA256, PREFIX_LINES, SPLITS, generate_split,
                                    jsonl_bytes, read_tasks, sha256, split_task, write_split)
from visalign.vvr.constraints import CONSTRAINT_NAMES


@pytest.mark.parametrize("split", sorted(SPLITS))
def test_prefix_hash_is_stable(split):
    assert sha256(jsonl_bytes(generate_split(split, PREFIX_LINES))) == EXPECTED_PREFIX_SHA256[split]


@pytest.mark.slow
def test_challenge_file_hash(tmp_path):
    path = write_split("challenge", tmp_path, progress=False)
    data = path.read_bytes()
    assert sha256(data) == EXPECTED_SHA256["challenge"]
    tasks = read_tasks(path)
    assert len(tasks) == 720
    assert {t.level for t in tasks} == {4, 5}
    assert min(len(t.constraints) for t in tasks) >= 4
    first = json.loads(data.splitlines()[0])
    assert first["version"] == "vvr-1" and first["id"] == "vvrchallenge-00000"


@pytest.mark.slow
def test_full_bench_hash(tmp_path):
    path = write_split("bench", tmp_path, progress=False)
    assert sha256(path.read_bytes()) == EXPECTED_SHA256["bench"]


def test_bench_is_balanced_over_types_and_levels():
    n = SPLITS["bench"].size
    types = Counter(CONSTRAINT_NAMES[i % 32] for i in range(n))
    assert len(types) == 32 and max(types.values()) - min(types.values()) <= 1
    tasks = [split_task("bench", i) for i in range(0, 256)]
    assert Counter(t.level for t in tasks) == {0: 64, 1: 64, 2: 64, 3: 64}
    assert all(t.primary == t.constraints[0].type for t in tasks)


def test_read_tasks_names_the_bad_line(tmp_path):
    p = tmp_path / "tasks.jsonl"
    p.write_text(split_task("bench", 0).to_json() + "\n{\"id\": \"x\"}\n")
    with pytest.raises(ValueError, match=r"tasks.jsonl:2"):
        read_tasks(p)
    with pytest.raises(FileNotFoundError, match="nope.jsonl"):
        read_tasks(tmp_path / "nope.jsonl")
