"""Latent reward models: score noisy latents ``r_φ(x_t, t, c)`` directly (no decoding), trained from preference pairs."""
from .io import LatentPairs, load_lrm, load_pairs, save_lrm, save_pairs
from .losses import bradley_terry_loss, draw_noise_level, noise_pair, pair_loss, thurstone_loss
from .models import BackboneLRM, LatentRewardConfig, LatentRewardModel, QueryPoolHead, StandaloneLRM, build_lrm
from .reward import LatentReward
from .train import LRMTrainingConfig, TrainRewardConfig, pair_accuracy, train_lrm

__all__ = [
    "LatentPairs", "load_lrm", "load_pairs", "save_lrm", "save_pairs",
    "bradley_terry_loss", "thurstone_loss", "pair_loss", "noise_pair", "draw_noise_level",
    "LatentRewardConfig", "LatentRewardModel", "StandaloneLRM", "BackboneLRM", "QueryPoolHead", "build_lrm",
    "LatentReward", "LRMTrainingConfig", "TrainRewardConfig", "train_lrm", "pair_accuracy",
]
