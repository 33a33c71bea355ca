"""Tiny randomly initialised causal LMs (GPT-2 / Qwen2 configs) for tests and CPU pipelines."""
from __future__ import annotations

from typing import Any, Literal

from torch import nn


def tiny_causal_lm(
    tokenizer: Any,
    arch: Literal["gpt2", "qwen2"] = "gpt2",
    hidden: int = 64,
    layers: int = 2,
    heads: int = 4,
    max_positions: int = 64,
    seed: int | None = 0,
) -> nn.Module:
    """A small ``transformers`` causal LM sized to ``tokenizer``'s vocabulary, dropout off, weights tied."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, Qwen2Config, Qwen2ForCausalLM

    ids = dict(
        vocab_size=len(tokenizer),
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True,
    )
    if seed is not None:
        torch.manual_seed(seed)
    if arch == "gpt2":
        cfg = GPT2Config(n_embd=hidden, n_layer=layers, n_head=heads, n_positions=max_positions,
                         resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, **ids)
        return GPT2LMHeadModel(cfg)
    if arch == "qwen2":
        cfg = Qwen2Config(hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                          num_attention_heads=heads, num_key_value_heads=max(1, heads // 2),
                          max_position_embeddings=max_positions, **ids)
        return Qwen2ForCausalLM(cfg)
    raise ValueError(f"unknown arch {arch!r}; use 'gpt2' or 'qwen2'")
