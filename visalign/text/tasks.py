"""Verifiable toy tasks: integer addition prompts with answers in metadata, split into train / held-out."""
from __future__ import annotations

import random
from dataclasses import dataclass

from ..core.prompts import PromptList, register_prompt_source

ADDITION_CHARS = "0123456789+="


@dataclass
class AdditionTask:
    """``"a+b="`` with ``0 <= a, b < 10**digits``; answer ``str(a + b)``. A seeded shuffle holds out ``num_eval`` pairs."""

    digits: int = 2
    num_eval: int = 256
    seed: int = 0

    def __post_init__(self) -> None:
        n = 10 ** self.digits
        pairs = [(a, b) for a in range(n) for b in range(n)]
        if not 0 < self.num_eval < len(pairs):
            raise ValueError(f"num_eval must be in (0, {len(pairs)}), got {self.num_eval}")
        random.Random(self.seed).shuffle(pairs)
        self.eval_pairs = pairs[: self.num_eval]
        self.train_pairs = pairs[self.num_eval :]

    @staticmethod
    def prompt(a: int, b: int) -> str:
        return f"{a}+{b}="

    @staticmethod
    def answer(a: int, b: int) -> str:
        return str(a + b)

    def split(self, which: str) -> tuple[list[str], list[dict[str, str]]]:
        pairs = {"train": self.train_pairs, "eval": self.eval_pairs}[which]
        return [self.prompt(a, b) for a, b in pairs], [{"answer": self.answer(a, b)} for a, b in pairs]

    def prompt_source(self) -> PromptList:
        """Training prompts for RL, held-out prompts as the evaluation batch."""
        tp, tm = self.split("train")
        ep, em = self.split("eval")
        return PromptList(tp, tm, eval_prompts=ep, eval_metadata=em)


@register_prompt_source("text_addition")
def addition_prompts(digits: int = 2, num_eval: int = 256, seed: int = 0) -> PromptList:
    """``prompts: {name: text_addition, digits: 2}``: the addition task's train prompts, held-out eval prompts."""
    return AdditionTask(digits, num_eval, seed).prompt_source()
