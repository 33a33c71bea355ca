import json
import subprocess
import sys

from PIL import Image

from visalign.cli import main
from visalign.generators import TinyOneStepGenerator, ToyOneStepGenerator

TOY_RUN = """
generator: {name: toy_one_step}
reward: {name: toy_linear}
algorithm: {name: rwr, num_samples: 4}
trainer: {steps: 2, prompts_per_step: 2, log_with: [], progress: false, eval_batch_size: 8}
"""


def test_help_is_fast_and_does_not_import_torch():
    code = "import sys; from visalign.cli import build_parser; build_parser(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_train_command_runs_a_config_with_overrides(tmp_path):
    cfg = tmp_path / "run.yaml"
    cfg.write_text(TOY_RUN)
    out = tmp_path / "run"
    assert main(["train", str(cfg), f"trainer.output_dir={out}", "trainer.steps=3"]) == 0
    steps = [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert max(steps) == 3
    assert json.loads((out / "summary.json").read_text())["step"] == 3


def test_train_command_rejects_bad_keys_with_their_name(tmp_path, capsys):
    cfg = tmp_path / "run.yaml"
    cfg.write_text(TOY_RUN)
    assert main(["train", str(cfg), "trainer.stpes=3"]) == 2
    assert "trainer.stpes" in capsys.readouterr().err
    assert main(["train", str(cfg), "algorithm.beta=-1", f"trainer.output_dir={tmp_path / 'x'}"]) == 2
    assert "rwr.beta" in capsys.readouterr().err
    assert main(["train", str(tmp_path / "missing.yaml")]) == 2
    assert "missing.yaml" in capsys.readouterr().err


def test_sample_command_writes_grids_and_scatter_plots(tmp_path):
    TinyOneStepGenerator().save_pretrained(tmp_path / "tiny")
    ToyOneStepGenerator().save_pretrained(tmp_path / "toy")
    grid = tmp_path / "grid.png"
    assert main(["sample", "--checkpoint", str(tmp_path / "tiny"), "--prompt", "a red circle", "--prompt", "a blue square", "--out", str(grid)]) == 0
    assert Image.open(grid).size[0] >= 64
    scatter = tmp_path / "points.png"
    assert main(["sample", "--checkpoint", str(tmp_path / "toy"), "--n", "64", "--out", str(scatter)]) == 0
    assert scatter.is_file()


def test_bench_vvr_scores_a_generator_and_rejects_bad_input(tmp_path, capsys):
    TinyOneStepGenerator().save_pretrained(tmp_path / "tiny")
    out = tmp_path / "report"
    assert main(["bench", "vvr", "--split", "challenge", "--generator", str(tmp_path / "tiny"), "--limit", "4", "--out", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["tasks"] == 4 and 0.0 <= report["strict_accuracy"] <= 1.0 and report["strict_by_criterion"]
    assert (out / "report.md").is_file()
    (tmp_path / "imgs").mkdir()
    assert main(["bench", "vvr", "--images", str(tmp_path / "imgs"), "--limit", "2", "--out", str(tmp_path / "r2")]) == 2
    assert "have no image" in capsys.readouterr().err
