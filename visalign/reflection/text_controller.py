"""Any causal LM of :mod:`visalign.text` as the reflection critic: it reads the prompt, a text description of the
current image and the round, and writes one protocol line (parsed strictly by the rollout)."""
from __future__ import annotations

import contextlib
from typing import Callable, Iterator, Sequence

import torch

from ..core.reflection import Controller, ControllerTurns
from ..text.policy import CausalLMPolicy

DEFAULT_TEMPLATE = "prompt: {prompt}\nimage: {image}\nround: {round}\n"


class CausalLMController(Controller):
    """A :class:`CausalLMPolicy` that critiques images it sees through ``describe`` (images -> one string each: a
    captioner, a detector's summary). Sampled tokens, their log-probs and the completion mask (through EOS) are the
    turn; re-scoring rebuilds the same query. The LM's temperature is set to the controller's for both."""

    def __init__(self, lm: CausalLMPolicy, describe: Callable[[torch.Tensor], Sequence[str]],
                 template: str = DEFAULT_TEMPLATE) -> None:
        super().__init__()
        self.lm = lm
        self.describe = describe
        self.template = template

    def queries(self, prompts: Sequence[str], images: torch.Tensor, round_index: int) -> list[str]:
        descriptions = list(self.describe(images))
        if len(descriptions) != len(prompts):
            raise ValueError(f"describe returned {len(descriptions)} descriptions for {len(prompts)} images")
        return [self.template.format(prompt=p, image=d, round=round_index) for p, d in zip(prompts, descriptions)]

    @contextlib.contextmanager
    def _temperature(self, temperature: float) -> Iterator[None]:
        old = self.lm.temperature
        self.lm.temperature = temperature
        try:
            yield
        finally:
            self.lm.temperature = old

    def propose(self, prompts: Sequence[str], images: torch.Tensor, round_index: int, *,
                generator: torch.Generator | None = None, temperature: float = 1.0) -> ControllerTurns:
        with self._temperature(temperature):
            samples = self.lm.sample(self.queries(prompts, images, round_index), generator=generator)
        return ControllerTurns(samples.completion_ids, samples.logprobs, samples.completion_mask.float(), samples.texts)

    def token_log_probs(self, prompts: Sequence[str], images: torch.Tensor, round_index: int, tokens: torch.Tensor,
                        temperature: float = 1.0) -> torch.Tensor:
        prompt_ids, prompt_mask = self.lm.encode_prompts(self.queries(prompts, images, round_index))
        is_eos = tokens == self.lm.tokenizer.eos_token_id
        completion_mask = ((is_eos.long().cumsum(1) - is_eos.long()) == 0).long()
        with self._temperature(temperature):
            return self.lm.token_logprobs(prompt_ids, prompt_mask, tokens.to(prompt_ids.device), completion_mask)


__all__ = ["CausalLMController", "DEFAULT_TEMPLATE"]
