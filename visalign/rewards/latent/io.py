"""Files: preference pairs of latents (safetensors) and latent reward model checkpoints (JSON + safetensors head)."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from ...core.config import from_dict
from ...core.generator import Generator
from .models import LatentRewardConfig, LatentRewardModel, build_lrm

LRM_CONFIG_FILE = "lrm.json"
LRM_WEIGHTS_FILE = "head.safetensors"


@dataclass
class LatentPairs:
    """``winners[i]`` is preferred to ``losers[i]`` (latents of one shape) under ``prompts[i]``; ``judge`` names who
    labelled them."""

    winners: torch.Tensor
    losers: torch.Tensor
    prompts: list[str]
    judge: str = ""

    def __post_init__(self) -> None:
        if self.winners.shape != self.losers.shape or self.winners.dim() < 2:
            raise ValueError(f"preference pairs need winners and losers of one shape [N, ...], got "
                             f"{tuple(self.winners.shape)} and {tuple(self.losers.shape)}")
        if len(self.prompts) != self.winners.shape[0]:
            raise ValueError(f"{self.winners.shape[0]} pairs but {len(self.prompts)} prompts")
        for name, value in (("winners", self.winners), ("losers", self.losers)):
            if not torch.isfinite(value).all():
                raise ValueError(f"preference pairs: {name} contain NaN or inf")

    def __len__(self) -> int:
        return self.winners.shape[0]

    @property
    def latent_shape(self) -> list[int]:
        return list(self.winners.shape[1:])

    def pool(self) -> torch.Tensor:
        """Every real latent (winners then losers): the LRM's training support."""
        return torch.cat([self.winners, self.losers])

    def split(self, holdout: int) -> tuple["LatentPairs", "LatentPairs"]:
        """The first ``len - holdout`` pairs and the last ``holdout``."""
        n = len(self) - holdout
        if not 0 < n < len(self):
            raise ValueError(f"cannot hold out {holdout} of {len(self)} pairs")
        return (LatentPairs(self.winners[:n], self.losers[:n], self.prompts[:n], self.judge),
                LatentPairs(self.winners[n:], self.losers[n:], self.prompts[n:], self.judge))


def save_pairs(pairs: LatentPairs, path: str | Path) -> Path:
    from safetensors.torch import save_file

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file({"winners": pairs.winners.contiguous(), "losers": pairs.losers.contiguous()}, str(path),
              metadata={"prompts": json.dumps(pairs.prompts), "judge": pairs.judge})
    return path


def load_pairs(path: str | Path) -> LatentPairs:
    from safetensors import SafetensorError, safe_open

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"preference pairs file not found: {path}")
    try:
        with safe_open(str(path), framework="pt") as f:
            keys, meta = set(f.keys()), f.metadata() or {}
            missing = {"winners", "losers"} - keys
            if missing:
                raise ValueError(f"preference pairs file {path} lacks tensors {sorted(missing)}")
            winners, losers = f.get_tensor("winners"), f.get_tensor("losers")
    except (OSError, SafetensorError) as exc:
        raise ValueError(f"preference pairs file {path} is not a readable safetensors file: {exc}") from exc
    prompts = json.loads(meta["prompts"]) if "prompts" in meta else [""] * winners.shape[0]
    return LatentPairs(winners, losers, prompts, meta.get("judge", ""))


def save_lrm(model: LatentRewardModel, path: str | Path, extra: dict | None = None) -> Path:
    """``lrm.json`` (config + ``extra`` such as held-out accuracy) and the trainable head as safetensors."""
    from safetensors.torch import save_model

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    (path / LRM_CONFIG_FILE).write_text(json.dumps({"config": asdict(model.config), **(extra or {})}, indent=2))
    save_model(model.head, str(path / LRM_WEIGHTS_FILE))
    return path


def load_lrm(path: str | Path, generator: Generator | None = None) -> LatentRewardModel:
    """Rebuild a latent reward model from :func:`save_lrm`'s folder (a backbone model reloads its generator
    checkpoint unless ``generator`` is given)."""
    from safetensors.torch import load_model

    path = Path(path)
    if not (path / LRM_CONFIG_FILE).is_file():
        raise FileNotFoundError(f"no latent reward model at {path} (missing {LRM_CONFIG_FILE})")
    if not (path / LRM_WEIGHTS_FILE).is_file():
        raise FileNotFoundError(f"latent reward model {path} has no {LRM_WEIGHTS_FILE}")
    meta = json.loads((path / LRM_CONFIG_FILE).read_text())
    model = build_lrm(from_dict(LatentRewardConfig, meta["config"], prefix="lrm"), generator)
    load_model(model.head, str(path / LRM_WEIGHTS_FILE))
    return model


__all__ = ["LatentPairs", "save_pairs", "load_pairs", "save_lrm", "load_lrm"]
