"""The shipped VVR checkpoints (assets/, made by pipelines/vvr_pretrain.py) and a short run of the demo config."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from visalign.core import load_generator
from visalign.core.prompts import _read_prompt_file
from visalign.results import load_results

from .conftest import load_pipeline_script

ROOT = Path(__file__).resolve().parent.parent
ONE_STEP = ROOT / "assets" / "tiny_one_step_vvr"
ONE_STEP_V2 = ROOT / "assets" / "tiny_one_step_vvr2"
FLOW = ROOT / "assets" / "tiny_flow_vvr"
FLOW_V2 = ROOT / "assets" / "tiny_flow_vvr2"
N_EVAL = 64
#: each shipped checkpoint with the folder of its task files (v1: open world; v2: closed world)
ONE_STEP_V2_LONG = ROOT / "assets" / "vvr2_long" / "tiny_one_step_vvr2"
FLOW_V2_LONG = ROOT / "assets" / "vvr2_long" / "tiny_flow_vvr2"
ONE_STEP_V2_LONGER = ROOT / "assets" / "vvr2_longer" / "tiny_one_step_vvr2"
FLOW_V2_LONGER = ROOT / "assets" / "vvr2_longer" / "tiny_flow_vvr2"
SHIPPED = [(ONE_STEP, ONE_STEP), (FLOW, ONE_STEP), (ONE_STEP_V2, ONE_STEP_V2), (FLOW_V2, ONE_STEP_V2)]
SHIPPED_IDS = ["one_step", "flow", "one_step_v2", "flow_v2"]
#: the longer-trained v2 bases (issue 19), compared with the shipped v2 bases below
LONGER = [(ONE_STEP_V2_LONG, ONE_STEP_V2), (FLOW_V2_LONG, ONE_STEP_V2), (ONE_STEP_V2_LONGER, ONE_STEP_V2),
          (FLOW_V2_LONGER, ONE_STEP_V2)]


def _eval_tasks(n: int = N_EVAL, tasks: Path = ONE_STEP) -> tuple[list[str], list[dict]]:
    prompts, meta = _read_prompt_file(str(tasks / "tasks_eval.jsonl"))
    return prompts[:n], meta[:n]


@pytest.mark.parametrize("path,tasks", SHIPPED + LONGER, ids=SHIPPED_IDS + ["one_step_v2_long", "flow_v2_long", "one_step_v2_longer", "flow_v2_longer"])
def test_shipped_checkpoint_loads_and_samples(path: Path, tasks: Path) -> None:
    assert (path / "model.safetensors").is_file() and (path / "generator.json").is_file()
    assert (path / "model.safetensors").stat().st_size < 8_000_000  # small: a 1.8M-parameter UNet in fp32
    gen = load_generator(path).eval()
    prompts, _ = _eval_tasks(4, tasks)
    with torch.no_grad():
        x = gen.sample(prompts, generator=torch.Generator().manual_seed(0))
    assert x.shape == (4, 3, 32, 32)
    assert torch.isfinite(x).all() and x.min() >= -1 and x.max() <= 1


@pytest.mark.parametrize("tasks,prefix", [(ONE_STEP, "vvr-eval-"), (ONE_STEP_V2, "vvreasy2-3")], ids=["v1", "v2"])
def test_eval_tasks_are_held_out(tasks: Path, prefix: str) -> None:
    """Eval tasks come from the held-out stream (v2: pool indices from 3e9) and none is a training task."""
    _, train_meta = _read_prompt_file(str(tasks / "tasks_train.jsonl"))
    _, eval_meta = _read_prompt_file(str(tasks / "tasks_eval.jsonl"))
    train_ids = {m["task_id"] for m in train_meta}
    assert all(m["task_id"].startswith(prefix) and m["task_id"] not in train_ids for m in eval_meta)


def _scores(gen, prompts, meta) -> tuple[float, float]:
    from visalign.rewards.vvr import VVRReward

    with torch.no_grad():
        x = gen.sample(prompts, generator=torch.Generator().manual_seed(1))
    return VVRReward()(x, prompts, meta).mean().item(), VVRReward(strict=True)(x, prompts, meta).mean().item()


@pytest.mark.parametrize("path,tasks", SHIPPED, ids=SHIPPED_IDS)
def test_shipped_checkpoint_beats_random_init_on_held_out_tasks(path: Path, tasks: Path) -> None:
    """v1: 64 held-out tasks, one draw each; v2 (closed world, solved ~1% of the time): all 128 x 4 draws."""
    prompts, meta = _eval_tasks(N_EVAL, tasks) if tasks == ONE_STEP else _eval_tasks(128, tasks)
    if tasks == ONE_STEP_V2:
        prompts, meta = prompts * 4, meta * 4
    shipped = load_generator(path).eval()
    torch.manual_seed(0)
    random_init = type(shipped)(type(shipped.config)(**vars(shipped.config))).eval()
    soft, strict = _scores(shipped, prompts, meta)
    soft0, strict0 = _scores(random_init, prompts, meta)
    assert soft > soft0 + 0.03, (soft, soft0)
    assert strict > strict0, (strict, strict0)


@pytest.mark.parametrize("better, base, soft_margin, strict_margin", [
    (ONE_STEP_V2_LONG, ONE_STEP_V2, 0.05, 0.03), (FLOW_V2_LONG, FLOW_V2, 0.05, 0.03),
    (ONE_STEP_V2_LONGER, ONE_STEP_V2_LONG, 0.02, 0.02), (FLOW_V2_LONGER, FLOW_V2_LONG, 0.03, 0.03),
], ids=["long_one_step", "long_flow", "longer_one_step", "longer_flow"])
def test_each_further_trained_v2_base_beats_the_one_before_on_held_out_tasks(better: Path, base: Path, soft_margin: float,
                                                                            strict_margin: float) -> None:
    """On 128 held-out easy v2 tasks x 4 draws (same tasks and noise), the v2 flow trained 25 minutes further (and the
    student distilled from it) beats the shipped v2 base (README: 7.8% against 1.0% one-step), and the flow trained
    60 more minutes beats that (README: 13.5% against 6.8% of 192 tasks, 8 Euler steps)."""
    prompts, meta = _eval_tasks(128, ONE_STEP_V2)
    prompts, meta = prompts * 4, meta * 4
    soft_better, strict_better = _scores(load_generator(better).eval(), prompts, meta)
    soft, strict = _scores(load_generator(base).eval(), prompts, meta)
    assert soft_better > soft + soft_margin, (soft_better, soft)
    assert strict_better > strict + strict_margin, (strict_better, strict)


def test_demo_runs_three_steps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from visalign.cli import main

    monkeypatch.chdir(ROOT)  # the demo config's asset paths are relative to the repository root
    out = tmp_path / "demo"
    rc = main(["demo", "--out", str(out), "trainer.steps=3", "trainer.prompts_per_step=2", "trainer.eval_batch_size=16",
               "trainer.progress=false"])
    assert rc == 0
    for name in ("samples/before.png", "samples/after.png", "reward_curve.png", "metrics.jsonl", "summary.json"):
        assert (out / name).is_file(), name
    summary = json.loads((out / "summary.json").read_text())
    assert summary["step"] == 3 and 0.0 <= summary["eval/reward_mean"] <= 1.0
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert any("rwtd/ess" in r for r in records)


def test_compare_pipeline_counts_one_budget_for_every_method(tmp_path: Path) -> None:
    """``pipelines/vvr_compare.py`` runs every method for the same steps and sample budget and counts what each drew."""
    rc = load_pipeline_script("vvr_compare").main(["--steps", "1", "--eval-n", "8", "--eval-draws", "2", "--out", str(tmp_path),
                                        "trainer.progress=false"])
    assert rc == 0
    rows = {r["method"]: r for r in json.loads((tmp_path / "table.json").read_text())}
    assert set(rows) == {"rwtd", "festdpo", "rwr", "flow_grpo"}
    for method, row in rows.items():
        assert row["samples_total"] == 64, (method, row)
        assert 0 <= row["acc_before"] <= 1 and 0 <= row["acc_after"] <= 1 and row["acc_change_se"] >= 0
        assert row["sec_per_step"] > 0
    assert rows["rwtd"]["prompts_per_step"] == 1 and rows["rwr"]["prompts_per_step"] == 4
    assert rows["rwtd"]["samples_policy"] == rows["rwtd"]["samples_reference"] == 32
    assert "| rwtd |" in (tmp_path / "table.md").read_text()


def test_compare_pipeline_continues_an_interrupted_run_exactly(tmp_path: Path, capsys) -> None:
    """``--save-every``: a rerun continues a method from its last checkpoint and ends with the uninterrupted run's
    table (sample counts, accuracies and distances)."""
    compare = load_pipeline_script("vvr_compare").main

    def run(out: Path) -> list[dict]:
        assert compare(["--steps", "3", "--save-every", "1", "--methods", "rwr", "--samples-per-step", "16", "--eval-n",
                        "2", "--eval-draws", "1", "--out", str(out), "trainer.progress=false"]) == 0
        return [{k: v for k, v in r.items() if k != "sec_per_step"} for r in json.loads((out / "table.json").read_text())]

    uninterrupted = run(tmp_path / "full")
    assert uninterrupted[0]["samples_total"] == 3 * 16 and uninterrupted[0]["pixel_rmse_to_ref"] > 0
    shutil.copytree(tmp_path / "full", tmp_path / "cut")
    settings = tmp_path / "cut" / "rwr" / "compare_args.json"  # the arguments as the run into "cut" would give them
    settings.write_text(settings.read_text().replace(str(tmp_path / "full"), str(tmp_path / "cut")))
    checkpoints = tmp_path / "cut" / "rwr" / "checkpoints"  # as if killed after step 2's checkpoint
    shutil.rmtree(checkpoints / "step_000003")
    (checkpoints / "latest").write_text("step_000002")
    for leftover in ("table.json", "rwr/final", "rwr/summary.json"):
        path = tmp_path / "cut" / leftover
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    capsys.readouterr()
    assert run(tmp_path / "cut") == uninterrupted
    assert "== rwr: continuing from step 2" in capsys.readouterr().out
    clock = json.loads((tmp_path / "cut" / "rwr" / "clock.json").read_text())  # training seconds carry on from step 2
    assert sorted(clock, key=int) == ["1", "2", "3"] and clock["3"] > clock["2"] > clock["1"] > 0


def test_compare_pipeline_continues_only_a_run_of_the_same_arguments(tmp_path: Path) -> None:
    resumable = load_pipeline_script("vvr_compare").resumable
    assert not resumable(tmp_path, ["--steps", "3"])  # no checkpoint yet
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "latest").write_text("step_000002")
    assert resumable(tmp_path, ["--steps", "3"])
    assert not resumable(tmp_path, ["--steps", "4"])
    assert not resumable(tmp_path, ["--steps", "3"])  # the folder now records the last arguments given


def test_compare_pipeline_budget_counts_accumulated_rollouts(tmp_path: Path) -> None:
    """With ``trainer.grad_accum=2`` each optimizer step spends the same generator samples in two rollouts."""
    rc = load_pipeline_script("vvr_compare").main(["--steps", "1", "--eval-n", "2", "--eval-draws", "1", "--methods", "rwr",
                                        "--out", str(tmp_path), "trainer.progress=false", "trainer.grad_accum=2"])
    assert rc == 0
    row = json.loads((tmp_path / "table.json").read_text())[0]
    assert row["prompts_per_step"] == 2 and row["samples_total"] == 64


def test_compare_pipeline_rejects_a_budget_a_method_cannot_split(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a multiple of rwtd's 64 samples per prompt"):
        load_pipeline_script("vvr_compare").main(["--steps", "1", "--samples-per-step", "48", "--methods", "rwtd",
                                       "--eval-n", "2", "--out", str(tmp_path)])


def test_compare_fit_mode_trains_and_scores_tasks_the_checkpoint_solves_sometimes(tmp_path: Path) -> None:
    rc = load_pipeline_script("vvr_compare").main(["--fit-tasks", "2", "--fit-pool", "48", "--eval-draws", "16", "--steps", "1",
                                        "--methods", "festdpo", "--out", str(tmp_path), "trainer.progress=false"])
    assert rc == 0
    fit = [json.loads(line) for line in (tmp_path / "fit_tasks.jsonl").read_text().splitlines()]
    train_ids = {json.loads(line)["task_id"] for line in (ONE_STEP / "tasks_train.jsonl").read_text().splitlines()[:48]}
    assert len(fit) == 2 and {t["task_id"] for t in fit} <= train_ids
    trained_on = [r for r in map(json.loads, (tmp_path / "festdpo" / "metrics.jsonl").read_text().splitlines()) if "loss" in r]
    assert len(trained_on) == 1
    (row,) = json.loads((tmp_path / "table.json").read_text())
    assert row["method"] == "festdpo" and row["acc_before"] > 0  # the selected tasks are solved some of the time


@pytest.mark.parametrize("mode, method, train_bins, overrides", [
    ("heldout", "rwtd", None, ["algorithm.num_current=4", "algorithm.num_reference=4"]),
    ("same_template", "diffusion_nft", None, ["algorithm.group_size=8", "algorithm.num_steps=2"]),
    ("easy_to_hard", "rwr", None, ["algorithm.num_samples=8"]),
    ("same_template", "rwr", [1], ["algorithm.num_samples=8"]),
    ("easy_to_hard", "rwr", [1], ["algorithm.num_samples=8"]),
])
def test_compare_v2_modes_train_on_their_pool_and_score_their_bins(tmp_path: Path, mode, method, train_bins,
                                                                   overrides) -> None:
    """One step of each VVR v2 mode of ``pipelines/vvr_compare.py``: the training prompts come from the mode's pool
    (easy-to-hard: bins 1-2 only; ``--train-bins`` narrows it), the scored tasks are held out (bench tasks per bin
    above the trained ones, or the pool's unseen tasks of the trained bins), and the row has per-bin before / after
    values with paired standard errors over tasks."""
    flag = "--flow-checkpoint" if method == "diffusion_nft" else "--checkpoint"
    ckpt = FLOW if method == "diffusion_nft" else ONE_STEP
    bins_flag = ["--train-bins", *map(str, train_bins)] if train_bins else []
    rc = load_pipeline_script("vvr_compare").main(["--mode", mode, "--methods", method, flag, str(ckpt), "--steps", "1",
                                        "--samples-per-step", "8", "--per-bin", "2", "--eval-n", "6", "--eval-draws", "2",
                                        *bins_flag, "--out", str(tmp_path), "trainer.progress=false", *overrides])
    assert rc == 0
    (row,) = json.loads((tmp_path / "table.json").read_text())
    assert row["mode"] == mode and row["method"] == method and row["samples_total"] == 8
    assert row["generator"] == ckpt.name and row["feat_dist_to_ref"] > 0
    trained_bins = train_bins or ([1, 2] if mode == "easy_to_hard" else None)
    bins = {"heldout": {"1", "2", "3", "4", "5"},
            "easy_to_hard": {str(b) for b in range(max(trained_bins or [0]) + 1, 6)},
            "same_template": {str(b) for b in trained_bins or [1, 2]}}[mode]
    if mode == "same_template":
        assert set(row["bins"]) <= bins and sum(b["n"] for b in row["bins"].values()) == 12
    else:
        assert set(row["bins"]) == bins and all(b["n"] == 4 for b in row["bins"].values())
    assert all(b["soft_change_se"] >= 0 and 0 <= b["acc_after"] <= 1 for b in row["bins"].values())
    import yaml

    trained = yaml.safe_load((tmp_path / method / "config.yaml").read_text())["prompts"]
    assert trained["name"] == "vvr2" and trained["pool"] == ("matched" if mode == "easy_to_hard" else "easy")
    assert trained.get("bins") == trained_bins
    assert "| bin |" in (tmp_path / "table.md").read_text()


def test_compare_scores_unseen_tasks_of_other_bins_of_the_pool_when_asked() -> None:
    """``--score-bins`` (same_template) scores ``--eval-n`` unseen tasks of each given bin of the pool, from the
    held-out index stream; scoring the bins trained on gives exactly the default tasks."""
    compare = load_pipeline_script("vvr_compare")
    source = compare.train_source("same_template", [1])
    default, _ = compare.evaluated_tasks("same_template", source, 3, 0)
    same, _ = compare.evaluated_tasks("same_template", source, 3, 0, [1])
    assert same.prompts == default.prompts
    harder, what = compare.evaluated_tasks("same_template", source, 3, 0, [2, 1])
    assert [m["task"]["difficulty_bin"] for m in harder.metadata] == [1, 1, 1, 2, 2, 2]
    assert harder.prompts[:3] == default.prompts and "bins [1, 2]" in what
    assert not {m["task_id"] for m in harder.metadata[3:]} & {m["task_id"] for m in default.metadata}


def test_compare_scores_in_batches_exactly_as_in_one_call() -> None:
    """``scores`` splits the images into batches (for its progress bar): the bits and rewards are those of one call."""
    from visalign.vvr.render import to_tensor
    from visalign.vvr.spec_render import render_spec_task

    compare = load_pipeline_script("vvr_compare")
    tasks = compare.evaluated_tasks("same_template", compare.train_source("same_template", [1]), 7, 0)[0]
    x = torch.rand(7, 3, 32, 32, generator=torch.Generator().manual_seed(0)) * 2 - 1
    x[:3] = to_tensor([render_spec_task(m["task"], 32) for m in tasks.metadata[:3]])
    whole = compare.scores(x, tasks.prompts, tasks.metadata, batch=7)
    batched = compare.scores(x, tasks.prompts, tasks.metadata, batch=3)
    assert whole["soft"][:3].min() > whole["soft"][3:].max()  # renders score, noise does not
    for key in ("acc", "soft"):
        assert torch.equal(whole[key], batched[key]) and whole[key].dtype == torch.float64


@pytest.mark.parametrize("mode, score_bins", [("heldout", ["2"]), ("same_template", ["3"])])
def test_compare_refuses_score_bins_outside_the_pool_or_mode(tmp_path: Path, capsys, mode, score_bins) -> None:
    with pytest.raises(SystemExit):
        load_pipeline_script("vvr_compare").main(["--mode", mode, "--score-bins", *score_bins, "--out", str(tmp_path)])
    assert f"--score-bins [{int(score_bins[0])}]: only --mode same_template" in capsys.readouterr().err


@pytest.mark.parametrize("mode, train_bins, problem", [
    ("same_template", ["3"], "the easy pool has complexity <= 20"),
    ("easy_to_hard", ["5"], "it scores the bins above them"),
    ("v1", ["1"], "v1 tasks have no difficulty bins"),
])
def test_compare_refuses_train_bins_a_mode_cannot_train_on(tmp_path: Path, capsys, mode, train_bins, problem) -> None:
    """``--train-bins`` outside what the mode can train on is refused before any model is loaded, saying why."""
    with pytest.raises(SystemExit):
        load_pipeline_script("vvr_compare").main(["--mode", mode, "--train-bins", *train_bins, "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert f"--train-bins [{int(train_bins[0])}]" in err and problem in err


def test_shipped_fit_tasks_are_what_the_selection_picks() -> None:
    """``tasks_fit.jsonl`` of the v2 base (the demo's tasks) is reproduced by ``vvr_tasks.learnable_tasks``: the 16
    of the first 512 training tasks the shipped one-step checkpoint solves most often within 10-60% of 16 draws."""
    picked = load_pipeline_script("vvr_tasks").learnable_tasks(ONE_STEP_V2, ONE_STEP_V2 / "tasks_train.jsonl", 16, 512)
    assert "".join(line + "\n" for line in picked) == (ONE_STEP_V2 / "tasks_fit.jsonl").read_text()


@pytest.mark.slow
def test_shipped_v1_fit_tasks_are_what_the_selection_picks() -> None:
    """The same for the v1 checkpoint's ``tasks_fit.jsonl`` (the v1 tables' fit tasks; first 384 training tasks)."""
    picked = load_pipeline_script("vvr_tasks").learnable_tasks(ONE_STEP, ONE_STEP / "tasks_train.jsonl", 16, 384)
    assert "".join(line + "\n" for line in picked) == (ONE_STEP / "tasks_fit.jsonl").read_text()


@pytest.mark.parametrize("pairs,version", [("8", "2"), ("0", "1")], ids=["v2-precomputed-pairs", "v1-fresh-teacher-samples"])
def test_pretrain_script_writes_both_checkpoints_and_metrics(tmp_path: Path, pairs: str, version: str) -> None:
    """A few steps of ``pipelines/vvr_pretrain.py``: the flow, a ``flow_residual`` student, metrics and grids; v2
    writes the ``*_vvr2`` folders, 80 prompt tokens and VVRBench v2 scores per difficulty bin."""
    rc = load_pipeline_script("vvr_pretrain").main([
        "--version", version, "--bench-per-bin", "2",
        "--assets", str(tmp_path / "assets"), "--out", str(tmp_path / "grids"), "--pool", "16", "--flow-steps", "2",
        "--distill-steps", "2", "--distill-pairs", pairs, "--batch", "4", "--eval-n", "4"])
    assert rc == 0
    suffix = "2" if version == "2" else ""
    student = load_generator(tmp_path / "assets" / f"tiny_one_step_vvr{suffix}")
    assert student.config.parametrization == "flow_residual" and student.config.backbone == "unet"
    assert student.config.max_length == (80 if version == "2" else 24)
    assert load_generator(tmp_path / "assets" / f"tiny_flow_vvr{suffix}").kind == "few_step"
    metrics = json.loads((tmp_path / "assets" / f"tiny_one_step_vvr{suffix}" / "pretrain_metrics.json").read_text())
    assert metrics["flow_steps"] == 2 and metrics["distill_steps"] == 2
    for key in ("renders_32px", "flow_4step", "flow_8step", "one_step", "one_step_random_init"):
        assert metrics[key]["n"] == 4 and 0 <= metrics[key]["all_satisfied"] <= 1, key
    if version == "2":
        assert sorted(metrics["bench_per_bin"]) == [f"bin{b}" for b in range(1, 6)]
        assert all(m["n"] == 2 for m in metrics["bench_per_bin"].values())
    else:
        assert "bench_per_bin" not in metrics
    assert (tmp_path / "grids" / "one_step_samples.png").is_file() and (tmp_path / "grids" / "flow_samples.png").is_file()


def test_pretrain_script_at_64_px_writes_tagged_checkpoints_and_scores_64_px_renders(tmp_path: Path) -> None:
    """``--image-size 64 --unet-unshuffle 4 --tag _64``: 64 px generators on a 4×4 space-to-depth UNet in
    ``*_vvr2_64`` folders; renders, samples and the result rows are 64 px."""
    results = tmp_path / "result.json"
    rc = load_pipeline_script("vvr_pretrain").main([
        "--image-size", "64", "--unet-unshuffle", "4", "--unet-channels", "48", "48", "--tag", "_64",
        "--bench-per-bin", "1", "--assets", str(tmp_path / "assets"), "--out", str(tmp_path / "grids"), "--pool", "8",
        "--flow-steps", "1", "--distill-steps", "1", "--distill-pairs", "4", "--batch", "4", "--eval-n", "4",
        "--results", str(results)])
    assert rc == 0
    for name in ("tiny_flow_vvr2_64", "tiny_one_step_vvr2_64"):
        gen = load_generator(tmp_path / "assets" / name)
        assert gen.noise_shape == (3, 64, 64) and gen.config.unet_unshuffle == 4 and gen.config.unet_channels == (48, 48)
    metrics = json.loads((tmp_path / "assets" / "tiny_one_step_vvr2_64" / "pretrain_metrics.json").read_text())
    assert "renders_32px" not in metrics and metrics["renders_64px"]["n"] == 4
    assert all("renders_64px" in m for m in metrics["bench_per_bin"].values())
    table = load_results(results)
    assert table.name == "vvr_pretrain_v2_64" and table.row("renders 64 px").values["all_satisfied"] == metrics["renders_64px"]["all_satisfied"]


def test_pretrain_script_with_a_frozen_pretrained_text_encoder(tmp_path: Path) -> None:
    """``--text-encoder FOLDER``: both checkpoints record the folder, hold no encoder weights, and load again."""
    from safetensors import safe_open
    from transformers import BertConfig, BertModel, BertTokenizer

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "red", "blue", "circle", "square", "left", "of"]
    BertTokenizer(vocab={w: i for i, w in enumerate(words)}).save_pretrained(tmp_path / "bert")
    BertModel(BertConfig(vocab_size=len(words), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=32, max_position_embeddings=96)).save_pretrained(tmp_path / "bert")
    rc = load_pipeline_script("vvr_pretrain").main([
        "--text-encoder", str(tmp_path / "bert"), "--bench-per-bin", "0", "--assets", str(tmp_path / "assets"),
        "--out", str(tmp_path / "grids"), "--pool", "16", "--flow-steps", "2", "--distill-steps", "2",
        "--distill-pairs", "8", "--batch", "4", "--eval-n", "4"])
    assert rc == 0
    for name in ("tiny_flow_vvr2", "tiny_one_step_vvr2"):
        gen = load_generator(tmp_path / "assets" / name)
        assert gen.config.text_encoder == "pretrained" and gen.config.text_encoder_path == str(tmp_path / "bert")
        with safe_open(str(tmp_path / "assets" / name / "model.safetensors"), "pt") as f:
            assert not any("encoder.layer" in k or "word_embeddings" in k for k in f.keys())


def test_guided_teacher_interpolates_between_the_unconditional_and_conditional_odes() -> None:
    """``guided_generate``: guidance 0 is the empty prompt's ODE, 1 the prompt's own, 2 extrapolates past it."""
    from visalign.generators import TinyFlowConfig, TinyFlowGenerator

    pretrain = load_pipeline_script("vvr_pretrain")
    torch.manual_seed(0)
    flow = TinyFlowGenerator(TinyFlowConfig(image_size=8, patch_size=2, num_steps=1)).eval()
    prompts = ["a red circle", "a blue square"]
    z = torch.randn(2, 3, 8, 8, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        cond, empty = flow.generate(z, flow.encode(prompts), 1), flow.generate(z, flow.encode(["", ""]), 1)
    torch.testing.assert_close(pretrain.guided_generate(flow, z, prompts, 1, 1.0), cond)
    torch.testing.assert_close(pretrain.guided_generate(flow, z, prompts, 1, 0.0), empty)
    # one Euler step from sigma 1 to 0 is x = z - v, so guidance 2 lands at 2·cond − empty (before clamping)
    with torch.no_grad():
        latents = [flow.sample_latents(z, flow.encode(ps), 1) for ps in (prompts, ["", ""])]
    torch.testing.assert_close(pretrain.guided_generate(flow, z, prompts, 1, 2.0), (2 * latents[0] - latents[1]).clamp(-1, 1))


def test_flow_pretraining_drops_prompts_at_the_given_rate() -> None:
    pretrain = load_pipeline_script("vvr_pretrain")
    from visalign.generators import TinyFlowConfig, TinyFlowGenerator

    flow = TinyFlowGenerator(TinyFlowConfig(image_size=8, patch_size=2))
    seen: list[str] = []
    encode = flow.encode
    flow.encode = lambda ps: seen.extend(ps) or encode(ps)
    pretrain.train_flow(flow, ["a red circle"] * 4, torch.zeros(4, 3, 8, 8), minutes=1, max_steps=20, batch=32, lr=1e-4,
                        seed=0, cond_dropout=0.25)
    assert len(seen) == 640 and 0.18 < seen.count("") / len(seen) < 0.32


def test_flow_pretraining_uses_the_loss_space_it_is_given() -> None:
    pretrain = load_pipeline_script("vvr_pretrain")
    from visalign.generators import TinyFlowConfig, TinyFlowGenerator

    flow = TinyFlowGenerator(TinyFlowConfig(image_size=8, patch_size=2))
    spaces: list[str] = []
    loss = flow.flow_matching_loss
    flow.flow_matching_loss = lambda *a, loss_space="velocity", **k: (spaces.append(loss_space)
                                                                     or loss(*a, loss_space=loss_space, **k))
    for space in ("velocity", "sample"):
        pretrain.train_flow(flow, ["a red circle"] * 4, torch.zeros(4, 3, 8, 8), minutes=1, max_steps=2, batch=4,
                            lr=1e-4, seed=0, loss_space=space)
    assert spaces == ["velocity", "velocity", "sample", "sample"]


def test_pretrain_script_continues_a_flow_checkpoint_and_refuses_a_mismatched_one(tmp_path: Path, capsys) -> None:
    """``--init-flow FOLDER`` trains that checkpoint further (recorded in the metrics); a checkpoint whose config
    differs from the model the options build is refused before any rendering, naming the differing fields."""
    from safetensors.torch import load_file

    script = load_pipeline_script("vvr_pretrain")
    common = ["--bench-per-bin", "0", "--pool", "8", "--distill-steps", "1", "--distill-pairs", "4", "--batch", "4",
              "--eval-n", "2", "--out", str(tmp_path / "grids")]
    assert script.main([*common, "--assets", str(tmp_path / "first"), "--flow-steps", "1"]) == 0
    first = tmp_path / "first" / "tiny_flow_vvr2"
    assert script.main([*common, "--assets", str(tmp_path / "second"), "--flow-steps", "1", "--init-flow", str(first)]) == 0
    metrics = json.loads((tmp_path / "second" / "tiny_one_step_vvr2" / "pretrain_metrics.json").read_text())
    assert metrics["init_flow"] == str(first) and metrics["flow_steps"] == 1
    before = load_file(first / "model.safetensors")
    after = load_file(tmp_path / "second" / "tiny_flow_vvr2" / "model.safetensors")
    # one warmup step from the checkpoint: every weight within a small step of where it was, some moved
    assert any(not torch.equal(before[k], after[k]) for k in before)
    assert all(torch.allclose(before[k], after[k], atol=1e-3) for k in before)
    with pytest.raises(SystemExit):
        script.main([*common, "--assets", str(tmp_path / "x"), "--image-size", "64", "--init-flow", str(first)])
    assert "--init-flow checkpoint differs from the model the options build in ['image_size']" in capsys.readouterr().err


def test_pretrain_script_trains_an_x_predicting_flow_whose_student_starts_at_its_one_step_sample(tmp_path: Path,
                                                                                               capsys) -> None:
    """``--prediction sample --loss-space sample``: the flow predicts the clean image and trains on the clean-sample
    loss (both recorded); the undistilled student defaults to ``image`` and draws exactly the flow's one Euler step
    (through tanh instead of the clamp); a velocity-predicting checkpoint is refused as ``--init-flow``."""
    script = load_pipeline_script("vvr_pretrain")
    common = ["--bench-per-bin", "0", "--pool", "8", "--batch", "4", "--eval-n", "2", "--out", str(tmp_path / "grids")]
    assert script.main([*common, "--assets", str(tmp_path / "x0"), "--prediction", "sample", "--loss-space", "sample",
                        "--flow-steps", "2", "--distill-minutes", "0", "--distill-pairs", "0"]) == 0
    flow, student = (load_generator(tmp_path / "x0" / name) for name in ("tiny_flow_vvr2", "tiny_one_step_vvr2"))
    assert flow.config.prediction == "sample" and student.config.parametrization == "image"
    metrics = json.loads((tmp_path / "x0" / "tiny_one_step_vvr2" / "pretrain_metrics.json").read_text())
    assert (metrics["prediction"], metrics["loss_space"], metrics["distill_steps"]) == ("sample", "sample", 0)
    z, prompts = torch.randn(3, 3, 32, 32, generator=torch.Generator().manual_seed(0)), ["a red circle"] * 3
    with torch.no_grad():
        torch.testing.assert_close(student.generate(z, student.encode(prompts)),
                                   torch.tanh(flow.sample_latents(z, flow.encode(prompts), 1)))
    assert script.main([*common, "--assets", str(tmp_path / "v"), "--flow-steps", "1", "--distill-steps", "1",
                        "--distill-pairs", "4"]) == 0
    assert "prediction" not in json.loads((tmp_path / "v" / "tiny_one_step_vvr2" / "pretrain_metrics.json").read_text())
    with pytest.raises(SystemExit):
        script.main([*common, "--assets", str(tmp_path / "y"), "--prediction", "sample",
                     "--init-flow", str(tmp_path / "v" / "tiny_flow_vvr2")])
    err = capsys.readouterr().err
    assert "--init-flow checkpoint differs from the model the options build in ['prediction']" in err


def test_pretrain_script_distils_from_a_given_teacher_without_training_it(tmp_path: Path, capsys) -> None:
    """``--teacher FOLDER`` distils a student from that flow checkpoint and trains no flow (no flow folder is written,
    the student starts from the teacher's weights); a mismatched teacher, or ``--teacher`` with ``--init-flow``, is
    refused before any rendering."""
    from safetensors.torch import load_file

    script = load_pipeline_script("vvr_pretrain")
    common = ["--bench-per-bin", "0", "--pool", "8", "--distill-steps", "1", "--distill-pairs", "4", "--batch", "4",
              "--eval-n", "2", "--out", str(tmp_path / "grids")]
    assert script.main([*common, "--assets", str(tmp_path / "first"), "--flow-steps", "1"]) == 0
    teacher = tmp_path / "first" / "tiny_flow_vvr2"
    assert script.main([*common, "--assets", str(tmp_path / "second"), "--teacher", str(teacher)]) == 0
    assert not (tmp_path / "second" / "tiny_flow_vvr2").exists()
    metrics = json.loads((tmp_path / "second" / "tiny_one_step_vvr2" / "pretrain_metrics.json").read_text())
    assert metrics["teacher"] == str(teacher) and "flow_steps" not in metrics and metrics["distill_steps"] == 1
    flow = load_file(teacher / "model.safetensors")
    student = load_file(tmp_path / "second" / "tiny_one_step_vvr2" / "model.safetensors")
    shared = [k for k in student if k in flow]
    assert shared and all(torch.allclose(student[k], flow[k], atol=1e-2) for k in shared)
    with pytest.raises(SystemExit):
        script.main([*common, "--assets", str(tmp_path / "x"), "--image-size", "64", "--teacher", str(teacher)])
    assert "--teacher checkpoint differs from the model the options build in ['image_size']" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        script.main([*common, "--assets", str(tmp_path / "x"), "--teacher", str(teacher), "--init-flow", str(teacher)])
    assert "pick one" in capsys.readouterr().err


def test_pretrain_script_ships_the_flow_weights_ema_and_scores_the_raw_weights_too(tmp_path: Path, capsys,
                                                                                   monkeypatch) -> None:
    """``--ema-decay``: the raw weights train exactly as without it (the flow they score draws what the plain run's
    flow draws); the shipped flow holds the moving average instead (it draws something else), recorded with the raw
    weights' row."""
    from safetensors.torch import load_file

    script = load_pipeline_script("vvr_pretrain")
    evaluate, drawn = script.evaluate, []
    z = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(5))

    def recording(sample_fn, *args, **kwargs):  # what each evaluated generator draws from one fixed noise
        drawn.append(sample_fn(z, ["a red circle", "a blue square"]))
        return evaluate(sample_fn, *args, **kwargs)

    monkeypatch.setattr(script, "evaluate", recording)
    common = ["--bench-per-bin", "0", "--pool", "8", "--batch", "4", "--eval-n", "4", "--flow-steps", "4",
              "--distill-steps", "1", "--distill-pairs", "4", "--out", str(tmp_path / "grids")]
    assert script.main([*common, "--assets", str(tmp_path / "plain")]) == 0
    plain_draws, drawn[:] = list(drawn), []
    assert script.main([*common, "--assets", str(tmp_path / "ema"), "--ema-decay", "0.5",
                        "--results", str(tmp_path / "ema.json")]) == 0
    # plain: flow 4 steps, flow 8 steps, ...; EMA: raw 8 steps, then the averaged flow's 4 and 8 steps, ...
    assert torch.equal(drawn[0], plain_draws[1]) and not torch.equal(drawn[2], plain_draws[1])
    plain, ema = (json.loads((tmp_path / run / "tiny_one_step_vvr2" / "pretrain_metrics.json").read_text())
                  for run in ("plain", "ema"))
    assert "ema_decay" not in plain and ema["ema_decay"] == 0.5
    assert ema["flow_8step_raw"] == plain["flow_8step"]
    raw, averaged = (load_file(tmp_path / run / "tiny_flow_vvr2" / "model.safetensors") for run in ("plain", "ema"))
    assert raw.keys() == averaged.keys() and any(not torch.equal(raw[k], averaged[k]) for k in raw)
    from visalign.results import load_results

    row = load_results(tmp_path / "ema.json").row("flow 8 steps, raw weights")
    assert row.values["all_satisfied"] == ema["flow_8step_raw"]["all_satisfied"]
    for bad in (["--ema-decay", "1"], ["--ema-decay", "0.9", "--teacher", str(tmp_path / "plain" / "tiny_flow_vvr2")]):
        with pytest.raises(SystemExit):
            script.main([*common, "--assets", str(tmp_path / "x"), *bad])
    err = capsys.readouterr().err
    assert "--ema-decay must be in [0, 1), got 1.0" in err and "--teacher trains none" in err
