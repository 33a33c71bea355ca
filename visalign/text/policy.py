"""Causal-LM policy: seeded batched sampling of G completions per prompt and token log-probs with masks."""
from __future__ import annotations

import inspect
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import torch
from torch import nn

from ..core.config import ConfigError
from ..core.policy import Policy

POLICY_FILE = "text_policy.json"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")


@dataclass
class TextSamples:
    """Sampled completions: texts plus the token tensors needed to score them again.

    ``prompt_ids``/``prompt_mask`` are left-padded ``[N, P]``; ``completion_ids``/``completion_mask`` are
    right-padded ``[N, T]`` (mask 1 up to and including EOS); ``logprobs`` ``[N, T]`` are the sampling log-probs."""

    texts: list[str]
    prompt_ids: torch.Tensor
    prompt_mask: torch.Tensor
    completion_ids: torch.Tensor
    completion_mask: torch.Tensor
    logprobs: torch.Tensor

    def __len__(self) -> int:
        return len(self.texts)


class CausalLMPolicy(Policy):
    """Wraps a ``transformers`` causal LM and its tokenizer as a trainable text policy.

    The sampling distribution is ``softmax(logits / temperature)``; :meth:`token_logprobs` scores tokens under the
    same temperature so PPO ratios compare like with like. Sampling draws every token with ``torch.multinomial``
    from a CPU ``torch.Generator``: the same seed gives the same completions on any device.
    """

    def __init__(
        self,
        model: nn.Module,
        tokenizer: Any,
        max_new_tokens: int = 32,
        temperature: float = 1.0,
        disable_dropout: bool = True,
        use_cache: bool = True,
    ) -> None:
        super().__init__()
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature} (use greedy=True for argmax decoding)")
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        self.model = model
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.use_cache = use_cache
        if tokenizer.eos_token_id is None:
            raise ValueError("the tokenizer needs an eos token to end completions")
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        if disable_dropout:
            for module in self.model.modules():
                if isinstance(module, nn.Dropout):
                    module.p = 0.0
        params = inspect.signature(self.model.forward).parameters
        self._cache_kw = "cache" if "cache" in params else "past_key_values"

    # ------------------------------------------------------------------------------------------------ loading
    @classmethod
    def from_pretrained(cls, path: str | Path, **kwargs: Any) -> "CausalLMPolicy":
        """Load model + tokenizer from a local folder (never downloads); settings from ``text_policy.json`` if present,
        overridden by ``kwargs``."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        path = Path(path)
        if not path.is_dir():
            raise FileNotFoundError(f"causal LM folder not found: {path}")
        if not (path / "config.json").is_file():
            raise ConfigError(f"causal LM folder {path} has no config.json (not a saved transformers model)")
        if not any((path / name).is_file() for name in TOKENIZER_FILES):
            raise ConfigError(f"causal LM folder {path} has no tokenizer files (one of {', '.join(TOKENIZER_FILES)}); "
                              "save the tokenizer next to the model (tokenizer.save_pretrained)")
        settings = json.loads((path / POLICY_FILE).read_text()) if (path / POLICY_FILE).is_file() else {}
        settings.update(kwargs)
        model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True)
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        return cls(model, tokenizer, **settings)

    def shard_units(self) -> list[nn.Module]:
        return [self.model]

    def enable_gradient_checkpointing(self) -> None:
        self.model.gradient_checkpointing_enable()

    def save_pretrained(self, path: str | Path) -> Path:
        """Write a folder that :meth:`from_pretrained` (or plain ``transformers``) can load."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(path)
        self.tokenizer.save_pretrained(path)
        settings = {"max_new_tokens": self.max_new_tokens, "temperature": self.temperature, "use_cache": self.use_cache}
        (path / POLICY_FILE).write_text(json.dumps(settings, indent=2))
        return path

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    # ----------------------------------------------------------------------------------------------- encoding
    def encode_prompts(self, prompts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """Left-padded prompt ids and attention mask ``[N, P]`` (tokenizer's own special tokens, e.g. BOS)."""
        if len(prompts) == 0:
            raise ValueError("no prompts to encode")
        enc = [self.tokenizer(p, add_special_tokens=True)["input_ids"] for p in prompts]
        if any(len(e) == 0 for e in enc):
            raise ValueError("a prompt encoded to zero tokens; give the tokenizer a BOS token or use non-empty prompts")
        return _pad(enc, self.tokenizer.pad_token_id, left=True, device=self.device)

    def encode_completions(self, completions: Sequence[str], add_eos: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
        """Right-padded completion ids and mask ``[N, T]`` (EOS appended), e.g. for supervised warm-up."""
        eos = [self.tokenizer.eos_token_id] if add_eos else []
        enc = [self.tokenizer(c, add_special_tokens=False)["input_ids"] + eos for c in completions]
        return _pad(enc, self.tokenizer.pad_token_id, left=False, device=self.device)

    def decode(self, completion_ids: torch.Tensor, completion_mask: torch.Tensor) -> list[str]:
        """Texts of completions, without EOS / padding."""
        out = []
        for ids, m in zip(completion_ids.tolist(), completion_mask.tolist()):
            toks = [t for t, keep in zip(ids, m) if keep and t != self.tokenizer.eos_token_id]
            out.append(self.tokenizer.decode(toks, skip_special_tokens=True))
        return out

    # ---------------------------------------------------------------------------------------------- scoring
    def _forward(self, ids: torch.Tensor, mask: torch.Tensor, **kwargs: Any) -> Any:
        position_ids = (mask.long().cumsum(-1) - 1).clamp(min=0)
        return self.model(input_ids=ids, attention_mask=mask, position_ids=position_ids, **kwargs)

    def completion_logits(
        self, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor, completion_ids: torch.Tensor, completion_mask: torch.Tensor
    ) -> torch.Tensor:
        """Raw next-token logits ``[N, T, V]`` at each completion position (teacher forcing)."""
        ids = torch.cat([prompt_ids, completion_ids], dim=1)
        mask = torch.cat([prompt_mask, completion_mask.to(prompt_mask.dtype)], dim=1)
        p, t = prompt_ids.shape[1], completion_ids.shape[1]
        logits = self._forward(ids, mask, use_cache=False).logits
        return logits[:, p - 1 : p - 1 + t]

    def token_logprobs(
        self, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor, completion_ids: torch.Tensor, completion_mask: torch.Tensor
    ) -> torch.Tensor:
        """``log softmax(logits / temperature)`` of each completion token ``[N, T]``; 0 where the mask is 0."""
        logits = self.completion_logits(prompt_ids, prompt_mask, completion_ids, completion_mask)
        logp = torch.log_softmax(logits.float() / self.temperature, dim=-1)
        out = logp.gather(-1, completion_ids.unsqueeze(-1)).squeeze(-1)
        return out * completion_mask.to(out.dtype)

    def forward(self, samples: TextSamples) -> torch.Tensor:
        """Token log-probs of ``samples`` under the current weights (with grad)."""
        return self.token_logprobs(samples.prompt_ids, samples.prompt_mask, samples.completion_ids, samples.completion_mask)

    # --------------------------------------------------------------------------------------------- sampling
    @torch.no_grad()
    def sample(
        self,
        prompts: Sequence[str],
        generator: torch.Generator | None = None,
        num_samples: int = 1,
        max_new_tokens: int | None = None,
        greedy: bool = False,
    ) -> TextSamples:
        """``num_samples`` completions per prompt (grouped: prompt ``i``'s samples are rows ``i*G .. i*G+G-1``)."""
        if num_samples < 1:
            raise ValueError(f"num_samples must be >= 1, got {num_samples}")
        self.record_draws(len(prompts) * num_samples)
        max_new = max_new_tokens or self.max_new_tokens
        prompt_ids, prompt_mask = self.encode_prompts(prompts)
        prompt_ids = prompt_ids.repeat_interleave(num_samples, dim=0)
        prompt_mask = prompt_mask.repeat_interleave(num_samples, dim=0)
        n, dev = prompt_ids.shape[0], prompt_ids.device
        eos, pad = self.tokenizer.eos_token_id, self.tokenizer.pad_token_id
        was_training = self.model.training
        self.model.eval()
        try:
            tokens, logps = [], []
            done = torch.zeros(n, dtype=torch.bool, device=dev)
            ids, mask = prompt_ids, prompt_mask
            out = self._forward(ids, mask, use_cache=self.use_cache)
            cache = out.get(self._cache_kw) if self.use_cache else None
            for _ in range(max_new):
                logp = torch.log_softmax(out.logits[:, -1].float() / self.temperature, dim=-1)
                if greedy:
                    nxt = logp.argmax(-1)
                else:
                    nxt = torch.multinomial(logp.exp().cpu(), 1, generator=generator).squeeze(-1).to(dev)
                nxt = torch.where(done, torch.full_like(nxt, pad), nxt)
                tokens.append(nxt)
                logps.append(torch.where(done, torch.zeros_like(nxt, dtype=logp.dtype), logp.gather(-1, nxt[:, None]).squeeze(-1)))
                done = done | (nxt == eos)
                if bool(done.all()):
                    break
                mask = torch.cat([mask, torch.ones(n, 1, dtype=mask.dtype, device=dev)], dim=1)
                if cache is not None:
                    position_ids = (mask.long().sum(-1, keepdim=True) - 1)
                    out = self.model(input_ids=nxt[:, None], attention_mask=mask, position_ids=position_ids,
                                     use_cache=True, **{self._cache_kw: cache})
                    cache = out.get(self._cache_kw)
                else:
                    ids = torch.cat([ids, nxt[:, None]], dim=1)
                    out = self._forward(ids, mask, use_cache=False)
        finally:
            self.model.train(was_training)
        completion_ids = torch.stack(tokens, dim=1)
        # mask: 1 up to and including the first EOS
        is_eos = completion_ids == eos
        after_eos = (is_eos.long().cumsum(1) - is_eos.long()) > 0
        completion_mask = (~after_eos).long()
        logprobs = torch.stack(logps, dim=1) * completion_mask
        texts = self.decode(completion_ids, completion_mask)
        return TextSamples(texts, prompt_ids, prompt_mask, completion_ids, completion_mask, logprobs)


def _pad(seqs: list[list[int]], pad_id: int, left: bool, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        if not s:
            continue
        sl = slice(width - len(s), width) if left else slice(0, len(s))
        ids[i, sl] = torch.tensor(s, dtype=torch.long)
        mask[i, sl] = 1
    return ids.to(device), mask.to(device)
