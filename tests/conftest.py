"""Shared fixtures: fixed seeds and a tiny in-test objective."""
from __future__ import annotations

import pytest
import torch

from visalign.core import Algorithm


class ShiftTowardReward(Algorithm):
    """Softmax-weighted regression onto samples shifted along the reward (a minimal reward-weighted objective)."""

    name = "test_shift"

    def loss(self, ctx, rollout):
        weights = torch.softmax(rollout.rewards / 0.1, 0).detach()
        out = ctx.policy(rollout.noise, rollout.batch.prompts)
        target = rollout.samples.detach() + 0.5
        return (weights[:, None] * (out - target).pow(2)).sum(), {"weight_max": weights.max().item()}


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.fixture
def shift_algorithm():
    return ShiftTowardReward()


def load_pipeline_script(name: str):
    """``pipelines/<name>.py`` imported as a module (the recipes folder is not a package)."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parent.parent / "pipelines" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def accelerate_launch(*args: str, timeout: int = 600):
    """``accelerate launch ARGS`` on 2 CPU processes (gloo) unless ARGS pick a config file; the finished process."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "ACCELERATE_USE_CPU": "1", "OMP_NUM_THREADS": "1"}
    launch = ["--multi_gpu", "--num_processes", "2", "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no"]
    cmd = [sys.executable, "-m", "accelerate.commands.launch", *([] if "--config_file" in args else launch), *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
