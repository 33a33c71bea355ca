"""Colour vocabulary of VVR v2 (the paper format's 8 object colours and 7 backgrounds) and the colour model that
names what generators draw.

Naming partitions hue into eight intervals and adds saturation / value rules where hue alone disagrees with how
people name colours: a pale red is pink, a dark magenta is purple, a muted blue-violet is purple, and colours with
too little saturation or value are achromatic (no object colour). The rules act on an estimate of each pixel's pure
colour (:func:`pure_colours`), so anti-aliased, blurred or soft edges keep the name of the object they belong to.
"""
from __future__ import annotations

import numpy as np

#: Render RGB of the 8 object colours (hues 0, 31, 52, 138, 187, 223, 272, 333 degrees).
OBJECT_COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (220, 40, 40),
    "orange": (240, 140, 30),
    "yellow": (235, 210, 40),
    "green": (40, 170, 80),
    "cyan": (30, 190, 210),
    "blue": (40, 90, 220),
    "purple": (140, 70, 200),
    "pink": (235, 80, 150),
}
COLOUR_NAMES: tuple[str, ...] = tuple(OBJECT_COLOURS)

#: The 7 backgrounds of the format, with the RGB visalign renders them in.
BACKGROUND_COLOURS: dict[str, tuple[int, int, int]] = {
    "white": (255, 255, 255),
    "black": (20, 20, 20),
    "light gray": (200, 200, 200),
    "dark gray": (60, 60, 60),
    "beige": (215, 190, 145),
    "pale pink": (245, 190, 205),
    "pale cyan": (180, 230, 230),
}
BACKGROUND_NAMES: tuple[str, ...] = tuple(BACKGROUND_COLOURS)

#: Hue intervals in degrees, [start, end): red wraps around 0.
HUE_INTERVALS: dict[str, tuple[float, float]] = {
    "red": (345.0, 15.0),
    "orange": (15.0, 42.0),
    "yellow": (42.0, 75.0),
    "green": (75.0, 165.0),
    "cyan": (165.0, 198.0),
    "blue": (198.0, 250.0),
    "purple": (250.0, 290.0),
    "pink": (290.0, 345.0),
}
MIN_SATURATION = 0.22  # below: achromatic (white / gray / black), whatever the hue
MIN_VALUE = 0.16
ACHROMATIC = len(COLOUR_NAMES)  # class index of a foreground colour with no name
#: a background is named when its RGB lies within this distance of a listed background
BACKGROUND_TOLERANCE = 72.0



def _hue_table() -> np.ndarray:
    """Colour index of every whole degree of hue."""
    deg = np.arange(360)
    table = np.zeros(360, np.int8)
    for k, (lo, hi) in enumerate(HUE_INTERVALS.values()):
        table[((deg >= lo) & (deg < hi)) if lo < hi else ((deg >= lo) | (deg < hi))] = k
    return table


_HUE_TABLE = _hue_table()
_RED, _PURPLE, _PINK = (COLOUR_NAMES.index(c) for c in ("red", "purple", "pink"))


def hsv(rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hue in degrees [0, 360), saturation and value in [0, 1] of ``N x 3`` RGB values in [0, 255]."""
    rgb = np.asarray(rgb, np.float32)
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    mx = np.maximum(np.maximum(r, g), b)
    mn = np.minimum(np.minimum(r, g), b)
    c = mx - mn
    safe = np.where(c > 0, c, 1.0)
    h = np.where(mx == r, (g - b) / safe, np.where(mx == g, 2.0 + (b - r) / safe, 4.0 + (r - g) / safe))
    h = (h * 60.0) % 360.0
    s = np.where(mx > 0, c / np.where(mx > 0, mx, 1.0), 0.0)
    return h, s, mx / 255.0


def name_colours(rgb: np.ndarray) -> np.ndarray:
    """Class index per colour (``COLOUR_NAMES`` order, ``ACHROMATIC`` for no colour) of ``... x 3`` RGB values."""
    h, s, v = hsv(rgb)
    cls = _HUE_TABLE[np.minimum(h.astype(np.int32), 359)].astype(np.int8)
    cls = np.where((cls == _RED) & (s < 0.45) & (v > 0.65), _PINK, cls)  # pale red reads as pink
    cls = np.where((cls == _PINK) & (h < 320.0) & (v < 0.62), _PURPLE, cls)  # dark magenta reads as purple
    cls = np.where((h >= 235.0) & (h < 250.0) & (s < 0.62), _PURPLE, cls)  # muted blue-violet reads as purple
    return np.where((s < MIN_SATURATION) | (v < MIN_VALUE), ACHROMATIC, cls).astype(np.int8)


def name_colour(rgb: tuple[float, float, float]) -> str | None:
    """The colour name of one RGB triple, or ``None`` when it is achromatic."""
    k = int(name_colours(np.asarray(rgb, np.float32)[None])[0])
    return None if k == ACHROMATIC else COLOUR_NAMES[k]


def name_background(rgb: np.ndarray | tuple[float, float, float]) -> tuple[str | None, float]:
    """Nearest listed background to ``rgb`` and its distance; ``None`` beyond :data:`BACKGROUND_TOLERANCE`."""
    ref = np.array(list(BACKGROUND_COLOURS.values()), np.float32)
    d = np.sqrt(((ref - np.asarray(rgb, np.float32)) ** 2).sum(1))
    k = int(d.argmin())
    return (BACKGROUND_NAMES[k] if d[k] <= BACKGROUND_TOLERANCE else None), float(d[k])


def pure_colours(pixels: np.ndarray, background: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """Estimated pure colour of pixels that mix an object colour with the background: ``p = b + alpha (c - b)``
    solved for ``c`` (``alpha`` from the local contrast, see :mod:`visalign.vvr.segment`)."""
    a = np.clip(alpha, 0.05, 1.0)[..., None]
    return np.clip(background + (pixels - background) / a, 0.0, 255.0)
