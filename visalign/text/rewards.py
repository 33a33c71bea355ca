"""Verifiable text rewards ``(completions, prompts, metadata) -> Tensor[B]``, registered in the shared registry."""
from __future__ import annotations

import re
from typing import Sequence

import torch

from ..core.reward import Reward, register_reward
from ..core.types import Metadata

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def extract_answer(text: str, mode: str = "strip") -> str | None:
    """Answer string of a completion: ``strip`` (whole text, stripped), ``last_number`` (last integer/decimal),
    ``boxed`` (content of the last ``\\boxed{...}``) or ``after:<marker>`` (text after the last marker)."""
    if mode == "strip":
        return text.strip()
    if mode == "last_number":
        found = _NUMBER.findall(text)
        return found[-1] if found else None
    if mode == "boxed":
        found = re.findall(r"\\boxed\{([^{}]*)\}", text)
        return found[-1].strip() if found else None
    if mode.startswith("after:"):
        marker = mode[len("after:"):]
        return text.rpartition(marker)[2].strip() if marker in text else None
    raise ValueError(f"unknown answer extraction {mode!r}; use strip, last_number, boxed or after:<marker>")


def _check_texts(samples: object, n_meta: int) -> list[str]:
    if not isinstance(samples, (list, tuple)) or not all(isinstance(s, str) for s in samples):
        raise TypeError(f"text rewards score a list of completion strings, got {type(samples).__name__}")
    if len(samples) != n_meta:
        raise ValueError(f"{len(samples)} completions but {n_meta} metadata entries")
    return list(samples)


@register_reward("text_exact_match")
class ExactMatchReward(Reward):
    """1.0 if the extracted answer equals ``metadata[answer_key]`` (after stripping; case-insensitive unless
    ``case_sensitive``), else 0.0. Numbers compare by value when both parse (``"7.0" == "7"``)."""

    def __init__(self, answer_key: str = "answer", extract: str = "strip", case_sensitive: bool = False) -> None:
        extract_answer("", extract)  # validate the mode early
        self.answer_key = answer_key
        self.extract = extract
        self.case_sensitive = case_sensitive

    def _same(self, got: str | None, want: str) -> bool:
        if got is None:
            return False
        if _NUMBER.fullmatch(got) and _NUMBER.fullmatch(want):
            return float(got) == float(want)
        return got == want if self.case_sensitive else got.lower() == want.lower()

    def __call__(self, samples: Sequence[str], prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        texts = _check_texts(samples, len(metadata))
        out = []
        for i, (text, meta) in enumerate(zip(texts, metadata)):
            if self.answer_key not in meta:
                raise KeyError(f"text_exact_match: metadata[{i}] has no {self.answer_key!r} (keys: {sorted(meta)})")
            out.append(float(self._same(extract_answer(text, self.extract), str(meta[self.answer_key]).strip())))
        return torch.tensor(out)


@register_reward("text_format")
class FormatReward(Reward):
    """1.0 if the completion matches ``pattern`` (``re.fullmatch`` on the stripped text, or ``re.search`` when
    ``search``), else 0.0."""

    def __init__(self, pattern: str = r"-?\d+", search: bool = False) -> None:
        self.pattern = re.compile(pattern, re.DOTALL)
        self.search = search

    def __call__(self, samples: Sequence[str], prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        texts = _check_texts(samples, len(metadata))
        match = self.pattern.search if self.search else self.pattern.fullmatch
        return torch.tensor([float(match(t if self.search else t.strip()) is not None) for t in texts])


@register_reward("text_length")
class LengthReward(Reward):
    """Brevity score ``max(0, 1 - len(text) / max_chars)`` (a second, often conflicting, objective)."""

    def __init__(self, max_chars: int = 32) -> None:
        if max_chars < 1:
            raise ValueError(f"max_chars must be >= 1, got {max_chars}")
        self.max_chars = max_chars

    def __call__(self, samples: Sequence[str], prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        texts = _check_texts(samples, len(metadata))
        return torch.tensor([max(0.0, 1.0 - len(t) / self.max_chars) for t in texts])


@register_reward("text_char_fraction")
class CharFractionReward(Reward):
    """Fraction of the completion's characters that lie in ``chars`` (0 for an empty completion), e.g. even digits."""

    def __init__(self, chars: str = "02468") -> None:
        if not chars:
            raise ValueError("text_char_fraction needs a non-empty chars set")
        self.chars = frozenset(chars)

    def __call__(self, samples: Sequence[str], prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        texts = _check_texts(samples, len(metadata))
        return torch.tensor([sum(c in self.chars for c in t) / len(t) if t else 0.0 for t in texts])
