"""Several rewards at once: advantages that keep each reward's signal, frozen calibration, and ``MultiReward``.

Two ways to turn per-sample component rewards ``r_k`` (groups of ``G`` samples per prompt, contiguous) into one
advantage:

- ``sum_then_normalize`` (GRPO on the weighted sum): ``A = groupnorm(Σ_k w_k r_k)``. A reward with a large spread
  drowns the others, and distinct reward combinations with equal sums collapse onto one advantage.
- ``normalize_then_sum`` (GDPO, Liu et al. 2026): ``A = batchnorm(Σ_k w_k groupnorm(r_k))``: each reward is
  standardised within its group first, so every reward moves the policy by its weight, not by its units.

A frozen calibration (``mean`` / ``scale`` per reward, measured once on base-model samples by ``visalign
calibrate``) puts the rewards on one scale *before* weighting, so that the weights of a ``MultiReward`` mean the
same thing all run long (a running normaliser would drift as the policy improves).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import torch

from ..core.config import ConfigError
from ..core.reward import Reward, WeightedReward, build_reward, register_reward, score
from ..core.types import Metadata, Samples


def group_normalize(values: torch.Tensor, group_size: int, eps: float = 1e-6) -> torch.Tensor:
    """``(r - mean_group) / (std_group + eps)`` per group of ``group_size`` contiguous samples (flat in, flat out)."""
    from ..text.advantages import group_rewards, grpo_advantages

    return grpo_advantages(group_rewards(values.detach().float(), group_size), eps).reshape(-1)


def _weighted(components: Mapping[str, torch.Tensor], weights: Mapping[str, float] | None) -> list[tuple[torch.Tensor, float]]:
    if not components:
        raise ValueError("multi-reward advantages need at least one component")
    weights = dict(weights) if weights is not None else {k: 1.0 for k in components}
    if set(weights) != set(components):
        raise ValueError(f"weights {sorted(weights)} do not match components {sorted(components)}")
    sizes = {tuple(v.shape) for v in components.values()}
    if len(sizes) != 1 or len(next(iter(sizes))) != 1:
        raise ValueError(f"components must be 1-d tensors of one length, got shapes {sorted(sizes)}")
    return [(components[k].detach().float(), float(weights[k])) for k in components]


def sum_then_normalize(components: Mapping[str, torch.Tensor], group_size: int,
                       weights: Mapping[str, float] | None = None, eps: float = 1e-6) -> torch.Tensor:
    """GRPO advantage of the weighted sum: ``groupnorm(Σ_k w_k r_k)``."""
    parts = _weighted(components, weights)
    return group_normalize(sum(w * r for r, w in parts), group_size, eps)


def component_weights(reward: "Reward") -> dict[str, float]:
    """``name -> weight`` of a reward's parts, keyed like its ``components()``."""
    return {part.name: weight for part, weight in reward.parts()}


def normalize_then_sum(components: Mapping[str, torch.Tensor], group_size: int,
                       weights: Mapping[str, float] | None = None, eps: float = 1e-6,
                       batch_normalize: bool = True) -> torch.Tensor:
    """GDPO advantage: ``Σ_k w_k groupnorm(r_k)``, then standardised over the whole batch (``batch_normalize``)."""
    parts = _weighted(components, weights)
    total = sum(w * group_normalize(r, group_size, eps) for r, w in parts)
    if batch_normalize:
        total = (total - total.mean()) / (total.std(unbiased=False) + eps)
    return total


def gdpo_advantages(reward: "Reward", group_size: int) -> torch.Tensor:
    """GDPO advantages of ``reward``'s last call: each component normalised within its group, weighted, summed and
    standardised over the batch, so a component on a large scale cannot drown the others."""
    components = reward.components()
    if len(components) < 2:
        raise ConfigError(f"multi_reward: gdpo needs a reward with several components (a weighted list of rewards), "
                          f"got {reward.name!r} with {len(components)}")
    return normalize_then_sum(components, group_size, component_weights(reward))


@dataclass(frozen=True)
class Calibration:
    """``(r - mean) / scale`` for one reward, measured on base-model samples."""

    mean: float
    scale: float

    def __post_init__(self) -> None:
        if not (self.scale > 0 and torch.isfinite(torch.tensor([self.mean, self.scale])).all()):
            raise ValueError(f"calibration needs a finite mean and a scale > 0, got mean={self.mean}, scale={self.scale}")

    def apply(self, values: torch.Tensor) -> torch.Tensor:
        return (values - self.mean) / self.scale


def measure_calibration(components: Mapping[str, torch.Tensor]) -> dict[str, Calibration]:
    """Mean and standard deviation of each component's scores; a constant reward cannot be calibrated."""
    out = {}
    for name, values in components.items():
        values = values.detach().double().flatten()
        if values.numel() < 2:
            raise ValueError(f"calibrating {name!r} needs at least 2 scores, got {values.numel()}")
        std = float(values.std(unbiased=False))
        if std <= 1e-12:
            raise ValueError(f"reward {name!r} is constant ({float(values[0]):g}) on the calibration samples; "
                             "its scale cannot be measured (use more samples or leave it uncalibrated)")
        out[name] = Calibration(float(values.mean()), std)
    return out


def save_calibration(path: str | Path, calibration: Mapping[str, Calibration], info: Mapping[str, Any]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"rewards": {k: {"mean": c.mean, "scale": c.scale} for k, c in calibration.items()}, **dict(info)}
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path


def _read_calibration(path: str | Path) -> tuple[dict[str, Calibration], Calibration | None]:
    """Per-component calibrations and the whole reward's (``None`` in files without one), read and checked once."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"reward calibration file not found: {path}")
    try:
        data = json.loads(path.read_text())
        entries = {str(k): Calibration(float(v["mean"]), float(v["scale"])) for k, v in data["rewards"].items()}
        total = data.get("total")
        return entries, None if total is None else Calibration(float(total["mean"]), float(total["scale"]))
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"{path} is not a reward calibration (expected {{'rewards': {{name: {{mean, scale}}}}}}): {exc}") from exc


def load_calibration(path: str | Path) -> dict[str, Calibration]:
    return _read_calibration(path)[0]


def load_total_calibration(path: str | Path) -> Calibration:
    """The whole reward's mean and scale from a ``visalign calibrate`` file: its ``total`` entry, or the only component
    of a single-reward file."""
    entries, total = _read_calibration(path)
    if total is not None:
        return total
    if len(entries) != 1:
        raise ConfigError(f"{path} calibrates the components {sorted(entries)} but not their total; re-run "
                          "`visalign calibrate` (it records the total reward's scale)")
    return next(iter(entries.values()))


@register_reward("multi")
class MultiReward(WeightedReward):
    """Weighted sum of named rewards, each optionally calibrated: ``Σ_k w_k (r_k - mean_k) / scale_k``.

    ``rewards``: specs as in a run config, each with optional ``weight`` and ``label`` (the component's name;
    default the reward's name; names must be unique). ``calibration``: a JSON file written by ``visalign
    calibrate``; it must cover every component. ``components()`` returns the raw (uncalibrated) scores and
    ``parts()`` the (component, weight) pairs under the same names."""

    def __init__(self, rewards: Sequence[Any], calibration: str | None = None) -> None:
        parts, labels = [], []
        for spec in rewards:
            spec = dict(spec) if isinstance(spec, Mapping) else {"name": spec}
            weight = float(spec.pop("weight", 1.0))
            label = spec.pop("label", None)
            reward = build_reward(spec)
            if label:
                reward.name = str(label)  # the component's name in components() and parts()
            parts.append((reward, weight))
            labels.append(reward.name)
        duplicates = sorted({x for x in labels if labels.count(x) > 1})
        if duplicates:
            raise ValueError(f"multi reward: component names {duplicates} repeat; give each a distinct 'label'")
        super().__init__(parts)
        self.name = "multi(" + ",".join(labels) + ")"
        self.calibration = load_calibration(calibration) if calibration else None
        if self.calibration is not None:
            missing = sorted(set(labels) - set(self.calibration))
            if missing:
                raise ValueError(f"calibration {calibration} has no entry for {missing} (it has {sorted(self.calibration)})")

    def __call__(self, samples: Samples, prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        total = None
        self.last_components = {}
        for reward, weight in self.parts():
            value = score(reward, samples, prompts, metadata)
            self.last_components[reward.name] = value.detach()
            if self.calibration is not None:
                value = self.calibration[reward.name].apply(value)
            total = weight * value if total is None else total + weight * value
        return total
