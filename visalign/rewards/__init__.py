"""Built-in rewards (registered by name): image statistics, CLIP score, PickScore, HPS v2.1, ImageReward, the LAION
aesthetic predictor, OCR, VLM judges, remote rewards, multi-reward sums, VVR verifiers, latent reward models, the smooth-image judge, analytic toy
rewards, video / audio-video world rewards, the no-signal `null_score` control."""
from . import (aesthetic, clip, hps, image_reward, image_stats, latent, multi, null, ocr, pickscore, remote, shapes_judge, smooth_images, toy,
               video, vlm_judge, vvr)
from .aesthetic import LaionAesthetic
from .clip import CLIPScore
from .hps import HPSv2
from .image_reward import ImageReward
from .multi import MultiReward, normalize_then_sum, sum_then_normalize
from .null import NullScore
from .ocr import OCRReward
from .pickscore import PickScore
from .remote import RemoteReward, RemoteRewardError
from .vlm_judge import VLMJudge
from . import av_verifiers  # noqa: F401  (av_video_quality, av_audio_quality, av_*_alignment, av_desync)

__all__ = ["aesthetic", "clip", "hps", "image_reward", "image_stats", "multi", "null", "ocr", "pickscore", "remote", "toy", "latent", "shapes_judge", "smooth_images", "video",
           "vlm_judge", "vvr", "CLIPScore", "HPSv2", "ImageReward", "LaionAesthetic", "MultiReward", "NullScore", "OCRReward",
           "PickScore", "RemoteReward", "RemoteRewardError", "VLMJudge", "normalize_then_sum", "sum_then_normalize"]
