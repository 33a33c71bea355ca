import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from visalign.core import FunctionReward, Unconditional
from visalign.generators import ToyOneStepGenerator
from visalign.trainer import Trainer, TrainerConfig

from .conftest import ShiftTowardReward, accelerate_launch

SCRIPT = Path(__file__).parent / "scripts" / "two_process_train.py"


def x0_reward():
    return FunctionReward(lambda s, p, m: s[:, 0], name="x0")


def make_trainer(tmp_path, steps, **overrides):
    torch.manual_seed(0)
    cfg = TrainerConfig(steps=steps, prompts_per_step=32, output_dir=str(tmp_path), log_with=[], progress=False, ema_decay=0.9, **overrides)
    return Trainer(ToyOneStepGenerator(), ShiftTowardReward(), x0_reward(), Unconditional(), cfg)


def train_records(path):
    return [r for r in map(json.loads, (path / "metrics.jsonl").read_text().splitlines()) if "loss" in r]


def test_training_raises_the_reward(tmp_path):
    trainer = make_trainer(tmp_path, steps=30, learning_rate=3e-3)
    summary = trainer.train()
    before = train_records(tmp_path)[0]["reward/mean"]
    assert summary["eval/reward_mean"] > before + 0.5
    for name in ("reward_curve.png", "summary.json", "samples/before.png", "samples/after.png", "final/model.safetensors"):
        assert (tmp_path / name).is_file(), name
    from visalign.core import load_generator

    final = load_generator(tmp_path / "final")
    with trainer.trained.ema_swap():
        assert all(torch.equal(a, b) for a, b in zip(final.parameters(), trainer.policy.parameters()))


def test_evaluation_callbacks_see_the_evaluated_ema_weights(tmp_path):
    from visalign.trainer import TrainerCallback

    seen = []

    class Snapshot(TrainerCallback):
        def on_evaluate(self, trainer, tag, metrics):
            seen.append([p.detach().clone() for p in trainer.policy.parameters()])

    trainer = make_trainer(tmp_path, steps=3, learning_rate=3e-2)
    trainer.callbacks.append(Snapshot())
    trainer.train()
    with trainer.trained.ema_swap():
        ema = [p.detach().clone() for p in trainer.policy.parameters()]
    assert all(torch.equal(a, b) for a, b in zip(seen[-1], ema))
    assert not all(torch.equal(a, b) for a, b in zip(ema, trainer.policy.parameters()))  # EMA differs from the raw weights


def test_resume_matches_uninterrupted_run(tmp_path):
    full = make_trainer(tmp_path / "full", steps=8)
    full.train()
    part = make_trainer(tmp_path / "part", steps=4, save_every=4)
    part.train()
    resumed = make_trainer(tmp_path / "part", steps=8, resume_from="latest")
    assert resumed.step == 4
    resumed.train()
    for a, b in zip(full.policy.parameters(), resumed.policy.parameters()):
        assert torch.equal(a, b)
    full_records, resumed_records = train_records(tmp_path / "full"), train_records(tmp_path / "part")
    assert [r["step"] for r in resumed_records] == list(range(1, 9))
    assert full_records == resumed_records
    for a, b in zip(full.ema.shadow_params, resumed.ema.shadow_params):
        assert torch.equal(a, b)


def test_eval_draws_depend_on_eval_seed_not_on_training_seed(tmp_path):
    """Runs that differ only in ``seed`` are compared on the same eval noise, so before/after differences are paired."""
    evals = {}
    for seed, eval_seed in ((0, 7), (1, 7), (0, 8)):
        trainer = make_trainer(tmp_path / f"{seed}_{eval_seed}", steps=0, seed=seed, eval_seed=eval_seed)
        evals[seed, eval_seed] = trainer.evaluate()["eval/reward_mean"]
    assert evals[0, 7] == evals[1, 7]
    assert evals[0, 7] != evals[0, 8]


def test_missing_checkpoint_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="latest"):
        make_trainer(tmp_path, steps=2, resume_from="latest")


def test_nan_reward_names_the_reward(tmp_path):
    cfg = TrainerConfig(steps=1, prompts_per_step=4, output_dir=str(tmp_path), log_with=[], progress=False)
    bad = FunctionReward(lambda s, p, m: torch.full((s.shape[0],), float("nan")), name="broken_scorer")
    trainer = Trainer(ToyOneStepGenerator(), ShiftTowardReward(), bad, Unconditional(), cfg)
    with pytest.raises(ValueError, match="broken_scorer.*non-finite"):
        trainer.train()


def test_non_finite_gradient_stops_the_run_before_the_weights_move(tmp_path):
    trainer = make_trainer(tmp_path, steps=1, max_grad_norm=None)  # also without clipping
    params = list(trainer.policy.parameters())
    before = [p.detach().clone() for p in params]
    params[0].register_hook(lambda grad: torch.full_like(grad, float("inf")))  # finite loss, overflowing backward
    with pytest.raises(FloatingPointError, match="non-finite gradient norm inf.*step 0.*not updated"):
        trainer.train()
    assert all(torch.equal(a, b) for a, b in zip(before, trainer.policy.parameters()))


def test_two_process_cpu_run_gathers_rewards_and_keeps_ranks_identical(tmp_path):
    out = tmp_path / "result.json"
    proc = accelerate_launch(str(SCRIPT), str(out), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["num_processes"] == 2
    assert len(result["gathered_rewards"]) == 16
    assert result["gathered_rewards"][:8] == pytest.approx(result["local_rewards"])
    assert result["samples_seen"] == 3 * 8 * 2
    assert result["max_param_diff"] == 0.0
    assert not [name for name in result["threads_after_close"] if "gloo" in name], "close() left the process group alive"


IMPORT_ORDER_PROBE = """
import sys, warnings
import torch.distributed as dist
def create_group():
    dist.init_process_group("gloo", init_method="file://" + sys.argv[1], rank=0, world_size=1)
if sys.argv[2] == "group-first":
    create_group()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import visalign.trainer
if sys.argv[2] == "import-first":
    create_group()
dist.destroy_process_group()
print(sum("imported after the process group" in str(w.message) for w in caught))
"""


@pytest.mark.parametrize("order, warnings_expected", [("import-first", 0), ("group-first", 1)])
def test_importing_the_trainer_after_the_process_group_warns(tmp_path, order, warnings_expected):
    """Imported after the group exists, the trainer cannot keep torch.distributed.nn from pinning it; it says so."""
    proc = subprocess.run([sys.executable, "-c", IMPORT_ORDER_PROBE, str(tmp_path / "store"), order],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert int(proc.stdout.strip().splitlines()[-1]) == warnings_expected


@pytest.mark.parametrize("schedule", ["cosine", "linear"])
def test_lr_schedules_warm_up_then_decay_to_the_floor(schedule):
    from visalign.trainer.trainer import lr_factor

    cfg = TrainerConfig(steps=100, warmup_steps=10, lr_schedule=schedule, min_lr_ratio=0.1)
    factors = [lr_factor(cfg, s) for s in range(101)]
    assert factors[0] == pytest.approx(0.1) and factors[9] == pytest.approx(1.0)
    assert all(a >= b for a, b in zip(factors[10:], factors[11:]))
    assert factors[100] == pytest.approx(0.1)


def test_bf16_mixed_precision_step_runs_and_keeps_fp32_master_weights(tmp_path):
    trainer = make_trainer(tmp_path, steps=2, mixed_precision="bf16")
    metrics = trainer.train_step()
    assert torch.isfinite(torch.tensor(metrics["loss"]))
    assert all(p.dtype == torch.float32 for p in trainer.params)


def test_image_preview_keeps_the_first_max_images(tmp_path):
    from PIL import Image

    from visalign.trainer import save_samples
    from visalign.trainer.visuals import to_uint8_images

    images = torch.rand(100, 3, 8, 8) * 2 - 1
    full = Image.open(save_samples(images, tmp_path / "full.png"))
    capped = Image.open(save_samples(images, tmp_path / "capped.png", max_images=64))
    scale = 128 // 8
    assert full.size == (10 * 8 * scale, 10 * 8 * scale) and capped.size == (8 * 8 * scale, 8 * 8 * scale)
    first, last_kept = to_uint8_images(images[[0, 63]])
    assert (np.asarray(capped)[0, 0] == first[0, 0]).all()
    assert (np.asarray(capped)[-1, -1] == last_kept[-1, -1]).all()
