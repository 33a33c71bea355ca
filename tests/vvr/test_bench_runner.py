"""Bench runner on a folder of images and on a generator, and its input errors (v1 splits, v2 splits and task files)."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys

import numpy as np
import pytest
import torch
import yaml
from PIL import Image

from visalign.core.generator import Generator, register_generator
from visalign.vvr.bench import BenchInputError, add_bench_arguments, run_bench
from visalign.vvr.render import write_renders


def _args(*argv):
    return add_bench_arguments(argparse.ArgumentParser()).parse_args(list(argv))


@pytest.fixture()
def folder(tmp_path, bench20):
    d = tmp_path / "imgs"
    write_renders(bench20, str(d), size=96)
    return d


def test_runner_on_folder(folder, tmp_path):
    out = tmp_path / "out"
    assert run_bench(_args("--split", "bench-v1", "--images", str(folder), "--out", str(out), "--limit", "20")) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["tasks"] == 20 and report["accuracy"] == 1.0
    assert set(report["per_level"]) == {"0"} and "exists_shape" in report["per_type"]
    assert "| exists_shape |" in (out / "report.md").read_text()
    assert len((out / "results.jsonl").read_text().splitlines()) == 20
    assert not (out / "failures.png").exists()


def test_failures_grid(folder, tmp_path):
    first = sorted(folder.iterdir())[0]
    Image.new("RGB", (96, 96), (255, 255, 255)).save(first)
    out = tmp_path / "out"
    run_bench(_args("--split", "bench-v1", "--images", str(folder), "--out", str(out), "--limit", "20"))
    report = json.loads((out / "report.json").read_text())
    assert report["accuracy"] == pytest.approx(19 / 20)
    assert Image.open(out / "failures.png").size[0] > 0


def test_missing_task_id(folder, tmp_path):
    (folder / "vvrbench-00007.png").unlink()
    with pytest.raises(BenchInputError, match="vvrbench-00007"):
        run_bench(_args("--split", "bench-v1", "--images", str(folder), "--out", str(tmp_path / "o"), "--limit", "20"))


def test_extra_file(folder, tmp_path):
    Image.new("RGB", (96, 96)).save(folder / "cat.png")
    with pytest.raises(BenchInputError, match="cat.png"):
        run_bench(_args("--split", "bench-v1", "--images", str(folder), "--out", str(tmp_path / "o"), "--limit", "20"))


@pytest.mark.parametrize("bad, match", [
    (lambda p: Image.new("RGB", (96, 64)).save(p), "96x64"),
    (lambda p: Image.new("RGB", (16, 16)).save(p), "16x16"),
    (lambda p: Image.new("L", (96, 96)).save(p), "mode 'L'"),
    (lambda p: p.write_bytes(b"\x89PNG\r\n\x1a\nnot really a png"), "cannot read"),
    (lambda p: Image.new("RGB", (128, 128)).save(p), "differs"),
])
def test_bad_image_names_the_file(folder, tmp_path, bad, match):
    target = folder / "vvrbench-00003.png"
    bad(target)
    with pytest.raises(BenchInputError, match=match) as err:
        run_bench(_args("--split", "bench-v1", "--images", str(folder), "--out", str(tmp_path / "o"), "--limit", "20"))
    assert "vvrbench-00003" in str(err.value)


def test_module_entry_point_reports_errors(tmp_path):
    r = subprocess.run([sys.executable, "-m", "visalign.vvr.bench", "--images", str(tmp_path), "--out",
                        str(tmp_path / "o"), "--limit", "2"], capture_output=True, text=True)
    assert r.returncode == 2 and "vvrbench2-00000" in r.stderr


@register_generator("vvr_test_blank")
class _Blank(Generator):
    def __init__(self, config=None):
        super().__init__(config)
        self.w = torch.nn.Parameter(torch.zeros(1))

    @property
    def noise_shape(self):
        return (3, 32, 32)

    def generate(self, noise, cond=None):
        return torch.ones_like(noise) + 0 * self.w


def test_runner_with_generator_config(tmp_path):
    cfg = tmp_path / "gen.yaml"
    cfg.write_text(yaml.safe_dump({"generator": {"name": "vvr_test_blank"}}))
    out = tmp_path / "out"
    assert run_bench(_args("--split", "fast", "--generator", str(cfg), "--out", str(out), "--limit", "4")) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["tasks"] == 4 and report["strict_accuracy"] == 0.0 and report["version"] == "vvr-2"
    assert len(list((out / "images").glob("*.png"))) == 4
    assert np.asarray(Image.open(out / "images" / "vvrfast2-00000.png")).min() == 255


@pytest.fixture(scope="module")
def v2_tasks():
    from visalign.vvr.splits import generate_split_v2

    return generate_split_v2("bench", 24)


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_v2_task_file_report(tmp_path, v2_tasks, fmt):
    from visalign.vvr.spec_render import write_spec_renders
    from visalign.vvr.splits import write_task_file

    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    tasks_file = write_task_file(v2_tasks, tmp_path / f"tasks.{fmt}")
    folder = tmp_path / "imgs"
    write_spec_renders(v2_tasks, str(folder), size=256)
    Image.new("RGB", (256, 256), (255, 255, 255)).save(folder / f"{v2_tasks[5].id}.png")  # one blank answer
    for extra in ([], ["--paper-tolerances"]):
        out = tmp_path / f"out{len(extra)}"
        assert run_bench(_args("--tasks", str(tasks_file), "--images", str(folder), "--out", str(out), *extra)) == 0
        report = json.loads((out / "report.json").read_text())
        assert report["tasks"] == 24 and report["strict_accuracy"] == pytest.approx(23 / 24, abs=1e-4)
        assert report["tolerances"] == ("paper" if extra else "default")
        assert set(report["floors"]) == {"blank", "clutter", "dense_grid"} and report["floors"]["blank"]["strict"] == 0
        assert set(report["strict_by_difficulty"]) <= {"1", "2", "3", "4", "5"}
        assert "left_of" in report["strict_by_criterion"] or "color_shape_binding" in report["strict_by_criterion"]
        md = (out / "report.md").read_text()
        assert "constant images" in md and "| blank |" in md and "Per criterion" in md
        assert (out / "failures.png").is_file()


def test_v2_missing_images_and_bad_rows(tmp_path, v2_tasks):
    from visalign.vvr.spec_render import write_spec_renders
    from visalign.vvr.splits import write_task_file

    tasks_file = write_task_file(v2_tasks[:6], tmp_path / "t.jsonl")
    folder = tmp_path / "imgs"
    write_spec_renders(v2_tasks[:5], str(folder), size=128)
    with pytest.raises(BenchInputError, match=v2_tasks[5].id):
        run_bench(_args("--tasks", str(tasks_file), "--images", str(folder), "--out", str(tmp_path / "o")))
    assert run_bench(_args("--tasks", str(tasks_file), "--images", str(folder), "--out", str(tmp_path / "o"),
                           "--missing-as-failure")) == 0
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    assert report["missing"] == 1 and report["strict_accuracy"] == pytest.approx(5 / 6, abs=1e-4)
    bad = tmp_path / "bad.jsonl"
    row = json.loads(v2_tasks[0].to_json())
    row["visual_spec_json"] = json.dumps({"objects": [{"id": "a", "color": "red", "shape": "hexagon", "count": 1}]})
    bad.write_text(json.dumps(row) + "\n")
    with pytest.raises(BenchInputError, match=r"bad.jsonl:1.*unknown shape 'hexagon'"):
        run_bench(_args("--tasks", str(bad), "--images", str(folder), "--out", str(tmp_path / "o2")))
