"""Built-in rewards (registered by name): image statistics, CLIP score, PickScore, HPS v2.1, ImageReward, the LAION
aesthetic predictor, OCR, VLM judges, remote rewards, multi-reward sums, VVR verifiers, analytic toy rewards."""
from . import aesthetic, clip, hps, image_reward, image_stats, multi, ocr, pickscore, remote, toy, vlm_judge, vvr
from .multi import MultiReward, normalize_then_sum, sum_then_normalize
from .remote import RemoteReward, RemoteRewardError

__all__ = ["aesthetic", "clip", "hps", "image_reward", "image_stats", "multi", "ocr", "pickscore", "remote", "toy", "vlm_judge", "vvr",
           "MultiReward", "RemoteReward", "RemoteRewardError", "normalize_then_sum", "sum_then_normalize"]
