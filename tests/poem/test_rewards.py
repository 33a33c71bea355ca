"""The toy rewards the PoEM recipes use: image statistics and a text character-fraction reward."""
import pytest
import torch

from visalign.core import get_reward


def _image(fill=(-1.0, -1.0, -1.0), size=8):
    return torch.tensor(fill).view(1, 3, 1, 1).expand(1, 3, size, size).clone()


def test_image_statistics():
    red, grey = _image((1.0, -1.0, -1.0)), _image((0.0, 0.0, 0.0))
    redness = get_reward("mean_redness")
    assert float(redness(red, [""], [{}])) == pytest.approx(1.0) and float(redness(grey, [""], [{}])) == pytest.approx(0.0)
    right, bottom = _image(), _image()
    right[:, :, :, -2:] = 1.0
    bottom[:, :, -1:, :] = 1.0
    com_x, com_y = get_reward("centre_of_mass_x"), get_reward("centre_of_mass_y")
    assert float(com_x(right, [""], [{}])) > 0.8 and float(com_y(right, [""], [{}])) == pytest.approx(0.0, abs=1e-6)
    assert float(com_y(bottom, [""], [{}])) == pytest.approx(1.0) and float(com_x(bottom, [""], [{}])) == pytest.approx(0.0, abs=1e-6)
    contrast = get_reward("contrast")
    assert float(contrast(grey, [""], [{}])) == 0.0 and float(contrast(right, [""], [{}])) > 0.3
    video = torch.zeros(2, 3, 4, 8, 8)
    for name in ("mean_redness", "centre_of_mass_x", "contrast"):
        assert get_reward(name)(video, ["", ""], [{}, {}]).shape == (2,)
    with pytest.raises(ValueError, match="RGB images"):
        contrast(torch.zeros(1, 1, 8, 8), [""], [{}])


def test_text_char_fraction():
    reward = get_reward("text_char_fraction", chars="02468")
    assert reward(["1234", "", "88"], ["", "", ""], [{}, {}, {}]).tolist() == [0.5, 0.0, 1.0]
    with pytest.raises(ValueError, match="non-empty"):
        get_reward("text_char_fraction", chars="")
