"""Built-in rewards (registered by name)."""
from . import clip, image_stats, vvr

__all__ = ["clip", "image_stats", "vvr"]
