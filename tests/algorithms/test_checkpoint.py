"""Checkpoint/resume through the shared Trainer: a run resumed from step 2 ends bitwise where an uninterrupted run ends."""
import pytest
import torch

from visalign.core import Unconditional, build_algorithm
from visalign.generators import ToyFlowGenerator, ToyOneStepGenerator
from visalign.generators.toy import ToyConfig
from visalign.rewards.toy import ToyLinearReward, ToyQuadraticReward
from visalign.trainer import Trainer, TrainerConfig

METHODS = [
    ("rwtd", "one_step", {"lam": 0.5, "num_current": 16, "num_reference": 16, "solver": "sinkhorn"}),
    ("rwtd", "one_step", {"lam": 0.0, "num_current": 16, "num_reference": 16, "solver": "emd", "target_ess": 0.5}),
    ("festdpo", "flow", {"num_samples": 16, "num_pairs": 8, "labels": "sampled"}),
    ("festdpo", "one_step", {"num_samples": 16, "num_pairs": 8, "bandwidth_anneal": 3.0, "bandwidth_anneal_steps": 4}),
    ("rwr", "flow", {"num_samples": 8}),
    ("rwr", "one_step", {"num_samples": 8}),
    ("reward_backprop", "one_step", {"anchor_weight": 0.1}),
    ("reward_backprop", "flow", {"truncate_steps": 1}),
    ("flow_grpo", "flow", {"group_size": 4, "num_steps": 3, "updates_per_rollout": 2}),
    ("diffusion_nft", "flow", {"group_size": 4, "num_steps": 3, "decay_rate": 0.2, "kl_beta": 0.1}),
]


def make_policy(family, seed=0):
    torch.manual_seed(seed)
    cfg = ToyConfig(hidden=16, layers=2, num_steps=3)
    return ToyOneStepGenerator(cfg) if family == "one_step" else ToyFlowGenerator(cfg)


def run(name, family, overrides, out, steps, resume=None, reference=None, seed=0):
    policy = make_policy(family, seed)
    reference = reference if reference is not None else policy.frozen_copy()
    cfg = TrainerConfig(steps=steps, prompts_per_step=2, learning_rate=1e-2, save_every=2, log_with=[], progress=False,
                        output_dir=str(out), resume_from=resume, eval_batch_size=4)
    reward = ToyQuadraticReward() if name not in ("flow_grpo", "diffusion_nft") else ToyLinearReward()
    trainer = Trainer(policy, build_algorithm({"name": name, **overrides}), reward, Unconditional(), cfg, reference=reference)
    trainer.train()
    return policy, reference


@pytest.mark.parametrize("name,family,overrides", METHODS, ids=[f"{m[0]}-{m[1]}-{i}" for i, m in enumerate(METHODS)])
def test_resume_matches_uninterrupted_run(name, family, overrides, tmp_path):
    full, reference = run(name, family, overrides, tmp_path / "full", steps=4)
    start = make_policy(family)
    assert any(not torch.equal(a, b) for a, b in zip(full.state_dict().values(), start.state_dict().values())), "training did not move"
    resumed, _ = run(name, family, overrides, tmp_path / "full", steps=4,
                     resume=str(tmp_path / "full" / "checkpoints" / "step_000002"), reference=reference, seed=1)
    # (a different initialisation: only a real restore of the step-2 weights, optimizer and RNG can match)
    for key, value in full.state_dict().items():
        assert torch.equal(value, resumed.state_dict()[key]), f"{name}: {key} differs after resume"
