"""Feature-space protocol and a registry/factory by name."""
from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ..core.registry import Registry
from ..core.types import Samples

FEATURES: Registry["FeatureSpace"] = Registry("feature space", entry_point_group="visalign.features")


def register_features(name: str):
    """Class decorator: make a feature space buildable by ``features: {name: ...}``."""
    return FEATURES.register(name)


class FeatureSpace(nn.Module):
    """A frozen map φ: samples ``[B, ...]`` -> features ``[B, D]``.

    Parameters never receive gradients (``requires_grad=False``, eval mode), but φ is differentiable with respect
    to its input, so losses such as ‖φ(G_θ(z)) − u‖² train the generator through it.
    """

    def freeze(self) -> "FeatureSpace":
        self.requires_grad_(False)
        self.eval()
        return self

    def train(self, mode: bool = True) -> "FeatureSpace":
        return super().train(False)  # always eval: frozen encoders keep their statistics

    def forward(self, samples: Samples) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError


def build_features(spec: str | dict[str, Any] | FeatureSpace | None, reward: Any = None) -> FeatureSpace:
    """Build from a name, ``{name, **kwargs}`` or pass an instance through; ``None`` means identity.

    ``reward`` is passed to spaces that need it (``reward``: the reward's own ``features()``)."""
    if isinstance(spec, FeatureSpace):
        return spec.freeze()
    if spec is None:
        spec = "identity"
    kwargs: dict[str, Any] = {}
    if isinstance(spec, dict):
        kwargs = dict(spec)
        if "name" not in kwargs:
            raise ValueError(f"features config needs a 'name' key, got keys {sorted(kwargs)}")
        spec = kwargs.pop("name")
    cls = FEATURES.get(str(spec))
    if getattr(cls, "needs_reward", False):
        kwargs["reward"] = reward
    return cls(**kwargs).freeze()
