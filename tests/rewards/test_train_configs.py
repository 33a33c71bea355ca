"""``visalign train`` runs one step with every shipped reward config (configs/rewards/*.yaml), the weights paths
swapped for tiny random-weight models of the same architectures; hpsv2 runs in the clip venv (test_hps_trains)."""
import json
from pathlib import Path

import pytest
import yaml

from visalign.cli import main

from visalign.rewards.tiny_models import TINY_BLIP_TEXT, TINY_BLIP_VISION

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted((ROOT / "configs" / "rewards").glob("*.yaml"))
NEEDS = {"ocr": "rapidocr_onnxruntime", "hpsv2": "open_clip"}


def tiny_reward_spec(spec: dict, files: dict) -> dict:
    """The same reward spec with local tiny weights in place of the published ones."""
    spec = dict(spec)
    name = spec["name"]
    if name == "multi":
        spec["rewards"] = [tiny_reward_spec(s, files) for s in spec["rewards"]]
    elif name in ("pickscore", "clip_score"):
        spec.update(path=str(files["clip"]), tokenizer_path=str(files["clip"]))
    elif name == "aesthetic":
        spec.update(path=str(files["aesthetic"]), clip_path=str(files["clip"]))
    elif name == "image_reward":
        spec.update(path=str(files["image_reward"]), tokenizer_path=str(files["bert"]), vision=TINY_BLIP_VISION,
                    text=TINY_BLIP_TEXT)
    elif name == "vlm_judge":
        spec["path"] = str(files["llava"])
    elif name == "remote":
        spec["url"] = files["remote_url"]
    elif name == "hpsv2":
        spec.update(path=str(files["hps"]), model_config=str(files["hps_config"]), model="ignored")
    return spec


def train_one_step(config_path: Path, files: dict, out: Path) -> list[dict]:
    data = yaml.safe_load(config_path.read_text())
    data["reward"] = tiny_reward_spec(data["reward"], files)
    config = out.with_suffix(".yaml")
    config.write_text(yaml.safe_dump(data))
    rc = main(["train", str(config), "trainer.steps=1", f"trainer.output_dir={out}", "trainer.prompts_per_step=2",
               "trainer.eval_batch_size=2", "trainer.progress=false"])
    assert rc == 0
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if line.strip()]


def test_every_reward_has_a_config():
    assert {p.stem for p in CONFIGS} >= {"pickscore", "hpsv2", "image_reward", "aesthetic", "clip_score", "ocr",
                                         "vlm_judge", "remote", "multi"}


@pytest.fixture(scope="module")
def tiny_files(hf_clip_folder, aesthetic_weights, image_reward_files, llava_folder):
    from visalign.core import build_reward
    from visalign.rewards.server import RewardServer

    served = build_reward({"name": "pickscore", "path": str(hf_clip_folder)})
    with RewardServer(served, port=0) as server:
        yield {"clip": hf_clip_folder, "aesthetic": aesthetic_weights / "head.pth", "image_reward": image_reward_files[0],
               "bert": image_reward_files[1], "llava": llava_folder, "remote_url": server.url}


DEFAULT_SUITE = {"image_reward", "clip_score"}  # the rest (about 10 s each on 2 busy cores) run with -m slow


@pytest.mark.parametrize("path", [p if p.stem in DEFAULT_SUITE else pytest.param(p, marks=pytest.mark.slow)
                                  for p in CONFIGS if p.stem != "hpsv2"], ids=lambda p: p.stem)
def test_reward_config_trains_one_step(path, tiny_files, tmp_path):
    if path.stem in NEEDS:
        pytest.importorskip(NEEDS[path.stem])
    records = train_one_step(path, tiny_files, tmp_path / path.stem)
    steps = [r for r in records if "loss" in r]
    assert [r["step"] for r in steps] == [1] and steps[0]["loss"] == steps[0]["loss"]
    assert steps[0]["reward/std"] >= 0 and "eval/reward_mean" in json.dumps(records)
    if path.stem == "multi":  # the trainer logs each component of a multi reward
        assert {"reward/pickscore", "reward/aesthetic"} <= set(steps[0])
