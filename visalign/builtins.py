"""The one place that imports visalign's built-in generators, rewards, algorithms, prompt sources and feature spaces
(their decorators fill the core registries). The package root hands :func:`load` to the registries, so ``core``
imports nothing above it."""
from __future__ import annotations


def load() -> None:
    from . import algorithms, features, generators, rewards  # noqa: F401
    from .text import algorithms as text_algorithms, rewards as text_rewards, tasks  # noqa: F401
    from .toys import moving_shapes  # noqa: F401
    from .vvr import source  # noqa: F401
    from .poem import flow as poem_flow  # noqa: F401
    from .toys import av_toy  # noqa: F401
    from .reflection import algorithm as reflection, counting as reflection_counting  # noqa: F401
