"""null_score: a reproducible, content-keyed N(0, 1) score with no signal."""
import torch

from visalign.core import build_reward


def test_same_content_same_score_and_the_salt_redraws():
    images = torch.rand(6, 3, 8, 8)
    reward = build_reward({"name": "null_score"})
    first = reward(images, ["p"] * 6, [{}] * 6)
    assert torch.equal(first, reward(images.clone(), ["q"] * 6, [{}] * 6))
    assert torch.equal(first[2:4], reward(images[2:4], ["p"] * 2, [{}] * 2))
    assert not torch.equal(first, build_reward({"name": "null_score", "salt": 1})(images, ["p"] * 6, [{}] * 6))
    nudged = images.clone()
    nudged[0, 0, 0, 0] += 1e-3
    assert reward(nudged, ["p"] * 6, [{}] * 6)[0] != first[0]


def test_scores_are_standard_normal_and_carry_no_signal():
    images = torch.rand(2000, 1, 4, 4)
    scores = build_reward({"name": "null_score"})(images, ["p"] * 2000, [{}] * 2000)
    assert abs(float(scores.mean())) < 0.1 and abs(float(scores.std()) - 1) < 0.1
    brightness = images.flatten(1).mean(1)
    correlation = torch.corrcoef(torch.stack([scores, brightness]))[0, 1]
    assert abs(float(correlation)) < 0.1


def test_texts_and_audio_video_dicts_are_scored():
    reward = build_reward({"name": "null_score"})
    texts = reward(["a", "b", "a"], ["p"] * 3, [{}] * 3)
    assert texts[0] == texts[2] and texts[0] != texts[1]
    clips = {"video": torch.rand(3, 3, 2, 4, 4), "audio": torch.rand(3, 1, 32), "sample_rate": 16}
    scores = reward(clips, ["p"] * 3, [{}] * 3)
    assert scores.shape == (3,) and torch.isfinite(scores).all()
    clips["audio"][1] += 0.5
    moved = reward(clips, ["p"] * 3, [{}] * 3)
    assert moved[1] != scores[1] and torch.equal(moved[[0, 2]], scores[[0, 2]])
