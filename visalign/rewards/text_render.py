"""Rendered text images (PIL's built-in scalable font, no system fonts) for OCR tests and benchmarks."""
from __future__ import annotations

import numpy as np
import torch
from PIL import Image, ImageDraw, ImageFont


def render_text(text: str, size: int = 256, font_size: int | None = None, colour: tuple[int, int, int] = (20, 20, 20),
                background: tuple[int, int, int] = (245, 245, 240)) -> torch.Tensor:
    """``text`` written centred on a ``size``×``size`` canvas, as a 3×H×W tensor in [-1, 1]."""
    font = ImageFont.load_default(size=font_size or max(12, size // 8))
    image = Image.new("RGB", (size, size), background)
    draw = ImageDraw.Draw(image)
    left, top, right, bottom = draw.textbbox((0, 0), text, font=font)
    draw.text(((size - (right - left)) / 2 - left, (size - (bottom - top)) / 2 - top), text, fill=colour, font=font)
    return torch.from_numpy(np.array(image)).permute(2, 0, 1).float() / 127.5 - 1
