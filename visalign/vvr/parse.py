"""Classical parser: image -> objects (colour, shape, size, centroid, mask), deterministic and resolution-independent.

Recipe: downscale to <= 256 px, colour assignment by mixing lines from the background to each palette colour
(a pixel belongs to a colour when it is at least half that colour), fill holes, drop specks, 8-connected
components, moments. Shape: star if solidity < 0.84, else the affine moment invariant
e = 16 pi^2 (mu20 mu02 - mu11^2) / mu00^4 (circle 1.00, square 1.10, triangle 1.46; cuts 1.052 / 1.25).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from PIL import Image
from scipy import ndimage
from scipy.spatial import ConvexHull, QhullError

from .vocab import BACKGROUNDS, PALETTE

WORK_SIZE = 256
_NAMES = list(PALETTE) + [f"bg:{k}" for k in BACKGROUNDS]
_N_OBJ = len(PALETTE)
_EIGHT = np.ones((3, 3), bool)


_OBJ_RGB = np.array(list(PALETTE.values()), np.float32)
_BG_RGB = np.array(list(BACKGROUNDS.values()), np.float32)
RESIDUAL = 48.0  # max distance (sRGB units) of a pixel from the background-to-colour mixing line
BG, UNKNOWN = -1, -2


def background_of(arr: np.ndarray) -> np.ndarray:
    """The listed background colour closest to the image border (median border pixel)."""
    border = np.concatenate([arr[0], arr[-1], arr[:, 0], arr[:, -1]]).astype(np.float32)
    med = np.median(border, 0)
    return _BG_RGB[np.argmin(((_BG_RGB - med) ** 2).sum(1))]


def assign_colors(arr: np.ndarray) -> np.ndarray:
    """Per-pixel class: palette index, ``BG`` or ``UNKNOWN``.

    Each pixel is modelled as a mix ``bg + a * (colour - bg)`` (what anti-aliasing, blur and JPEG produce at edges):
    it belongs to the colour whose mixing line passes closest (residual < RESIDUAL) with ``a >= 0.5``.
    """
    p = arr.astype(np.float32)
    bg = background_of(arr)
    d = p - bg  # H W 3
    v = _OBJ_RGB - bg  # K 3
    vv = (v * v).sum(1)
    dv = d @ v.T  # H W K
    a = np.clip(dv / vv, 0.0, 1.2)
    dd = (d * d).sum(-1)
    resid2 = dd[..., None] - 2 * a * dv + a * a * vv  # squared distance to each mixing segment
    best = resid2.argmin(-1)
    r = np.sqrt(np.maximum(np.take_along_axis(resid2, best[..., None], -1)[..., 0], 0.0))
    ab = np.take_along_axis(a, best[..., None], -1)[..., 0]
    cls = np.full(arr.shape[:2], UNKNOWN, np.int64)
    near_bg = dd < RESIDUAL ** 2
    cls[(r < RESIDUAL) & (ab < 0.5) | near_bg] = BG
    obj = (r < RESIDUAL) & (ab >= 0.5)
    cls[obj] = best[obj]
    _assign_between_colors(p, cls)
    return cls


_PAIRS = [(i, j) for i in range(len(_OBJ_RGB)) for j in range(len(_OBJ_RGB)) if i < j]


def _assign_between_colors(p: np.ndarray, cls: np.ndarray) -> None:
    """Unknown pixels on the mixing line of two palette colours (edges where objects touch or nest) go to the
    colour they are closer to."""
    ys, xs = np.nonzero(cls == UNKNOWN)
    if len(ys) == 0 or len(ys) > 0.3 * cls.size:
        return
    q = p[ys, xs]  # N 3
    best_r = np.full(len(ys), np.inf, np.float32)
    best_c = np.full(len(ys), UNKNOWN, np.int64)
    for i, j in _PAIRS:
        ci, v = _OBJ_RGB[i], _OBJ_RGB[j] - _OBJ_RGB[i]
        a = np.clip(((q - ci) @ v) / (v @ v), 0.0, 1.0)
        r = np.sqrt((((q - ci) - a[:, None] * v) ** 2).sum(1))
        better = r < best_r
        best_r[better] = r[better]
        best_c[better] = np.where(a[better] < 0.5, i, j)
    ok = best_r < RESIDUAL
    cls[ys[ok], xs[ok]] = best_c[ok]


@dataclass
class ParsedObject:
    """One object found in an image (coordinates normalised to [0, 1], y down)."""

    color: str
    shape: str  # circle / square / triangle / star / other
    x: float
    y: float
    s: float  # sqrt(area / image area)
    area: float  # area / image area
    bbox: tuple[int, int, int, int]  # x0, y0, x1, y1 in working pixels (exclusive end)
    e: float  # affine moment invariant
    solidity: float
    elongation: float
    mask: np.ndarray = field(repr=False)

    def label(self) -> str:
        return f"{self.color} {self.shape}"

    def to_dict(self) -> dict:
        return {"color": self.color, "shape": self.shape, "x": round(self.x, 4), "y": round(self.y, 4),
                "s": round(self.s, 4), "e": round(self.e, 3), "solidity": round(self.solidity, 3)}


def classify(e: float, solidity: float, elongation: float) -> str:
    if solidity < 0.84:
        return "star"
    if elongation > 2.0 or e > 1.9:
        return "other"
    if e < 1.052:
        return "circle"
    if e < 1.25:
        return "square"
    return "triangle"


def _hull_area(points: np.ndarray) -> float:
    try:
        return float(ConvexHull(points).volume)
    except (QhullError, ValueError):
        return 0.0


def shape_moments(mask: np.ndarray, sl: tuple[slice, slice]) -> tuple[float, float, float, float, float, float]:
    """Centroid (x, y in the full image), affine moment invariant e, solidity, elongation and pixel count of a
    component ``mask`` cut out of the image at ``sl``."""
    ys, xs = np.nonzero(mask)
    n = float(len(xs))
    cx, cy = xs.mean(), ys.mean()
    dx, dy = xs - cx, ys - cy
    mu20 = float((dx * dx).sum()) + n / 12.0
    mu02 = float((dy * dy).sum()) + n / 12.0
    mu11 = float((dx * dy).sum())
    e = 16 * math.pi ** 2 * (mu20 * mu02 - mu11 ** 2) / n ** 4
    tr, det = mu20 + mu02, mu20 * mu02 - mu11 ** 2
    disc = math.sqrt(max(tr * tr / 4 - det, 0.0))
    lmax, lmin = tr / 2 + disc, max(tr / 2 - disc, 1e-9)
    edge = mask & ~ndimage.binary_erosion(mask)
    by, bx = np.nonzero(edge)
    centres = np.stack([bx, by], 1).astype(float)
    corners = (centres[:, None, :] + np.array([[-0.5, -0.5], [0.5, -0.5], [-0.5, 0.5], [0.5, 0.5]])[None]).reshape(-1, 2)
    hull = 0.5 * (_hull_area(centres) + _hull_area(corners)) if len(centres) >= 3 else n
    solidity = min(1.0, n / hull) if hull > 0 else 1.0
    return cx + sl[1].start, cy + sl[0].start, e, solidity, lmax / lmin, n


@dataclass
class ParsedImage:
    """Parser output: objects plus how much of the image is background, unknown colour, or objects."""

    objects: list[ParsedObject]
    height: int
    width: int
    background: float
    unknown: float
    largest: float

    @property
    def side(self) -> float:
        return float(min(self.height, self.width))

    def gate(self) -> float:
        """Soft validity in [0, 1]: 0 for blank, noise or single-colour images."""
        if not self.objects or self.largest > 0.5:
            return 0.0
        g = min(1.0, max(0.0, (self.background - 0.25) / 0.15))
        return g * min(1.0, max(0.0, (0.3 - self.unknown) / 0.1))

    # pairwise measurements used by the constraint evaluators (normalised units)
    def _crop(self, i: int, j: int, pad: int) -> tuple[slice, slice]:
        a, b = self.objects[i].bbox, self.objects[j].bbox
        x0, y0 = max(0, min(a[0], b[0]) - pad), max(0, min(a[1], b[1]) - pad)
        x1, y1 = min(self.width, max(a[2], b[2]) + pad), min(self.height, max(a[3], b[3]) + pad)
        return slice(y0, y1), slice(x0, x1)

    def gap(self, i: int, j: int) -> float:
        a, b = self.objects[i].bbox, self.objects[j].bbox
        bx = max(0, max(a[0], b[0]) - min(a[2], b[2]))
        by = max(0, max(a[1], b[1]) - min(a[3], b[3]))
        if math.hypot(bx, by) > 0.1 * self.side + 3:
            return math.hypot(bx, by) / self.side
        sl = self._crop(i, j, 2)
        dist = ndimage.distance_transform_edt(~self.objects[i].mask[sl])
        d = float(dist[self.objects[j].mask[sl]].min())
        return max(0.0, d - 2.0) / self.side

    def contact(self, i: int, j: int) -> float:
        sl = self._crop(i, j, 3)
        st = np.ones((5, 5), bool)
        zone = ndimage.binary_dilation(self.objects[i].mask[sl], st) & ndimage.binary_dilation(self.objects[j].mask[sl], st)
        length = zone.sum() / 4.0 / self.side
        diam = 2 * min(self.objects[i].s, self.objects[j].s) / math.sqrt(math.pi)
        return float(length / max(diam, 1e-6))

    def inside(self, i: int, j: int) -> float:
        a = self.objects[i].mask
        return float((a & self.objects[j].mask).sum() / max(a.sum(), 1))


def to_uint8(image: np.ndarray | Image.Image) -> np.ndarray:
    """Accept a PIL image, a uint8 ``H x W x 3`` array or a float array in [-1, 1] / ``3 x H x W``."""
    if isinstance(image, Image.Image):
        if image.mode not in ("RGB", "RGBA", "P"):
            raise ValueError(f"image mode {image.mode!r} is not supported; VVR needs colour (RGB) images")
        if image.mode != "RGB":
            bg = Image.new("RGB", image.size, (255, 255, 255))
            image = image.convert("RGBA")
            bg.paste(image, mask=image.split()[3])
            image = bg
        return np.asarray(image, dtype=np.uint8)
    arr = np.asarray(image)
    if arr.ndim == 3 and arr.shape[0] == 3 and arr.shape[-1] != 3:
        arr = arr.transpose(1, 2, 0)
    if arr.ndim != 3 or arr.shape[-1] != 3:
        raise ValueError(f"expected an H x W x 3 image, got shape {arr.shape}")
    if arr.dtype != np.uint8:
        arr = np.clip((arr.astype(np.float32) + 1.0) * 127.5, 0, 255).round().astype(np.uint8)
    return arr


def parse_image(image: np.ndarray | Image.Image) -> ParsedImage:
    """Find the objects in an image. Never raises on content (blank / noise images give no objects)."""
    arr = to_uint8(image)
    h, w = arr.shape[:2]
    if min(h, w) < 8:
        raise ValueError(f"image too small to parse: {w}x{h} px")
    if max(h, w) > WORK_SIZE:
        k = WORK_SIZE / max(h, w)
        arr = np.asarray(Image.fromarray(arr).resize((max(8, round(w * k)), max(8, round(h * k))), Image.BOX))
        h, w = arr.shape[:2]
    cls = assign_colors(arr)
    total = float(h * w)
    background = float((cls == BG).sum()) / total
    unknown = float((cls == UNKNOWN).sum()) / total
    min_area = max(4.0, 0.002 * total)
    objects: list[ParsedObject] = []
    largest = 0.0
    for k, name in enumerate(_NAMES[:_N_OBJ]):
        mask = cls == k
        if mask.sum() < min_area:
            continue
        ys, xs = np.nonzero(mask)
        y0, y1, x0, x1 = ys.min(), ys.max() + 1, xs.min(), xs.max() + 1
        mask = np.zeros_like(mask)
        mask[y0:y1, x0:x1] = ndimage.binary_fill_holes(cls[y0:y1, x0:x1] == k)
        lab_img, n = ndimage.label(mask, _EIGHT)
        if n == 0:
            continue
        sizes = ndimage.sum_labels(mask, lab_img, np.arange(1, n + 1))
        slices = ndimage.find_objects(lab_img)
        for idx in np.nonzero(sizes >= min_area)[0]:
            sl = slices[idx]
            comp = lab_img[sl] == idx + 1
            cx, cy, e, solidity, elong, area = shape_moments(comp, sl)
            full = np.zeros((h, w), bool)
            full[sl] = comp
            largest = max(largest, area / total)
            objects.append(ParsedObject(
                color=name, shape=classify(e, solidity, elong), x=(cx + 0.5) / w, y=(cy + 0.5) / h,
                s=math.sqrt(area / total), area=area / total,
                bbox=(sl[1].start, sl[0].start, sl[1].stop, sl[0].stop), e=e, solidity=solidity, elongation=elong,
                mask=full))
    objects.sort(key=lambda o: (o.y, o.x))
    return ParsedImage(objects, h, w, background, unknown, largest)
