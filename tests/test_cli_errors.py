"""The CLI boundary: every bad input ends in ``error: …`` naming the file, key or task and exit status 2 (run in
process, one row per input); an internal error keeps its traceback."""
import json
import shutil
import struct
import zlib
from pathlib import Path

import pytest
from PIL import Image

from visalign.cli import main
from visalign.generators import TinyOneStepGenerator

TOY_RUN = """
generator: {name: toy_one_step}
reward: {name: toy_linear}
algorithm: {name: rwr, num_samples: 4}
trainer: {steps: 1, prompts_per_step: 2, log_with: [], progress: false, eval_batch_size: 4}
"""

NAN_REWARD = """
import torch
from visalign.core import Reward


class AlwaysNaN(Reward):
    def __call__(self, samples, prompts, metadata):
        return torch.full((samples.shape[0],), float("nan"))
"""


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("inputs")
    (d / "toy.yaml").write_text(TOY_RUN)
    (d / "malformed.yaml").write_text("generator: {name: toy_one_step\nreward: [x0\n")
    (d / "nan_reward.py").write_text(NAN_REWARD)
    (d / "bad_tasks.jsonl").write_text('{"id": "t1", "prompt": oops}\n')
    (d / "unknown_gen.yaml").write_text("generator: {name: gan_of_doom}\n")
    (d / "blocker").write_text("a file, not a folder")
    (d / "images").mkdir()
    (d / "used").mkdir()
    (d / "used" / "metrics.jsonl").write_text("{}\n")
    (d / "no_tokenizer").mkdir()
    shutil.copy(Path(__file__).parent.parent / "assets/text/tiny_addition_lm/config.json", d / "no_tokenizer")
    tiny = TinyOneStepGenerator().save_pretrained(d / "tiny")
    for name, meta in (("corrupt_json", "{not json"), ("unknown_type", json.dumps({"type": "gan_of_doom", "config": {}}))):
        shutil.copytree(tiny, d / name)
        (d / name / "generator.json").write_text(meta)
        (d / name / "manifest.json").unlink()
    shutil.copytree(tiny, d / "flipped")
    weights = d / "flipped" / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-5] ^= 0xFF
    weights.write_bytes(bytes(data))
    return d


def train(*overrides, config="toy.yaml"):
    return lambda d, out: ["train", str(d / config), f"trainer.output_dir={out}", *overrides]


# (case, argv builder (inputs folder, a fresh output folder), text the message must contain)
CASES = [
    ("malformed YAML", train(config="malformed.yaml"), "malformed.yaml is not valid YAML"),
    ("malformed override value", train("trainer.steps=[1"), "trainer.steps=[1"),
    ("unknown key", train("trainer.stpes=3"), "trainer.stpes"),
    ("reward mapping without name", train("reward={weight: 2}"), "reward config needs a 'name'"),
    ("unknown reward", train("reward=redness_typo"), "unknown reward 'redness_typo'"),
    ("plug-in file missing", train("reward=missing_file.py:Cls"), "missing_file.py"),
    ("plug-in class missing", lambda d, out: train(f"reward={d}/nan_reward.py:Missing")(d, out), "has no attribute 'Missing'"),
    ("plug-in module missing", train("reward=no_such_module_xyz:Cls"), "no module named 'no_such_module_xyz'"),
    ("custom reward returns NaN", lambda d, out: train(f"reward={d}/nan_reward.py:AlwaysNaN")(d, out),
     "reward 'AlwaysNaN' returned non-finite"),
    ("unknown algorithm", train("algorithm={name: ppo_typo}"), "unknown algorithm 'ppo_typo'"),
    ("unknown generator in train", train("generator={name: gan_of_doom}"), "unknown generator 'gan_of_doom'"),
    ("VVR level out of range", train("prompts={name: vvr, level: 9}"), "prompts.level"),
    ("prompts file without path", train("prompts={name: file}"), "prompts.path"),
    ("prompts file missing", train("prompts={name: file, path: nowhere.txt}"), "nowhere.txt"),
    ("negative seed", train("trainer.seed=-1"), "trainer.seed"),
    ("learning_rate=inf", train("trainer.learning_rate=inf"), "trainer.learning_rate"),
    ("eval_batch_size=0", train("trainer.eval_batch_size=0"), "trainer.eval_batch_size"),
    ("output folder under a file", lambda d, out: train(f"trainer.output_dir={d}/blocker/run")(d, out), "blocker"),
    ("output folder in use", lambda d, out: train(f"trainer.output_dir={d}/used")(d, out), "is not empty"),
    ("resume without checkpoint", train("trainer.resume_from=latest"), "latest"),
    ("LM folder without tokenizer", lambda d, out: train(f"policy={{type: causal_lm, path: {d}/no_tokenizer}}")(d, out),
     "no tokenizer files"),
    ("config file missing", lambda d, out: ["train", str(d / "nope.yaml")], "nope.yaml"),
    ("sample: corrupt generator.json", lambda d, out: ["sample", "--checkpoint", str(d / "corrupt_json"), "--out", str(out / "g.png")],
     "corrupt_json/generator.json is not valid JSON"),
    ("sample: unknown generator type", lambda d, out: ["sample", "--checkpoint", str(d / "unknown_type"), "--out", str(out / "g.png")],
     "unknown generator 'gan_of_doom'"),
    ("sample: flipped weight byte", lambda d, out: ["sample", "--checkpoint", str(d / "flipped"), "--out", str(out / "g.png")],
     "model.safetensors is corrupt"),
    ("sample: missing checkpoint", lambda d, out: ["sample", "--checkpoint", str(d / "none"), "--out", str(out / "g.png")], "none"),
    ("sample: --n below 0", lambda d, out: ["sample", "--checkpoint", str(d / "tiny"), "--n", "-1"], "--n"),
    ("sample: --n 0", lambda d, out: ["sample", "--checkpoint", str(d / "tiny"), "--n", "0"], "--n"),
    ("sample: negative seed", lambda d, out: ["sample", "--checkpoint", str(d / "tiny"), "--seed", "-3"], "--seed"),
    ("sample: prompts file missing", lambda d, out: ["sample", "--checkpoint", str(d / "tiny"), "--prompts-file", str(d / "p.txt")],
     "p.txt"),
    ("sample: output under a file", lambda d, out: ["sample", "--checkpoint", str(d / "tiny"), "--prompt", "a", "--out",
                                                    str(d / "blocker" / "g.png")], "blocker"),
    ("bench: unknown generator type", lambda d, out: ["bench", "vvr", "--generator", str(d / "unknown_gen.yaml"), "--limit", "2",
                                                      "--out", str(out)], "unknown generator 'gan_of_doom'"),
    ("bench: bad --tasks JSONL", lambda d, out: ["bench", "vvr", "--tasks", str(d / "bad_tasks.jsonl"), "--images",
                                                 str(d / "images"), "--out", str(out)], "bad_tasks.jsonl:1"),
    ("bench: negative seed", lambda d, out: ["bench", "vvr", "--generator", str(d / "tiny"), "--seed", "-1", "--limit", "2",
                                             "--out", str(out)], "--seed"),
]


@pytest.mark.parametrize("case, argv, expected", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_a_one_line_error_with_exit_2(inputs, tmp_path, capsys, case, argv, expected):
    try:
        status = main(argv(inputs, tmp_path / "out"))
    except SystemExit as exc:  # argparse's own usage errors
        status = exc.code
    err = capsys.readouterr().err
    assert status == 2, err
    assert expected in err, err
    assert "error:" in err and "Traceback" not in err


def test_an_internal_error_keeps_its_traceback(inputs, tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("a bug, not an input error")

    monkeypatch.setattr("visalign.run.build_trainer", broken)
    with pytest.raises(RuntimeError, match="a bug"):
        main(["train", str(inputs / "toy.yaml"), f"trainer.output_dir={tmp_path}"])


def _png_claiming(path, width, height):
    """A small PNG whose header claims ``width x height`` (its pixel data is that of a 40x40 image)."""
    Image.new("RGB", (40, 40), (255, 0, 0)).save(path)
    data = bytearray(path.read_bytes())
    ihdr = data[12:29]  # b"IHDR" + 13 bytes
    ihdr[4:12] = struct.pack(">II", width, height)
    data[12:29] = ihdr
    data[29:33] = struct.pack(">I", zlib.crc32(bytes(ihdr)))
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("width, expected", [(5000, "image is 5000x5000; VVR needs square images"),
                                             (12000, "image is too large to decode safely"),
                                             (20000, "image is too large to decode safely")])
def test_oversized_images_are_named_before_decoding(tmp_path, width, expected):
    from visalign.vvr.bench import BenchInputError, load_image

    _png_claiming(tmp_path / "big.png", width, width)
    with pytest.raises(BenchInputError, match=expected) as info:
        load_image(tmp_path / "big.png")
    assert "big.png" in str(info.value)


def test_truncated_and_tif_images(tmp_path):
    from visalign.vvr.bench import BenchInputError, IMAGE_EXTS, load_image

    Image.new("RGB", (64, 64), (0, 0, 255)).save(tmp_path / "ok.tif")
    assert ".tif" in IMAGE_EXTS and load_image(tmp_path / "ok.tif").shape == (64, 64, 3)
    noise = Image.effect_noise((64, 64), 64).convert("RGB")
    noise.save(tmp_path / "cut.png")
    data = (tmp_path / "cut.png").read_bytes()
    (tmp_path / "cut.png").write_bytes(data[: len(data) // 2])
    with pytest.raises(BenchInputError, match="cut.png: the file is truncated"):
        load_image(tmp_path / "cut.png")
