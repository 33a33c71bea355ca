"""VLM judge on a tiny random LLaVA built from a config (CLIP vision tower + Llama), loaded by AutoProcessor /
AutoModelForImageTextToText from disk. Random weights judge nothing; these tests check the mechanics: the
probability read off the next-token distribution, batching with padding, per-constraint questions and pooling."""
import pytest
import torch

from visalign.core import build_reward, score


@pytest.fixture(scope="module")
def judge(llava_folder):
    return build_reward({"name": "vlm_judge", "path": str(llava_folder), "question": "Does this image show {prompt} ?",
                         "constraint_question": "Is it true that {constraint} ?"})


def manual_yes_probability(judge, image, question):
    """Unbatched: chat template → processor → logits of the last token → P(Yes, yes) / P(Yes, yes, No, no)."""
    text = judge.processor.apply_chat_template(
        [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": question}]}],
        add_generation_prompt=True, tokenize=False)
    assert text.endswith("ASSISTANT:") and "<image>" in text
    inputs = judge.processor(images=[image], text=[text], return_tensors="pt")
    with torch.no_grad():
        probs = judge.model(**inputs).logits[0, -1].softmax(-1)
    vocab = judge.processor.tokenizer.get_vocab()
    yes = probs[vocab["Yes"]] + probs[vocab["yes"]]
    return yes / (yes + probs[vocab["No"]] + probs[vocab["no"]])


def test_yes_probability_matches_an_unbatched_forward(judge):
    from PIL import Image

    images = torch.rand(2, 3, 32, 32) * 2 - 1
    prompts = ["a red circle", "a blue square left of the red circle"]  # different lengths: padded batch
    values = score(judge, images, prompts, [{}, {}])
    pixels = ((images + 1) * 127.5).round().byte().permute(0, 2, 3, 1).numpy()
    for i, prompt in enumerate(prompts):
        expected = manual_yes_probability(judge, Image.fromarray(pixels[i]), f"Does this image show {prompt} ?")
        assert values[i] == pytest.approx(float(expected), abs=1e-5)
    assert ((values > 0) & (values < 1)).all()
    assert torch.equal(values, score(judge, images, prompts, [{}, {}]))


def test_one_question_per_constraint_pooled(judge, llava_folder):
    images = torch.rand(1, 3, 32, 32) * 2 - 1
    constraints = ["the circle is red", "the square is left of the circle"]
    from PIL import Image

    pixels = ((images[0] + 1) * 127.5).round().byte().permute(1, 2, 0).numpy()
    each = judge.answer_scores([Image.fromarray(pixels)] * 2, [f"Is it true that {c} ?" for c in constraints])
    for aggregate, expected in (("mean", each.mean()), ("min", each.min()), ("product", each.prod())):
        judge.aggregate = aggregate
        got = score(judge, images, ["ignored"], [{"constraints": constraints}])
        assert got.item() == pytest.approx(float(expected), abs=1e-5)
    judge.aggregate = "mean"
    with pytest.raises(ValueError, match="constraints"):
        judge(images, ["x"], [{"constraints": "not a list"}])


def test_rating_mode_and_video(llava_folder):
    judge = build_reward({"name": "vlm_judge", "path": str(llava_folder), "mode": "rating", "max_rating": 5,
                          "question": "Rate {prompt} from 1 to 5 ."})
    video = torch.rand(2, 3, 3, 32, 32) * 2 - 1
    values = score(judge, video, ["a red circle", "a blue square"], [{}, {}])
    assert judge.last_frame_scores.shape == (2, 3) and ((values >= 0) & (values <= 1)).all()
    assert torch.allclose(values, judge.last_frame_scores.mean(1))


def test_words_the_tokenizer_lacks_are_named(llava_folder):
    with pytest.raises(ValueError, match="oui"):
        build_reward({"name": "vlm_judge", "path": str(llava_folder), "yes_tokens": ["oui"]})
