"""The OCR reward reads rendered text offline (rapidocr-onnxruntime, extra 'ocr')."""
import pytest
import torch

pytest.importorskip("rapidocr_onnxruntime", reason="the 'ocr' extra is not installed")

from visalign.core import build_reward, score  # noqa: E402
from visalign.rewards.ocr import edit_distance, quoted_text, text_accuracy  # noqa: E402
from visalign.rewards.text_render import render_text  # noqa: E402


@pytest.fixture(scope="module")
def reward():
    reward = build_reward({"name": "ocr", "threads": 1})
    reward(render_text("warm", 96)[None], ['"warm"'], [{}])
    return reward


def test_accuracy_and_quote_parsing():
    assert edit_distance("kitten", "sitting") == 3 and edit_distance("", "abc") == 3
    assert text_accuracy("Hello World", "helloworld") == 1.0
    assert text_accuracy("", "abcd") == 0.0 and text_accuracy("abXd", "abcd") == 0.75
    assert text_accuracy("a much longer wrong text", "ab") == 0.0  # distance capped at the target length
    assert quoted_text('a sign that says "OPEN" and “24h”') == "OPEN 24h"
    assert quoted_text("a dog's bone") is None


def test_rendered_text_scores_high_only_for_its_own_prompt(reward):
    images = torch.stack([render_text("HELLO 2026", 192), render_text("visalign", 192), render_text("", 192)])
    prompts = ['a sign that says "HELLO 2026"', 'a poster with "visalign"', 'a blank sign "STOP"']
    values = score(reward, images, prompts, [{}] * 3)
    assert values[0] == 1.0 and values[1] == 1.0 and values[2] == 0.0
    swapped = score(reward, images[:2], prompts[1::-1], [{}] * 2)
    assert (swapped < 0.5).all()
    assert torch.equal(values, score(reward, images, prompts, [{}] * 3))  # deterministic


def test_metadata_text_video_pooling_and_errors(reward):
    video = torch.stack([render_text("EXIT", 128), render_text("", 128)], 1)[None]  # 1×3×T×H×W, T = 2
    value = score(reward, video, ["an exit sign"], [{"text": "exit"}])
    assert reward.last_frame_scores.tolist() == [[1.0, 0.0]] and value.item() == 0.5
    with pytest.raises(ValueError, match="quotes nothing"):
        reward(video, ["an exit sign"], [{}])
    with pytest.raises(ValueError, match="ocr"):
        reward(torch.zeros(1, 2), ['"x"'], [{}])
