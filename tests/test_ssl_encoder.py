"""The self-supervised image encoder: block output, safetensors round trip, SimCLR pieces, probes, the recipe."""
import json
import sys
from pathlib import Path

import pytest
import torch

from visalign.core import BlockFeatures, ConfigError
from visalign.core.errors import CheckpointError
from visalign.features import BlockLayout, TinyViT, TinyViTConfig, build_features, save_encoder
from visalign.features.blocks import token_blocks
from visalign.features.probe import knn_accuracy, linear_probe_accuracy
from visalign.features.ssl import geometric_views, nt_xent

ROOT = Path(__file__).resolve().parent.parent


def _encoder() -> TinyViT:
    torch.manual_seed(0)
    return TinyViT(TinyViTConfig(image_size=16, patch_size=4, dim=8, depth=1, heads=2)).eval()


def test_ssl_encoder_round_trips_and_gives_cls_patch_mean_and_std_blocks(tmp_path):
    model = _encoder()
    save_encoder(model, tmp_path / "enc", {"probe": {"note": "test"}})
    phi = build_features({"name": "ssl_encoder", "path": str(tmp_path / "enc")})
    assert isinstance(phi, BlockFeatures) and phi.block_sizes() == {"cls": 8, "patch_mean": 8, "patch_std": 8}
    x = torch.rand(3, 3, 32, 32) * 2 - 1  # resized to the encoder's 16 px
    out = phi(x)
    with torch.no_grad():
        tokens = model(x)
    assert torch.allclose(out, token_blocks(tokens), atol=1e-6)
    blocks = BlockLayout.of(phi, 24).split(out)
    assert torch.allclose(blocks["patch_std"], tokens[:, 1:].std(1), atol=1e-6)
    assert json.loads((tmp_path / "enc" / "config.json").read_text())["probe"] == {"note": "test"}
    x.requires_grad_(True)
    phi(x).sum().backward()
    assert x.grad.abs().sum() > 0 and all(not p.requires_grad for p in phi.parameters())


def test_ssl_encoder_errors_name_the_problem(tmp_path):
    with pytest.raises(ConfigError, match="needs path"):
        build_features("ssl_encoder")
    with pytest.raises(CheckpointError, match="missing config.json"):
        build_features({"name": "ssl_encoder", "path": str(tmp_path)})
    save_encoder(_encoder(), tmp_path / "enc")
    weights = tmp_path / "enc" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-8])
    with pytest.raises(CheckpointError, match="model.safetensors is corrupt"):
        build_features({"name": "ssl_encoder", "path": str(tmp_path / "enc")})
    with pytest.raises(ConfigError, match="divisible by heads"):
        TinyViTConfig(dim=10, heads=4)


def test_views_keep_colour_and_identity_parameters_keep_the_image():
    g = torch.Generator().manual_seed(0)
    images = torch.rand(4, 3, 16, 16, generator=g) * 2 - 1
    same = geometric_views(images, g, scale=(1.0, 1.0), shift=0.0, rotate_degrees=0.0, noise=0.0)
    assert torch.allclose(same, images, atol=1e-5)
    plain = torch.tensor([0.8, -0.2, 0.1])[None, :, None, None].expand(4, 3, 16, 16).contiguous()
    views = geometric_views(plain, g, noise=0.0)
    assert torch.allclose(views, plain, atol=1e-5)  # geometry cannot change a plain colour
    noisy = geometric_views(images, g)
    assert noisy.shape == images.shape and noisy.min() >= -1 and noisy.max() <= 1


def test_nt_xent_is_low_for_matching_views_and_high_for_unrelated_ones():
    z = torch.eye(8) * 5
    assert float(nt_xent(z, z, 0.1)) < 1e-3
    g = torch.Generator().manual_seed(0)
    assert float(nt_xent(z, torch.randn(8, 8, generator=g), 0.1)) > 1.0
    with pytest.raises(ValueError, match="differ in shape"):
        nt_xent(z, z[:4])


def test_probes_read_separable_labels_and_not_noise():
    g = torch.Generator().manual_seed(0)
    y = torch.arange(300) % 3
    x = torch.randn(300, 5, generator=g) * 0.3
    x[:, :3] += torch.nn.functional.one_hot(y, 3) * 3.0
    assert linear_probe_accuracy(x[:200], y[:200], x[200:], y[200:]) == 1.0
    assert knn_accuracy(x[:200], y[:200], x[200:], y[200:]) == 1.0
    noise = torch.randn(300, 5, generator=g)
    assert linear_probe_accuracy(noise[:200], y[:200], noise[200:], y[200:]) < 0.6
    with pytest.raises(ValueError, match="probe shapes disagree"):
        knn_accuracy(x[:200], y[:100], x[200:], y[200:])


def test_train_image_encoder_recipe_writes_a_loadable_encoder_with_probe_figures(tmp_path):
    sys.path.insert(0, str(ROOT))
    from pipelines import train_image_encoder

    out = tmp_path / "enc"
    train_image_encoder.main(["--steps", "2", "--pool", "64", "--probe-n", "120", "--batch", "16", "--dim", "8",
                              "--depth", "1", "--out", str(out)])
    meta = json.loads((out / "config.json").read_text())
    assert set(meta["probe"]["results"]) == {"conv (random)", "pixels 8x8", "vit untrained", "ssl_encoder"}
    assert meta["training"]["steps"] == 2
    assert build_features({"name": "ssl_encoder", "path": str(out)})(torch.zeros(2, 3, 32, 32)).shape == (2, 24)
    assert (tmp_path / "enc_neighbours.png").is_file() and not (out / "enc_neighbours.png").exists()
    train_image_encoder.main(["--probe-only", "--probe-n", "120", "--dim", "8", "--depth", "1", "--out", str(out),
                              "--sheet", str(tmp_path / "probe.png")])
    assert (tmp_path / "probe.png").is_file()
    assert json.loads((out / "config.json").read_text()) == meta  # probing leaves the encoder folder as it was


def test_rwtd_trains_an_image_generator_through_the_ssl_encoder_blocks(tmp_path):
    from visalign.algorithms import RWTD, RWTDConfig
    from visalign.core import PromptBatch, TrainContext
    from visalign.core.reward import FunctionReward
    from visalign.generators import TinyOneStepGenerator
    from visalign.generators.tiny import TinyOneStepConfig

    save_encoder(_encoder(), tmp_path / "enc")
    torch.manual_seed(0)
    policy = TinyOneStepGenerator(TinyOneStepConfig(image_size=16, patch_size=4, text_hidden=32, vocab_buckets=256,
                                                    max_length=12, layers=1))
    reward = FunctionReward(lambda s, p, m: s[:, 0].flatten(1).mean(1), name="red")
    ctx = TrainContext(policy, policy.frozen_copy(), reward, torch.device("cpu"))
    algo = RWTD(RWTDConfig(num_current=4, num_reference=4, features={"name": "ssl_encoder", "path": str(tmp_path / "enc")}))
    rollout = algo.rollout(ctx, PromptBatch(["a red circle"]), torch.Generator().manual_seed(1))
    assert rollout.extras["targets"].shape == (4, 24)
    loss, metrics = algo.loss(ctx, rollout)
    loss.backward()
    assert torch.isfinite(loss) and metrics["rwtd/transport_cost"] > 0
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in policy.parameters())


def test_the_shipped_vvr_encoder_loads_and_records_its_probe_against_conv():
    folder = ROOT / "assets" / "encoders" / "vvr_ssl"
    phi = build_features({"name": "ssl_encoder", "path": str(folder)})  # sha256-checked against its manifest
    assert phi(torch.zeros(1, 3, 32, 32)).shape == (1, 192)
    results = json.loads((folder / "config.json").read_text())["probe"]["results"]
    mean = lambda row: sum(v["linear"] for v in row.values()) / len(row)  # noqa: E731
    assert mean(results["ssl_encoder"]) > mean(results["conv (random)"])
