"""Image previews carry their prompt and reward under each image; without either they stay a plain grid."""
from __future__ import annotations

import numpy as np
import torch
from PIL import Image, ImageFont

from visalign.trainer.media import wrap_caption
from visalign.trainer.visuals import save_samples


def _images(n: int = 3, size: int = 8) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    return torch.rand(n, 3, size, size, generator=g) * 2 - 1


def test_captioned_grid_writes_text_under_each_image(tmp_path):
    x = _images()
    plain = np.asarray(Image.open(save_samples(x, tmp_path / "plain.png")))
    captioned = np.asarray(Image.open(save_samples(x, tmp_path / "cap.png", ["a red circle", "two blue squares", "x"],
                                                   rewards=torch.tensor([0.5, 1.0, 0.0]))))
    assert captioned.shape[0] > 160 and captioned.shape[1] > 3 * 160  # 3 tiles of 160 px in a row, text below
    tile, text = captioned[6:166, 6:166], captioned[172:184, 6:166]
    assert not (tile == 255).all()  # the image is drawn
    assert (text < 100).any() and (text == 255).mean() > 0.5  # dark glyphs on white under it
    assert plain.shape != captioned.shape


def test_long_prompts_wrap_and_end_in_an_ellipsis():
    font = ImageFont.load_default()
    lines = wrap_caption("a red circle left of a blue square " * 20, font, width=160, max_lines=3)
    assert len(lines) == 3 and lines[-1].endswith("…")
    assert all(font.getlength(line) <= 160 for line in lines)
    assert wrap_caption("short", font, 160, 3) == ["short"]
