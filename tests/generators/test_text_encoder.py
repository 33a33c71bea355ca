"""Hashing tokenizer and tiny CLIP text encoder."""
from __future__ import annotations

import zlib

import pytest
import torch

from visalign.generators import HashingWordTokenizer, TinyTextEncoder


def test_tokenizer_hashes_lowercased_words_with_specials():
    tok = HashingWordTokenizer(buckets=100, max_length=8)
    ids, mask = tok(["A Red-circle!", ""])
    red = 3 + zlib.crc32(b"red") % 97
    assert ids[0, :5].tolist() == [tok.bos_id, 3 + zlib.crc32(b"a") % 97, red, 3 + zlib.crc32(b"circle") % 97, tok.eos_id]
    assert ids[0, 5:].tolist() == [tok.pad_id] * 3
    assert mask[0].tolist() == [1] * 5 + [0] * 3
    assert ids[1, :2].tolist() == [tok.bos_id, tok.eos_id] and mask[1].sum() == 2
    assert ids.dtype == torch.long and ids.shape == (2, 8)
    assert ((ids[0, 1:4] >= 3) & (ids[0, 1:4] < 100)).all()


def test_tokenizer_truncates_and_rejects_bad_input():
    tok = HashingWordTokenizer(buckets=64, max_length=4)
    ids, mask = tok(["one two three four five"])
    assert ids[0].tolist() == [tok.bos_id, tok.word_id("one"), tok.word_id("two"), tok.eos_id]
    assert mask.sum() == 4
    with pytest.raises(TypeError, match="list of prompts"):
        tok("a red circle")
    with pytest.raises(ValueError, match="buckets"):
        HashingWordTokenizer(buckets=3)
    with pytest.raises(ValueError, match="max_length"):
        HashingWordTokenizer(max_length=1)


def test_encoder_shapes_and_prompt_dependence():
    enc = TinyTextEncoder(hidden=32, layers=2, buckets=128, max_length=10)
    states, pooled = enc(["a red circle", "a blue circle", "a red circle"])
    assert states.shape == (3, 10, 32) and pooled.shape == (3, 32)
    assert torch.allclose(pooled[0], pooled[2])
    assert not torch.allclose(pooled[0], pooled[1])
    # a row's encoding does not depend on the other prompts in the batch (padding is masked)
    alone = enc(["a red circle"])[1]
    torch.testing.assert_close(alone[0], pooled[0], atol=1e-5, rtol=1e-5)
