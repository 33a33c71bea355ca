"""Runs that never lose data: atomic checkpoints, integrity checks, safe output folders, config-aware resume."""
import json
import subprocess
import sys

import pytest
import torch
import yaml

from visalign.core import FunctionReward, Unconditional, load_generator
from visalign.core.config import ConfigError
from visalign.core.errors import CheckpointError
from visalign.generators import ToyFlowGenerator, ToyOneStepGenerator
from visalign.trainer import SampleCounter, Trainer, TrainerCallback, TrainerConfig
from visalign.trainer import state as ckpt
from visalign.trainer.lock import LOCK_FILE, FolderLockedError

from .conftest import ShiftTowardReward

WRITERS = ("save_module", "save_state_dict", "write_json", "write_text", "seal", "publish", "point_latest")


class Interrupted(Exception):
    """Stands in for the process being killed."""


@pytest.fixture(autouse=True)
def _no_pictures(monkeypatch):
    """Sample grids and reward curves are not what these tests check; skipping them keeps the many short runs fast."""
    monkeypatch.setattr("visalign.trainer.trainer.save_samples", lambda *a, **k: None)
    monkeypatch.setattr("visalign.trainer.trainer.plot_reward_curve", lambda *a, **k: None)


def x0_reward(name="x0"):
    return FunctionReward(lambda s, p, m: s[:, 0], name=name)


def make_trainer(out, steps, policy=None, algorithm=None, reward=None, callbacks=(), **overrides):
    torch.manual_seed(0)
    settings = dict(steps=steps, prompts_per_step=8, eval_batch_size=8, output_dir=str(out), log_with=[], progress=False,
                    ema_decay=0.9)
    cfg = TrainerConfig(**{**settings, **overrides})
    return Trainer(policy or ToyOneStepGenerator(), algorithm or ShiftTowardReward(), reward or x0_reward(), Unconditional(), cfg,
                   callbacks=callbacks)


def train_records(out):
    return [r for r in map(json.loads, (out / "metrics.jsonl").read_text().splitlines()) if "loss" in r]


def checkpoint(out, step):
    return out / "checkpoints" / f"step_{step:06d}"


def fail_writes_after(monkeypatch, allowed):
    """Make the checkpoint writers raise on their call number ``allowed`` (0-based), counted over all of them."""
    calls = []
    for name in WRITERS:
        real = getattr(ckpt, name)

        def writer(*args, _real=real, _name=name, **kwargs):
            if len(calls) == allowed:
                raise Interrupted(f"killed before {_name}")
            calls.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(ckpt, name, writer)
    return calls


def test_a_save_interrupted_in_any_window_resumes_exactly(tmp_path, monkeypatch):
    """A kill (simulated: a writer raises) before the first file, between two files, before ``latest`` and after it."""
    interrupted_saves_resume_exactly(tmp_path, monkeypatch, cuts=lambda n: (0, n // 2, n - 1, n))


@pytest.mark.slow
def test_a_save_interrupted_after_every_file_resumes_exactly(tmp_path, monkeypatch):
    interrupted_saves_resume_exactly(tmp_path, monkeypatch, cuts=lambda n: range(n + 1))


def interrupted_saves_resume_exactly(tmp_path, monkeypatch, cuts):
    """Kill (simulated: a writer raises) inside windows of save_checkpoint; resuming from ``latest`` then gives
    bitwise the weights, EMA and metrics of an uninterrupted run."""
    full = make_trainer(tmp_path / "full", steps=2)
    full.train()
    with monkeypatch.context() as m:
        per_save = fail_writes_after(m, allowed=10**6)
        make_trainer(tmp_path / "count", steps=1, save_every=1).train()
    per_save = len(per_save) - 1  # the final export's publish is not part of the save
    assert per_save >= 10
    for cut in cuts(per_save):
        out = tmp_path / f"cut{cut}"
        with monkeypatch.context() as m:
            fail_writes_after(m, allowed=per_save + cut)  # the step-1 save completes, the step-2 save is cut
            with pytest.raises(Interrupted):
                make_trainer(out, steps=2, save_every=1).train()
        latest = (out / "checkpoints" / "latest").read_text()
        ckpt.verify(out / "checkpoints" / latest)
        assert not (out / LOCK_FILE).exists()
        resumed = make_trainer(out, steps=2, save_every=1, resume_from="latest")
        assert resumed.step == (2 if cut == per_save else 1), cut  # latest moves with the last write
        resumed.train()
        for a, b in zip(full.policy.parameters(), resumed.policy.parameters()):
            assert torch.equal(a, b), f"cut after write {cut}"
        for a, b in zip(full.ema.shadow_params, resumed.ema.shadow_params):
            assert torch.equal(a, b), f"cut after write {cut}"
        assert train_records(out) == train_records(tmp_path / "full"), f"cut after write {cut}"


def test_sample_counts_continue_across_a_resume(tmp_path):
    """A run resumed from its step-2 checkpoint ends with the sample totals of the uninterrupted run."""
    full = SampleCounter()
    make_trainer(tmp_path, steps=3, save_every=1, callbacks=[full]).train()
    assert full.counts["policy"] > 0 and full.counts["scored"] > 0
    resumed = SampleCounter()
    make_trainer(tmp_path, steps=3, resume_from=str(checkpoint(tmp_path, 2)), callbacks=[resumed]).train()
    assert resumed.counts == full.counts


def test_sample_counts_refuse_a_resume_without_a_count_at_its_step(tmp_path):
    make_trainer(tmp_path / "logged", steps=4, save_every=1, log_every=2, callbacks=[SampleCounter()]).train()
    with pytest.raises(ValueError, match="resumed step 3: the last count is at step 2"):
        make_trainer(tmp_path / "logged", steps=4, resume_from=str(checkpoint(tmp_path / "logged", 3)), log_every=2,
                     callbacks=[SampleCounter()]).train()
    make_trainer(tmp_path / "uncounted", steps=1, save_every=1).train()
    with pytest.raises(ValueError, match="resumed step 1: it holds no sample counts"):
        make_trainer(tmp_path / "uncounted", steps=2, resume_from="latest", callbacks=[SampleCounter()]).train()


def test_latest_is_written_after_the_rng_files_and_a_missing_rng_file_is_an_error(tmp_path):
    make_trainer(tmp_path, steps=2, save_every=2).train()
    folder = checkpoint(tmp_path, 2)
    assert (folder / "rng_0.json").is_file() and (folder / "manifest.json").is_file()
    (folder / "rng_0.json").unlink()
    with pytest.raises(CheckpointError, match="rng_0.json"):
        make_trainer(tmp_path, steps=4, resume_from="latest")


@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_damaged_weights_are_refused_naming_the_file(tmp_path, damage):
    make_trainer(tmp_path, steps=2, save_every=2).train()
    for weights in (checkpoint(tmp_path, 2) / "policy.safetensors", tmp_path / "final" / "model.safetensors"):
        data = bytearray(weights.read_bytes())
        if damage == "flip":
            data[len(data) - 3] ^= 0x01
        else:
            data = data[: len(data) // 2]
        weights.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"policy\.safetensors is corrupt"):
        make_trainer(tmp_path, steps=4, resume_from="latest")
    with pytest.raises(CheckpointError, match=r"final/model\.safetensors is corrupt"):
        load_generator(tmp_path / "final")


def test_truncated_weights_without_a_manifest_name_the_file(tmp_path):
    ToyOneStepGenerator().save_pretrained(tmp_path)
    (tmp_path / "manifest.json").unlink()
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-20])
    with pytest.raises(CheckpointError, match=r"model\.safetensors is not a readable safetensors file"):
        load_generator(tmp_path)


def test_partial_and_missing_checkpoints_are_errors_naming_them(tmp_path):
    make_trainer(tmp_path, steps=2, save_every=2).train()
    folder = checkpoint(tmp_path, 2)
    (folder / "manifest.json").unlink()
    with pytest.raises(CheckpointError, match="step_000002 is partial"):
        make_trainer(tmp_path, steps=4, resume_from="latest")
    (tmp_path / "checkpoints" / "latest").write_text("step_000009")
    with pytest.raises(CheckpointError, match="step_000009, which does not exist"):
        make_trainer(tmp_path, steps=4, resume_from="latest")


def test_a_new_run_in_a_shared_folder_prunes_only_its_own_checkpoints(tmp_path):
    make_trainer(tmp_path, steps=4, save_every=1, keep_checkpoints=2).train()
    assert sorted(p.name for p in (tmp_path / "checkpoints").glob("step_*")) == ["step_000003", "step_000004"]
    second = make_trainer(tmp_path, steps=2, save_every=1, keep_checkpoints=2, overwrite=True, learning_rate=3e-4)
    second.train()
    names = sorted(p.name for p in (tmp_path / "checkpoints").glob("step_*"))
    assert names == ["step_000001", "step_000002", "step_000003", "step_000004"]
    assert (tmp_path / "checkpoints" / "latest").read_text() == "step_000002"
    resumed = make_trainer(tmp_path, steps=3, save_every=1, keep_checkpoints=2, resume_from="latest", learning_rate=3e-4)
    assert resumed.step == 2 and resumed.run_id == second.run_id
    resumed.train()
    names = sorted(p.name for p in (tmp_path / "checkpoints").glob("step_*"))
    assert names == ["step_000002", "step_000003", "step_000004"]  # its own step 1 pruned; the old run's step 4 kept


def test_a_non_empty_output_folder_is_refused_unless_resumed_or_overwritten(tmp_path):
    make_trainer(tmp_path, steps=2).train()
    with pytest.raises(ConfigError, match="is not empty.*resume_from=latest.*overwrite=true"):
        make_trainer(tmp_path, steps=2)
    make_trainer(tmp_path, steps=3, overwrite=True).train()
    assert [r["step"] for r in train_records(tmp_path)] == [1, 2, 3]  # the first run's records are gone, not mixed in
    with pytest.raises(ConfigError, match="cannot be created"):
        make_trainer(tmp_path / "summary.json" / "sub", steps=1)


class StartSecondRun(TrainerCallback):
    def __init__(self, out):
        self.out, self.error = out, None

    def on_step_end(self, trainer, metrics):
        if self.error is None:
            try:
                make_trainer(self.out, steps=1, overwrite=True).train()
            except FolderLockedError as exc:
                self.error = exc


def test_a_second_run_into_a_folder_in_use_is_refused(tmp_path):
    first = make_trainer(tmp_path, steps=2)
    watcher = StartSecondRun(tmp_path)
    first.callbacks.append(watcher)
    first.train()
    assert watcher.error is not None and f"process {__import__('os').getpid()}" in str(watcher.error)
    assert [r["step"] for r in train_records(tmp_path)] == [1, 2]  # nothing of the second run was written
    assert not (tmp_path / LOCK_FILE).exists()


def test_a_stale_lock_of_a_dead_process_is_taken_over(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    import socket

    (tmp_path / LOCK_FILE).write_text(json.dumps({"pid": int(dead.stdout), "host": socket.gethostname()}))
    make_trainer(tmp_path, steps=1, overwrite=True).train()
    assert not (tmp_path / LOCK_FILE).exists()


def test_the_run_config_is_saved_in_the_folder_and_every_checkpoint(tmp_path):
    from visalign.run import build_trainer, load_run_config

    config = load_run_config(None, ["generator.name=toy_one_step", "reward=toy_linear", "algorithm.name=rwr", "algorithm.num_samples=4",
                                    f"trainer.output_dir={tmp_path}", "trainer.steps=2", "trainer.save_every=1",
                                    "trainer.log_with=[]", "trainer.progress=false", "trainer.eval_batch_size=4",
                                    "trainer.prompts_per_step=2"])
    build_trainer(config).train()
    saved = yaml.safe_load((tmp_path / "config.yaml").read_text())
    assert saved["trainer"]["steps"] == 2 and saved["algorithm"] == {"name": "rwr", "num_samples": 4}
    for step in (1, 2):
        assert yaml.safe_load((checkpoint(tmp_path, step) / "config.yaml").read_text()) == saved


class OtherShift(ShiftTowardReward):
    name = "test_other_shift"


@pytest.mark.parametrize("change, message", [
    (dict(algorithm=OtherShift()), "algorithm 'test_shift'.*'test_other_shift'"),
    (dict(reward=x0_reward("another_reward")), "reward 'x0'.*'another_reward'"),
    (dict(policy=ToyFlowGenerator()), "policy .generator. class"),
    (dict(ema_decay=None), "EMA weights.*no EMA"),
])
def test_resume_refuses_another_algorithm_policy_reward_or_dropping_ema(tmp_path, change, message):
    make_trainer(tmp_path, steps=1, save_every=1).train()
    with pytest.raises(ConfigError, match=message):
        make_trainer(tmp_path, steps=2, resume_from="latest", **change)


def test_resume_warns_about_and_applies_changed_optimiser_settings(tmp_path):
    make_trainer(tmp_path, steps=1, save_every=1, learning_rate=1e-3, max_grad_norm=1.0).train()
    with pytest.warns(UserWarning) as caught:
        resumed = make_trainer(tmp_path, steps=2, resume_from="latest", learning_rate=2e-3, max_grad_norm=0.5,
                               weight_decay=0.01, ema_decay=0.8)
    messages = " | ".join(str(w.message) for w in caught)
    for expected in ("learning_rate changed from 0.001 to 0.002", "max_grad_norm changed from 1.0 to 0.5",
                     "weight_decay changed from 0.0 to 0.01", "ema_decay changed from 0.9 to 0.8"):
        assert expected in messages
    group = resumed.optimizer.param_groups[0]
    assert group["lr"] == 2e-3 and group["weight_decay"] == 0.01 and resumed.ema.decay == 0.8
    resumed.train()
    assert train_records(tmp_path)[-1]["lr"] == 2e-3


@pytest.mark.slow
def test_two_process_save_and_resume_matches_an_uninterrupted_run(tmp_path):
    import os
    from pathlib import Path

    script = Path(__file__).parent / "scripts" / "two_process_resume.py"
    env = {**os.environ, "ACCELERATE_USE_CPU": "1", "OMP_NUM_THREADS": "1"}

    def launch(name, run, steps, save_every, resume=""):
        cmd = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2", "--num_machines",
               "1", "--mixed_precision", "no", "--dynamo_backend", "no", str(script), str(tmp_path / f"{name}.json"),
               str(tmp_path / run), str(steps), str(save_every), resume]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads((tmp_path / f"{name}.json").read_text())["params"]

    full = launch("full", "full", 4, 0)
    launch("part", "part", 2, 2)
    folder = checkpoint(tmp_path / "part", 2)
    assert (folder / "rng_0.json").is_file() and (folder / "rng_1.json").is_file()
    ckpt.verify(folder)
    assert launch("resumed", "part", 4, 2, "latest") == full
