"""Built-in rewards (registered by name): image statistics, CLIP score, VVR verifiers, analytic toy rewards."""
from . import clip, image_stats, toy, video, vvr

__all__ = ["clip", "image_stats", "toy", "video", "vvr"]
