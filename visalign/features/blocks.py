"""Block layouts of feature vectors: the per-block mean-square distance used by transport, kernels and regression."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..core.features import BlockFeatures


@dataclass(frozen=True)
class BlockLayout:
    """Named blocks of a ``[B, D]`` feature vector and the weight of each block's squared distance:

        C(x, y) = Σ_b w_b·‖x_b − y_b‖².

    :meth:`of` gives w_b = 1/d_b (mean square per block, blocks weighted equally) for a :class:`BlockFeatures`
    space, and one block with w = 1 (the plain squared distance, as before blocks existed) for any other space."""

    names: tuple[str, ...]
    sizes: tuple[int, ...]
    weights: tuple[float, ...]

    def __post_init__(self) -> None:
        if not (len(self.names) == len(self.sizes) == len(self.weights)) or not self.names:
            raise ValueError(f"a block layout needs one size and weight per name, got {self.names}, {self.sizes}, {self.weights}")
        if any(s < 1 for s in self.sizes) or any(not w > 0 for w in self.weights):
            raise ValueError(f"block sizes must be >= 1 and weights > 0, got sizes {self.sizes}, weights {self.weights}")

    @classmethod
    def single(cls, dim: int) -> "BlockLayout":
        return cls(("features",), (dim,), (1.0,))

    @classmethod
    def mean_square(cls, sizes: dict[str, int]) -> "BlockLayout":
        return cls(tuple(sizes), tuple(sizes.values()), tuple(1.0 / d for d in sizes.values()))

    @classmethod
    def of(cls, space: object, dim: int) -> "BlockLayout":
        """The layout of ``space``'s ``dim``-wide output (checked against the blocks it declares)."""
        if not isinstance(space, BlockFeatures):
            return cls.single(dim)
        layout = cls.mean_square(space.block_sizes())
        if layout.dim != dim:
            raise ValueError(f"{type(space).__name__} declares blocks {dict(zip(layout.names, layout.sizes))} "
                             f"({layout.dim} wide) but returned {dim}-wide features")
        return layout

    @property
    def dim(self) -> int:
        return sum(self.sizes)

    def _check(self, x: torch.Tensor) -> torch.Tensor:
        x = x.flatten(1)
        if x.shape[1] != self.dim:
            raise ValueError(f"features are {x.shape[1]} wide but the block layout {dict(zip(self.names, self.sizes))} "
                             f"is {self.dim} wide")
        return x

    def split(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """``{name: [B, d_b]}``."""
        return dict(zip(self.names, self._check(x).split(list(self.sizes), dim=1)))

    def scaled(self, x: torch.Tensor) -> torch.Tensor:
        """x with block b multiplied by √w_b, so the plain squared distance of scaled vectors is C."""
        if self.weights == (1.0,):
            return x.flatten(1)
        return torch.cat([v * w**0.5 for v, w in zip(self.split(x).values(), self.weights)], dim=1)

    def cost(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """C(x_i, y_j) for every pair, ``[N, M]`` float64."""
        return torch.cdist(self.scaled(x.detach().double()), self.scaled(y.detach().double())).pow(2)

    def regression_loss(self, u: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Σ_b mean over the batch and block b's dims of (u_b − target_b)², the target detached (one block: the
        plain mean-square error). The published RWTD loss is ½ of this per block; the constant is left out so
        one-block spaces keep the mean-square loss they always had."""
        target = target.detach().to(u)
        return sum((ub - tb).pow(2).mean() for ub, tb in zip(self.split(u).values(), self.split(target).values()))


def token_blocks(tokens: torch.Tensor) -> torch.Tensor:
    """DINOv2-style blocks of ``[B, 1 + N, D]`` transformer tokens (CLS first): [CLS, patch-token mean, patch-token
    std], concatenated ``[B, 3D]``."""
    patches = tokens[:, 1:]
    return torch.cat([tokens[:, 0], patches.mean(1), patches.std(1)], dim=1)


__all__ = ["BlockLayout", "token_blocks"]
