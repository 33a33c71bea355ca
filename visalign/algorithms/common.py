"""Helpers shared by the objectives: grouped sampling, group-wise statistics, clear capability errors."""
from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ..core.config import ConfigError
from ..core.flow import FlowModel
from ..core.reward import Reward
from ..core.types import PromptBatch, Samples
from ..features import FeatureSpace, build_features


def sample_group(model: nn.Module, batch: PromptBatch, per_prompt: int, generator: torch.Generator, grad: bool = False):
    """``per_prompt`` samples for each prompt of ``batch`` (prompt g owns rows ``g*per_prompt:(g+1)*per_prompt``).

    Returns (samples, expanded batch, noise)."""
    expanded = batch.repeat_interleave(per_prompt)
    noise = model.make_noise(len(expanded), generator)
    with torch.set_grad_enabled(grad):
        samples = model(noise, expanded.prompts)
    return samples, expanded, noise


def group_slices(num_groups: int, size: int) -> list[slice]:
    return [slice(g * size, (g + 1) * size) for g in range(num_groups)]


def group_advantages(rewards: torch.Tensor, group_size: int, eps: float = 1e-4, scale: bool = True) -> torch.Tensor:
    """A_i = (r_i − mean_g) / (std_g + eps) within each consecutive group of ``group_size`` (GRPO)."""
    r = rewards.float().reshape(-1, group_size)
    adv = r - r.mean(1, keepdim=True)
    if scale:
        adv = adv / (r.std(1, keepdim=True, unbiased=False) + eps)
    return adv.reshape(-1)


MULTI_REWARD_MODES = ("sum", "gdpo")


def reward_advantages(reward: Reward, rewards: torch.Tensor, group_size: int, multi_reward: str = "sum") -> torch.Tensor:
    """Group advantages of one rollout's rewards: GRPO on the weighted sum (``sum``) or GDPO (``gdpo``, see
    :func:`visalign.rewards.multi.gdpo_advantages`)."""
    if multi_reward == "sum":
        return group_advantages(rewards, group_size)
    from ..rewards.multi import gdpo_advantages

    return gdpo_advantages(reward, group_size).to(rewards.device)


def as_tensor(samples: Samples) -> torch.Tensor:
    if not isinstance(samples, torch.Tensor):
        raise TypeError(f"this objective needs tensor samples, got {type(samples).__name__}")
    return samples


def require_flow_model(policy: Any, algorithm: str) -> FlowModel:
    """The policy as a :class:`FlowModel`, or a ConfigError naming what the algorithm needs."""
    if not isinstance(policy, FlowModel):
        raise ConfigError(f"{algorithm} needs a flow model (velocity field + SDE sampler, the FlowModel protocol); got "
                          f"{type(policy).__name__} (use rwtd, festdpo or rwr for one-step generators)")
    return policy


def require_reference(ctx: Any, algorithm: str) -> nn.Module:
    if ctx.reference is None:
        raise ConfigError(f"{algorithm} needs a frozen reference generator (the Trainer builds one from the policy)")
    return ctx.reference


class FeatureCache:
    """Builds the configured feature space once, on the context's device."""

    def __init__(self, spec: Any) -> None:
        self.spec = spec
        self.space: FeatureSpace | None = None

    def get(self, ctx: Any) -> FeatureSpace:
        if self.space is None:
            self.space = build_features(self.spec, reward=ctx.reward).to(ctx.device)
        return self.space
