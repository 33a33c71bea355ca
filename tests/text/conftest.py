"""Fixtures for the text tests: a character tokenizer and tiny random causal LMs built locally (no downloads)."""
import pytest
import torch

from visalign.text import ADDITION_CHARS, CausalLMPolicy, char_tokenizer, tiny_causal_lm


@pytest.fixture(autouse=True)
def _few_threads():
    torch.set_num_threads(1)
    yield


@pytest.fixture(scope="session")
def tokenizer():
    return char_tokenizer(ADDITION_CHARS)


@pytest.fixture(params=["gpt2", "qwen2"])
def policy(request, tokenizer):
    model = tiny_causal_lm(tokenizer, request.param, hidden=32, layers=2, heads=2, max_positions=32, seed=0)
    return CausalLMPolicy(model, tokenizer, max_new_tokens=5)


@pytest.fixture
def gpt2_policy(tokenizer):
    return CausalLMPolicy(tiny_causal_lm(tokenizer, "gpt2", hidden=32, layers=2, heads=2, max_positions=32, seed=0), tokenizer,
                          max_new_tokens=4)


@pytest.fixture(scope="session")
def policy_folder(tmp_path_factory, tokenizer):
    path = tmp_path_factory.mktemp("tiny_lm")
    CausalLMPolicy(tiny_causal_lm(tokenizer, "gpt2", hidden=32, layers=2, heads=2, max_positions=32, seed=1), tokenizer,
                   max_new_tokens=4).save_pretrained(path)
    return path
