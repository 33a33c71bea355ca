"""Composed text policies: token-level product of experts, SIR towards the sequence-level tilt, checkpoints."""
import pytest
import torch

from visalign.core import PromptBatch, TrainContext
from visalign.poem import ComposedCausalLMPolicy, compose_log_probs, sequence_log_ratios
from visalign.text import ADDITION_CHARS, CausalLMPolicy, ExactMatchReward, TextGRPO, TextGRPOConfig, char_tokenizer, tiny_causal_lm

PROMPT = ["1+2="]


@pytest.fixture(scope="module")
def experts():
    """A reference and two bases with peaked, different next-token distributions (final layer norm scaled up)."""
    tok = char_tokenizer(ADDITION_CHARS)
    out = []
    for seed in (0, 1, 2):
        policy = CausalLMPolicy(tiny_causal_lm(tok, "gpt2", hidden=32, layers=2, heads=2, max_positions=32, seed=seed), tok,
                                max_new_tokens=2)
        policy.model.transformer.ln_f.weight.data *= 20.0
        out.append(policy)
    return out


def _all_completions(vocab: int, eos: int) -> list[tuple[int, ...]]:
    return [(a,) if a == eos else (a, b) for a in range(vocab) for b in range(vocab) if a != eos or b == 0]


def _sequence_logp(policy, seqs):
    pi, pm = policy.encode_prompts(PROMPT * len(seqs))
    ids = torch.tensor([list(s) + [0] * (2 - len(s)) for s in seqs])
    mask = torch.tensor([[1] * len(s) + [0] * (2 - len(s)) for s in seqs])
    with torch.no_grad():
        return policy.token_logprobs(pi, pm, ids, mask).sum(1)


def _frequencies(samples, seqs):
    index = {s: i for i, s in enumerate(seqs)}
    counts = torch.zeros(len(seqs))
    for ids, m in zip(samples.completion_ids.tolist(), samples.completion_mask.tolist()):
        counts[index[tuple(t for t, keep in zip(ids, m) if keep)]] += 1
    return counts / counts.sum()


def test_zero_and_unit_coefficients_give_the_reference_and_a_basis(experts):
    ref, b1, b2 = experts
    s = ref.sample(["3+4=", "10+5="], torch.Generator().manual_seed(0), num_samples=4)
    args = (s.prompt_ids, s.prompt_mask, s.completion_ids, s.completion_mask)
    with torch.no_grad():
        zero = ComposedCausalLMPolicy(ref, [b1, b2], [0.0, 0.0]).token_logprobs(*args)
        unit = ComposedCausalLMPolicy(ref, [b1, b2], [0.0, 1.0]).token_logprobs(*args)
        torch.testing.assert_close(zero, ref.token_logprobs(*args), atol=1e-5, rtol=0)
        torch.testing.assert_close(unit, b2.token_logprobs(*args), atol=1e-5, rtol=0)


def test_token_level_sampling_equals_the_closed_form_on_one_token(experts):
    ref, b1, b2 = experts
    coef = torch.tensor([0.7, -0.4])
    composed = ComposedCausalLMPolicy(ref, [b1, b2], coef, max_new_tokens=1)
    pi, pm = ref.encode_prompts(PROMPT)
    with torch.no_grad():
        next_logp = [torch.log_softmax(p.model(input_ids=pi, attention_mask=pm).logits[0, -1].double(), -1) for p in experts]
    closed = compose_log_probs(next_logp[0], torch.stack(next_logp[1:]), coef.double()).exp()
    n = 6_000
    s = composed.sample(PROMPT, torch.Generator().manual_seed(0), num_samples=n)
    freq = torch.bincount(s.completion_ids[:, 0], minlength=len(closed)).double() / n
    assert (freq - closed).abs().max() < 4 * (closed * (1 - closed) / n).sqrt().max() + 1e-3


def test_sequence_level_sir_follows_the_sequence_tilt_where_the_token_product_does_not(experts):
    ref, b1, b2 = experts
    seqs = _all_completions(len(ref.tokenizer), ref.tokenizer.eos_token_id)
    lr, l1, l2 = (_sequence_logp(p, seqs) for p in experts)
    exact = torch.softmax(lr + (l1 - lr) + (l2 - lr), 0)
    token = ComposedCausalLMPolicy(ref, [b1, b2], [1.0, 1.0])
    seq = ComposedCausalLMPolicy(ref, [b1, b2], [1.0, 1.0], level="sequence", num_proposals=16)
    token_exact = _sequence_logp(token, seqs).exp()
    g = torch.Generator().manual_seed(0)
    tv_token = 0.5 * (_frequencies(token.sample(PROMPT, g, num_samples=500), seqs) - exact).abs().sum()
    tv_sir = 0.5 * (_frequencies(seq.sample(PROMPT, g, num_samples=500), seqs) - exact).abs().sum()
    assert 0.5 * (token_exact - exact).abs().sum() > 0.4  # per-token renormalisation is far from the sequence tilt here
    assert tv_token > 0.4 and tv_sir < 0.15
    assert 0 < seq.last_ess <= 1


def test_log_ratio_features_and_use_in_a_text_algorithm(experts):
    ref, b1, b2 = experts
    s = ref.sample(["1+1=", "2+2="], torch.Generator().manual_seed(1), num_samples=3)
    ell = sequence_log_ratios(ref, [b1, b2], s)
    assert ell.shape == (6, 2)
    torch.testing.assert_close(ell[:, 0], (b1(s) - ref(s)).sum(1).detach())
    composed = ComposedCausalLMPolicy(ref, [b1, b2], [0.5, 0.5], level="sequence", num_proposals=4)
    batch = PromptBatch(["1+1=", "2+2="], [{"answer": "2"}, {"answer": "4"}])
    ctx = TrainContext(composed, None, ExactMatchReward(), torch.device("cpu"))
    rollout = TextGRPO(TextGRPOConfig(group_size=2)).rollout(ctx, batch, torch.Generator().manual_seed(0))
    assert rollout.rewards.shape == (4,) and len(rollout.samples) == 4
    greedy = composed.sample(batch.prompts, torch.Generator().manual_seed(1), greedy=True)  # as text evaluation calls it
    assert len(greedy) == 2 and greedy.completion_ids.shape[0] == 2
    assert greedy.texts == composed.sample(batch.prompts, torch.Generator().manual_seed(1), greedy=True).texts


def test_save_load_round_trip_and_errors(experts, tmp_path):
    ref, b1, b2 = experts
    composed = ComposedCausalLMPolicy(ref, [b1, b2], [0.3, 0.6], strength=0.8, level="sequence", num_proposals=5)
    composed.save_pretrained(tmp_path / "poem")
    loaded = ComposedCausalLMPolicy.from_pretrained(tmp_path / "poem")
    assert loaded.level == "sequence" and loaded.num_proposals == 5 and loaded.strength == pytest.approx(0.8)
    torch.testing.assert_close(loaded.coef, composed.coef)
    a = composed.sample(PROMPT, torch.Generator().manual_seed(3), num_samples=6)
    b = loaded.sample(PROMPT, torch.Generator().manual_seed(3), num_samples=6)
    assert a.texts == b.texts
    with pytest.raises(FileNotFoundError, match="poem_text.json"):
        ComposedCausalLMPolicy.from_pretrained(tmp_path)
    with pytest.raises(ValueError, match=r"coef must have shape \[2\]"):
        ComposedCausalLMPolicy(ref, [b1, b2], [1.0])
    other = CausalLMPolicy(tiny_causal_lm(char_tokenizer("0123456789"), "gpt2", hidden=32, layers=1, heads=2, seed=0),
                           char_tokenizer("0123456789"))
    with pytest.raises(ValueError, match="another tokenizer"):
        ComposedCausalLMPolicy(ref, [other], [1.0])


def test_lora_adapters_of_one_base_compose_like_separate_models(tmp_path):
    from peft import LoraConfig, PeftModel, get_peft_model

    tok = char_tokenizer(ADDITION_CHARS)
    base = CausalLMPolicy(tiny_causal_lm(tok, "gpt2", hidden=32, layers=1, heads=2, max_positions=32, seed=0), tok, max_new_tokens=3)
    base.save_pretrained(tmp_path / "base")
    adapters = []
    for seed in (1, 2):
        torch.manual_seed(seed)
        model = CausalLMPolicy.from_pretrained(tmp_path / "base").model
        lora = LoraConfig(r=4, lora_alpha=16, target_modules=["c_attn"], fan_in_fan_out=True, init_lora_weights=False)
        get_peft_model(model, lora).save_pretrained(tmp_path / f"adapter{seed}")
        adapters.append(tmp_path / f"adapter{seed}")
    s = base.sample(["3+4=", "10+5="], torch.Generator().manual_seed(0), num_samples=3)
    args = (s.prompt_ids, s.prompt_mask, s.completion_ids, s.completion_mask)
    single = CausalLMPolicy(PeftModel.from_pretrained(CausalLMPolicy.from_pretrained(tmp_path / "base").model, str(adapters[1])), tok)
    with torch.no_grad():
        unit = ComposedCausalLMPolicy.from_adapters(tmp_path / "base", adapters, [0.0, 1.0])
        torch.testing.assert_close(unit.token_logprobs(*args), single.token_logprobs(*args), atol=1e-5, rtol=0)
        zero = ComposedCausalLMPolicy.from_adapters(tmp_path / "base", adapters, [0.0, 0.0])
        torch.testing.assert_close(zero.token_logprobs(*args), base.token_logprobs(*args), atol=1e-5, rtol=0)
        assert (single.token_logprobs(*args) - base.token_logprobs(*args)).abs().max() > 1e-3  # the adapter matters
    mixed = ComposedCausalLMPolicy.from_adapters(tmp_path / "base", adapters, [0.5, 0.5])
    mixed.save_pretrained(tmp_path / "poem")
    loaded = ComposedCausalLMPolicy.from_pretrained(tmp_path / "poem")
    g = lambda: torch.Generator().manual_seed(5)  # noqa: E731
    assert loaded.sample(["1+2="], g(), num_samples=4).texts == mixed.sample(["1+2="], g(), num_samples=4).texts
    with pytest.raises(FileNotFoundError, match="adapter_config.json"):
        ComposedCausalLMPolicy.from_adapters(tmp_path / "base", [tmp_path / "base"], [1.0])
