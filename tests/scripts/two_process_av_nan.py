"""Run under ``accelerate launch`` on 2 CPU processes (gloo): AV-GRPO where only rank 1 sees a NaN advantage at
step 1. Each rank writes, per step, which parameters moved and which modality the step trained."""
import json
import sys

import torch
import torch.distributed as dist
from accelerate import Accelerator

from visalign.algorithms.av_grpo import AVGRPO, AVGRPOConfig
from visalign.core import PromptList, build_reward
from visalign.toys.av_toy import ToyAVConfig, ToyAVFlow
from visalign.trainer import Trainer, TrainerConfig

PROMPTS = ["a red circle bouncing left to right with a high beep", "a red circle bouncing left to right with a low beep"]
COMPONENTS = ["av_video_quality", "av_audio_quality", "av_video_alignment", "av_audio_alignment", "av_desync"]


class NaNOnRank1AtStep1(AVGRPO):
    def rollout(self, ctx, batch, generator):
        rollout = super().rollout(ctx, batch, generator)
        if ctx.step == 1 and dist.get_rank() == 1:
            rollout.extras["advantages"] = {k: v * float("nan") for k, v in rollout.extras["advantages"].items()}
        return rollout


def main(out_prefix: str) -> None:
    acc = Accelerator(cpu=True)
    torch.manual_seed(0)
    model = ToyAVFlow(ToyAVConfig(hidden=16, layers=1, num_steps=3))
    reference = model.frozen_copy()
    algo = NaNOnRank1AtStep1(AVGRPOConfig(group_size=3, steps_per_modality=3))
    cfg = TrainerConfig(steps=3, prompts_per_step=2, learning_rate=1e-2, log_with=[], progress=False,
                        output_dir=out_prefix + ".run")
    reward = build_reward({"name": "multi", "rewards": COMPONENTS})
    trainer = Trainer(model, algo, reward, PromptList(PROMPTS), cfg, reference=reference, accelerator=acc)
    steps = []
    for _ in range(3):
        before = {n: p.detach().clone() for n, p in trainer.policy.named_parameters()}
        trained = algo.modality
        metrics = trainer.train_step()
        moved = sorted(n for n, p in trainer.policy.named_parameters() if not torch.equal(before[n], p.detach()))
        steps.append({"trained": trained, "moved": moved, "skipped": float(metrics.get("skipped", 0.0)),
                      "modality_after": algo.modality})
    towers = {m: sorted(n for n, _ in model.tower_parameters(m)) for m in ("video", "audio")}
    trainer.close()
    with open(f"{out_prefix}.rank{acc.process_index}.json", "w") as f:
        json.dump({"steps": steps, "towers": towers}, f)


if __name__ == "__main__":
    main(sys.argv[1])
