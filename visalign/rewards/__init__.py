"""Built-in rewards (registered by name): image statistics, CLIP score, VVR verifiers, analytic toy rewards."""
from . import aesthetic, clip, hps, image_reward, image_stats, pickscore, toy, vvr

__all__ = ["aesthetic", "clip", "hps", "image_reward", "image_stats", "pickscore", "toy", "vvr"]
