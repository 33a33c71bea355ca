"""Run under ``accelerate launch --multi_gpu --num_processes 2`` (ACCELERATE_USE_CPU=1): train, save and resume with
two processes; the main process writes the final parameters to ``out.json``. Args: OUT_JSON RUN_DIR STEPS SAVE_EVERY RESUME."""
import json
import sys

import torch
from accelerate import Accelerator

from visalign.core import FunctionReward, Unconditional
from visalign.generators import ToyOneStepGenerator
from visalign.trainer import Trainer, TrainerConfig

sys.path.insert(0, __file__.rsplit("/tests/", 1)[0])
from tests.conftest import ShiftTowardReward  # noqa: E402


def main(out_json: str, run_dir: str, steps: str, save_every: str, resume: str) -> None:
    acc = Accelerator(cpu=True)
    cfg = TrainerConfig(steps=int(steps), prompts_per_step=4, log_with=[], progress=False, output_dir=run_dir,
                        save_every=int(save_every), resume_from=resume or None, eval_batch_size=4, ema_decay=0.9)
    torch.manual_seed(0)
    reward = FunctionReward(lambda s, p, m: s[:, 0], name="x0")
    trainer = Trainer(ToyOneStepGenerator(), ShiftTowardReward(), reward, Unconditional(), cfg, accelerator=acc)
    trainer.train()
    trainer.close()
    if acc.is_main_process:
        with open(out_json, "w") as f:
            json.dump({"params": [p.detach().flatten().tolist() for p in trainer.policy.parameters()]}, f)


if __name__ == "__main__":
    main(*sys.argv[1:6])
