"""PickScore, the LAION aesthetic MLP, CLIP score (transformers backend) and ImageReward on tiny random-weight
models of their published architectures, loaded from disk by the real loading code."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from PIL import Image

from visalign.core import build_reward, score
from visalign.rewards.pixels import OPENAI_CLIP_MEAN, OPENAI_CLIP_STD

PROMPTS = ["a red circle", "a blue square", "a cat on the sign"]


def uint8_images(n: int, size: int = 32, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (n, size, size, 3), dtype=np.uint8)


def samples_of(arrays: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(arrays).permute(0, 3, 1, 2).float() / 127.5 - 1


def published_clip_scores(folder, arrays, prompts):
    """What the PickScore authors' snippet computes: processor(PIL) → get_*_features → logit_scale · cos."""
    from transformers import AutoTokenizer, CLIPImageProcessorPil, CLIPModel

    model = CLIPModel.from_pretrained(str(folder)).eval()
    processor = CLIPImageProcessorPil(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32},
                                      image_mean=list(OPENAI_CLIP_MEAN), image_std=list(OPENAI_CLIP_STD))
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    with torch.no_grad():
        pixels = processor(images=[Image.fromarray(a) for a in arrays], return_tensors="pt").pixel_values
        image = model.get_image_features(pixel_values=pixels).pooler_output
        tokens = tokenizer(prompts, padding=True, truncation=True, max_length=77, return_tensors="pt")
        text = model.get_text_features(**tokens).pooler_output
    return model.logit_scale.exp() * F.cosine_similarity(image, text, dim=-1), image


def test_pickscore_matches_the_published_recipe_and_is_deterministic(hf_clip_folder):
    reward = build_reward({"name": "pickscore", "path": str(hf_clip_folder)})
    arrays = uint8_images(3)
    ours = score(reward, samples_of(arrays), PROMPTS, [{}] * 3)
    reference, _ = published_clip_scores(hf_clip_folder, arrays, PROMPTS)
    assert torch.allclose(ours, reference, atol=1e-4), (ours, reference)
    assert torch.equal(ours, score(reward, samples_of(arrays), PROMPTS, [{}] * 3))
    assert reward.scale == pytest.approx(float(np.exp(2.6592)), rel=1e-4)  # CLIP's initial temperature 1/0.07


def test_pickscore_batches_by_chunks_without_changing_scores(hf_clip_folder):
    arrays = uint8_images(5, seed=3)
    prompts = PROMPTS + ["a red square", "the sign says cat"]
    whole = build_reward({"name": "pickscore", "path": str(hf_clip_folder), "batch_size": 64})
    chunked = build_reward({"name": "pickscore", "path": str(hf_clip_folder), "batch_size": 2})
    a, b = (score(r, samples_of(arrays), prompts, [{}] * 5) for r in (whole, chunked))
    assert torch.allclose(a, b, atol=1e-5)


@pytest.mark.parametrize("spec", [
    {"name": "pickscore"},
    {"name": "clip_score", "backend": "transformers"},
    {"name": "aesthetic"},
    {"name": "image_reward"},
], ids=lambda s: s["name"])
def test_gradients_reach_the_input_and_video_is_pooled_per_frame(spec, hf_clip_folder, aesthetic_weights, image_reward_files):
    spec = dict(spec)
    if spec["name"] == "aesthetic":
        spec.update(path=str(aesthetic_weights / "head.safetensors"), clip_path=str(hf_clip_folder))
    elif spec["name"] == "image_reward":
        from visalign.rewards.tiny_models import TINY_BLIP_TEXT, TINY_BLIP_VISION

        spec.update(path=str(image_reward_files[0]), tokenizer_path=str(image_reward_files[1]),
                    vision=TINY_BLIP_VISION, text=TINY_BLIP_TEXT)
    else:
        spec["path"] = str(hf_clip_folder)
    reward = build_reward(spec)
    assert reward.differentiable
    images = torch.rand(2, 3, 40, 48, requires_grad=True)
    values = score(reward, images * 2 - 1, PROMPTS[:2], [{}, {}])
    values.sum().backward()
    assert images.grad is not None and images.grad.abs().sum() > 0
    assert not any(p.requires_grad for p in reward_parameters(reward))

    video = torch.rand(2, 3, 4, 32, 32) * 2 - 1  # B×C×T×H×W
    pooled = score(reward, video, PROMPTS[:2], [{}, {}])
    frames = reward.last_frame_scores
    assert frames.shape == (2, 4)
    per_frame = torch.stack([score(reward, video[:, :, t], PROMPTS[:2], [{}, {}]) for t in range(4)], 1)
    assert torch.allclose(frames, per_frame, atol=1e-5) and torch.allclose(pooled, per_frame.mean(1), atol=1e-5)

    for bad in (torch.zeros(2, 5), torch.zeros(2, 1, 32, 32), {"video": video, "audio": torch.zeros(2, 1, 8)}):
        with pytest.raises(ValueError, match=spec["name"]):
            reward(bad, PROMPTS[:2], [{}, {}])


def reward_parameters(reward):
    modules = [m for m in vars(reward).values() if isinstance(m, torch.nn.Module)]
    backend = getattr(reward, "backend", None)
    if backend is not None:
        modules.append(backend.model)
    return [p for m in modules for p in m.parameters()]


def test_clip_score_transformers_backend_is_the_cosine(hf_clip_folder):
    arrays = uint8_images(3, seed=5)
    cos = score(build_reward({"name": "clip_score", "backend": "transformers", "path": str(hf_clip_folder)}),
                samples_of(arrays), PROMPTS, [{}] * 3)
    pick, _ = published_clip_scores(hf_clip_folder, arrays, PROMPTS)
    assert cos.abs().max() <= 1 and torch.allclose(cos * float(np.exp(2.6592)), pick, atol=1e-3)


def test_aesthetic_is_the_mlp_on_normalised_embeddings_from_either_weight_format(hf_clip_folder, aesthetic_weights):
    from visalign.rewards.aesthetic import AestheticMLP
    from visalign.rewards.weights import load_state_dict

    arrays = uint8_images(3, seed=7)
    rewards = [build_reward({"name": "aesthetic", "path": str(aesthetic_weights / name), "clip_path": str(hf_clip_folder)})
               for name in ("head.safetensors", "head.pth")]
    values = [score(r, samples_of(arrays), PROMPTS, [{}] * 3) for r in rewards]
    assert torch.equal(values[0], values[1])
    head = AestheticMLP(16)
    head.load_state_dict(load_state_dict(aesthetic_weights / "head.safetensors"))
    _, image = published_clip_scores(hf_clip_folder, arrays, PROMPTS)
    expected = head.eval()(F.normalize(image, dim=-1)).squeeze(-1)
    assert torch.allclose(values[0], expected, atol=1e-4)


class Payload:
    """An arbitrary object: a file holding one can only be read by unpickling, which weights_only refuses."""


def test_legacy_weights_that_need_unpickling_are_refused(tmp_path, hf_clip_folder):
    torch.save({"layers.0.weight": torch.zeros(1), "evil": Payload()}, str(tmp_path / "head.pt"))
    with pytest.raises(ValueError, match="head.pt"):
        build_reward({"name": "aesthetic", "path": str(tmp_path / "head.pt"), "clip_path": str(hf_clip_folder)})
    with pytest.raises(FileNotFoundError, match="missing.safetensors"):
        build_reward({"name": "aesthetic", "path": str(tmp_path / "missing.safetensors"), "clip_path": str(hf_clip_folder)})
    with pytest.raises(FileNotFoundError, match="no_such_folder"):
        build_reward({"name": "pickscore", "path": str(tmp_path / "no_such_folder")})


def test_aesthetic_head_of_the_wrong_width_is_named(tmp_path, hf_clip_folder):
    from safetensors.torch import save_file

    from visalign.rewards.aesthetic import AestheticMLP

    save_file(AestheticMLP(768).state_dict(), str(tmp_path / "head768.safetensors"))
    reward = build_reward({"name": "aesthetic", "path": str(tmp_path / "head768.safetensors"), "clip_path": str(hf_clip_folder)})
    with pytest.raises(ValueError, match="expects 768"):
        reward(torch.zeros(1, 3, 32, 32), ["x"], [{}])
