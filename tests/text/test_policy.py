"""CausalLMPolicy: seeded sampling, masks, log-prob correctness, save/load and frozen copies."""
import pytest
import torch

from visalign.text import CausalLMPolicy

PROMPTS = ["1+2=", "13+45=", "7+70="]


def test_seeded_sampling_is_deterministic_and_grouped(policy):
    a = policy.sample(PROMPTS, torch.Generator().manual_seed(0), num_samples=3)
    b = policy.sample(PROMPTS, torch.Generator().manual_seed(0), num_samples=3)
    c = policy.sample(PROMPTS, torch.Generator().manual_seed(1), num_samples=3)
    assert a.texts == b.texts and torch.equal(a.completion_ids, b.completion_ids)
    assert a.texts != c.texts
    assert len(a) == 9 and a.completion_ids.shape[1] <= 5
    # groups are contiguous: rows 0..2 share prompt 0
    assert torch.equal(a.prompt_ids[0], a.prompt_ids[2]) and not torch.equal(a.prompt_ids[2], a.prompt_ids[3])


def test_cache_and_no_cache_sampling_agree(policy):
    a = policy.sample(PROMPTS, torch.Generator().manual_seed(3), num_samples=2)
    policy.use_cache = False
    b = policy.sample(PROMPTS, torch.Generator().manual_seed(3), num_samples=2)
    assert torch.equal(a.completion_ids, b.completion_ids)
    assert torch.allclose(a.logprobs, b.logprobs, atol=1e-5)


def test_sampling_logprobs_match_teacher_forced_scoring(policy):
    s = policy.sample(PROMPTS, torch.Generator().manual_seed(0), num_samples=4)
    assert torch.allclose(policy(s), s.logprobs, atol=1e-5)


def test_token_logprobs_match_manual_unpadded_computation(policy):
    # score the padded batch, then each row alone without padding via the raw model
    s = policy.sample(PROMPTS, torch.Generator().manual_seed(0), num_samples=1)
    batched = policy(s)
    for i, prompt in enumerate(PROMPTS):
        p_ids = torch.tensor([policy.tokenizer(prompt)["input_ids"]])
        n = int(s.completion_mask[i].sum())
        c_ids = s.completion_ids[i : i + 1, :n]
        logits = policy.model(input_ids=torch.cat([p_ids, c_ids], 1)).logits[0]
        logp = torch.log_softmax(logits[p_ids.shape[1] - 1 : -1], -1).gather(-1, c_ids[0, :, None]).squeeze(-1)
        assert torch.allclose(batched[i, :n], logp, atol=1e-5)
        assert torch.all(batched[i, n:] == 0)


def test_temperature_scales_logprobs(gpt2_policy):
    s = gpt2_policy.sample(PROMPTS, torch.Generator().manual_seed(0))
    logits = gpt2_policy.completion_logits(s.prompt_ids, s.prompt_mask, s.completion_ids, s.completion_mask)
    gpt2_policy.temperature = 2.0
    expected = torch.log_softmax(logits / 2.0, -1).gather(-1, s.completion_ids[..., None]).squeeze(-1) * s.completion_mask
    assert torch.allclose(gpt2_policy(s), expected, atol=1e-6)


def test_completion_mask_covers_tokens_up_to_eos(tokenizer):
    from transformers.modeling_outputs import CausalLMOutput

    class Scripted(torch.nn.Module):
        """Always predicts '4', then EOS: completions are exactly '4'."""

        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(1))

        def forward(self, input_ids, attention_mask=None, position_ids=None, use_cache=False, **kw):
            v = len(tokenizer)
            logits = torch.full((*input_ids.shape, v), -30.0)
            four, eos = tokenizer.convert_tokens_to_ids("4"), tokenizer.eos_token_id
            last_is_four = input_ids == four
            logits[..., four] = torch.where(last_is_four, -30.0, 30.0)
            logits[..., eos] = torch.where(last_is_four, 30.0, -30.0)
            return CausalLMOutput(logits=logits + 0 * self.w)

    pol = CausalLMPolicy(Scripted(), tokenizer, max_new_tokens=5, use_cache=False)
    s = pol.sample(["1+3=", "2+2="], torch.Generator().manual_seed(0), num_samples=2)
    assert s.texts == ["4"] * 4
    assert s.completion_mask.tolist() == [[1, 1]] * 4  # '4' and EOS, then the loop stops
    assert s.completion_ids[0].tolist() == [tokenizer.convert_tokens_to_ids("4"), tokenizer.eos_token_id]


def test_save_load_roundtrip_and_frozen_copy(gpt2_policy, tmp_path):
    s = gpt2_policy.sample(PROMPTS, torch.Generator().manual_seed(0))
    gpt2_policy.save_pretrained(tmp_path / "p")
    loaded = CausalLMPolicy.from_pretrained(tmp_path / "p")
    assert loaded.max_new_tokens == 4
    assert torch.allclose(loaded(s), gpt2_policy(s), atol=1e-6)
    ref = gpt2_policy.frozen_copy()
    assert not any(p.requires_grad for p in ref.parameters()) and not ref.training
    with torch.no_grad():
        for p in gpt2_policy.parameters():
            p.add_(0.5 * torch.randn_like(p))
    assert not torch.allclose(ref(s), gpt2_policy(s))


def test_errors(gpt2_policy, tmp_path):
    with pytest.raises(FileNotFoundError, match="not found"):
        CausalLMPolicy.from_pretrained(tmp_path / "missing")
    with pytest.raises(ValueError, match="temperature"):
        CausalLMPolicy(gpt2_policy.model, gpt2_policy.tokenizer, temperature=0.0)
    with pytest.raises(ValueError, match="num_samples"):
        gpt2_policy.sample(PROMPTS, None, num_samples=0)
