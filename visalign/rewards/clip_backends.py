"""Two ways to hold a CLIP model from local files, behind one small interface used by the CLIP-family rewards.

- ``HFClip``: a 🤗 transformers ``CLIPModel`` folder (``config.json`` + safetensors, plus tokenizer files), the
  format PickScore and ``openai/clip-vit-large-patch14`` are published in.
- ``OpenClip``: an open_clip architecture name (or model JSON) and a checkpoint file, the format of HPS-v2.1
  (needs the ``clip`` extra).

Both expose ``image_size``, ``encode_image(pixels)`` (differentiable), ``encode_text(prompts)`` (no grad, cached
per prompt), ``logit_scale()`` and ``to(device)``.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Sequence

import torch

TEXT_CACHE_SIZE = 4096


class ClipBackend(ABC):
    model: torch.nn.Module
    image_size: int

    def __init__(self) -> None:
        self._text_cache: dict[str, torch.Tensor] = {}

    @abstractmethod
    def encode_image(self, pixels: torch.Tensor) -> torch.Tensor: ...

    @abstractmethod
    def _encode_text(self, prompts: list[str]) -> torch.Tensor: ...

    @abstractmethod
    def logit_scale(self) -> float: ...

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def to(self, device: str | torch.device) -> "ClipBackend":
        self.model.to(device)
        self._text_cache.clear()
        return self

    def encode_text(self, prompts: Sequence[str]) -> torch.Tensor:
        """Text embeddings ``[N, D]``; each distinct prompt is encoded once and cached (the prompts are fixed)."""
        todo = sorted({p for p in prompts if p not in self._text_cache})
        if todo:
            with torch.no_grad():
                embeds = self._encode_text(todo)
            if len(self._text_cache) + len(todo) > TEXT_CACHE_SIZE:
                self._text_cache.clear()
            self._text_cache.update(zip(todo, embeds))
        return torch.stack([self._text_cache[p] for p in prompts])


class HFClip(ClipBackend):
    """A transformers ``CLIPModel`` folder; the tokenizer comes from ``tokenizer_path`` (default: the same folder)."""

    def __init__(self, path: str | Path, tokenizer_path: str | Path | None = None, max_length: int = 77) -> None:
        super().__init__()
        from transformers import AutoTokenizer, CLIPModel

        for folder in (path, tokenizer_path or path):
            if not Path(folder).is_dir():
                raise FileNotFoundError(f"CLIP model folder not found: {folder}")
        self.model = CLIPModel.from_pretrained(str(path), local_files_only=True).eval().requires_grad_(False)
        self.tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_path or path), local_files_only=True)
        self.image_size = int(self.model.config.vision_config.image_size)
        self.max_length = max_length

    def encode_image(self, pixels: torch.Tensor) -> torch.Tensor:
        pooled = self.model.vision_model(pixel_values=pixels.to(self.model.dtype)).pooler_output
        return self.model.visual_projection(pooled)

    def _encode_text(self, prompts: list[str]) -> torch.Tensor:
        tokens = self.tokenizer(prompts, padding=True, truncation=True, max_length=self.max_length,
                                return_tensors="pt").to(self.device)
        pooled = self.model.text_model(input_ids=tokens["input_ids"], attention_mask=tokens["attention_mask"]).pooler_output
        return self.model.text_projection(pooled)

    def logit_scale(self) -> float:
        return float(self.model.logit_scale.exp())


class OpenClip(ClipBackend):
    """An open_clip architecture with weights from a local file (a top-level ``state_dict`` key is opened)."""

    def __init__(self, path: str | Path, model: str = "ViT-H-14", model_config: str | Path | None = None,
                 **model_kwargs: Any) -> None:
        super().__init__()
        from .clip import load_open_clip
        from .weights import load_state_dict, load_strict

        state = load_state_dict(path)
        clip, self.tokenizer = load_open_clip(model, None, model_config, allow_random=True, **model_kwargs)
        if state and all(k.startswith("module.") for k in state):
            state = {k[len("module."):]: v for k, v in state.items()}
        load_strict(clip, state, str(path))
        self.model = clip.eval().requires_grad_(False)
        size = clip.visual.image_size
        self.image_size = int(size[0] if isinstance(size, (tuple, list)) else size)

    def encode_image(self, pixels: torch.Tensor) -> torch.Tensor:
        return self.model.encode_image(pixels)

    def _encode_text(self, prompts: list[str]) -> torch.Tensor:
        return self.model.encode_text(self.tokenizer(prompts).to(self.device))

    def logit_scale(self) -> float:
        return float(self.model.logit_scale.exp())
