"""A vocabulary-free hashing word tokenizer and a tiny CLIP text encoder (no hub files, deterministic everywhere)."""
from __future__ import annotations

import re
import zlib
from typing import Sequence

import torch
from torch import nn

_WORD = re.compile(r"[a-z0-9]+")


class HashingWordTokenizer:
    """Lower-cases, splits on non-alphanumerics and hashes each word into ``buckets`` ids with CRC32.

    Ids 0/1/2 are pad/bos/eos; a word's id is ``3 + crc32(word) % (buckets - 3)``, identical on every machine.
    Sequences are ``[bos, words..., eos, pad...]`` of exactly ``max_length`` (long prompts are truncated).
    """

    pad_id = 0
    bos_id = 1
    eos_id = 2
    num_special = 3

    def __init__(self, buckets: int = 1024, max_length: int = 16) -> None:
        if buckets <= self.num_special:
            raise ValueError(f"buckets must be > {self.num_special}, got {buckets}")
        if max_length < 2:
            raise ValueError(f"max_length must be >= 2 (bos + eos), got {max_length}")
        self.buckets = buckets
        self.max_length = max_length

    def words(self, text: str) -> list[str]:
        return _WORD.findall(text.lower())

    def word_id(self, word: str) -> int:
        return self.num_special + zlib.crc32(word.encode("utf-8")) % (self.buckets - self.num_special)

    def encode(self, text: str) -> list[int]:
        """Token ids with bos/eos, unpadded, truncated to ``max_length``."""
        ids = [self.word_id(w) for w in self.words(text)][: self.max_length - 2]
        return [self.bos_id, *ids, self.eos_id]

    def __call__(self, prompts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """``(input_ids, attention_mask)``, both long ``[B, max_length]``."""
        if isinstance(prompts, str):
            raise TypeError("pass a list of prompts, not a single string")
        ids = torch.full((len(prompts), self.max_length), self.pad_id, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for row, text in enumerate(prompts):
            seq = self.encode(text)
            ids[row, : len(seq)] = torch.tensor(seq)
            mask[row, : len(seq)] = 1
        return ids, mask


class TinyTextEncoder(nn.Module):
    """Hashing tokenizer + a small randomly initialised ``transformers.CLIPTextModel``.

    ``forward(prompts)`` returns token states ``[B, L, D]`` and a pooled vector ``[B, D]`` (the eos state).
    """

    def __init__(self, hidden: int = 32, layers: int = 2, heads: int = 2, buckets: int = 1024, max_length: int = 16) -> None:
        super().__init__()
        from transformers import CLIPTextConfig, CLIPTextModel

        self.tokenizer = HashingWordTokenizer(buckets, max_length)
        config = CLIPTextConfig(
            vocab_size=buckets,
            hidden_size=hidden,
            intermediate_size=4 * hidden,
            projection_dim=hidden,
            num_hidden_layers=layers,
            num_attention_heads=heads,
            max_position_embeddings=max_length,
            pad_token_id=HashingWordTokenizer.pad_id,
            bos_token_id=HashingWordTokenizer.bos_id,
            eos_token_id=HashingWordTokenizer.eos_id,
        )
        self.model = CLIPTextModel(config)

    @property
    def hidden_size(self) -> int:
        return self.model.config.hidden_size

    def forward(self, prompts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        device = self.model.get_input_embeddings().weight.device
        ids, mask = self.tokenizer(prompts)
        ids, mask = ids.to(device), mask.to(device)
        states = self.model(input_ids=ids, attention_mask=mask).last_hidden_state
        eos = mask.sum(1) - 1  # causal attention: the eos state has seen the whole prompt
        pooled = states[torch.arange(states.shape[0], device=device), eos]
        return states, pooled
