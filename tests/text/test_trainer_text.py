"""Text jobs on the shared Trainer: one step, and checkpoint / resume of the text policy."""
import json

import pytest
import torch

from visalign.text import CausalLMPolicy, ExactMatchReward, TextGRPO, TextGRPOConfig, tiny_causal_lm
from visalign.core import PromptList
from visalign.trainer import Trainer, TrainerConfig

PROMPTS = PromptList(["1+2=", "3+4=", "5+5=", "2+7="], [{"answer": "3"}, {"answer": "7"}, {"answer": "10"}, {"answer": "9"}],
                     eval_prompts=["4+4="], eval_metadata=[{"answer": "8"}])


def make_policy(tokenizer):
    return CausalLMPolicy(tiny_causal_lm(tokenizer, "gpt2", hidden=32, layers=1, heads=2, max_positions=32, seed=3), tokenizer,
                          max_new_tokens=3)


def make_trainer(tokenizer, out, steps, **kw):
    cfg = TrainerConfig(steps=steps, prompts_per_step=2, learning_rate=1e-2, eval_batch_size=1, output_dir=str(out), log_with=[],
                        cpu=True, progress=False, **kw)
    algo = TextGRPO(TextGRPOConfig(group_size=4, advantage="mapp"))
    return Trainer(make_policy(tokenizer), algo, ExactMatchReward(), PROMPTS, cfg)


def test_one_text_step_on_shared_trainer(tokenizer, tmp_path):
    trainer = make_trainer(tokenizer, tmp_path, steps=1)
    before = {k: v.clone() for k, v in trainer.policy.state_dict().items()}
    summary = trainer.train()
    assert trainer.step == 1 and "eval/reward_mean" in summary
    after = trainer.policy.state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)
    record = json.loads((tmp_path / "metrics.jsonl").read_text().splitlines()[1])
    assert {"loss", "reward/mean", "adv/abs_mean", "completion_len"} <= set(record)


def test_checkpoint_resume_matches_uninterrupted_run(tokenizer, tmp_path):
    full = make_trainer(tokenizer, tmp_path / "full", steps=3)
    full.train()
    part = make_trainer(tokenizer, tmp_path / "part", steps=2, save_every=2)
    part.train()
    ckpt = tmp_path / "part" / "checkpoints" / "step_000002"
    assert (ckpt / "policy.safetensors").is_file()
    resumed = make_trainer(tokenizer, tmp_path / "part", steps=3, resume_from=str(ckpt))
    assert resumed.step == 2 and resumed.algorithm.posterior.table == part.algorithm.posterior.table
    resumed.train()
    for (k, a), b in zip(full.policy.state_dict().items(), resumed.policy.state_dict().values()):
        assert torch.allclose(a, b, atol=1e-6), k
    assert resumed.algorithm.posterior.table == full.algorithm.posterior.table


def test_trained_policy_saves_as_transformers_folder(tokenizer, tmp_path):
    trainer = make_trainer(tokenizer, tmp_path, steps=1)
    trainer.train()
    trainer.policy.save_pretrained(tmp_path / "export")
    loaded = CausalLMPolicy.from_pretrained(tmp_path / "export")
    s = loaded.sample(["1+2="], torch.Generator().manual_seed(0), num_samples=2)
    assert torch.allclose(loaded(s), trainer.policy(s), atol=1e-6)


@pytest.mark.parametrize("advantage", ["grpo", "mapp"])
def test_text_grpo_learns_a_simple_preference(tokenizer, tmp_path, advantage):
    """Reward 1 for completions starting with '1': a random tiny LM (~1/16 at start) learns it in a few steps."""
    from visalign.core import FunctionReward

    starts_with_one = FunctionReward(lambda s, p, m: torch.tensor([float(t.startswith("1")) for t in s]), name="starts_with_1")
    cfg = TrainerConfig(steps=15, prompts_per_step=4, learning_rate=1e-2, eval_batch_size=4, output_dir=str(tmp_path), log_with=[],
                        cpu=True, progress=False)
    policy = make_policy(tokenizer)
    trainer = Trainer(policy, TextGRPO(TextGRPOConfig(group_size=8, advantage=advantage)), starts_with_one, PROMPTS, cfg)
    trainer.train()
    rewards = [r["reward/mean"] for r in trainer.history if "reward/mean" in r]
    s = policy.sample(["1+2="], torch.Generator().manual_seed(1), num_samples=64)
    frac = sum(t.startswith("1") for t in s.texts) / 64
    assert rewards[0] < 0.3 and frac > 0.6
