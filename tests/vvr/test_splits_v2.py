"""visalign's v2 splits: deterministic bytes (prefix hashes here, full hashes in the slow tests), the row format,
JSONL and Parquet task files, v1 files still readable, and the floor of constant images."""
from __future__ import annotations

import builtins
import json
from collections import Counter

import pytest

from visalign.vvr.floors import floor_scores
from visalign.vvr.spec_sampler import BINS, TASK_TYPES
from visalign.vvr.splits import (EXPECTED_PREFIX_SHA256_V2, EXPECTED_SHA256_V2, EVAL_SPLITS, PREFIX_LINES, SPLITS_V2,
                                 TaskFileError, generate_split_v2, jsonl_bytes, plan, read_task_file, sha256,
                                 write_split_v2, write_task_file)
from visalign.vvr.spec_task import SpecTask
from visalign.vvr.video_tasks import VIDEO_SPLIT_SHA256, video_split


@pytest.mark.parametrize("split", ["bench", "fast", "extension"])
def test_prefix_hash_is_stable(split):
    assert sha256(jsonl_bytes(generate_split_v2(split, PREFIX_LINES))) == EXPECTED_PREFIX_SHA256_V2[split]


def test_challenge_prefix_and_pools_are_deterministic():
    assert sha256(jsonl_bytes(generate_split_v2("challenge", 24))) == \
        sha256(b"".join(line + b"\n" for line in jsonl_bytes(generate_split_v2("challenge", 24)).splitlines()))
    for pool in ("easy", "matched"):
        a = jsonl_bytes(generate_split_v2(pool, 6, start=10))
        assert a == jsonl_bytes(generate_split_v2(pool, 6, start=10))
    assert all(t.complexity <= 20 for t in generate_split_v2("easy", 30))


def test_video_split_hash():
    assert sha256("".join(t.to_json() + "\n" for t in video_split()).encode()) == VIDEO_SPLIT_SHA256


def test_bench_plan_is_balanced_over_types_and_bins():
    n = SPLITS_V2["bench"].size
    plans = [plan("bench", i) for i in range(0, n, 7)]
    types = Counter(TASK_TYPES[i % 46] for i in range(n))
    assert len(types) == 46 and max(types.values()) - min(types.values()) <= 1
    bins = Counter(next(k for k, (lo, hi) in enumerate(BINS, 1) if c <= hi) for _, c, _ in plans)
    assert set(bins) == {1, 2, 3, 4, 5} and min(bins.values()) > 0.12 * len(plans)
    assert {c for _, c, _ in (plan("challenge", i) for i in range(0, 720, 20))} == set(range(45, 81))


def test_rows_have_the_papers_columns(tmp_path):
    task = generate_split_v2("bench", 3)[2]
    row = json.loads(task.to_json())
    for key in ("id", "prompt", "visual_spec_json", "active_criteria", "difficulty_bin", "active_families", "tier",
                "complexity", "version"):
        assert key in row, key
    assert row["version"] == "vvr-2" and json.loads(row["visual_spec_json"])["verifier_version"] == "vvr_bench_v4"
    assert SpecTask.from_row(row).to_json() == task.to_json()


def test_jsonl_and_parquet_task_files(tmp_path):
    pytest.importorskip("pyarrow")
    tasks = generate_split_v2("bench", 5)
    for name in ("t.jsonl", "t.parquet"):
        path = write_task_file(tasks, tmp_path / name)
        back = read_task_file(path)
        assert [t.to_json() for t in back] == [t.to_json() for t in tasks]


def test_released_rows_without_visalign_fields_are_read(tmp_path):
    """A row as the paper releases it: no witness, no version, its own construction groups kept as given."""
    spec = {"verifier_version": "vvr_bench_v4", "background": {"color": "white"},
            "objects": [{"id": "obj_0", "color": "red", "shape": "circle", "count": 2, "count_mode": "exact"}],
            "relations": [], "forbidden": [{"color": "blue"}]}
    row = {"id": "vvr_bench_00000", "prompt": "Two red circles.", "visual_spec_json": json.dumps(spec),
           "active_criteria": ["exact_count"], "difficulty_bin": 1, "active_families": ["quantity"],
           "tier": "single_family"}
    path = tmp_path / "rel.jsonl"
    path.write_text(json.dumps(row) + "\n")
    (task,) = read_task_file(path)
    assert task.witness is None and task.spec.groups[0].count == 2 and task.difficulty_bin == 1


def test_task_file_errors_name_the_row(tmp_path, monkeypatch):
    good = generate_split_v2("bench", 1)[0].to_row()
    bad = dict(good, id="x-1", visual_spec_json=json.dumps({"objects": [{"id": "a", "color": "teal", "count": 1}]}))
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(TaskFileError, match=r"bad.jsonl:2 \(task x-1\).*unknown colour 'teal'"):
        read_task_file(path)
    pytest.importorskip("pyarrow")
    (tmp_path / "t.csv").write_text("id\n")
    with pytest.raises(TaskFileError, match="unknown task file type"):
        read_task_file(tmp_path / "t.csv")
    write_task_file(generate_split_v2("bench", 1), tmp_path / "ok.parquet")
    real_import = builtins.__import__

    def no_pyarrow(name, *a, **k):
        if name.startswith("pyarrow"):
            raise ImportError("No module named 'pyarrow'")
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    with pytest.raises(TaskFileError, match=r"needs pyarrow.*visalign\[parquet\]"):
        read_task_file(tmp_path / "ok.parquet")


def test_v1_task_files_stay_readable(tmp_path):
    from visalign.vvr.benchmark import generate_split, jsonl_bytes as v1_bytes

    path = tmp_path / "v1.jsonl"
    path.write_bytes(v1_bytes(generate_split("challenge", 3)))
    tasks = read_task_file(path)
    assert [t.version for t in tasks] == ["vvr-1"] * 3


def test_constant_images_floor_on_bench():
    floors = floor_scores(generate_split_v2("bench", 60))
    assert floors["blank"]["strict"] == 0.0 and floors["blank"]["reward"] == 0.0
    assert floors["clutter"]["strict"] <= 0.005 and floors["dense_grid"]["strict"] <= 0.005
    assert floors["clutter"]["objects_read"] == 24 and floors["dense_grid"]["objects_read"] == 36


@pytest.mark.slow
@pytest.mark.parametrize("split", EVAL_SPLITS)
def test_full_split_hash(tmp_path, split):
    path = write_split_v2(split, tmp_path, progress=False)
    assert sha256(path.read_bytes()) == EXPECTED_SHA256_V2[split]
    assert len(read_task_file(path)) == SPLITS_V2[split].size
