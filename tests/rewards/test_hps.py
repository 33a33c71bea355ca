"""HPS v2.1 on a tiny open_clip model (needs the ``clip`` extra; CI runs it in the open_clip venv)."""
import json

import numpy as np
import pytest
import torch
from PIL import Image

from visalign.core import build_reward, score
from visalign.rewards.clip import import_open_clip
from visalign.rewards.pixels import published_pixels

try:
    open_clip = import_open_clip()
except ImportError as exc:
    pytest.skip(f"open_clip not usable: {exc}", allow_module_level=True)

pytestmark = pytest.mark.clip

TINY_VIT_H = {  # ViT-H-14's layout (GELU, no QuickGELU) at toy width
    "embed_dim": 32,
    "vision_cfg": {"image_size": 28, "layers": 2, "width": 32, "head_width": 16, "patch_size": 14},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 2},
}
PROMPTS = ["a red circle", "a blue square"]


@pytest.fixture(scope="module")
def hps_files(tmp_path_factory):
    from visalign.rewards.tiny_models import tiny_open_clip

    folder = tmp_path_factory.mktemp("hps")
    config, model = tiny_open_clip(folder, "visalign-tiny-vit-h", TINY_VIT_H)
    torch.save({"state_dict": model.state_dict(), "epoch": 1}, str(folder / "HPS_v2.1_compressed.pt"))
    return config, folder / "HPS_v2.1_compressed.pt"


def test_hps_equals_the_authors_score(hps_files):
    config, weights = hps_files
    reward = build_reward({"name": "hpsv2", "path": str(weights), "model_config": str(config)})
    arrays = np.random.default_rng(0).integers(0, 256, (2, 28, 28, 3), dtype=np.uint8)
    ours = score(reward, torch.from_numpy(arrays).permute(0, 3, 1, 2).float() / 127.5 - 1, PROMPTS, [{}, {}])
    # hpsv2.img_score.score: preprocess_val(PIL) → model(image, text) (normalised features) → diagonal of image @ text.T
    model, _, preprocess_val = open_clip.create_model_and_transforms("visalign-tiny-vit-h", pretrained=None, output_dict=True)
    model.load_state_dict(torch.load(str(weights), weights_only=True)["state_dict"])
    model.eval()
    with torch.no_grad():
        images = torch.stack([preprocess_val(Image.fromarray(a)) for a in arrays])
        out = model(images, open_clip.get_tokenizer("visalign-tiny-vit-h")(PROMPTS))
        expected = torch.diagonal(out["image_features"] @ out["text_features"].T)
    assert torch.allclose(ours, expected, atol=1e-4), (ours, expected)
    images = (torch.rand(2, 3, 40, 40) * 2 - 1).requires_grad_(True)
    score(reward, images, PROMPTS, [{}, {}]).sum().backward()
    assert images.grad.abs().sum() > 0


def test_open_clip_val_transform_is_the_published_recipe():
    transform = open_clip.image_transform(224, is_train=False)
    yy, xx = np.mgrid[0:260, 0:300]
    array = np.stack([xx * 255 / 299, yy * 255 / 259, (xx + yy) * 255 / 558], -1).astype(np.uint8)
    reference = transform(Image.fromarray(array))
    ours = published_pixels(torch.from_numpy(array).permute(2, 0, 1)[None].float() / 127.5 - 1, 224)[0]
    assert (ours - reference).abs().max() < 0.02


def test_clip_score_on_open_clip_with_path_key(hps_files):
    config, weights = hps_files
    reward = build_reward({"name": "clip_score", "path": str(weights), "model_config": str(config)})
    hps = build_reward({"name": "hpsv2", "path": str(weights), "model_config": str(config)})
    images = torch.rand(2, 3, 28, 28) * 2 - 1
    assert torch.allclose(score(reward, images, PROMPTS, [{}, {}]), score(hps, images, PROMPTS, [{}, {}]), atol=1e-6)


def test_wrong_architecture_is_named(hps_files, tmp_path):
    config, weights = hps_files
    other = tmp_path / "visalign-other.json"
    other.write_text(json.dumps({**TINY_VIT_H, "embed_dim": 16}))
    with pytest.raises(ValueError, match="HPS_v2.1_compressed.pt"):
        build_reward({"name": "hpsv2", "path": str(weights), "model_config": str(other)})


def test_hps_config_trains_one_step(hps_files, tmp_path):
    from .test_train_configs import ROOT, train_one_step

    config, weights = hps_files
    records = train_one_step(ROOT / "configs" / "rewards" / "hpsv2.yaml", {"hps": weights, "hps_config": config},
                             tmp_path / "hpsv2")
    assert [r["step"] for r in records if "loss" in r] == [1]
