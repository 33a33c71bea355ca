"""The ``ocr`` reward: how exactly an image writes the prompt's quoted text, read by an offline OCR model.

Reading uses ``rapidocr-onnxruntime`` (the optional extra ``ocr``), whose PP-OCRv4 detection / recognition / angle
ONNX weights ship inside the PyPI wheel, so nothing is downloaded. The score is the edit-distance accuracy used by
Flow-GRPO's OCR task: both texts lower-cased with spaces removed, ``1 - min(d, len(target)) / len(target)`` with
``d`` the Levenshtein distance between everything read (joined in reading order) and the target.
"""
from __future__ import annotations

import re
from typing import Any, Sequence

import numpy as np
import torch

from ..core.reward import register_reward
from ..core.types import Metadata, Samples
from .frames import FrameReward

QUOTED = re.compile(r'"([^"]+)"|“([^”]+)”|«([^»]+)»')


def quoted_text(prompt: str) -> str | None:
    """The text between double (straight, curly or guillemet) quotes; several quoted parts are joined by spaces."""
    parts = ["".join(groups) for groups in QUOTED.findall(prompt)]
    return " ".join(parts) if parts else None


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (insertions, deletions, substitutions each cost 1)."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def text_accuracy(read: str, target: str, case_sensitive: bool = False) -> float:
    """``1 - min(d, len(target)) / len(target)`` on texts without spaces (lower-cased unless ``case_sensitive``)."""
    norm = (lambda s: s.replace(" ", "")) if case_sensitive else (lambda s: s.replace(" ", "").lower())
    read, target = norm(read), norm(target)
    if not target:
        raise ValueError("the target text is empty")
    return 1.0 - min(edit_distance(read, target), len(target)) / len(target)


def load_rapidocr(threads: int | None = None) -> Any:
    try:
        from rapidocr_onnxruntime import RapidOCR
    except ImportError as exc:
        raise ImportError("the 'ocr' reward needs rapidocr-onnxruntime: pip install 'visalign[ocr]' "
                          f"({type(exc).__name__}: {exc})") from exc
    kwargs = {"intra_op_num_threads": threads} if threads else {}
    return RapidOCR(**kwargs)


@register_reward("ocr")
class OCRReward(FrameReward):
    """Edit-distance accuracy in [0, 1] of the text read in the image against the prompt's quoted text (or
    ``metadata[text_key]``); black-box. Images and videos (per frame, pooled). ``min_confidence`` drops OCR
    lines read with a lower score; ``threads`` sets onnxruntime's intra-op threads."""

    differentiable = False

    def __init__(self, text_key: str = "text", case_sensitive: bool = False, min_confidence: float = 0.0,
                 threads: int | None = None, batch_size: int = 16, video_pool: str = "mean") -> None:
        if not 0 <= min_confidence <= 1:
            raise ValueError(f"ocr: min_confidence must be in [0, 1], got {min_confidence}")
        self.configure_frames(batch_size, video_pool, "cpu")
        self.text_key, self.case_sensitive, self.min_confidence = text_key, case_sensitive, min_confidence
        self.engine = load_rapidocr(threads)

    def targets(self, prompts: Sequence[str], metadata: Metadata) -> list[str]:
        out = []
        for i, (prompt, meta) in enumerate(zip(prompts, metadata)):
            target = meta.get(self.text_key) if isinstance(meta.get(self.text_key), str) else quoted_text(prompt)
            if not target or not target.strip():
                raise ValueError(f"ocr: sample {i} has no text to check: prompt {prompt!r} quotes nothing and "
                                 f"metadata has no {self.text_key!r}")
            out.append(target)
        return out

    def __call__(self, samples: Samples, prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        return super().__call__(samples, self.targets(prompts, metadata), metadata)

    def read(self, frame: torch.Tensor) -> str:
        """Everything the OCR model reads in one RGB frame in [-1, 1], in its reading order."""
        rgb = ((frame.detach().float().clamp(-1, 1) + 1) * 127.5).round().byte().permute(1, 2, 0).cpu().numpy()
        result, _ = self.engine(np.ascontiguousarray(rgb[:, :, ::-1]))  # rapidocr takes BGR arrays
        return "".join(text for _, text, conf in (result or []) if float(conf) >= self.min_confidence)

    def score_frames(self, frames: torch.Tensor, prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        values = [text_accuracy(self.read(f), target, self.case_sensitive) for f, target in zip(frames, prompts)]
        return torch.tensor(values, dtype=torch.float32)
