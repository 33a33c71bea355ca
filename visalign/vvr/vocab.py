"""Fixed vocabulary of VVR scenes: shapes, palette, backgrounds, size classes and regions."""
from __future__ import annotations

import math

SHAPES: tuple[str, ...] = ("circle", "square", "triangle", "star")
EASY_SHAPES: tuple[str, ...] = ("circle", "square", "triangle")

#: Object colours (sRGB). Chosen to be >= 45 CIELAB units apart from each other and from the backgrounds.
PALETTE: dict[str, tuple[int, int, int]] = {
    "red": (220, 30, 40),
    "green": (30, 160, 60),
    "blue": (30, 80, 225),
    "yellow": (245, 215, 30),
    "purple": (140, 20, 120),
    "orange": (250, 135, 20),
}
COLORS: tuple[str, ...] = tuple(PALETTE)

#: Background colours the renderer may use and the verifier accepts as "empty".
BACKGROUNDS: dict[str, tuple[int, int, int]] = {
    "white": (255, 255, 255),
    "gray": (200, 200, 200),
    "black": (25, 25, 25),
}

#: Size = sqrt(object area / image area). Ranges used when drawing tasks (in thousandths).
SIZE_RANGES: dict[str, tuple[int, int]] = {
    "small": (110, 125),
    "medium": (155, 185),
    "large": (235, 280),
}
#: Verification thresholds on the measured size (normalised sqrt-area).
SMALL_MAX = 0.145
LARGE_MIN = 0.21

REGIONS: tuple[str, ...] = ("top-left", "top-right", "bottom-left", "bottom-right", "centre")

#: Circumradius / size for each shape (size = sqrt of area fraction). Star: 5 points, inner/outer radius 0.5.
STAR_INNER = 0.5
_STAR_AREA = 5.0 * STAR_INNER * math.sin(math.pi / 5)  # area / R^2 (rendering only; generation uses the constant below)
CIRCUMRADIUS: dict[str, float] = {
    "circle": 1.0 / math.sqrt(math.pi),
    "square": math.sqrt(0.5),
    "triangle": 1.0 / math.sqrt(3.0 * math.sqrt(3.0) / 4.0),
    "star": 0.8249,  # 1 / sqrt(5 * 0.5 * sin 36deg), rounded up
}
#: Inradius / circumradius: how large an object fits inside each shape.
INRADIUS_FRACTION: dict[str, float] = {"circle": 1.0, "square": math.sqrt(0.5), "triangle": 0.5, "star": 0.4}

PLURALS: dict[str, str] = {"circle": "circles", "square": "squares", "triangle": "triangles", "star": "stars"}
NUMBER_WORDS: dict[int, str] = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine"}
