"""Tiny reward-model folders shared by the reward tests (built once per session)."""
from __future__ import annotations

import pytest
import torch
from safetensors.torch import save_file

from visalign.rewards.tiny_models import save_bert_tokenizer, save_tiny_hf_clip, tiny_image_reward_checkpoint


@pytest.fixture(scope="session")
def hf_clip_folder(tmp_path_factory):
    return save_tiny_hf_clip(tmp_path_factory.mktemp("hf_clip"))


@pytest.fixture(scope="session")
def aesthetic_weights(tmp_path_factory):
    from visalign.rewards.aesthetic import AestheticMLP

    torch.manual_seed(1)
    folder = tmp_path_factory.mktemp("aesthetic")
    head = AestheticMLP(16)
    save_file(head.state_dict(), str(folder / "head.safetensors"))
    torch.save(head.state_dict(), str(folder / "head.pth"))
    return folder


@pytest.fixture(scope="session")
def image_reward_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("image_reward")
    state = tiny_image_reward_checkpoint()
    torch.save(state, str(folder / "ImageReward.pt"))
    save_bert_tokenizer(folder / "bert")
    return folder / "ImageReward.pt", folder / "bert", state


@pytest.fixture(scope="session")
def llava_folder(tmp_path_factory):
    from visalign.rewards.tiny_models import save_tiny_llava

    return save_tiny_llava(tmp_path_factory.mktemp("llava"))
