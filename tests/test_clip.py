"""open_clip loading from local files (runs where the ``clip`` extra is installed; CI runs it in a second venv)."""
import pytest
import torch

from visalign.core import score
from visalign.rewards.clip import CLIPScore, import_open_clip, load_open_clip

try:
    open_clip = import_open_clip()
except ImportError as exc:
    pytest.skip(f"open_clip not usable: {exc}", allow_module_level=True)

pytestmark = pytest.mark.clip

TINY = {
    "embed_dim": 32,
    "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "head_width": 16, "patch_size": 8},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1},
}


@pytest.fixture(scope="module")
def tiny_clip_files(tmp_path_factory):
    from safetensors.torch import save_model

    from visalign.rewards.tiny_models import tiny_open_clip

    folder = tmp_path_factory.mktemp("clip")
    config, model = tiny_open_clip(folder, "visalign-tiny-clip", TINY)
    save_model(model, str(folder / "tiny.safetensors"))
    return config, folder / "tiny.safetensors", model


def test_local_checkpoint_loads_exactly(tiny_clip_files):
    config, weights, original = tiny_clip_files
    loaded, tokenizer = load_open_clip(model_config=config, checkpoint=weights)
    tokens = tokenizer(["a red circle"])
    assert torch.allclose(loaded.encode_text(tokens), original.eval().encode_text(tokens), atol=1e-6)


def test_clip_score_is_differentiable_and_validated(tiny_clip_files):
    config, weights, _ = tiny_clip_files
    reward = CLIPScore(model_config=str(config), checkpoint=str(weights))
    images = torch.rand(3, 3, 48, 48, requires_grad=True)
    values = score(reward, images * 2 - 1, ["a red circle", "a blue square", "two stars"], [{}] * 3)
    assert values.shape == (3,) and values.abs().max() <= 1.0
    values.sum().backward()
    assert images.grad.abs().sum() > 0


def test_missing_checkpoint_is_named(tmp_path, tiny_clip_files):
    config, _, _ = tiny_clip_files
    with pytest.raises(FileNotFoundError, match="nothing.safetensors"):
        load_open_clip(model_config=config, checkpoint=tmp_path / "nothing.safetensors")
    with pytest.raises(ValueError, match="downloads are disabled"):
        load_open_clip("ViT-B-32")


def test_open_clip_feature_space_drives_rwtd(tiny_clip_files, tmp_path):
    from visalign.core import PromptList, get_reward
    from visalign.features import build_features
    from visalign.generators import TinyOneStepGenerator
    from visalign.algorithms import RWTD, RWTDConfig
    from visalign.trainer import Trainer, TrainerConfig

    config, weights, _ = tiny_clip_files
    spec = {"name": "open_clip", "model_config": str(config), "checkpoint": str(weights)}
    phi = build_features(spec)
    images = torch.rand(4, 3, 32, 32, requires_grad=True)
    feats = phi(images * 2 - 1)
    assert feats.shape == (4, TINY["embed_dim"])
    assert torch.allclose(feats.norm(dim=-1), torch.ones(4), atol=1e-5)
    feats.sum().backward()
    assert images.grad.abs().sum() > 0 and not any(p.requires_grad for p in phi.parameters())
    algo = RWTD(RWTDConfig(num_current=4, num_reference=4, features=spec))
    cfg = TrainerConfig(steps=1, prompts_per_step=2, output_dir=str(tmp_path), log_with=[], progress=False)
    trainer = Trainer(TinyOneStepGenerator(), algo, get_reward("color_match"), PromptList(["a red circle"]), cfg)
    metrics = trainer.train_step()
    assert metrics["samples_seen"] == 8 and metrics["loss"] > 0
