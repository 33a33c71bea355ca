"""pipelines/reproduce.py: the README's tables come from the stored result files, and the commands behind them
still produce those numbers (a short text run in the default suite, every other entry under ``-m slow``)."""
from __future__ import annotations

import copy
import json
import math
import sys
from pathlib import Path

import pytest

from visalign.results import compare

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipelines import readme_results as registry  # noqa: E402
from pipelines.readme_blocks import formatting, vvr as vvr_blocks  # noqa: E402
from pipelines import reproduce  # noqa: E402


def test_every_entry_has_a_stored_result_file_unless_its_first_run_is_pending():
    missing = {e.name for e in registry.ENTRIES if not e.path.is_file()}
    pending = {e.name for e in registry.ENTRIES if e.first_run_pending}
    assert missing <= pending, (f"no assets/results/<name>.json for {sorted(missing - pending)}: run "
                                "pipelines/reproduce.py --only NAME --write")
    assert pending <= missing, f"{sorted(pending - missing)} have their result file: drop first_run_pending"


def test_a_pending_entry_keeps_its_hand_written_blocks_until_its_first_run(monkeypatch):
    """Without a stored file a pending entry's blocks are not compared; a block of a non-pending entry without one
    is reported."""
    readme = "x is <!-- results:later -->hand-written<!-- /results -->.\n"
    later = registry.Entry("later", ((None, ("python", "later.py", "--results", "{results}")),), fast=False,
                           blocks={"later": lambda t: "rendered"}, first_run_pending=True)
    monkeypatch.setattr(reproduce, "ENTRIES", (later,))
    assert reproduce.readme_mismatches(readme, {}) == []
    monkeypatch.setattr(reproduce, "ENTRIES", (registry.Entry("later", later.runs, fast=False, blocks=later.blocks),))
    assert reproduce.readme_mismatches(readme, {}) == ["README block 'later': no stored result file later.json"]


def test_readme_blocks_equal_what_their_result_files_render():
    problems = reproduce.readme_mismatches(registry.README.read_text(), reproduce.stored_tables())
    assert not problems, "\n".join(problems) + "\n(pipelines/reproduce.py --render rewrites them)"


# Decimal figures in README prose (outside results blocks) that no stored result file holds, by section: each is a
# one-off run or a constant, named here with where it comes from, so that a new hand-written figure, or a listed one
# whose stored value moved, fails the test below instead of drifting silently.
UNTRACED_FIGURES = {
    "Two commands": {
        "0.126": "visalign demo in a fresh clone and venv on an AVX2 AMD EPYC, 2 threads (demo.json is from AVX-512)",
    },
    "VVR: verifiable visual rewards": {
        "99.33": "python -m visalign.vvr.robustness: pass-rate range of generator-like renders (no result file)",
        "13.3": "python -m visalign.vvr.throughput with the clip extra (open_clip ViT-B-32), measured in the clip venv",
    },
    "Methods on VVR images (work in progress)": {
        "0.128": "one-off RWTD probes on VVR v1 (vvr_compare.py with the overrides named in the text)",
        "0.461": "one-off RWTD probes on VVR v1",
        "0.473": "one-off RWTD probes on VVR v1",
        "0.268": "one-off RWTD probes on VVR v1",
        "0.449": "one-off RWTD probes on VVR v1",
        "0.2": "training reward/mean of vvr2_ema2_rwtd_full_step's sample-regression run, steps 1-10 (its metrics.jsonl)",
        "0.01": "the same run's training reward/mean over steps 21-30 (0.005; its metrics.jsonl)",
    },
    "Latent reward models and CoRe (tiny images and video)": {
        "0.926": "core_compare_images.py prints the standalone LRM's pair accuracy; the result file does not store it",
    },
    "Audio-video: modality-anchored GRPO (AV-GRPO)": {
        **{f: "AV-GRPO video-quality investigation: av_compare.py variants run once each, commands in the text"
           for f in ("-0.0155", "-0.0093", "-0.0097", "-0.0042")},
        "0.456": "one-off run: pretrain_av.py --init assets/av_large/tiny_av_flow --minutes 20 --steps 100000 --lr 3e-4 "
                 "--cross-frames 0 --decoupled-times 0.5, scored by av_cross_modal.py",
    },
}


def test_prose_figures_trace_to_stored_results_or_are_listed():
    """Every decimal in README prose is a stored value (a result file or a GPU check's record in ``assets/gpu``) at its
    printed precision (see ``traces_to``) or listed above."""
    from visalign.results.readme import prose_figures, stored_values, traces_to

    gpu_records = [json.loads(p.read_text()) for p in sorted((registry.README.parent / "assets" / "gpu").glob("*.json"))]
    values = stored_values(reproduce.stored_tables().values(), gpu_records)
    figures = prose_figures(registry.README.read_text())
    found = [(section, line, figure) for section, line, figure in figures if not traces_to(figure, values)]
    unlisted = [f"line {line} ({section}): {figure}" for section, line, figure in found
                if figure not in UNTRACED_FIGURES.get(section, {})]
    assert not unlisted, ("README figures outside results blocks that no stored result holds (a moved result, or a "
                          "hand-written number: put it behind a reproduce entry, or list it with its source):\n"
                          + "\n".join(unlisted))
    # a listed figure may also match some stored value by chance (three-decimal figures often do), so only a figure
    # gone from its section is stale
    stale = [(section, figure) for section, listed in UNTRACED_FIGURES.items() for figure in listed
             if all((s, f) != (section, figure) for s, _, f in figures)]
    assert not stale, f"listed as untraced but gone from the README (remove them from UNTRACED_FIGURES): {stale}"


def test_a_hand_written_prose_figure_is_caught_with_its_line():
    from visalign.results.readme import prose_figures, stored_values, traces_to

    values = stored_values(reproduce.stored_tables().values())
    text = "## Toys\n\nThe tilt reaches 0.98765 here, `lr 0.123` is code, and " \
           "<!-- results:x -->0.55555<!-- /results --> is a block.\n"
    assert [f for f in prose_figures(text) if not traces_to(f[2], values)] == [("Toys", 3, "0.98765")]


def test_a_changed_readme_number_is_caught_by_block_name():
    text = registry.README.read_text()
    block = reproduce.rendered_blocks(reproduce.stored_tables())["toy_tilt/lambda"]
    tampered = text.replace(block, block.replace("| reward |", "| reward | 1 |", 1))
    assert any("'toy_tilt/lambda' differs" in p for p in reproduce.readme_mismatches(tampered, reproduce.stored_tables()))


def test_a_moved_row_is_reported_by_name():
    stored = reproduce.load_results(registry.entry("text_arithmetic").path)
    fresh = copy.deepcopy(stored)
    fresh.row("grpo").values["exact_match"] += 1 / 256
    result = compare(stored, fresh)
    assert result.status == "moved" and [m.row for m in result.moved] == ["grpo"]
    assert "moved: grpo: exact_match" in result.report()


def test_across_seeds_is_the_mean_change_in_its_standard_error_over_seeds():
    metrics = (("desync", "desync"), ("video_quality", "video quality"))
    changes = [{"desync": d, "video_quality": v} for d, v in ((0.1, -1e-4), (0.3, 1e-4), (0.2, -3e-4))]
    scores = formatting.across_seeds(changes, metrics)
    assert scores["desync"] == pytest.approx(0.2 / (0.1 / 3 ** 0.5))
    assert scores["video_quality"] == pytest.approx(-1e-4 / (2e-4 / 3 ** 0.5))
    assert formatting.across_seeds([{"desync": 0.1, "video_quality": 0.0}] * 2, metrics) == {"desync": math.inf,
                                                                                            "video_quality": 0.0}


def test_second_claim_reads_a_change_with_no_spread_as_none_or_infinite_and_judges_each_seed():
    """The visible-resolution readout's changes are often exactly 0 ± 0 (no SE): 0 SE then, and a nonzero change
    with no spread (every item moved alike) is ±∞ SE, so a uniform loss fails the claim."""
    from pipelines.readme_blocks import av as av_blocks
    from visalign.results import ResultRow, ResultTable, Run

    def row(seed: str, visible: float, visible_in_se: float | None) -> ResultRow:
        changes = {"desync": 0.05, "video_quality": -2e-4, "audio_quality": 0.6, "video_quality_visible": visible}
        in_se = {"desync": 1.5, "video_quality": -3.9, "audio_quality": 4.0, "video_quality_visible": visible_in_se}
        return ResultRow(f"seed={seed}/av_grpo", changes, info={"change_in_se": in_se, "change_exact": changes})

    t = ResultTable("x", [Run("python pipelines/av_compare.py")], [row("0", 0.0, None), row("1", -1e-3, None)])
    lines = av_blocks.second_claim("video_quality_visible", "visible")(t).split(";\n")
    assert lines[0] == "seed 0: desync +1.5 SE, visible +0.0 SE, audio quality +4.0 SE (holds)"
    assert lines[1] == "seed 1: desync +1.5 SE, visible −inf SE, audio quality +4.0 SE (fails)"
    assert av_blocks.av_second_claim(t).startswith("seed 0: desync +1.5 SE, video quality −3.9 SE")


def test_large_eval_table_gives_each_change_in_its_paired_se_and_the_seed_mean_in_the_se_over_seeds():
    from visalign.results import ResultRow, ResultTable, Run

    def row(seed: str, acc_after: float, soft_after: float) -> ResultRow:
        return ResultRow(f"long-seed={seed}/rwtd", {"acc_before": 0.07, "acc_after": acc_after, "soft_before": 0.17,
                                                    "soft_after": soft_after, "feat_dist_to_ref": 0.03},
                         {"acc_after": 0.002, "soft_after": 0.001})

    t = ResultTable("x", [Run("python pipelines/vvr_compare.py")], [row("0", 0.076, 0.179), row("1", 0.072, 0.175)])
    lines = vvr_blocks.large_eval_by_seed(t).splitlines()
    assert lines[2].split(" | ")[1:4] == ["0", "0.0700 → 0.0760 (±0.0020)", "3.0"]
    assert lines[3].split(" | ")[3] == "1.0"
    seed_mean = lines[4].split(" | ")
    assert seed_mean[1:3] == ["mean of 2", "+0.0040"]
    assert seed_mean[3] == f"{0.004 / 0.002:.1f} (over seeds)"  # changes 0.006, 0.002: SE over seeds 0.002
    assert seed_mean[5] == f"{0.007 / 0.002:.1f} (over seeds)"


def test_methods_large_eval_table_names_each_method_with_its_changes_in_paired_se_and_its_samples():
    from visalign.results import ResultRow, ResultTable, Run

    values = {"acc_before": 0.08, "acc_after": 0.07, "soft_before": 0.17, "soft_after": 0.18, "feat_dist_to_ref": 0.1,
              "samples_policy": 3840, "samples_reference": 0}
    r = ResultRow("flow_grpo/flow_grpo", values, {"acc_after": 0.002, "soft_after": 0.004},
                  info={"generator": "tiny_flow_vvr2"})
    line = vvr_blocks.methods_large_eval(ResultTable("x", [Run("python pipelines/vvr_compare.py")], [r])).splitlines()[2]
    assert line.split(" | ")[1:5] == ["4-step flow (v2)", "0.0800 → 0.0700 (±0.0020)", "−5.0",
                                      "0.1700 → 0.1800 (±0.0040)"]
    assert line.startswith("| Flow-GRPO |") and line.endswith("| 3840 + 0 |")


def test_methods_seeds_table_names_each_method_and_training_seed_with_its_changes_in_paired_se():
    from visalign.results import ResultRow, ResultTable, Run

    def row(method: str, seed: str, acc_after: float) -> ResultRow:
        return ResultRow(f"{method}-seed={seed}/{method}", {"acc_before": 0.002, "acc_after": acc_after,
                                                             "soft_before": 0.04, "soft_after": 0.043,
                                                             "feat_dist_to_ref": 0.05},
                         {"acc_after": 0.0005, "soft_after": 0.0006}, info={"generator": "tiny_flow_vvr2"})

    t = ResultTable("x", [Run("python pipelines/vvr_compare.py")], [row("flow_grpo", "0", 0.003),
                                                                    row("diffusion_nft", "1", 0.0015)])
    lines = vvr_blocks.methods_seeds_large_eval(t).splitlines()
    assert lines[2].split(" | ")[1:5] == ["4-step flow (v2)", "0", "0.0020 → 0.0030 (±0.0005)", "2.0"]
    assert lines[2].startswith("| Flow-GRPO |") and lines[2].endswith("| 5.0 | 0.050 |")
    assert lines[3].startswith("| DiffusionNFT | 4-step flow (v2) | 1 |") and lines[3].split(" | ")[4] == "−1.0"


def test_methods_per_bin_table_gives_one_line_per_scored_bin_with_its_changes_in_paired_se():
    from visalign.results import ResultRow, ResultTable, Run

    values = {"bin1_acc_before": 0.15, "bin1_acc_after": 0.16, "bin1_soft_before": 0.27, "bin1_soft_after": 0.28,
              "bin2_acc_before": 0.010, "bin2_acc_after": 0.009, "bin2_soft_before": 0.088, "bin2_soft_after": 0.087,
              "feat_dist_to_ref": 0.056}
    r = ResultRow("diffusion_nft", values, {"bin1_acc_after": 0.005, "bin1_soft_after": 0.004,
                                            "bin2_acc_after": 0.001, "bin2_soft_after": 0.002},
                  info={"generator": "tiny_flow_vvr2"})
    lines = vvr_blocks.methods_per_bin(ResultTable("x", [Run("python pipelines/vvr_compare.py")], [r])).splitlines()
    assert len(lines) == 4
    assert lines[2] == ("| DiffusionNFT | 4-step flow (v2) | 1 | 0.1500 → 0.1600 (±0.0050) | 2.0 | "
                        "0.2700 → 0.2800 (±0.0040) | 2.5 | 0.056 |")
    assert lines[3].split(" | ")[2:5] == ["2", "0.0100 → 0.0090 (±0.0010)", "−1.0"]


def test_bases_table_gives_each_base_its_change_from_the_first_of_its_run():
    from visalign.results import ResultRow, ResultTable, Run

    def row(run: str, base: str, b: int, acc: float, change: float) -> ResultRow:
        return ResultRow(f"{run}/{base}/bin {b}", {"acc": acc, "soft": 0.2, "acc_change": change, "soft_change": 0.0},
                         {"acc_change": 0.01, "soft_change": 0.0},
                         info={"checkpoint": f"assets/{base}/{run}", "tasks": 1024, "draws": 1})

    rows = [row(run, base, b, 0.1 + change, change) for run in ("flow", "one_step")
            for base, change in (("old", 0.0), ("new", 0.05)) for b in (1, 2)]
    lines = vvr_blocks.vvr_bases_table(ResultTable("x", [Run("python pipelines/vvr_bases.py")], rows)).splitlines()
    assert lines[0] == ("| base (change from the first of its kind ± paired SE) | bin 1 strict | bin 1 soft reward | "
                        "bin 2 strict | bin 2 soft reward |")
    assert lines[2] == "| `assets/old/flow` | 0.1000 | 0.2000 | 0.1000 | 0.2000 |"
    assert lines[3].startswith("| `assets/new/flow` | 0.1500 (+0.0500 ± 0.0100) | 0.2000 (+0.0000 ± 0.0000) |")
    assert lines[4] == "| `assets/old/one_step` | 0.1000 | 0.2000 | 0.1000 | 0.2000 |"  # first of its run again
    assert lines[-1] == "1,024 unseen tasks per bin × 1 noise draw."


def test_x0_pilot_table_gives_each_arms_accuracy_with_its_se_and_soft_reward_per_sampler():
    from visalign.results import ResultRow, ResultTable, Run

    rows = [ResultRow(f"{arm}/{row}", {"all_satisfied": p, "soft_reward": p + 0.1}, {"all_satisfied": 0.01},
                      info={"n": 384})
            for arm, base in (("velocity", 0.01), ("sample_x0_loss", 0.2))
            for row, p in (("flow 8 steps", base), ("flow 4 steps", base / 2), ("one-step", base / 4))]
    lines = vvr_blocks.vvr_x0_pilot(ResultTable("x", [Run("python pipelines/vvr_pretrain.py")], rows)).splitlines()
    assert "8 Euler steps (384 held-out easy tasks)" in lines[0]
    assert lines[3].split(" | ")[1:] == ["20.0% ± 1.0 (RL reward 0.300)", "10.0% ± 1.0 (RL reward 0.200)",
                                         "5.0% ± 1.0 (RL reward 0.150) |"]
    assert lines[2].startswith("| velocity prediction, velocity loss (as shipped) | 1.0% ± 1.0 (RL reward 0.110)")


DEFAULT_SUITE = ("text_arithmetic_short", "pretrain_shipped")  # short enough to rerun in the default test suite


def _check(name: str, tmp_path: Path) -> None:
    e = registry.entry(name)
    if e.first_run_pending and not e.path.is_file():
        pytest.skip(f"{name}: no run has written its result file yet (run reproduce.py --only {name} --write)")
    stored = reproduce.load_results(e.path)
    if not stored.regenerated:
        pytest.skip(f"{name}: stored numbers are reconstructed, not yet regenerated (run reproduce.py --only {name} --write)")
    fresh = reproduce.run_entry(e, tmp_path, log=lambda _: None)
    result = compare(stored, fresh)
    if result.platform and stored.platform_tolerance is None and not result.ok:
        pytest.skip(f"{name} is exact only on the platform that wrote it, and this one differs:\n{result.report()}")
    assert result.ok, result.report()


def test_short_text_run_reproduces_its_stored_result(tmp_path: Path):
    """~10 s: warm start + 5 RL steps of GRPO and MaPP, compared exactly with assets/results/text_arithmetic_short.json."""
    _check("text_arithmetic_short", tmp_path)


def test_shipped_video_and_av_checkpoints_still_score_their_readme_numbers(tmp_path: Path):
    """~15 s: the shipped tiny video / audio-video checkpoints measured again, compared exactly with
    assets/results/pretrain_shipped.json (the README's pretraining table)."""
    _check("pretrain_shipped", tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("name", [e.name for e in registry.ENTRIES if e.name not in DEFAULT_SUITE])
def test_entry_reproduces_its_stored_result(name: str, tmp_path: Path):
    _check(name, tmp_path)


FAKE = """import sys
from pathlib import Path
from visalign.results import ResultRow, write_results
value = float(Path(sys.argv[0]).with_name("value.txt").read_text())
write_results(sys.argv[sys.argv.index("--results") + 1], "fake", "python fake.py", sys.argv[1:],
              [ResultRow("a", {"x": 0.5}), ResultRow("b", {"x": value})])
"""


def test_reproduce_reports_the_moved_row_and_write_rewrites_the_readme(tmp_path, monkeypatch, capsys):
    """The whole command on a stand-in entry: first run stores, an unchanged rerun says so, a moved value is reported
    with its row and fails, and --write puts the new number into the README block."""
    script = tmp_path / "fake.py"
    script.write_text(FAKE)
    value = tmp_path / "value.txt"
    readme = tmp_path / "README.md"
    readme.write_text("x is <!-- results:fake -->?<!-- /results -->.\n")
    fake = registry.Entry("fake", ((None, ("python", str(script), "--results", "{results}")),), fast=True,
                          blocks={"fake": lambda t: f"{t.row('b').values['x']:.1f}"})
    monkeypatch.setattr(registry, "RESULTS_DIR", tmp_path / "results")
    monkeypatch.setattr(registry, "ENTRIES", (fake,))
    monkeypatch.setattr(reproduce, "ENTRIES", (fake,))
    monkeypatch.setattr(reproduce, "README", readme)
    runs = ["--runs", str(tmp_path / "runs")]

    value.write_text("1.0")
    assert reproduce.main(["--only", "fake", "--write", *runs]) == 0
    assert readme.read_text() == "x is <!-- results:fake -->1.0<!-- /results -->.\n"
    assert reproduce.main(["--fast", *runs]) == 0
    assert "fake: unchanged" in capsys.readouterr().out

    value.write_text("2.0")
    assert reproduce.main(["--fast", *runs]) == 1
    out = capsys.readouterr().out
    assert "fake: moved" in out and "moved: b: x 1 -> 2" in out and "a: x" not in out
    assert reproduce.main(["--check-readme"]) == 0  # the README still matches the stored (old) file
    assert reproduce.main(["--fast", "--write", *runs]) == 1
    assert readme.read_text() == "x is <!-- results:fake -->2.0<!-- /results -->.\n"
    assert reproduce.load_results(fake.path).row("b").values["x"] == 2.0


def test_gather_stores_what_rerunning_every_part_gives_without_running_them(tmp_path, monkeypatch):
    """An entry gathering two single-run entries (e.g. two training seeds run apart) is stored by --gather from their
    stored results under its own labels, equal to a rerun of all its runs; parts that are not its runs in order, a
    missing part and parts from different platforms are refused."""
    templates = []
    for seed in (0, 1):
        folder = tmp_path / f"seed{seed}"
        folder.mkdir()
        (folder / "fake.py").write_text(FAKE)
        (folder / "value.txt").write_text(f"{seed + 1}.0")
        templates.append(("python", str(folder / "fake.py"), "--results", "{results}"))
    parts = tuple(registry.Entry(f"part{seed}", ((None, t),), fast=False) for seed, t in enumerate(templates))
    whole = registry.Entry("whole", tuple((f"s-seed={seed}", t) for seed, t in enumerate(templates)), fast=False,
                           blocks={"whole": lambda t: " ".join(f"{r.row}={r.values['x']:.1f}" for r in t.rows)},
                           gathers=("part0", "part1"))
    readme = tmp_path / "README.md"
    readme.write_text("x is <!-- results:whole -->?<!-- /results -->.\n")
    monkeypatch.setattr(registry, "RESULTS_DIR", tmp_path / "results")
    monkeypatch.setattr(registry, "ENTRIES", (*parts, whole))
    monkeypatch.setattr(reproduce, "ENTRIES", (*parts, whole))
    monkeypatch.setattr(reproduce, "README", readme)
    with pytest.raises(FileNotFoundError, match="part0"):
        reproduce.gather(whole, {})
    for name in ("part0", "part1"):
        assert reproduce.main(["--only", name, "--write", "--runs", str(tmp_path / "runs")]) == 0
    assert reproduce.main(["--gather", "whole"]) == 0
    assert readme.read_text() == ("x is <!-- results:whole -->s-seed=0/a=0.5 s-seed=0/b=1.0 s-seed=1/a=0.5 "
                                  "s-seed=1/b=2.0<!-- /results -->.\n")
    gathered = reproduce.load_results(whole.path)
    rerun = reproduce.run_entry(whole, tmp_path / "rerun", log=lambda _: None)
    assert compare(gathered, rerun).status == "unchanged"
    assert [r.label for r in gathered.runs] == [r.label for r in rerun.runs] == ["s-seed=0", "s-seed=1"]

    stored = reproduce.stored_tables()
    with pytest.raises(ValueError, match="not the runs of"):
        reproduce.gather(registry.Entry("whole", whole.runs, fast=False, gathers=("part1", "part0")), stored)
    with pytest.raises(ValueError, match="pictures"):
        reproduce.gather(registry.Entry("whole", whole.runs, fast=False, pictures={"a.png": "a.png"},
                                        gathers=whole.gathers), stored)
    stored["part1"].platform = {**stored["part1"].platform, "machine": "elsewhere"}
    with pytest.raises(ValueError, match="different platforms"):
        reproduce.gather(whole, stored)


def test_every_gathering_entry_runs_its_parts_runs_and_stores_their_merge():
    stored = reproduce.stored_tables()
    for e in registry.ENTRIES:
        if not e.gathers:
            continue
        parts = [registry.entry(n) for n in e.gathers]
        assert [t for p in parts for _, t in p.runs] == [t for _, t in e.runs], e.name
        if e.name in stored:
            assert compare(stored[e.name], reproduce.gather(e, stored)).status == "unchanged", (
                f"{e.name} differs from its parts' stored results: pipelines/reproduce.py --gather {e.name}")


def test_a_renderer_that_fails_keeps_the_fresh_result_and_changes_nothing(tmp_path, monkeypatch, capsys):
    """A bug in a block's renderer (any exception) must not lose the runs: the fresh result is saved under
    runs/reproduce_unwritten, and the stored file and the README are left as they were."""
    script = tmp_path / "fake.py"
    script.write_text(FAKE)
    (tmp_path / "value.txt").write_text("3.0")
    readme = tmp_path / "README.md"
    readme.write_text("x is <!-- results:fake -->?<!-- /results -->.\n")
    fake = registry.Entry("fake", ((None, ("python", str(script), "--results", "{results}")),), fast=True,
                          blocks={"fake": lambda t: " | ".join([[t.row("b").values["x"]]])})  # TypeError
    monkeypatch.setattr(registry, "RESULTS_DIR", tmp_path / "results")
    monkeypatch.setattr(registry, "ENTRIES", (fake,))
    monkeypatch.setattr(reproduce, "ENTRIES", (fake,))
    monkeypatch.setattr(reproduce, "README", readme)
    monkeypatch.setattr(reproduce, "ROOT", tmp_path)
    assert reproduce.main(["--only", "fake", "--write", "--runs", str(tmp_path / "runs")]) == 1
    assert "fake: not written (sequence item 0" in capsys.readouterr().out
    assert readme.read_text() == "x is <!-- results:fake -->?<!-- /results -->.\n"
    assert not fake.path.exists()
    kept = reproduce.load_results(tmp_path / "runs" / "reproduce_unwritten" / "fake.json")
    assert kept.row("b").values["x"] == 3.0
    fake.blocks["fake"] = lambda t: str(t.row("b").values["x"])  # the renderer fixed: the kept result is stored
    assert reproduce.main(["--write-kept", "fake", "--runs", str(tmp_path / "runs")]) == 0
    assert reproduce.load_results(fake.path).row("b").values["x"] == 3.0
    assert readme.read_text() == "x is <!-- results:fake -->3.0<!-- /results -->.\n"
    assert not (tmp_path / "runs" / "reproduce_unwritten" / "fake.json").exists()
    with pytest.raises(SystemExit, match="no kept result"):
        reproduce.main(["--write-kept", "fake"])


RUN = """import sys, time
from pathlib import Path
from visalign.results import ResultRow, write_results
args = sys.argv[1:]
after = Path(args[args.index("--after") + 1]) if "--after" in args else None
if after is not None and not after.is_file():
    raise SystemExit(f"started before {after} was written")
if "--meet" in args:  # announce this run, then wait for the named partner run to be running too
    folder, me, partner = args[args.index("--meet") + 1: args.index("--meet") + 4]
    Path(folder, me).touch()
    deadline = time.time() + 5
    while not Path(folder, partner).exists():
        if time.time() > deadline:
            raise SystemExit(f"{partner} never ran alongside {me}")
        time.sleep(0.05)
time.sleep(0.2)
write_results(args[args.index("--results") + 1], "run", "python run.py", args,
              [ResultRow("r", {"x": float(args[args.index("--value") + 1])})])
"""


def test_independent_runs_go_side_by_side_and_a_run_reading_the_folder_waits(tmp_path):
    """--jobs: the runs of a wave start together; a run whose command reads {folder} waits for every earlier run; the
    merged table is the one a sequential run gives."""
    script = tmp_path / "run.py"
    script.write_text(RUN)
    command = ("python", str(script), "--results", "{results}")
    e = registry.Entry("fake", (("a", (*command, "--value", "1")), ("b", (*command, "--value", "2")),
                                ("c", (*command, "--value", "3", "--after", "{folder}/result_1.json")),
                                ("d", (*command, "--value", "4"))), fast=True)
    assert reproduce.run_waves(e) == [[0, 1], [2, 3]]
    tables = {jobs: reproduce.run_entry(e, tmp_path / f"jobs{jobs}", log=lambda _: None, jobs=jobs) for jobs in (1, 2)}
    assert [(r.row, r.values["x"]) for r in tables[2].rows] == [("a/r", 1.0), ("b/r", 2.0), ("c/r", 3.0), ("d/r", 4.0)]
    assert [r.values for r in tables[1].rows] == [r.values for r in tables[2].rows]
    assert [r.args for r in tables[1].runs] == [r.args for r in tables[2].runs]
    assert reproduce.run_waves(registry.entry("poem_flow")) == [[0], [1]]

    def meeting(place: Path) -> registry.Entry:  # two runs that each wait (5 s at most) until the other has started
        place.mkdir()
        return registry.Entry("meet", (("a", (*command, "--value", "1", "--meet", str(place), "a", "b")),
                                       ("b", (*command, "--value", "2", "--meet", str(place), "b", "a"))), fast=True)

    together = reproduce.run_entry(meeting(tmp_path / "place2"), tmp_path / "meet2", log=lambda _: None, jobs=2)
    assert [r.values["x"] for r in together.rows] == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="b never ran alongside a"):
        reproduce.run_entry(meeting(tmp_path / "place1"), tmp_path / "meet1", log=lambda _: None, jobs=1)


def test_resume_keeps_the_runs_an_interrupted_entry_left(tmp_path, monkeypatch):
    """``--resume`` runs the entry in the folder a stopped run left (a checkpointing command continues there); without
    it the folder starts empty."""
    script = tmp_path / "count.py"
    script.write_text("""import sys
from pathlib import Path
from visalign.results import ResultRow, write_results
args = sys.argv[1:]
marks = Path(args[args.index("--out") + 1]) / "marks.txt"
marks.parent.mkdir(parents=True, exist_ok=True)
with marks.open("a") as f:
    f.write("x")
write_results(args[args.index("--results") + 1], "count", "python count.py", args,
              [ResultRow("r", {"runs": float(len(marks.read_text()))})])
""")
    e = registry.Entry("count", ((None, ("python", str(script), "--out", "{out}", "--results", "{results}")),), fast=True)
    runs = tmp_path / "runs"
    assert reproduce.run_entry(e, runs, log=lambda _: None).row("r").values["runs"] == 1.0
    assert reproduce.run_entry(e, runs, log=lambda _: None, resume=True).row("r").values["runs"] == 2.0
    assert reproduce.run_entry(e, runs, log=lambda _: None).row("r").values["runs"] == 1.0
    with pytest.raises(SystemExit):
        reproduce.main(["--only", "count", "--resume"])
