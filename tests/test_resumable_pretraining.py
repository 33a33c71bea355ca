"""``--save-every`` of ``pipelines/vvr_pretrain.py``: a stopped pretraining loop continues exactly where it stopped."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from diffusers.training_utils import EMAModel
from safetensors.torch import load_file

from visalign.core.errors import CheckpointError

from .conftest import load_pipeline_script

pretrain = load_pipeline_script("vvr_pretrain")


class Stopped(Exception):
    """Stands in for a run killed between two steps."""


def tiny_flow_loop(folder: Path | None, stop_at: int | None = None, steps: int = 6, options: dict | None = None):
    """A tiny flow trained ``steps`` steps with a weight average (checkpointed every 2 steps in ``folder``); the loss
    function raises on call ``stop_at``. Returns the flow and its average."""
    from visalign.generators import TinyFlowConfig, TinyFlowGenerator

    torch.manual_seed(0)
    flow = TinyFlowGenerator(TinyFlowConfig(image_size=8, patch_size=2))
    ema = EMAModel(pretrain.trainable(flow), decay=0.9)
    images = torch.rand(4, 3, 8, 8, generator=torch.Generator().manual_seed(1)) * 2 - 1
    prompts = ["a red circle", "a blue square", "two green stars", "a circle left of a square"]
    calls = 0

    def loss_fn(g: torch.Generator) -> torch.Tensor:
        nonlocal calls
        calls += 1
        if calls == stop_at:
            raise Stopped
        idx = torch.randint(4, (4,), generator=g)
        return flow.flow_matching_loss(images[idx], flow.encode([prompts[i] for i in idx]), generator=g)

    checkpoint = (pretrain.LoopCheckpoint(folder, 2, options or {"seed": 0}) if folder is not None else None)
    loop = pretrain.budgeted_training(flow, loss_fn, minutes=60, max_steps=steps, lr=1e-3, seed=3, desc="flow",
                                      ema=ema, checkpoint=checkpoint)
    assert loop.step == steps and loop.seconds > 0
    return flow, ema


def test_a_stopped_loop_continues_to_the_same_weights_and_average(tmp_path: Path) -> None:
    """Stopped during step 5 (last save at step 4) and run again, the loop ends with the weights and weight average
    of the uninterrupted loop, bit for bit (optimizer moments, the noise generator and the schedule continue)."""
    whole, whole_ema = tiny_flow_loop(None)
    with pytest.raises(Stopped):
        tiny_flow_loop(tmp_path / "flow", stop_at=5)
    saved = json.loads((tmp_path / "flow" / "state.json").read_text())
    assert saved["__dict__"][0][0] == "loop"
    continued, continued_ema = tiny_flow_loop(tmp_path / "flow")
    for (name, a), b in zip(whole.state_dict().items(), continued.state_dict().values()):
        assert torch.equal(a, b), name
    for a, b in zip(whole_ema.shadow_params, continued_ema.shadow_params):
        assert torch.equal(a, b)
    assert continued_ema.optimization_step == whole_ema.optimization_step == 6
    # the continued run did only the two missing steps' worth of work: a rerun now finds the loop finished
    finished, _ = tiny_flow_loop(tmp_path / "flow", stop_at=1)
    assert all(torch.equal(a, b) for a, b in zip(finished.state_dict().values(), whole.state_dict().values()))


def test_a_checkpoint_of_other_options_or_with_a_corrupt_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(Stopped):
        tiny_flow_loop(tmp_path / "flow", stop_at=3, options={"seed": 0, "lr": 1e-3})
    with pytest.raises(CheckpointError, match=r"other options \(lr\)"):
        tiny_flow_loop(tmp_path / "flow", options={"seed": 0, "lr": 2e-3})
    tensors = tmp_path / "flow" / "state.safetensors"
    data = bytearray(tensors.read_bytes())
    data[-1] ^= 0xFF
    tensors.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="state.safetensors"):
        tiny_flow_loop(tmp_path / "flow", options={"seed": 0, "lr": 1e-3})


def test_pretrain_script_continues_from_its_checkpoints(tmp_path: Path, capsys) -> None:
    """``--save-every 1``: both loops leave checkpoints in ``<out>/resume``; the same command again continues from
    them (no step trained twice, the same flow weights); other training options are refused."""
    common = ["--bench-per-bin", "0", "--pool", "8", "--flow-steps", "2", "--distill-steps", "2", "--distill-pairs",
              "4", "--batch", "4", "--eval-n", "2", "--out", str(tmp_path / "out"), "--save-every", "1"]
    assert pretrain.main([*common, "--assets", str(tmp_path / "first")]) == 0
    assert sorted(p.name for p in (tmp_path / "out" / "resume").iterdir()) == ["distill", "flow"]
    capsys.readouterr()
    assert pretrain.main([*common, "--assets", str(tmp_path / "again")]) == 0
    printed = capsys.readouterr().out
    assert "flow matching: continuing at step 2" in printed and "one-step distillation: continuing at step 2" in printed
    first_run, continued = (json.loads((tmp_path / run / "tiny_one_step_vvr2" / "pretrain_metrics.json").read_text())
                            for run in ("first", "again"))
    assert "earlier_processes_training_seconds" not in first_run
    earlier = continued["earlier_processes_training_seconds"]  # the first process's two loops, up to their last save
    assert 0 < earlier <= first_run["flow_seconds"] + first_run["distill_seconds"] + 0.1
    assert continued["total_seconds"] > earlier
    for name in ("tiny_flow_vvr2", "tiny_one_step_vvr2"):
        first, again = (load_file(tmp_path / run / name / "model.safetensors") for run in ("first", "again"))
        assert all(torch.equal(first[k], again[k]) for k in first), name
    with pytest.raises(CheckpointError, match=r"other options \(lr\)"):
        pretrain.main([*common, "--assets", str(tmp_path / "x"), "--lr", "5e-4"])


def tiny_bert(folder: Path) -> Path:
    """A randomly initialised one-layer BERT and its word tokenizer saved in ``folder`` (a local text-encoder folder)."""
    from transformers import BertConfig, BertModel, BertTokenizer

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "red", "blue", "circle", "square", "left", "of"]
    torch.manual_seed(0)
    BertTokenizer(vocab={w: i for i, w in enumerate(words)}).save_pretrained(folder)
    BertModel(BertConfig(vocab_size=len(words), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=32, max_position_embeddings=32)).save_pretrained(folder)
    return folder


def test_a_continued_run_loads_the_encoded_pool_instead_of_encoding_it(tmp_path: Path, monkeypatch) -> None:
    """``encode_pool``: the first run encodes the pool and writes it beside its checkpoints; a continued run (a new
    process: the in-memory cache is empty) loads it and calls the frozen encoder for no prompt of the pool."""
    from visalign.generators.pretrained_text import PretrainedTextEncoder

    encoder = PretrainedTextEncoder(str(tiny_bert(tmp_path / "bert")), hidden=8, max_length=12)
    pool = ["a red circle", "a blue square", "a red circle left of a blue square", "a red circle"]
    calls = []
    encode = encoder._encode_frozen
    monkeypatch.setattr(encoder, "_encode_frozen", lambda ps: calls.append(list(ps)) or encode(ps))
    saved = tmp_path / "out" / "resume" / "prompt_states"
    pretrain.encode_pool(encoder, pool, saved)
    assert calls and sorted(p for batch in calls for p in batch) == sorted(set(pool)) and saved.is_dir()
    first = encoder.frozen_features(pool)
    encoder._frozen.cache.clear()
    calls.clear()
    pretrain.encode_pool(encoder, pool, saved)
    assert calls == []
    assert all(torch.equal(a, b) for a, b in zip(encoder.frozen_features(pool), first))


def test_distilling_from_a_given_teacher_keeps_the_encoded_pool_too(tmp_path: Path, monkeypatch) -> None:
    """``--teacher`` with a pretrained text encoder and ``--save-every``: the pool goes through ``encode_pool`` with
    the run's saved folder (so a continued distillation loads it rather than encoding it again), once."""
    common = ["--bench-per-bin", "0", "--pool", "8", "--flow-steps", "1", "--distill-steps", "1", "--distill-pairs",
              "4", "--batch", "4", "--eval-n", "2", "--max-length", "24",
              "--text-encoder", str(tiny_bert(tmp_path / "bert"))]
    assert pretrain.main([*common, "--out", str(tmp_path / "flow_run"), "--assets", str(tmp_path / "flow")]) == 0
    encode_pool, folders = pretrain.encode_pool, []
    monkeypatch.setattr(pretrain, "encode_pool", lambda enc, ps, saved: folders.append(saved) or encode_pool(enc, ps, saved))
    out = tmp_path / "distil_run"
    assert pretrain.main([*common, "--out", str(out), "--assets", str(tmp_path / "student"), "--save-every", "1",
                          "--teacher", str(tmp_path / "flow" / "tiny_flow_vvr2")]) == 0
    assert folders == [out / "resume" / "prompt_states"] and folders[0].is_dir()
