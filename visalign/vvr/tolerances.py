"""Tolerances of the VVR v2 predicates, in fractions of the image side.

``default``: visalign's resolution-independent tolerances (fractions of the image side and ratios), the same at
any resolution. ``paper``: the format's documented defaults (absolute pixels at the image's native resolution, e.g.
24 px for left_of, 0.27 px for touching) with the per-relation overrides a spec may carry (``margin_px``,
``min_size_ratio`` ...), for numbers comparable with the paper's; verdicts then depend on the resolution.
Semantic parameters (``multiplier``, ``min_difference``) apply in both modes.
"""
from __future__ import annotations

from dataclasses import dataclass

from .spec import Relation

MODES = ("default", "paper")


@dataclass(frozen=True)
class Tolerances:
    """Thresholds for one image: ``mode`` and the native side in pixels (for ``paper``)."""

    mode: str = "default"
    native_side: int = 256

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"tolerance mode must be one of {MODES}, got {self.mode!r}")
        if self.native_side < 8:
            raise ValueError(f"native_side must be >= 8 px, got {self.native_side}")

    @property
    def paper(self) -> bool:
        return self.mode == "paper"

    def px(self, pixels: float) -> float:
        """``pixels`` at the native resolution as a fraction of the side."""
        return pixels / self.native_side

    def _p(self, rel: Relation | None, name: str, default: float) -> float:
        return float(rel.param(name, default)) if (self.paper and rel is not None) else default

    # ---- positions
    def direction(self, rel: Relation) -> float:
        """Minimum centroid offset for left_of / right_of / above / below."""
        return self.px(self._p(rel, "margin_px", 24.0)) if self.paper else 0.04

    def all_direction(self, rel: Relation) -> float:
        """Minimum offset of every subject beyond every object (all_left_of ...)."""
        return self.px(self._p(rel, "min_margin_px", 12.0)) if self.paper else 0.04

    def extreme(self, rel: Relation, subject_extent: float) -> float:
        """Margin of the subject's box edge beyond every other component (leftmost ...)."""
        if self.paper:
            return max(self.px(self._p(rel, "margin_px", 3.0)), 0.04 * subject_extent)
        return 0.015

    def same_line(self, rel: Relation, max_extent: float) -> float:
        """Largest centroid offset across the line for same_row / same_column / all_same_*."""
        if self.paper:
            if rel.param("tolerance_px") is not None:
                return self.px(float(rel.param("tolerance_px")))
            return max(0.04, 0.55 * max_extent) + self.px(0.5)
        return 0.05

    def between_line(self) -> float:
        """default: largest distance of the subject from the anchor line (fraction of the side)."""
        return 0.12

    def between_score(self, rel: Relation) -> float:
        """paper: minimum of line score x interval score."""
        return self._p(rel, "between_score_threshold", 0.70)

    def distance(self, rel: Relation) -> tuple[float, float]:
        """closer_than / farther_than: (largest near / far ratio, smallest far - near)."""
        if self.paper:
            return self._p(rel, "max_distance_ratio", 0.90), self.px(self._p(rel, "min_margin_px", 4.0))
        return 0.8, 0.03

    # ---- sizes (ratios of sqrt(area))
    def larger(self, rel: Relation | None) -> float:
        return self._p(rel, "min_size_ratio", 1.05) if self.paper else 1.2

    def same_size(self, rel: Relation | None) -> float:
        return self._p(rel, "max_size_ratio", 1.08) if self.paper else 1.15

    # ---- topology
    def touch(self, rel: Relation | None) -> float:
        """Largest boundary gap that still counts as touching."""
        if self.paper:
            return self.px(self._p(rel, "decision_distance_px", 0.27))
        return max(0.012, self.px(1.0))

    def inside(self) -> float:
        """Smallest share of the subject's pixels within the object's outline."""
        return 0.99 if self.paper else 0.85
