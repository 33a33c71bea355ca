"""Run under ``accelerate launch --config_file configs/accelerate/fsdp_full_shard.yaml`` (ACCELERATE_USE_CPU=1): a
tiny-image-flow run built from a config as ``visalign train`` builds it, 2 steps; rank 0 writes what was sharded."""
import json
import sys

from visalign.run import build_trainer, load_run_config


def main(out: str, algorithm: str) -> None:
    config = load_run_config(None, [
        "generator.name=tiny_flow", "generator.image_size=8", "generator.patch_size=2", "generator.vocab_buckets=64",
        "generator.max_length=8", "generator.num_steps=2", "reward=brightness", f"algorithm.name={algorithm}",
        "algorithm.num_samples=2" if algorithm == "rwr" else "algorithm.group_size=2",
        "prompts.name=list", "prompts.prompts=[a red circle, a blue square]",
        "trainer.steps=2", "trainer.prompts_per_step=2", "trainer.eval_batch_size=2", "trainer.log_with=[]",
        "trainer.progress=false", "trainer.save_every=2", f"trainer.output_dir={out}.run"])
    trainer = build_trainer(config)
    summary = trainer.train()
    acc = trainer.accelerator
    result = {"distributed_type": str(acc.distributed_type), "num_processes": acc.num_processes,
              "units": [type(u).__name__ for u in trainer.shard_units],
              "param_types": sorted({type(p).__name__ for p in trainer.params}), "eval": summary["eval/reward_mean"]}
    trainer.close()
    if acc.is_main_process:
        with open(out, "w") as f:
            json.dump(result, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
