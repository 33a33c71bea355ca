"""PoEM for flow-matching generators: velocities of K tuned copies of one architecture mixed around the reference,
``v̂_t = v_ref + λ Σ_k ĉ_k(t) (v_k − v_ref)`` (score addition), with ĉ constant or given per noise level.

:class:`ComposedFlowGenerator` is a :class:`FlowModel` (Euler ODE, Flow-GRPO SDE, rewards, benchmarks,
``visalign sample`` all work on it) registered as ``poem_flow``: it saves as a folder holding ``generator.json`` and
one generator checkpoint per expert, and loads back with ``load_generator``. The experts are full generator
checkpoints; composing LoRA adapters of one base (one forward per adapter on shared weights) is not built yet.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Sequence

import torch
from torch import nn

from ..core.config import ConfigError, check, option
from ..core.generator import CONFIG_FILE, Generator, load_generator, register_generator
from ..core.flow import FlowModel, SDETrajectory, gaussian_log_prob, sde_step_stats


@dataclass
class ComposedFlowConfig:
    """``reference`` and ``bases``: generator checkpoint folders (relative paths resolve against the composed
    checkpoint folder when loaded from one). ``coef``: ``[S][K]`` coefficients at the noise levels ``times``
    (``S = 1`` and no ``times`` for constant ĉ; otherwise piecewise-linear in t, constant beyond the ends).
    ``strength``: the decoding strength λ. ``num_steps`` / ``shift``: the sampler's, by default the reference's."""

    reference: str = option("", "checkpoint folder of the reference flow generator")
    bases: list[str] = option(help="checkpoint folders of the tuned basis generators (one architecture)",
                              factory=list)
    coef: list[list[float]] = option(help="[S][K] coefficients ĉ, one row per noise level in times (one row: constant)",
                                     factory=list)
    times: list[float] | None = option(None, "increasing noise levels in [0, 1] of the coef rows; null with one row")
    strength: float = option(1.0, "decoding strength λ multiplying every coefficient")
    num_steps: int | None = option(None, "sampling steps; null: the reference's")
    shift: float | None = option(None, "timestep shift of the schedule; null: the reference's")

    def __post_init__(self) -> None:
        check(bool(self.coef) and all(len(row) == len(self.coef[0]) for row in self.coef),
              f"poem_flow.coef must be a non-empty [S][K] table with rows of one length, got {self.coef}")
        check(all(all(torch.isfinite(torch.tensor(row)).tolist()) for row in self.coef), "poem_flow.coef has non-finite values")
        if self.times is None:
            check(len(self.coef) == 1, f"poem_flow.coef has {len(self.coef)} rows, so poem_flow.times needs one noise level per row")
        else:
            check(len(self.times) == len(self.coef), f"poem_flow.times has {len(self.times)} levels but coef has {len(self.coef)} rows")
            check(all(0 <= t <= 1 for t in self.times), f"poem_flow.times must lie in [0, 1], got {self.times}")
            check(all(a < b for a, b in zip(self.times, self.times[1:])), f"poem_flow.times must increase, got {self.times}")
        check(not self.bases or len(self.bases) == len(self.coef[0]),
              f"poem_flow: {len(self.bases)} bases but {len(self.coef[0])} coefficients per row")
        check(self.num_steps is None or self.num_steps >= 1, "poem_flow.num_steps must be >= 1")
        check(self.shift is None or self.shift > 0, "poem_flow.shift must be > 0")

    @property
    def num_bases(self) -> int:
        return len(self.coef[0])


@dataclass
class ExpertConds:
    """Encoded prompts for every expert (reference first): tuned copies may have tuned their text encoders too."""

    conds: list[Any]


def _same_architecture(reference: Generator, other: Generator, k: int) -> None:
    if type(other) is not type(reference):
        raise ValueError(f"basis {k} is a {type(other).__name__}, the reference a {type(reference).__name__}: "
                         "PoEM composes tuned copies of one architecture")
    ref_shapes = {n: p.shape for n, p in reference.state_dict().items()}
    shapes = {n: p.shape for n, p in other.state_dict().items()}
    if ref_shapes != shapes:
        diff = sorted(set(ref_shapes.items()) ^ set(shapes.items()), key=str)[:3]
        raise ValueError(f"basis {k} differs from the reference in its parameters (e.g. {diff}); PoEM needs one architecture")


@register_generator("poem_flow")
class ComposedFlowGenerator(FlowModel):
    """``v̂(x, t) = (1 − λ Σ_k ĉ_k(t)) v_ref(x, t) + λ Σ_k ĉ_k(t) v_k(x, t)`` over flow generators of one architecture
    (written so that ĉ = 0 gives the reference and ĉ = e_k basis k exactly). Experts whose coefficient is zero at
    every noise level of a batch are not run."""

    kind: ClassVar[str] = "few_step"
    config_class = ComposedFlowConfig

    def __init__(self, reference: FlowModel, bases: Sequence[FlowModel], config: ComposedFlowConfig) -> None:
        if not isinstance(reference, FlowModel) or not all(isinstance(b, FlowModel) for b in bases):
            raise TypeError("ComposedFlowGenerator composes flow-matching generators (velocity fields)")
        if not bases:
            raise ValueError("ComposedFlowGenerator needs at least one basis generator")
        if config.num_bases != len(bases):
            raise ValueError(f"{len(bases)} bases but {config.num_bases} coefficients per row")
        for k, b in enumerate(bases):
            _same_architecture(reference, b, k)
        if config.num_steps is None:
            config.num_steps = reference.num_steps
        if config.shift is None:
            config.shift = reference.shift
        super().__init__(config)
        self.reference = reference
        self.bases = nn.ModuleList(bases)
        self.register_buffer("coef_table", torch.tensor(config.coef, dtype=torch.float32), persistent=False)
        times = torch.tensor(config.times if config.times is not None else [0.0], dtype=torch.float32)
        self.register_buffer("coef_times", times, persistent=False)

    @classmethod
    def compose(
        cls,
        reference: FlowModel,
        bases: Sequence[FlowModel],
        coef: torch.Tensor | Sequence[float] | Sequence[Sequence[float]],
        times: Sequence[float] | None = None,
        strength: float = 1.0,
    ) -> "ComposedFlowGenerator":
        """Compose in memory: ``coef`` ``[K]`` (constant) or ``[S, K]`` at noise levels ``times``."""
        c = torch.as_tensor(coef, dtype=torch.float32)
        c = c[None] if c.dim() == 1 else c
        config = ComposedFlowConfig(coef=c.tolist(), times=list(times) if times is not None else None, strength=strength)
        return cls(reference, list(bases), config)

    # ------------------------------------------------------------------------------------------- generator API
    @property
    def noise_shape(self) -> tuple[int, ...]:
        return self.reference.noise_shape

    def experts(self) -> list[FlowModel]:
        return [self.reference, *self.bases]

    def encode(self, prompts: Sequence[str] | None) -> ExpertConds | None:
        return None if prompts is None else ExpertConds([m.encode(prompts) for m in self.experts()])

    def coefficients(self, t: torch.Tensor) -> torch.Tensor:
        """ĉ(t) ``[B, K]`` at noise levels ``t`` ``[B]`` (piecewise-linear between the knots)."""
        table, knots = self.coef_table.to(t.device), self.coef_times.to(t.device)
        if table.shape[0] == 1:
            return table.expand(t.shape[0], -1)
        tt = t.float().clamp(float(knots[0]), float(knots[-1]))
        hi = torch.searchsorted(knots, tt).clamp(1, len(knots) - 1)
        lo = hi - 1
        w = ((tt - knots[lo]) / (knots[hi] - knots[lo]))[:, None]
        return (1 - w) * table[lo] + w * table[hi]

    def velocity(self, x: torch.Tensor, t: torch.Tensor, cond: Any = None) -> torch.Tensor:
        conds = cond.conds if isinstance(cond, ExpertConds) else [cond] * (len(self.bases) + 1)
        weights = self.config.strength * self.coefficients(t).to(x.dtype)
        shape = (-1, *([1] * (x.dim() - 1)))
        v = (1 - weights.sum(1)).reshape(shape) * self.reference.velocity(x, t, conds[0])
        for k, basis in enumerate(self.bases):
            if bool((weights[:, k] != 0).any()):
                v = v + weights[:, k].reshape(shape) * basis.velocity(x, t, conds[k + 1])
        return v

    def decode(self, latents: torch.Tensor) -> Any:
        return self.reference.decode(latents)

    # --------------------------------------------------------------------------------------------- checkpoints
    def config_dict(self) -> dict[str, Any]:
        return {"reference": "reference", "bases": [f"basis_{k:03d}" for k in range(len(self.bases))],
                "coef": self.coef_table.tolist(), "times": self.config.times, "strength": self.config.strength,
                "num_steps": self.config.num_steps, "shift": self.config.shift}

    def save_pretrained(self, path: str | Path) -> Path:
        """``generator.json`` (type ``poem_flow`` + coefficients) and one generator checkpoint folder per expert."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        meta = self.config_dict()
        self.reference.save_pretrained(path / meta["reference"])
        for name, basis in zip(meta["bases"], self.bases):
            basis.save_pretrained(path / name)
        (path / CONFIG_FILE).write_text(json.dumps({"type": self.name, "config": meta}, indent=2))
        return path

    @classmethod
    def from_config(cls, config: Any = None, **overrides: Any) -> "ComposedFlowGenerator":
        """Build from ``{reference, bases, coef, ...}`` with checkpoint folders (``generator: {name: poem_flow, ...}``)."""
        from ..core.config import from_dict

        if config is None or isinstance(config, dict):
            config = from_dict(ComposedFlowConfig, {**(config or {}), **overrides}, prefix="generator(poem_flow)")
        return cls._from_folders(config, Path("."), "cpu")

    @classmethod
    def load_checkpoint(cls, path: Path, meta: dict[str, Any], map_location: Any = "cpu") -> "ComposedFlowGenerator":
        """Used by ``load_generator``: expert folders are resolved relative to ``path``."""
        from ..core.config import from_dict

        config = from_dict(ComposedFlowConfig, meta.get("config") or {}, prefix=f"{path}/{CONFIG_FILE}")
        return cls._from_folders(config, Path(path), map_location)

    @classmethod
    def _from_folders(cls, config: ComposedFlowConfig, root: Path, map_location: Any) -> "ComposedFlowGenerator":
        if not config.reference or not config.bases:
            raise ConfigError("poem_flow needs 'reference' and 'bases' checkpoint folders")
        folders = [root / config.reference, *[root / b for b in config.bases]]
        models = [load_generator(f, map_location) for f in folders]
        return cls(models[0], models[1:], config)


@torch.no_grad()
def path_log_ratios(
    reference: FlowModel, bases: Sequence[FlowModel], trajectory: SDETrajectory,
    prompts: Sequence[str] | None = None,
) -> torch.Tensor:
    """Per-step log-ratios of the recorded SDE transitions, ``log N(x_{s+1}; μ_k, σ_s) − log N(x_{s+1}; μ_ref, σ_s)``
    summed over dimensions, ``[N, K, S]`` (0 at ODE steps outside an SDE window); their sum over steps is the path-space ``log π_k − log π_ref`` that
    KL-regularised RL on the SDE sampler tilts by ``r/β``."""
    sigmas, cap = trajectory.sigmas, float(trajectory.sigmas[1])
    models = [reference, *bases]
    conds = [m.encode(prompts) if prompts is not None else None for m in models]
    out = torch.zeros(trajectory.latents.shape[0], len(bases), trajectory.num_steps)
    for s in range(trajectory.num_steps):
        if s not in trajectory.sde_steps:  # an ODE step of an SDE window: deterministic, no log-ratio
            continue
        x, x_next = trajectory.latents[:, s], trajectory.latents[:, s + 1]
        sigma, sigma_next = float(sigmas[s]), float(sigmas[s + 1])
        t = torch.full((x.shape[0],), sigma, device=x.device, dtype=x.dtype)
        logps = []
        for m, c in zip(models, conds):
            mean, std = sde_step_stats(x, m.velocity(x, t, c), sigma, sigma_next, trajectory.noise_level, cap)
            logps.append(gaussian_log_prob(x_next, mean, std, reduce="sum"))
        out[:, :, s] = torch.stack([lp - logps[0] for lp in logps[1:]], dim=1).cpu()
    return out


__all__ = ["ComposedFlowConfig", "ComposedFlowGenerator", "ExpertConds", "path_log_ratios"]
