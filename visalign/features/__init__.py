"""Feature spaces φ for transport targets and kernel density estimates (frozen, differentiable w.r.t. samples)."""
from .blocks import BlockLayout
from .base import FEATURES, FeatureSpace, build_features, register_features
from .dinov2 import DINOv2Features
from .ssl_encoder import SSLEncoderFeatures, TinyViT, TinyViTConfig, load_encoder, save_encoder
from .spaces import ConvFeatures, IdentityFeatures, OpenCLIPFeatures, PixelFeatures, RandomProjection, RewardFeatures

__all__ = [
    "FEATURES", "FeatureSpace", "BlockLayout", "build_features", "register_features",
    "IdentityFeatures", "PixelFeatures", "RandomProjection", "ConvFeatures", "OpenCLIPFeatures", "RewardFeatures",
    "DINOv2Features", "SSLEncoderFeatures", "TinyViT", "TinyViTConfig", "load_encoder", "save_encoder",
]
