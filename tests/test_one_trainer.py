"""One Trainer class runs visual and text jobs built from the same kind of run config."""
import pytest
import torch

from visalign.core import from_dict
from visalign.run import RunConfig, build_trainer
from visalign.text import ADDITION_CHARS, CausalLMPolicy, char_tokenizer, tiny_causal_lm
from visalign.trainer import Trainer


@pytest.fixture
def lm_folder(tmp_path):
    tokenizer = char_tokenizer(ADDITION_CHARS)
    model = tiny_causal_lm(tokenizer, "gpt2", hidden=32, layers=2, heads=2, max_positions=32, seed=0)
    return CausalLMPolicy(model, tokenizer, max_new_tokens=4).save_pretrained(tmp_path / "lm")


def _run(tmp_path, name, **sections):
    trainer_cfg = {"steps": 1, "prompts_per_step": 2, "log_with": [], "progress": False, "output_dir": str(tmp_path / name)}
    return build_trainer(from_dict(RunConfig, {**sections, "trainer": trainer_cfg}))


def test_visual_and_text_jobs_share_the_trainer(tmp_path, lm_folder):
    visual = _run(tmp_path, "visual", generator={"name": "tiny_one_step"}, reward="color_match",
                  algorithm={"name": "rwtd", "num_current": 4, "num_reference": 4, "features": "conv"},
                  prompts={"name": "list", "prompts": ["a red circle", "a blue square"]})
    text = _run(tmp_path, "text", policy={"type": "causal_lm", "path": str(lm_folder), "max_new_tokens": 4},
                reward="text_exact_match", algorithm={"name": "text_grpo", "group_size": 4, "advantage": "mapp"},  # non-zero even when all fail
                prompts={"name": "text_addition", "digits": 1, "num_eval": 10})
    assert type(visual) is type(text) is Trainer
    for trainer, expected in ((visual, 8), (text, 8)):
        before = [p.detach().clone() for p in trainer.params]
        metrics = trainer.train_step()
        assert metrics["samples_seen"] == expected
        assert torch.isfinite(torch.tensor(metrics["loss"]))
        assert any(not torch.equal(a, b) for a, b in zip(before, trainer.params))
    assert isinstance(text.policy, CausalLMPolicy)


def test_text_policy_section_is_validated(tmp_path):
    from visalign.core import ConfigError

    with pytest.raises(ConfigError, match="policy.type"):
        _run(tmp_path, "bad", policy={"type": "seq2seq", "path": "x"}, reward="text_exact_match", algorithm={"name": "text_grpo"})
