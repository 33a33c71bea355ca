"""Capability a feature space declares when its output is a concatenation of named blocks compared per block."""
from __future__ import annotations

from abc import ABC, abstractmethod


class BlockFeatures(ABC):
    """A feature space whose ``[B, D]`` output is the concatenation, in order, of named blocks (DINOv2-style:
    CLS token, patch-token mean, patch-token std). Transport costs, kernel distances and the RWTD regression then
    compare the blocks separately, each by its mean-square distance, blocks weighted equally:

        C(x, y) = Σ_b ‖x_b − y_b‖² / d_b

    (for equal block sizes d this is the plain squared distance of the concatenation divided by d; for unequal
    sizes small blocks weigh as much as large ones). Spaces without this capability are one block compared by the
    plain squared distance ‖x − y‖²."""

    @abstractmethod
    def block_sizes(self) -> dict[str, int]:
        """Block names and widths, in output order (they sum to the output width D)."""


__all__ = ["BlockFeatures"]
