"""Built-in feature spaces: identity / pixels, random projection, a tiny random conv encoder, open_clip, the reward's."""
from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ..core.types import Samples, flatten_samples, modality_of
from .base import FeatureSpace, register_features


def _tensor(samples: Samples) -> torch.Tensor:
    """A tensor sample as it is; a dict (audio-video) as its tensors flattened and joined in key order."""
    if isinstance(samples, dict):
        return flatten_samples(samples)
    if not isinstance(samples, torch.Tensor):
        raise TypeError(f"feature spaces need tensor samples, got {type(samples).__name__}")
    return samples


@register_features("identity")
class IdentityFeatures(FeatureSpace):
    """φ(x) = flatten(x): transport and regression happen in sample (or latent) space."""

    def forward(self, samples: Samples) -> torch.Tensor:
        return _tensor(samples).flatten(1)


@register_features("pixels")
class PixelFeatures(FeatureSpace):
    """Images average-pooled to ``size``×``size`` and flattened (cheap pixel-space OT for large images)."""

    def __init__(self, size: int | None = None) -> None:
        super().__init__()
        self.size = size

    def forward(self, samples: Samples) -> torch.Tensor:
        x = _tensor(samples)
        if self.size is not None and x.dim() == 4 and x.shape[-1] != self.size:
            x = F.adaptive_avg_pool2d(x, self.size)
        return x.flatten(1)


@register_features("random_projection")
class RandomProjection(FeatureSpace):
    """φ(x) = W·flatten(x) / sqrt(D_in) with a fixed seeded Gaussian W (Johnson–Lindenstrauss)."""

    def __init__(self, in_dim: int | None = None, dim: int = 64, seed: int = 0) -> None:
        super().__init__()
        self.dim, self.seed = dim, seed
        self.register_buffer("weight", torch.empty(0), persistent=False)
        if in_dim is not None:
            self._build(in_dim, torch.device("cpu"))

    def _build(self, in_dim: int, device: torch.device) -> None:
        g = torch.Generator().manual_seed(self.seed)
        self.weight = (torch.randn(self.dim, in_dim, generator=g) / math.sqrt(in_dim)).to(device)

    def forward(self, samples: Samples) -> torch.Tensor:
        x = _tensor(samples).flatten(1)
        if self.weight.numel() == 0 or self.weight.shape[1] != x.shape[1]:
            self._build(x.shape[1], x.device)
        return x @ self.weight.to(x.dtype).T


def _random_conv(conv: nn.Module, g: torch.Generator) -> None:
    fan_in = conv.weight[0].numel()
    conv.weight.data = torch.randn(conv.weight.shape, generator=g) * math.sqrt(2.0 / fan_in)
    conv.bias.data.zero_()


@register_features("conv")
class ConvFeatures(FeatureSpace):
    """A tiny frozen random conv encoder: conv-SiLU ×2 (stride 2), then [mean, std] spatial pooling (2·width).

    ``grid`` > 1 keeps where things are: the mean is taken over each cell of a grid × grid partition of the image
    (grid²·width + width features, the std stays global), so transport and regression see layout, not only
    colour and texture statistics (``{name: conv, grid: 4}``).

    Images ``B×C×H×W``: those 2·width features. Video ``B×C×T×H×W``: the same encoder per frame, pooled over time
    as [mean over frames, mean |change| between consecutive frames] (4·width: appearance and motion). Audio-video:
    the video features followed by a frozen random 1-D conv encoder of the audio (conv-SiLU ×2, stride 4, [mean,
    std] over time; 2·width). Points and texts are refused with a message naming them."""

    def __init__(self, in_channels: int = 3, width: int = 32, seed: int = 0, audio_channels: int = 1,
                 grid: int = 1) -> None:
        super().__init__()
        if grid < 1:
            raise ValueError(f"conv features: grid must be >= 1 cells per side, got {grid}")
        self.grid = grid
        g = torch.Generator().manual_seed(seed)
        self.conv1 = nn.Conv2d(in_channels, width, 3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(width, width, 3, stride=2, padding=1)
        self.audio1 = nn.Conv1d(audio_channels, width, 9, stride=4, padding=4)
        self.audio2 = nn.Conv1d(width, width, 9, stride=4, padding=4)
        for conv in (self.conv1, self.conv2, self.audio1, self.audio2):
            _random_conv(conv, g)

    def images(self, x: torch.Tensor) -> torch.Tensor:
        h = F.silu(self.conv2(F.silu(self.conv1(x))))
        if self.grid > 1 and min(h.shape[2:]) < self.grid:
            raise ValueError(f"conv features: a {self.grid} x {self.grid} grid needs images of at least {4 * self.grid} "
                             f"pixels per side, got {tuple(x.shape[2:])}")
        means = h.mean((2, 3)) if self.grid == 1 else F.adaptive_avg_pool2d(h, self.grid).flatten(1)
        return torch.cat([means, h.flatten(2).std(2)], dim=1)

    def video(self, x: torch.Tensor) -> torch.Tensor:
        b, c, t = x.shape[:3]
        per_frame = self.images(x.transpose(1, 2).reshape(b * t, c, *x.shape[3:])).reshape(b, t, -1)
        motion = (per_frame[:, 1:] - per_frame[:, :-1]).abs().mean(1) if t > 1 else torch.zeros_like(per_frame[:, 0])
        return torch.cat([per_frame.mean(1), motion], dim=1)

    def audio(self, a: torch.Tensor) -> torch.Tensor:
        h = F.silu(self.audio2(F.silu(self.audio1(a.to(self.audio1.weight.dtype)))))
        return torch.cat([h.mean(2), h.std(2)], dim=1)

    def forward(self, samples: Samples) -> torch.Tensor:
        modality = modality_of(samples)
        if modality == "image":
            return self.images(samples)
        if modality == "video":
            return self.video(samples)
        if modality == "audio_video":
            return torch.cat([self.video(samples["video"]), self.audio(samples["audio"])], dim=1)
        raise ValueError(f"feature space 'conv' encodes image, video or audio-video samples; got {modality} samples "
                         "(use identity or random_projection)")


@register_features("open_clip")
class OpenCLIPFeatures(FeatureSpace):
    """open_clip image tower from a local checkpoint (lazy import, no downloads); inputs in [-1, 1] are
    resized to the model's resolution and normalised with CLIP statistics; output is L2-normalised."""

    def __init__(self, model: str = "ViT-B-32", checkpoint: str | None = None, model_config: str | None = None,
                 normalize: bool = True, **model_kwargs: Any) -> None:
        super().__init__()
        from ..rewards.clip import load_open_clip

        clip, _ = load_open_clip(model, checkpoint, model_config, **model_kwargs)
        self.visual = clip.visual
        self.normalize = normalize

    def forward(self, samples: Samples) -> torch.Tensor:
        from ..rewards.clip import clip_pixels

        z = self.visual(clip_pixels(_tensor(samples), self.visual.image_size))
        return F.normalize(z, dim=-1) if self.normalize else z


@register_features("reward")
class RewardFeatures(FeatureSpace):
    """The reward's own embedding: ``reward.features(samples) -> [B, D]`` (must be differentiable for regression)."""

    needs_reward = True

    def __init__(self, reward: Any = None) -> None:
        super().__init__()
        if reward is None or not callable(getattr(reward, "features", None)):
            name = getattr(reward, "name", type(reward).__name__)
            raise ValueError(f"feature space 'reward' needs a reward with a features() method; {name!r} has none")
        self._reward = [reward]  # a list, so a reward that is an nn.Module is not registered (and not trained) here

    def forward(self, samples: Samples) -> torch.Tensor:
        return self._reward[0].features(samples).flatten(1)
