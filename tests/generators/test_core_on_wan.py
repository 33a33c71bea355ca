"""The CoRe algorithm on the tiny Wan text-to-video adapter (LoRA): one generator step and one LRM refit through the
Trainer, so a user with Wan 2.1 weights runs the same config with `generator.path` pointed at them."""
from __future__ import annotations

import torch

from visalign.algorithms.core_coevolve import CoRe, CoReConfig
from visalign.core import PromptList
from visalign.core.reward import get_reward
from visalign.generators import WanFlowModel
from visalign.rewards.latent import LatentPairs, LatentRewardConfig, build_lrm, save_lrm, save_pairs
from visalign.trainer import Trainer, TrainerConfig

from .tiny_pipelines import BUILDERS


def test_core_refits_its_lrm_and_trains_wan_lora(tmp_path):
    torch.manual_seed(0)
    BUILDERS["wan"]().save_pretrained(str(tmp_path / "wan"))  # what a user's generator.path points at
    gen = WanFlowModel(WanFlowModel.config_class(path=str(tmp_path / "wan"), height=16, width=16, num_frames=5, num_steps=2,
                                                 max_sequence_length=16, lora_rank=2))
    shape = list(gen.noise_shape)
    real = torch.randn(32, *shape, generator=torch.Generator().manual_seed(1))
    order = real.flatten(1).mean(1).argsort(descending=True)  # the judge: a higher mean latent wins
    winners, losers = real[order[:16]], real[order[16:]]
    save_pairs(LatentPairs(winners, losers, [""] * 16, "mean"), tmp_path / "pairs.safetensors")
    save_lrm(build_lrm(LatentRewardConfig(latent_shape=shape, hidden=16, layers=1)), tmp_path / "lrm")
    algo = CoRe(CoReConfig(lrm=str(tmp_path / "lrm"), pairs=str(tmp_path / "pairs.safetensors"), every=1, lrm_steps=1,
                           num_samples=2, lrm_batch=4))
    cfg = TrainerConfig(steps=1, prompts_per_step=1, learning_rate=1e-2, eval_every=0, eval_batch_size=2, log_with=[],
                        progress=False, output_dir=str(tmp_path / "run"))
    trainer = Trainer(gen, algo, get_reward("brightness"), PromptList(["a red ball"]), cfg)
    lora = {n: p.detach().clone() for n, p in gen.trainable_module().named_parameters() if p.requires_grad}
    head = [p.detach().clone() for p in algo.lrm.head.parameters()]
    summary = trainer.train()
    moved = [n for n, p in gen.trainable_module().named_parameters() if n in lora and not torch.equal(p, lora[n])]
    assert moved and all("lora" in n for n in lora)
    assert any(not torch.equal(p, q) for p, q in zip(algo.lrm.head.parameters(), head))  # the owned LRM was refit
    assert "eval/lrm_current" in summary and any("lrm/loss" in h for h in trainer.history)
    assert (tmp_path / "run" / "final" / "pytorch_lora_weights.safetensors").is_file()
