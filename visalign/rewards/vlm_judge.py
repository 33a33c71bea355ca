"""``vlm_judge``: any local transformers vision-language model as a yes/no or rating judge (TIFA / VQAScore style).

For each sample the judge asks one templated question per constraint (``metadata[constraints_key]``, a list of
strings) or, without constraints, one question about the whole prompt. The answer is read from the next-token
distribution after the chat template's generation prompt, without generating:

- ``mode: yes_no`` — ``P(yes)`` (the probability mass of the yes tokens, renormalised against the no tokens when
  ``normalize`` is true, as TIFA does; raw, as VQAScore does, when false);
- ``mode: rating`` — the expected value of a 1..``max_rating`` answer, mapped to [0, 1].

Question scores of one sample are pooled by ``aggregate`` (mean, min, or product = all constraints hold).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Sequence

import numpy as np
import torch

from ..core.reward import register_reward
from ..core.types import Metadata
from .frames import FrameReward


def single_token_ids(tokenizer: Any, words: Sequence[str], what: str) -> list[int]:
    """Ids of the words (and their space-prefixed forms) that the tokenizer encodes as one token."""
    ids = set()
    for word in words:
        for form in (word, " " + word):
            encoded = tokenizer.encode(form, add_special_tokens=False)
            if len(encoded) == 1 and encoded[0] != tokenizer.unk_token_id:
                ids.add(int(encoded[0]))
    if not ids:
        raise ValueError(f"vlm_judge: none of the {what} words {list(words)} is a single token of this tokenizer; "
                         f"set {what}_tokens to words it has")
    return sorted(ids)


@register_reward("vlm_judge")
class VLMJudge(FrameReward):
    """A local VLM answering templated questions about each image (video: each frame); black-box.

    ``path``: a folder that ``AutoProcessor`` and ``AutoModelForImageTextToText`` load (LLaVA, Qwen2-VL,
    Idefics3, ...). ``question`` formats ``{prompt}``; ``constraint_question`` formats ``{constraint}``.
    ``prompt_format`` (with ``{question}``, and the model's image token) replaces the processor's chat template.
    """

    differentiable = False

    def __init__(self, path: str, mode: Literal["yes_no", "rating"] = "yes_no",
                 question: str = "Does this image show {prompt}? Answer yes or no.",
                 constraint_question: str = "Is it true that {constraint}? Answer yes or no.",
                 constraints_key: str = "constraints", aggregate: Literal["mean", "min", "product"] = "mean",
                 normalize: bool = True, yes_tokens: Sequence[str] = ("Yes", "yes"),
                 no_tokens: Sequence[str] = ("No", "no"), max_rating: int = 5, prompt_format: str | None = None,
                 device: str | None = None, dtype: str = "float32", batch_size: int = 8, video_pool: str = "mean") -> None:
        from transformers import AutoModelForImageTextToText, AutoProcessor

        if mode not in ("yes_no", "rating"):
            raise ValueError(f"vlm_judge: mode must be 'yes_no' or 'rating', got {mode!r}")
        if aggregate not in ("mean", "min", "product"):
            raise ValueError(f"vlm_judge: aggregate must be mean, min or product, got {aggregate!r}")
        if mode == "rating" and not 2 <= max_rating <= 9:
            raise ValueError(f"vlm_judge: max_rating must be in [2, 9] (single-digit answers), got {max_rating}")
        if not Path(path).is_dir():
            raise FileNotFoundError(f"vlm_judge: model folder not found: {path}")
        self.configure_frames(batch_size, video_pool, device)
        self.processor = AutoProcessor.from_pretrained(path, local_files_only=True)
        self.model = AutoModelForImageTextToText.from_pretrained(path, local_files_only=True, dtype=getattr(torch, dtype))
        self.model.eval().requires_grad_(False).to(self.device)
        tokenizer = self.processor.tokenizer
        self.mode, self.aggregate, self.normalize = mode, aggregate, normalize
        self.question, self.constraint_question, self.constraints_key = question, constraint_question, constraints_key
        self.prompt_format = prompt_format
        if mode == "yes_no":
            self.yes_ids = single_token_ids(tokenizer, yes_tokens, "yes")
            self.no_ids = single_token_ids(tokenizer, no_tokens, "no")
        else:
            self.digit_ids = [single_token_ids(tokenizer, [str(k)], "rating")[0] for k in range(1, max_rating + 1)]
        if prompt_format is None and not self.processor.chat_template:
            raise ValueError(f"vlm_judge: the processor in {path} has no chat template; set prompt_format")

    def questions(self, prompt: str, meta: dict[str, Any]) -> list[str]:
        constraints = meta.get(self.constraints_key)
        if constraints is None:
            return [self.question.format(prompt=prompt)]
        if not isinstance(constraints, list) or not constraints or not all(isinstance(c, str) for c in constraints):
            raise ValueError(f"vlm_judge: metadata[{self.constraints_key!r}] must be a non-empty list of strings, "
                             f"got {constraints!r}")
        return [self.constraint_question.format(constraint=c) for c in constraints]

    def _text(self, question: str) -> str:
        if self.prompt_format is not None:
            return self.prompt_format.format(question=question)
        messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": question}]}]
        return self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)

    @torch.no_grad()
    def answer_scores(self, images: list[Any], questions: list[str]) -> torch.Tensor:
        """One score in [0, 1] per (image, question) pair, from the next-token distribution."""
        inputs = self.processor(images=images, text=[self._text(q) for q in questions], return_tensors="pt",
                                padding=True).to(self.device, dtype=self.model.dtype)  # casts only float inputs
        logits = self.model(**inputs).logits
        last = inputs["attention_mask"].cumsum(1).argmax(1)  # the last real token, whichever side pads
        probs = logits[torch.arange(logits.shape[0], device=logits.device), last].float().softmax(-1)
        if self.mode == "yes_no":
            yes, no = probs[:, self.yes_ids].sum(1), probs[:, self.no_ids].sum(1)
            return yes / (yes + no).clamp_min(1e-12) if self.normalize else yes
        p = probs[:, self.digit_ids]
        ratings = torch.arange(1, len(self.digit_ids) + 1, device=p.device, dtype=p.dtype)
        expected = (p * ratings).sum(1) / p.sum(1).clamp_min(1e-12)
        return (expected - 1) / (len(self.digit_ids) - 1)

    def score_frames(self, frames: torch.Tensor, prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        from PIL import Image

        pixels = ((frames.detach().float().clamp(-1, 1) + 1) * 127.5).round().byte().permute(0, 2, 3, 1).cpu().numpy()
        asked = [self.questions(p, m) for p, m in zip(prompts, metadata)]
        images = [Image.fromarray(np.ascontiguousarray(pixels[i])) for i, qs in enumerate(asked) for _ in qs]
        flat = self.answer_scores(images, [q for qs in asked for q in qs]).cpu()
        out, start = [], 0
        for qs in asked:
            part = flat[start:start + len(qs)]
            start += len(qs)
            out.append(part.mean() if self.aggregate == "mean" else part.min() if self.aggregate == "min" else part.prod())
        return torch.stack(out)
