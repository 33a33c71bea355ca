"""The published CLIP/BLIP preprocessing (resize shortest side bicubic → center crop → normalise), pinned."""
import numpy as np
import pytest
import torch
from PIL import Image

from visalign.rewards.pixels import OPENAI_CLIP_MEAN, OPENAI_CLIP_STD, published_pixels


def pil_recipe(image: Image.Image, size: int) -> torch.Tensor:
    """torchvision's Resize(size, BICUBIC) → CenterCrop(size) → ToTensor → Normalize, written with PIL only."""
    w, h = image.size
    scale = size / min(w, h)
    new = (size, int(size * h / w)) if w <= h else (int(size * w / h), size)
    image = image.resize(new, Image.BICUBIC)
    left, top = int(round((new[0] - size) / 2.0)), int(round((new[1] - size) / 2.0))
    image = image.crop((left, top, left + size, top + size))
    x = torch.from_numpy(np.array(image)).permute(2, 0, 1).float() / 255
    assert scale > 0
    return (x - torch.tensor(OPENAI_CLIP_MEAN)[:, None, None]) / torch.tensor(OPENAI_CLIP_STD)[:, None, None]


def smooth_image(h: int = 260, w: int = 300) -> np.ndarray:
    yy, xx = np.mgrid[0:h, 0:w]
    disk = ((yy - h / 2) ** 2 + (xx - w / 3) ** 2 < (h / 4) ** 2) * 60
    return np.stack([xx * 255 / (w - 1), yy * 195 / (h - 1) + disk, (xx + yy) * 255 / (h + w)], -1).clip(0, 255).astype(np.uint8)


def as_samples(array: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(array).permute(2, 0, 1)[None].float() / 127.5 - 1


def test_normalisation_constants_are_openai_clip():
    assert OPENAI_CLIP_MEAN == (0.48145466, 0.4578275, 0.40821073)
    assert OPENAI_CLIP_STD == (0.26862954, 0.26130258, 0.27577711)


@pytest.mark.parametrize("shape", [(260, 300), (300, 260), (224, 224), (64, 80)])
def test_tensor_preprocessing_matches_the_pil_recipe(shape):
    array = smooth_image(*shape)
    ours = published_pixels(as_samples(array), 224)[0]
    reference = pil_recipe(Image.fromarray(array), 224)
    assert ours.shape == reference.shape == (3, 224, 224)
    # PIL rounds to 8 bits between its two resize passes; that is the whole difference on smooth images
    assert (ours - reference).abs().max() < 0.02, (ours - reference).abs().max()
    assert (ours - reference).abs().mean() < 0.006  # ≈ 0.4/255: 8-bit quantisation


def test_tensor_preprocessing_matches_transformers_clip_processor():
    from transformers import CLIPImageProcessorPil

    array = smooth_image()
    processor = CLIPImageProcessorPil(size={"shortest_edge": 224}, crop_size={"height": 224, "width": 224})
    assert processor.image_mean == list(OPENAI_CLIP_MEAN) or tuple(processor.image_mean) == OPENAI_CLIP_MEAN
    reference = processor(images=Image.fromarray(array), return_tensors="pt").pixel_values[0]
    assert (published_pixels(as_samples(array), 224)[0] - reference).abs().max() < 0.02


def test_identity_size_is_exact_and_pixels_are_fixed():
    array = smooth_image(32, 32)
    ours = published_pixels(as_samples(array), 32)[0]
    reference = pil_recipe(Image.fromarray(array), 32)
    assert torch.allclose(ours, reference, atol=1e-5)
    assert ours[:, 0, 0].tolist() == pytest.approx([-1.7923, -1.7521, -1.4802], abs=1e-4)


def test_preprocessing_is_differentiable():
    x = as_samples(smooth_image(48, 64)).requires_grad_(True)
    published_pixels(x, 32).sum().backward()
    assert x.grad.abs().sum() > 0
