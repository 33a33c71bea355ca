"""The ``vvr`` reward: verifiable visual rewards from a classical parser (no network, no GPU)."""
from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, Callable, Sequence

import torch

from ..core.reward import Reward, register_reward, require_modality
from ..core.types import Metadata, Samples

if TYPE_CHECKING:
    from ..vvr.spec_task import SpecTask
    from ..vvr.task import Task


def _channels_last_uint8(samples: Samples, metadata: Metadata, name: str, layout: str) -> Any:
    """Check ``samples`` (``layout`` in [-1, 1], one metadata entry each) and return uint8 arrays, channels last."""
    dims = layout.count(" x ") + 1
    if not isinstance(samples, torch.Tensor) or samples.dim() != dims or samples.shape[1] != 3:
        shape = tuple(samples.shape) if isinstance(samples, torch.Tensor) else type(samples).__name__
        raise ValueError(f"{name} reward needs {layout} in [-1, 1], got {shape}")
    if len(metadata) != samples.shape[0]:
        raise ValueError(f"{name} reward: {samples.shape[0]} samples but {len(metadata)} metadata entries")
    x = ((samples.detach().float().clamp(-1, 1) + 1) * 127.5).round().to(torch.uint8)
    return x.permute(0, *range(2, dims), 1).cpu().numpy()


@register_reward("vvr")
class VVRReward(Reward):
    """Scores images ``B x 3 x H x W`` in [-1, 1] against ``metadata[i]["task"]``: a v2 row (the paper's format,
    ``visual_spec_json``) or a v1 task.

    v2 (closed world): the paper's RL reward, dense partial credit x soft gates (count, shape, relations,
    1 / (1 + 0.2 extras), forbidden colours) clipped to [0, 1]; ``tolerances`` "default" or "paper".
    v1: soft gate x weighted partial credit (near misses earn up to 0.5 per constraint; ``weights`` maps constraint
    types to weights). ``strict=True``: the all-satisfied bit for both. ``last_details`` keeps the per-image
    outcome of the latest call. ``features`` (the ``reward`` feature space) is the differentiable colour layout
    the v1 verifier reads (:func:`visalign.vvr.features.colour_layout`, ``layout_grid``).
    """

    differentiable = False

    def __init__(self, strict: bool = False, weights: dict[str, float] | None = None, layout_grid: int = 4,
                 tolerances: str = "default") -> None:
        from ..vvr.tolerances import MODES

        if tolerances not in MODES:
            raise ValueError(f"vvr reward: tolerances must be one of {MODES}, got {tolerances!r}")
        self.tolerances = tolerances
        self.strict = strict
        self.weights = dict(weights or {})
        self.layout_grid = layout_grid
        self.last_details: list[dict[str, Any]] = []
        self._cache: dict[str, Callable[[Any], tuple[float, dict[str, Any]]]] = {}

    def _scorer(self, meta: dict[str, Any], i: int) -> Callable[[Any], tuple[float, dict[str, Any]]]:
        """The task of ``metadata[i]``, parsed once per id, as a function image -> (reward, details)."""
        from ..vvr.spec_task import SpecTask, is_v2_row
        from ..vvr.task import Task

        if not isinstance(meta, dict) or "task" not in meta:
            tid = meta.get("task_id", "?") if isinstance(meta, dict) else "?"
            raise ValueError(f"vvr reward: metadata[{i}] (task_id {tid!r}) has no 'task'; use a VVR prompt source")
        raw = meta["task"]
        key = raw.get("id") if isinstance(raw, dict) else None
        if key is not None and key in self._cache:
            return self._cache[key]
        if is_v2_row(raw):
            scorer = partial(self._score_v2, SpecTask.from_row(raw, f"metadata[{i}]"))
        else:
            scorer = partial(self._score_v1, Task.from_dict(raw))
        if key is not None:
            if len(self._cache) > 4096:
                self._cache.clear()
            self._cache[key] = scorer
        return scorer

    def _score_v2(self, task: SpecTask, image: Any) -> tuple[float, dict[str, Any]]:
        from ..vvr.spec_verifier import verify_spec

        r = verify_spec(image, task.spec, self.tolerances)
        return float(r.strict) if self.strict else r.reward, {
            "task_id": task.id, "all_satisfied": r.strict, "dense": r.dense, "reward": r.reward, "extras": r.extras,
            "criteria": r.criteria()}

    def _score_v1(self, task: Task, image: Any) -> tuple[float, dict[str, Any]]:
        from ..vvr.verifier import verify

        r = verify(image, task)
        weights = [self.weights.get(c.type, 1.0) for c in task.constraints]
        return r.reward(weights, strict=self.strict), {
            "task_id": task.id, "passed": r.passed, "fraction": r.fraction, "all_satisfied": r.all_satisfied,
            "gate": r.gate}

    def features(self, samples: Samples) -> torch.Tensor:
        """``B × (6·grid²)``: where each palette colour is, per cell of a ``layout_grid`` grid (differentiable)."""
        from ..vvr.features import colour_layout

        return colour_layout(samples, self.layout_grid).flatten(1)

    def __call__(self, samples: Samples, prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        require_modality(samples, ("image",), "vvr")
        images = _channels_last_uint8(samples, metadata, "vvr", "images B x 3 x H x W")
        out, self.last_details = [], []
        for i, (img, meta) in enumerate(zip(images, metadata)):
            reward, details = self._scorer(meta, i)(img)
            out.append(reward)
            self.last_details.append(details)
        return torch.tensor(out, dtype=torch.float32, device=samples.device)


def vvr_scores(samples: Samples, prompts: Sequence[str], metadata: Metadata,
               tolerances: str = "default") -> dict[str, torch.Tensor]:
    """Per image, the all-satisfied bit (``strict``, what ``VVRReward(strict=True)`` returns) and the RL reward
    (``soft``) from one verification each, for evaluations that report both."""
    reward = VVRReward(tolerances=tolerances)
    soft = reward(samples, prompts, metadata)
    strict = torch.tensor([float(d["all_satisfied"]) for d in reward.last_details], device=soft.device)
    return {"strict": strict, "soft": soft}


@register_reward("vvr_video")
class VVRVideoReward(Reward):
    """Scores videos ``B x C x T x H x W`` in [-1, 1] against ``metadata[i]["task"]``, a video task row
    (``visual_spec_json`` with ``modality: video`` and temporal predicates; see :mod:`visalign.vvr.video`).

    Default: mean temporal-predicate credit x mean per-frame closed-world score, in [0, 1]. ``strict=True``: every
    temporal predicate holds and at least 75% of frames are closed-world correct. ``last_details`` keeps the
    per-video outcome of the latest call."""

    differentiable = False

    def __init__(self, strict: bool = False) -> None:
        self.strict = strict
        self.last_details: list[dict[str, Any]] = []

    def __call__(self, samples: Samples, prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        from ..vvr.video import verify_video
        from ..vvr.video_tasks import VideoTask

        require_modality(samples, ("video",), "vvr_video")
        videos = _channels_last_uint8(samples, metadata, "vvr_video", "videos B x 3 x T x H x W")  # B T H W C
        out, self.last_details = [], []
        for i, (vid, meta) in enumerate(zip(videos, metadata)):
            if not isinstance(meta, dict) or "task" not in meta:
                raise ValueError(f"vvr_video reward: metadata[{i}] has no 'task' (a video task row)")
            task = VideoTask.from_row(meta["task"], f"metadata[{i}]")
            res = verify_video(vid, task.spec)
            out.append(float(res.strict) if self.strict else res.reward)
            self.last_details.append({"task_id": task.id, "all_satisfied": res.strict, **res.to_dict()})
        return torch.tensor(out, dtype=torch.float32, device=samples.device)
