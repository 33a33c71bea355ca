"""The ``vvr`` reward: verifiable visual rewards from a classical parser (no network, no GPU)."""
from __future__ import annotations

from typing import Any, Sequence

import torch

from ..core.reward import Reward, register_reward, require_modality
from ..core.types import Metadata, Samples


@register_reward("vvr")
class VVRReward(Reward):
    """Scores images ``B x 3 x H x W`` in [-1, 1] against ``metadata[i]["task"]``.

    Default: soft gate x weighted partial credit (near misses earn up to 0.5 per constraint). ``strict=True``:
    the all-satisfied bit. ``weights`` maps constraint types to weights (default 1). ``last_details`` keeps the
    per-image pass/fail lists and fractions of the latest call. ``features`` (the ``reward`` feature space) is the
    differentiable colour layout the verifier reads (:func:`visalign.vvr.features.colour_layout`, ``layout_grid``).
    """

    differentiable = False

    def __init__(self, strict: bool = False, weights: dict[str, float] | None = None, layout_grid: int = 4) -> None:
        self.strict = strict
        self.weights = dict(weights or {})
        self.layout_grid = layout_grid
        self.last_details: list[dict[str, Any]] = []
        self._cache: dict[str, Any] = {}

    def _task(self, meta: dict[str, Any], i: int) -> Any:
        from ..vvr.task import Task

        if not isinstance(meta, dict) or "task" not in meta:
            tid = meta.get("task_id", "?") if isinstance(meta, dict) else "?"
            raise ValueError(f"vvr reward: metadata[{i}] (task_id {tid!r}) has no 'task'; use a VVR prompt source")
        raw = meta["task"]
        key = raw.get("id") if isinstance(raw, dict) else None
        if key is not None and key in self._cache:
            return self._cache[key]
        task = Task.from_dict(raw)
        if key is not None:
            if len(self._cache) > 4096:
                self._cache.clear()
            self._cache[key] = task
        return task

    def features(self, samples: Samples) -> torch.Tensor:
        """``B × (6·grid²)``: where each palette colour is, per cell of a ``layout_grid`` grid (differentiable)."""
        from ..vvr.features import colour_layout

        return colour_layout(samples, self.layout_grid).flatten(1)

    def __call__(self, samples: Samples, prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        from ..vvr.verifier import verify

        require_modality(samples, ("image",), "vvr")
        if samples.shape[1] != 3:
            shape = tuple(samples.shape) if isinstance(samples, torch.Tensor) else type(samples).__name__
            raise ValueError(f"vvr reward needs images B x 3 x H x W in [-1, 1], got {shape}")
        if len(metadata) != samples.shape[0]:
            raise ValueError(f"vvr reward: {samples.shape[0]} images but {len(metadata)} metadata entries")
        images = ((samples.detach().float().clamp(-1, 1) + 1) * 127.5).round().to(torch.uint8)
        images = images.permute(0, 2, 3, 1).cpu().numpy()
        out, self.last_details = [], []
        for i, (img, meta) in enumerate(zip(images, metadata)):
            task = self._task(meta, i)
            res = verify(img, task)
            w = [self.weights.get(c.type, 1.0) for c in task.constraints]
            out.append(res.reward(w, strict=self.strict))
            self.last_details.append({"task_id": task.id, "passed": res.passed, "fraction": res.fraction,
                                      "all_satisfied": res.all_satisfied, "gate": res.gate})
        return torch.tensor(out, dtype=torch.float32, device=samples.device)
