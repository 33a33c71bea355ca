"""VVR v2 parser: image -> coloured components (colour, shape, centroid, size, mask), deterministic and
resolution-independent.

1. Box-downscale to <= 256 px. Background: a smooth field (constant, or a quadratic fitted to the border when the
   border varies, as in gradient backgrounds) and its name (nearest of the 7 listed backgrounds).
2. Foreground: contrast to the background ``dist`` above a noise floor and ``alpha = dist / local max`` >= 0.45,
   i.e. at least half object wherever an edge is anti-aliased, blurred or soft.
3. Each foreground pixel is named (:mod:`visalign.vvr.colour_model`) from its estimated pure colour.
4. Colour boundaries: where two colours meet, anti-aliasing, blur and JPEG make pixels that mix the two, and the mix
   of two palette colours can read as a third (red + yellow -> orange). Every colour region is eroded to its *core*;
   pixels of a colour with no core of that colour nearby (thin bands, rings and fringes) join the nearest core of any
   colour. A ring between nested objects therefore splits between them instead of becoming an object.
5. Per colour: fill holes (an outer object covers what it encloses), 8-connected components, drop specks.
   Shape from moments of the filled component (rotation-invariant; see :func:`visalign.vvr.parse.classify`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from PIL import Image
from scipy import ndimage

from .colour_model import ACHROMATIC, COLOUR_NAMES, name_background, name_colours, pure_colours
from .parse import to_uint8
from .shapes import classify_shape, shape_features

WORK_SIZE = 256
ALPHA_MIN = 0.45
BG, _EIGHT = -1, np.ones((3, 3), bool)


@dataclass
class Component:
    """One coloured object found in an image (normalised units: x right, y down, 0..1 of the working image)."""

    color: str
    shape: str  # circle / square / triangle / star / other
    x: float
    y: float
    s: float  # sqrt(area / image area)
    area: float
    bbox: tuple[float, float, float, float]  # x0, y0, x1, y1 (normalised, pixel edges)
    e: float
    fill: float  # area / minimum bounding rectangle
    solidity: float
    aspect: float
    mask: np.ndarray = field(repr=False)  # hole-filled mask, cut out at ``origin``
    origin: tuple[int, int] = (0, 0)  # (row, column) of mask[0, 0] in working pixels

    def label(self) -> str:
        return f"{self.color} {self.shape}"

    def to_dict(self) -> dict:
        return {"color": self.color, "shape": self.shape, "x": round(self.x, 4), "y": round(self.y, 4),
                "s": round(self.s, 4), "e": round(self.e, 3), "fill": round(self.fill, 3)}

    def pixel_box(self) -> tuple[int, int, int, int]:
        """x0, y0, x1, y1 in working pixels (exclusive end)."""
        r, c = self.origin
        return c, r, c + self.mask.shape[1], r + self.mask.shape[0]


@dataclass
class Segmentation:
    """Parser output: the coloured components, what the background is, and the image geometry."""

    components: list[Component]
    height: int  # working pixels
    width: int
    native_side: int  # min(H, W) of the image as given (for tolerances in native pixels)
    background_rgb: tuple[float, float, float]
    background_name: str | None
    background_fraction: float
    achromatic: int = 0  # foreground components without a colour name (not objects of the vocabulary)

    @property
    def side(self) -> float:
        return float(min(self.height, self.width))

    @property
    def objects(self) -> list[Component]:
        return self.components

    def _full_overlap(self, i: int, j: int) -> int:
        a, b = self.components[i], self.components[j]
        ax0, ay0, ax1, ay1 = a.pixel_box()
        bx0, by0, bx1, by1 = b.pixel_box()
        x0, y0, x1, y1 = max(ax0, bx0), max(ay0, by0), min(ax1, bx1), min(ay1, by1)
        if x0 >= x1 or y0 >= y1:
            return 0
        ma = a.mask[y0 - ay0:y1 - ay0, x0 - ax0:x1 - ax0]
        mb = b.mask[y0 - by0:y1 - by0, x0 - bx0:x1 - bx0]
        return int((ma & mb).sum())

    def gap(self, i: int, j: int) -> float:
        """Boundary-to-boundary distance of components ``i`` and ``j`` (fraction of the image side); 0 when they
        are adjacent or one covers the other."""
        if self._full_overlap(i, j):
            return 0.0
        pa, pb = _boundary_points(self.components[i]), _boundary_points(self.components[j])
        best = math.inf
        for k in range(0, len(pa), 256):
            d2 = ((pa[k:k + 256, None, :] - pb[None, :, :]) ** 2).sum(-1)
            best = min(best, float(d2.min()))
        d = math.sqrt(best)  # between pixel centres: 1 (side by side) or 1.41 (diagonal) is contact
        return (0.0 if d <= 1.5 else d - 1.0) / self.side

    def inside(self, i: int, j: int) -> float:
        """Share of component ``i``'s pixels that lie within component ``j``'s filled outline."""
        return self._full_overlap(i, j) / max(float(self.components[i].mask.sum()), 1.0)

    def contact(self, i: int, j: int) -> float:
        """Length of the shared border of ``i`` and ``j`` over the smaller one's equivalent diameter."""
        a, b = self.components[i], self.components[j]
        ax0, ay0, ax1, ay1 = a.pixel_box()
        bx0, by0, bx1, by1 = b.pixel_box()
        x0, y0 = min(ax0, bx0) - 3, min(ay0, by0) - 3
        x1, y1 = max(ax1, bx1) + 3, max(ay1, by1) + 3
        ma = np.zeros((y1 - y0, x1 - x0), bool)
        mb = np.zeros_like(ma)
        ma[ay0 - y0:ay1 - y0, ax0 - x0:ax1 - x0] = a.mask
        mb[by0 - y0:by1 - y0, bx0 - x0:bx1 - x0] = b.mask
        if (ma & mb).sum() > 0.5 * min(ma.sum(), mb.sum()):
            return 0.0  # one inside the other: nested, not overlapping
        edge_a, edge_b = ma & ~ndimage.binary_erosion(ma), mb & ~ndimage.binary_erosion(mb)
        near_a, near_b = (ndimage.binary_dilation(m, _EIGHT, iterations=2) for m in (ma & ~mb, mb & ~ma))
        length = 0.5 * float((edge_a & near_b).sum() + (edge_b & near_a).sum()) / self.side
        diam = 2 * min(a.s, b.s) / math.sqrt(math.pi)
        return float(length / max(diam, 1e-6))


def _boundary_points(c: Component) -> np.ndarray:
    edge = c.mask & ~ndimage.binary_erosion(c.mask)
    ys, xs = np.nonzero(edge)
    return np.stack([ys + c.origin[0], xs + c.origin[1]], 1).astype(np.float32)


# ---------------------------------------------------------------- background


def _border(arr: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pixels of a ``width``-wide frame around the image, with their (y, x) in [-0.5, 0.5)."""
    h, w = arr.shape[:2]
    yy, xx = np.mgrid[0:h, 0:w]
    parts = [(slice(0, width), slice(None)), (slice(h - width, h), slice(None)),
             (slice(width, h - width), slice(0, width)), (slice(width, h - width), slice(w - width, w))]
    px = np.concatenate([arr[p].reshape(-1, 3) for p in parts]).astype(np.float32)
    ys = np.concatenate([yy[p].ravel() for p in parts]).astype(np.float32) / h - 0.5
    xs = np.concatenate([xx[p].ravel() for p in parts]).astype(np.float32) / w - 0.5
    return px, ys, xs


def background_field(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Background colour per pixel (``H x W x 3``, or ``1 x 1 x 3`` when constant), the median border colour and a
    per-channel noise estimate. A border that varies smoothly (gradient backgrounds) gets a quadratic fit."""
    h, w = arr.shape[:2]
    px, ys, xs = _border(arr, max(2, min(h, w) // 32))
    med = np.median(px, 0)
    dev = np.abs(px - med).max(1)
    inlier = dev <= max(12.0, float(np.percentile(dev, 60)) * 3)
    noise = float(np.median(np.abs(px[inlier] - med)) * 1.4826)
    if np.percentile(dev[inlier], 95) < max(12.0, 4 * noise):
        return med.reshape(1, 1, 3), med, noise
    basis = lambda y, x: np.stack([np.ones_like(x), x, y, x * x, x * y, y * y], 1)  # noqa: E731
    for _ in range(2):
        coef, *_ = np.linalg.lstsq(basis(ys[inlier], xs[inlier]), px[inlier], rcond=None)
        fit_res = np.abs(px - basis(ys, xs) @ coef).max(1)
        noise = float(np.median(fit_res[inlier]) * 1.4826 / 1.5)
        inlier = fit_res <= max(12.0, 5 * noise)
    gy, gx = np.meshgrid(np.arange(h, dtype=np.float32) / h - 0.5, np.arange(w, dtype=np.float32) / w - 0.5, indexing="ij")
    field = (basis(gy.ravel(), gx.ravel()) @ coef).reshape(h, w, 3)
    return np.clip(field, 0, 255).astype(np.float32), np.median(px[inlier], 0), noise


# ---------------------------------------------------------------- pixels -> classes


@dataclass
class PixelMap:
    """Per-pixel reading of an image: class (``BG``, a colour index or ``ACHROMATIC``), contrast to the background
    (RGB distance, 0 below the noise floor) and the median border colour."""

    cls: np.ndarray
    contrast: np.ndarray
    background: np.ndarray


def pixel_classes(arr: np.ndarray) -> PixelMap:
    """Name every pixel: foreground where the contrast to the background clears the noise floor and covers at least
    ``ALPHA_MIN`` of the local maximum, named from its estimated pure colour; isolated pixels take their
    neighbourhood's class."""
    p = arr.astype(np.float32)
    bg, bg_med, noise = background_field(arr)
    d = p - bg
    dist = np.sqrt(d[..., 0] ** 2 + d[..., 1] ** 2 + d[..., 2] ** 2)
    side = min(arr.shape[:2])
    k = 2 * max(1, round(0.018 * side)) + 1
    local_max = ndimage.maximum_filter(dist, size=k)
    alpha = dist / np.maximum(local_max, 1e-3)
    floor = max(28.0, 4.5 * noise)
    fg = (dist > floor) & (alpha >= ALPHA_MIN)
    cls = np.full(arr.shape[:2], BG, np.int8)
    ys, xs = np.nonzero(fg)
    if len(ys):
        b = bg[ys, xs] if bg.shape[0] > 1 else np.broadcast_to(bg[0, 0], (len(ys), 3))
        cls[ys, xs] = name_colours(pure_colours(p[ys, xs], b, alpha[ys, xs]))
    return PixelMap(despeckle(cls), np.where(dist > floor, dist, 0.0).astype(np.float32), bg_med)


_OFFSETS = [(dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1) if dy or dx]


def despeckle(cls: np.ndarray) -> np.ndarray:
    """Pixels sharing their class with at most one of their 8 neighbours take the most common class around them
    (noise and JPEG flip single pixels; corners of drawn shapes keep at least three)."""
    h, w = cls.shape
    pad = np.pad(cls, 1, mode="edge")
    neigh = [pad[1 + dy:1 + dy + h, 1 + dx:1 + dx + w] for dy, dx in _OFFSETS]
    same = np.zeros(cls.shape, np.uint8)
    for n in neigh:
        same += n == cls
    ys, xs = np.nonzero(same <= 1)
    if not len(ys):
        return cls
    around = np.stack([n[ys, xs] for n in neigh], 1).astype(np.int16) + 1  # N x 8, classes shifted to >= 0
    counts = np.zeros((len(ys), int(around.max()) + 1), np.int16)
    np.add.at(counts, (np.repeat(np.arange(len(ys)), 8), around.ravel()), 1)
    out = cls.copy()
    out[ys, xs] = counts.argmax(1) - 1
    return out


def _segment_residual(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distance of colours ``p`` (N x 3) to the segment a -> b and the position along it (0 at a, 1 at b)."""
    v = b - a
    t = np.clip(((p - a) @ v) / max(float(v @ v), 1e-6), 0.0, 1.0)
    return np.sqrt(((p - a - t[:, None] * v) ** 2).sum(1)), t


def resolve_boundaries(cls: np.ndarray, rgb: np.ndarray, background: np.ndarray) -> np.ndarray:
    """Settle the pixels where colours meet. A *core* is a colour region eroded by ``t`` px.

    - Thin colour regions (bands where two colours mix, rings around nested objects, fringes): pixels with no core
      of their own colour within ``2t + 1`` px take, of the colours with a core within ``3t + 2`` px, the one whose
      core colour is closest to theirs (on a band between two colours: the nearer end of the mix).
    - Background pixels within reach of two colours' cores whose colour lies on the mix of those two colours (closer
      to it than to either colour's mix with the background, as where the mix of yellow and cyan looks like beige)
      take the nearer of the two."""
    side = min(cls.shape)
    t = max(1, round(0.012 * side))
    reach = 3 * t + 2
    orphan = np.zeros(cls.shape, bool)
    n_reach = np.zeros(cls.shape, np.uint8)
    cores: list[tuple[int, tuple[slice, slice], np.ndarray, np.ndarray, np.ndarray]] = []
    slices = ndimage.find_objects(cls.astype(np.int16) + 2)  # label value v -> class v - 2
    for v, sl in enumerate(slices, start=1):
        k = v - 2
        if sl is None or k == BG:
            continue
        sl = _pad(sl, reach + 1, cls.shape)
        m = cls[sl] == k
        ck = ndimage.minimum_filter(m.view(np.uint8), size=2 * t + 1, mode="constant", cval=0).astype(bool) & m
        near = ndimage.maximum_filter(ck.view(np.uint8), size=4 * t + 3, mode="constant", cval=0).astype(bool)
        orphan[sl] |= m & ~near
        if ck.any():
            reach_k = ndimage.maximum_filter(ck.view(np.uint8), size=2 * reach + 1, mode="constant", cval=0).astype(bool)
            n_reach[sl] += reach_k
            cores.append((k, sl, ck, reach_k, np.median(rgb[sl][ck], 0)))
    if not cores:
        return cls
    out = cls.copy()

    def covered(ys: np.ndarray, xs: np.ndarray, sl: tuple[slice, slice], reach_k: np.ndarray) -> np.ndarray:
        iy, ix = ys - sl[0].start, xs - sl[1].start
        inside = (iy >= 0) & (iy < reach_k.shape[0]) & (ix >= 0) & (ix < reach_k.shape[1])
        hit = np.zeros(len(ys), bool)
        hit[inside] = reach_k[iy[inside], ix[inside]]
        return hit

    if orphan.any():
        oy, ox = np.nonzero(orphan)
        pix = rgb[oy, ox]
        best = np.full(len(oy), np.inf, np.float32)
        for k, sl, _, reach_k, colour in cores:
            idx = np.nonzero(covered(oy, ox, sl, reach_k))[0]
            d = ((pix[idx] - colour) ** 2).sum(1)
            better = d < best[idx]
            best[idx[better]] = d[better]
            out[oy[idx[better]], ox[idx[better]]] = k
    between = (cls == BG) & (n_reach >= 2)
    if between.any():
        by, bx = np.nonzero(between)
        pix = rgb[by, bx]
        hits = [covered(by, bx, sl, reach_k) for _, sl, _, reach_k, _ in cores]
        best = np.full(len(by), 45.0, np.float32)
        for (k1, _, _, _, c1), h1 in zip(cores, hits):
            for (k2, _, _, _, c2), h2 in zip(cores, hits):
                if k2 <= k1:
                    continue
                idx = np.nonzero(h1 & h2)[0]
                if not len(idx):
                    continue
                r_ab, pos = _segment_residual(pix[idx], c1, c2)
                r_bg = np.minimum(_segment_residual(pix[idx], background, c1)[0],
                                  _segment_residual(pix[idx], background, c2)[0])
                take = (r_ab < r_bg) & (r_ab < best[idx])
                best[idx[take]] = r_ab[take]
                out[by[idx[take]], bx[idx[take]]] = np.where(pos[take] < 0.5, k1, k2)
    return out


def _pad(sl: tuple[slice, slice], pad: int, shape: tuple[int, int]) -> tuple[slice, slice]:
    return (slice(max(0, sl[0].start - pad), min(shape[0], sl[0].stop + pad)),
            slice(max(0, sl[1].start - pad), min(shape[1], sl[1].stop + pad)))


# ---------------------------------------------------------------- components


def coverage(mask: np.ndarray, cls: np.ndarray, contrast: np.ndarray, rgb: np.ndarray, k: int) -> np.ndarray:
    """Sub-pixel coverage of one component: 1 inside; on its edge and on the pixels around it (partly covered by
    anti-aliasing) the share of its own colour: contrast over its own contrast against the background, and the
    position on the line from the neighbour's colour to its own where it borders another colour."""
    inner = ndimage.binary_erosion(mask)
    core = inner & (cls == k)
    own = contrast[core] if core.any() else contrast[mask]
    full = float(np.median(own)) if own.size else 1.0
    ring = ndimage.binary_dilation(mask, _EIGHT) & ~mask
    soft = (mask & ~inner) | (ring & (cls == BG))
    w = mask.astype(np.float32)
    w[soft] = np.minimum(contrast[soft] / max(full, 1e-3), 1.0)
    other = (cls != k) & (cls != BG)
    touching = (ring & other) | (mask & ~inner & ndimage.binary_dilation(other, _EIGHT))
    if touching.any():
        neighbour = np.bincount(cls[ring & other].astype(np.int64) + 1).argmax() - 1 if (ring & other).any() else None
        c_own = np.median(rgb[core if core.any() else mask], 0)
        far = other & (cls == neighbour) & ~ndimage.binary_dilation(mask, _EIGHT, iterations=2)
        c_other = np.median(rgb[far], 0) if far.any() else None
        if c_other is not None and np.sum((c_own - c_other) ** 2) > 400:
            v = c_own - c_other
            a = ((rgb[touching] - c_other) @ v) / float(v @ v)
            w[touching] = np.clip(a, 0.0, 1.0)
        else:
            w[touching] = mask[touching]
    return w


def _working_image(image: np.ndarray | Image.Image) -> tuple[np.ndarray, int]:
    arr = to_uint8(image)
    h, w = arr.shape[:2]
    if min(h, w) < 8:
        raise ValueError(f"image too small to parse: {w}x{h} px")
    native = min(h, w)
    if max(h, w) > WORK_SIZE:
        k = WORK_SIZE / max(h, w)
        arr = np.asarray(Image.fromarray(arr).resize((max(8, round(w * k)), max(8, round(h * k))), Image.BOX))
    return arr, native


def segment(image: np.ndarray | Image.Image) -> Segmentation:
    """Find the coloured components of an image (uint8 ``H x W x 3``, PIL, or float in [-1, 1]). Never raises on
    content: blank, noise or single-colour images give no components."""
    arr, native = _working_image(image)
    h, w = arr.shape[:2]
    pix = pixel_classes(arr)
    rgb = arr.astype(np.float32)
    cls = resolve_boundaries(pix.cls, rgb, pix.background.astype(np.float32))
    bg_med = pix.background
    bg_name, _ = name_background(bg_med)
    total = float(h * w)
    min_area = max(4.0, 0.002 * total)
    comps: list[Component] = []
    achromatic = 0
    slices = ndimage.find_objects(cls.astype(np.int16) + 2)
    for v, sl in enumerate(slices, start=1):
        k = v - 2
        if sl is None or k == BG:
            continue
        m = cls[sl] == k
        if m.sum() < min_area:
            continue
        filled = ndimage.binary_fill_holes(m)
        lab, n = ndimage.label(filled, _EIGHT)
        sizes = ndimage.sum_labels(filled, lab, np.arange(1, n + 1))
        boxes = ndimage.find_objects(lab)
        for idx in np.nonzero(sizes >= min_area)[0]:
            if k == ACHROMATIC:
                achromatic += 1
                continue
            box = boxes[idx]
            comp = lab[box] == idx + 1
            y0, x0 = sl[0].start + box[0].start, sl[1].start + box[1].start
            y1, x1 = y0 + comp.shape[0], x0 + comp.shape[1]
            py0, px0 = max(0, y0 - 4), max(0, x0 - 4)
            py1, px1 = min(h, y1 + 4), min(w, x1 + 4)
            padded = np.zeros((py1 - py0, px1 - px0), bool)
            padded[y0 - py0:y1 - py0, x0 - px0:x1 - px0] = comp
            weights = coverage(padded, cls[py0:py1, px0:px1], pix.contrast[py0:py1, px0:px1], rgb[py0:py1, px0:px1], k)
            f = shape_features(padded, weights)
            comps.append(Component(
                color=COLOUR_NAMES[k], shape=classify_shape(f), x=(px0 + f.cx + 0.5) / w, y=(py0 + f.cy + 0.5) / h,
                s=math.sqrt(f.n / total), area=f.n / total, bbox=(x0 / w, y0 / h, x1 / w, y1 / h),
                e=f.e, fill=f.fill, solidity=f.solidity, aspect=f.aspect, mask=comp, origin=(y0, x0)))
    comps.sort(key=lambda c: (c.y, c.x))
    bg_fraction = float((cls == BG).sum()) / total
    return Segmentation(comps, h, w, native, tuple(float(v) for v in bg_med), bg_name, bg_fraction, achromatic)
