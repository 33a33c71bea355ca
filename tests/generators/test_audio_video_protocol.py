"""AudioVideoFlowModel: split/join of the flat latent and tower / shared parameter partition."""
import pytest
import torch
from torch import nn

from visalign.core.audio_video import AudioVideoFlowModel


class PackedAV(AudioVideoFlowModel):
    def __init__(self) -> None:
        super().__init__(None)
        self.net = nn.ModuleDict({"video_in": nn.Linear(6, 6), "audio_in": nn.Linear(2, 2),
                                  "audio_to_video_attn": nn.Linear(2, 6), "joint": nn.Linear(8, 8)})

    def noise_shape(self):
        return (8,)

    def velocity(self, x, t, cond=None):
        return self.net["joint"](x)

    def latent_slices(self):
        return {"video": slice(0, 6), "audio": slice(6, 8)}

    def tower_patterns(self):
        return {"video": [r"^net\.video_", r"_to_video_"], "audio": [r"^net\.audio_in"]}


def test_split_join_round_trip_and_views():
    model = PackedAV()
    x = torch.randn(3, 8)
    parts = model.split_latents(x)
    assert parts["video"].shape == (3, 6) and parts["audio"].shape == (3, 2)
    assert torch.equal(model.join_latents({"audio": parts["audio"], "video": parts["video"]}), x)


def test_towers_partition_parameters():
    model = PackedAV()
    video = {n for n, _ in model.tower_parameters("video")}
    audio = {n for n, _ in model.tower_parameters("audio")}
    shared = {n for n, _ in model.shared_parameters()}
    assert video == {"net.video_in.weight", "net.video_in.bias", "net.audio_to_video_attn.weight", "net.audio_to_video_attn.bias"}
    assert audio == {"net.audio_in.weight", "net.audio_in.bias"}
    assert shared == {"net.joint.weight", "net.joint.bias"}
    with pytest.raises(ValueError, match="unknown modality 'text'"):
        model.tower_parameters("text")
