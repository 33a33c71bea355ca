"""Text rewards: exact match, format, length; shared registry."""
import pytest
import torch

from visalign.core import get_reward
from visalign.text import ExactMatchReward, FormatReward, LengthReward, extract_answer


def test_exact_match_modes():
    meta = [{"answer": "12"}, {"answer": "7"}, {"answer": "Paris"}, {"answer": "3"}]
    r = ExactMatchReward()
    assert r([" 12", "7.0", "paris", "33"], [""] * 4, meta).tolist() == [1, 1, 1, 0]
    r = ExactMatchReward(extract="last_number")
    assert r(["so 5+7 = 12", "answer 7", "x", "3 then 4"], [""] * 4, meta).tolist() == [1, 1, 0, 0]
    assert ExactMatchReward(case_sensitive=True)(["paris"], [""], [{"answer": "Paris"}]).tolist() == [0]


def test_extract_answer_and_errors():
    assert extract_answer(r"is \boxed{42}.", "boxed") == "42"
    assert extract_answer("work... Answer: 9", "after:Answer:") == "9"
    with pytest.raises(ValueError, match="extraction"):
        ExactMatchReward(extract="nope")
    with pytest.raises(KeyError, match="answer"):
        ExactMatchReward()(["1"], [""], [{}])
    with pytest.raises(TypeError, match="completion strings"):
        ExactMatchReward()(torch.zeros(1), [""], [{"answer": "1"}])


def test_format_and_length():
    assert FormatReward()(["12", "1a", " -3 "], [""] * 3, [{}] * 3).tolist() == [1, 0, 1]
    assert FormatReward(r"\d", search=True)(["ab1", "ab"], [""] * 2, [{}] * 2).tolist() == [1, 0]
    assert LengthReward(max_chars=4)(["", "ab", "abcdef"], [""] * 3, [{}] * 3).tolist() == [1.0, 0.5, 0.0]


def test_registered_in_shared_registry():
    assert isinstance(get_reward("text_exact_match"), ExactMatchReward)
    assert isinstance(get_reward("text_format", pattern=r"\d+"), FormatReward)
