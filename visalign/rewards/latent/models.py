"""Latent reward models ``r_φ(x_t, t, c) -> [B]``: a time-conditioned query-pooling head on tokens, the tokens coming
either from the frozen early blocks of a generator's own backbone (PAVRM style) or from the flattened latent itself
(a small standalone network). Latents may have any shape (image, video, flat audio-video), so video plugs in as is."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Sequence

import torch
from torch import nn

from ...core.config import ConfigError, check, option
from ...core.generator import Generator
from ...core.latent import TokenFeatures


def timestep_embedding(t: torch.Tensor, dim: int) -> torch.Tensor:
    """Sinusoidal embedding of ``t·1000`` (``t`` in [0, 1]), ``[B, dim]``."""
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=t.device, dtype=torch.float32) / half)
    args = (t.float() * 1000.0)[:, None] * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=1)


class QueryPoolHead(nn.Module):
    """Tokens ``[B, N, D]`` and ``t`` -> score ``[B]``: project, FiLM by a time embedding, one learnable query
    attends over the tokens, then an MLP."""

    def __init__(self, token_dim: int, hidden: int, time_dim: int, layers: int) -> None:
        super().__init__()
        self.time_dim = time_dim
        self.proj = nn.Linear(token_dim, hidden)
        self.film = nn.Sequential(nn.Linear(time_dim, hidden), nn.SiLU(), nn.Linear(hidden, 2 * hidden))
        self.query = nn.Parameter(torch.randn(hidden) / math.sqrt(hidden))
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        mods: list[nn.Module] = []
        for _ in range(layers):
            mods += [nn.Linear(hidden, hidden), nn.SiLU()]
        self.mlp = nn.Sequential(*mods, nn.Linear(hidden, 1))

    def forward(self, tokens: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        scale, shift = self.film(timestep_embedding(t, self.time_dim).to(tokens.dtype)).chunk(2, dim=1)
        h = torch.nn.functional.silu(self.proj(tokens) * (1 + scale[:, None]) + shift[:, None])
        attn = torch.softmax(self.key(h) @ self.query / math.sqrt(h.shape[-1]), dim=1)
        pooled = (attn[..., None] * self.value(h)).sum(1)
        return self.mlp(pooled).squeeze(-1)


@dataclass
class LatentRewardConfig:
    """Shape of a latent reward model. ``kind: standalone`` reads the flattened latent (``latent_shape`` needed);
    ``kind: backbone`` reads tokens from the first ``blocks`` blocks of the generator checkpoint ``generator``."""

    kind: str = option("standalone", "standalone (MLP head on the flattened latent) or backbone (frozen generator blocks)")
    latent_shape: list[int] = option(help="shape of one latent without batch (standalone)", factory=list)
    generator: str | None = option(None, "backbone: generator checkpoint folder whose early blocks give the tokens")
    blocks: int = option(1, "backbone: number of frozen blocks")
    hidden: int = option(128, "head width")
    time_dim: int = option(32, "time-embedding width")
    layers: int = option(2, "hidden layers of the head's MLP")

    def __post_init__(self) -> None:
        check(self.kind in ("standalone", "backbone"), f"lrm.kind must be 'standalone' or 'backbone', got {self.kind!r}")
        check(self.kind != "standalone" or (len(self.latent_shape) >= 1 and all(int(s) >= 1 for s in self.latent_shape)),
              f"lrm.latent_shape must list positive sizes for a standalone model, got {self.latent_shape}")
        check(self.blocks >= 1, f"lrm.blocks must be >= 1, got {self.blocks}")
        check(self.hidden >= 1 and self.layers >= 0, "lrm.hidden must be >= 1 and lrm.layers >= 0")
        check(self.time_dim >= 2 and self.time_dim % 2 == 0, f"lrm.time_dim must be even and >= 2, got {self.time_dim}")
        self.latent_shape = [int(s) for s in self.latent_shape]


class LatentRewardModel(nn.Module):
    """``r_φ(x_t, t, prompts) -> [B]``. ``head`` holds every trainable parameter; feature extractors stay frozen."""

    kind: ClassVar[str] = ""

    def __init__(self, config: LatentRewardConfig) -> None:
        super().__init__()
        self.config = config

    def tokens(self, latents: torch.Tensor, t: torch.Tensor, prompts: Sequence[str] | None) -> torch.Tensor:
        raise NotImplementedError

    def forward(self, latents: torch.Tensor, t: torch.Tensor, prompts: Sequence[str] | None = None) -> torch.Tensor:
        if t.shape != (latents.shape[0],):
            raise ValueError(f"latent reward: t must have shape ({latents.shape[0]},), got {tuple(t.shape)}")
        return self.head(self.tokens(latents, t, prompts), t)


class StandaloneLRM(LatentRewardModel):
    """A small network on the flattened latent (one token), independent of the generator; prompts are ignored."""

    kind = "standalone"

    def __init__(self, config: LatentRewardConfig) -> None:
        super().__init__(config)
        self.head = QueryPoolHead(math.prod(config.latent_shape), config.hidden, config.time_dim, config.layers)

    def tokens(self, latents: torch.Tensor, t: torch.Tensor, prompts: Sequence[str] | None) -> torch.Tensor:
        if list(latents.shape[1:]) != self.config.latent_shape:
            raise ValueError(f"latent reward expects latents of shape [B, {', '.join(map(str, self.config.latent_shape))}], "
                             f"got {tuple(latents.shape)}")
        return latents.flatten(1)[:, None, :]


class BackboneLRM(LatentRewardModel):
    """A head on tokens from the frozen first ``blocks`` blocks of a generator (any :class:`TokenFeatures` model),
    conditioned on the prompt through the backbone's own text path."""

    kind = "backbone"

    def __init__(self, config: LatentRewardConfig, generator: Generator | None = None) -> None:
        super().__init__(config)
        if generator is None:
            if not config.generator:
                raise ConfigError("a backbone latent reward model needs lrm.generator (a generator checkpoint folder)")
            from ...core.generator import load_generator

            generator = load_generator(config.generator)
        if not isinstance(generator, TokenFeatures):
            raise ConfigError(f"generator {type(generator).__name__} does not provide token features (core.latent.TokenFeatures)")
        check(config.blocks <= generator.num_blocks(), f"lrm.blocks {config.blocks} exceeds the backbone's {generator.num_blocks()} blocks")
        self.backbone = generator.frozen_copy()
        self.backbone.requires_grad_(False)
        self.head = QueryPoolHead(generator.token_dim(), config.hidden, config.time_dim, config.layers)

    def tokens(self, latents: torch.Tensor, t: torch.Tensor, prompts: Sequence[str] | None) -> torch.Tensor:
        with torch.no_grad():
            cond = self.backbone.encode(list(prompts) if prompts is not None else [""] * latents.shape[0])
        return self.backbone.token_features(latents, t, cond, self.config.blocks)


def build_lrm(config: LatentRewardConfig, generator: Generator | None = None) -> LatentRewardModel:
    return StandaloneLRM(config) if config.kind == "standalone" else BackboneLRM(config, generator)


__all__ = ["LatentRewardConfig", "LatentRewardModel", "StandaloneLRM", "BackboneLRM", "QueryPoolHead",
           "timestep_embedding", "build_lrm"]
