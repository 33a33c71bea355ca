"""Run under ``accelerate launch --multi_gpu --num_processes 2`` with ACCELERATE_USE_CPU=1 (gloo on CPU)."""
import json
import sys
from pathlib import Path

import torch
import torch.distributed as dist
from accelerate import Accelerator

from visalign.core import FunctionReward, PromptBatch, Unconditional
from visalign.generators import ToyOneStepGenerator
from visalign.trainer import Trainer, TrainerConfig

sys.path.insert(0, __file__.rsplit("/tests/", 1)[0])
from tests.conftest import ShiftTowardReward  # noqa: E402


def native_thread_names() -> list[str]:
    """Names of this process's OS threads (Linux), to see whether the process group's workers were stopped."""
    return [(task / "comm").read_text().strip() for task in Path("/proc/self/task").glob("*")]


def main(out_path: str) -> None:
    acc = Accelerator(cpu=True)
    cfg = TrainerConfig(steps=3, prompts_per_step=8, log_with=[], progress=False, output_dir=out_path + ".run")
    torch.manual_seed(0)
    reward = FunctionReward(lambda s, p, m: s[:, 0], name="x0")
    trainer = Trainer(ToyOneStepGenerator(), ShiftTowardReward(), reward, Unconditional(), cfg, accelerator=acc)
    metrics = [trainer.train_step() for _ in range(3)]
    local = trainer.ctx.score(trainer.policy.sample(n=8, generator=torch.Generator().manual_seed(acc.process_index)), PromptBatch([""] * 8))
    gathered = acc.gather(local)
    flat = torch.cat([p.detach().flatten() for p in trainer.policy.parameters()])
    copies = [torch.zeros_like(flat) for _ in range(acc.num_processes)]
    dist.all_gather(copies, flat)
    trainer.close()
    if acc.is_main_process:
        result = {
            "num_processes": acc.num_processes,
            "gathered_rewards": gathered.tolist(),
            "local_rewards": local.tolist(),
            "samples_seen": metrics[-1]["samples_seen"],
            "max_param_diff": max((c - copies[0]).abs().max().item() for c in copies),
            "threads_after_close": native_thread_names(),
        }
        with open(out_path, "w") as f:
            json.dump(result, f)


if __name__ == "__main__":
    main(sys.argv[1])
