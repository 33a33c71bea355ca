"""DINOv2 block features from a local folder: a tiny random Dinov2 saved in the test (no downloads)."""
import json

import pytest
import torch

from visalign.core import BlockFeatures, ConfigError
from visalign.features import BlockLayout, build_features
from visalign.features.dinov2 import imagenet_pixels


@pytest.fixture(scope="module")
def tiny_dinov2(tmp_path_factory):
    from transformers import Dinov2Config, Dinov2Model

    torch.manual_seed(0)
    cfg = Dinov2Config(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
                       image_size=28, patch_size=14)
    folder = tmp_path_factory.mktemp("dinov2")
    Dinov2Model(cfg).save_pretrained(folder)
    return folder


def test_dinov2_blocks_are_cls_patch_mean_and_patch_std_of_the_last_hidden_state(tiny_dinov2):
    from transformers import Dinov2Model

    phi = build_features({"name": "dinov2", "path": str(tiny_dinov2)})
    assert isinstance(phi, BlockFeatures) and phi.size == 28
    assert phi.block_sizes() == {"cls": 16, "patch_mean": 16, "patch_std": 16}
    images = torch.rand(2, 3, 32, 32, generator=torch.Generator().manual_seed(1)) * 2 - 1
    out = phi(images)
    assert out.shape == (2, 48)
    ref = Dinov2Model.from_pretrained(str(tiny_dinov2)).eval()
    x = torch.nn.functional.interpolate((images + 1) / 2, size=(28, 28), mode="bilinear", antialias=True)
    x = (x - torch.tensor([0.485, 0.456, 0.406])[:, None, None]) / torch.tensor([0.229, 0.224, 0.225])[:, None, None]
    tokens = ref(pixel_values=x).last_hidden_state
    blocks = BlockLayout.of(phi, 48).split(out)
    assert torch.allclose(blocks["cls"], tokens[:, 0], atol=1e-5)
    assert torch.allclose(blocks["patch_mean"], tokens[:, 1:].mean(1), atol=1e-5)
    assert torch.allclose(blocks["patch_std"], tokens[:, 1:].std(1), atol=1e-5)
    assert BlockLayout.of(phi, 48).weights == (1 / 16,) * 3


def test_dinov2_is_frozen_but_differentiable_in_the_images(tiny_dinov2):
    phi = build_features({"name": "dinov2", "path": str(tiny_dinov2), "size": 28})
    images = torch.zeros(1, 3, 8, 8, requires_grad=True)
    phi(images).pow(2).sum().backward()
    assert images.grad is not None and images.grad.abs().sum() > 0
    assert all(not p.requires_grad for p in phi.parameters()) and not phi.training
    with pytest.raises(ValueError, match="RGB images"):
        phi(torch.zeros(1, 1, 8, 8))
    with pytest.raises(ValueError, match="encodes images"):
        phi(torch.zeros(2, 5))


def test_dinov2_uses_the_preprocessor_crop_size_and_reports_bad_folders(tiny_dinov2, tmp_path):
    (tiny_dinov2 / "preprocessor_config.json").write_text(json.dumps({"crop_size": {"height": 42, "width": 42}}))
    try:
        assert build_features({"name": "dinov2", "path": str(tiny_dinov2)}).size == 42
    finally:
        (tiny_dinov2 / "preprocessor_config.json").unlink()
    with pytest.raises(ConfigError, match="no config.json"):
        build_features({"name": "dinov2", "path": str(tmp_path)})
    with pytest.raises(ConfigError, match="needs path"):
        build_features("dinov2")
    with pytest.raises(ConfigError, match="multiple of the patch size"):
        build_features({"name": "dinov2", "path": str(tiny_dinov2), "size": 30})
    with pytest.raises(ConfigError, match="at least 2 patches"):
        build_features({"name": "dinov2", "path": str(tiny_dinov2), "size": 14})


def test_imagenet_pixels_maps_minus_one_to_one_onto_normalised_unit_range():
    out = imagenet_pixels(torch.ones(1, 3, 4, 4), 4)
    assert torch.allclose(out[0, :, 0, 0], (1 - torch.tensor([0.485, 0.456, 0.406])) / torch.tensor([0.229, 0.224, 0.225]))
