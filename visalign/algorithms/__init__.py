"""Alignment objectives (registered by name): rwtd, festdpo, rwr, reward_backprop, flow_grpo, diffusion_nft, core,
av_grpo."""
from .av_grpo import AVGRPO, AVGRPOConfig
from .core_coevolve import CoRe, CoReConfig
from .diffusion_nft import DiffusionNFT, DiffusionNFTConfig
from .festdpo import FestDPO, FestDPOConfig, PreferencePairs, dpo_loss, preference_labels
from .flow_grpo import FlowGRPO, FlowGRPOConfig
from .kde import bandwidth, kde_log_prob, multi_bandwidth_log_prob
from .reward_backprop import RewardBackprop, RewardBackpropConfig
from .rwr import RWR, RWRConfig
from .rwtd import RWTD, RWTDConfig
from .transport import (barycentric_projection, beta_for_ess, effective_sample_size, mixture_target, partial_step,
                        tilted_weights, transport_plan, transport_targets)

__all__ = [
    "RWTD", "RWTDConfig", "FestDPO", "FestDPOConfig", "PreferencePairs", "RWR", "RWRConfig",
    "RewardBackprop", "RewardBackpropConfig", "FlowGRPO", "FlowGRPOConfig", "DiffusionNFT", "DiffusionNFTConfig", "CoRe",
    "CoReConfig", "AVGRPO", "AVGRPOConfig",
    "tilted_weights", "effective_sample_size", "beta_for_ess", "mixture_target", "transport_plan",
    "barycentric_projection", "partial_step", "transport_targets",
    "bandwidth", "kde_log_prob", "multi_bandwidth_log_prob", "dpo_loss", "preference_labels",
]
