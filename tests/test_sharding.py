"""Scale-out: FSDP2 sharding of the policy on 2 CPU processes (gloo), gradient checkpointing, clear errors."""
import json
from pathlib import Path

import pytest
import torch

from visalign.core import ConfigError, FunctionReward, PromptList
from visalign.generators import TinyFlowConfig, TinyFlowGenerator, ToyOneStepGenerator
from visalign.trainer import Trainer, TrainerConfig
from visalign.trainer.sharding import shard_policy

from .conftest import ShiftTowardReward, accelerate_launch

SCRIPT = Path(__file__).parent / "scripts" / "two_process_fsdp.py"
ROOT = Path(__file__).resolve().parents[1]


def test_two_process_fsdp_matches_all_reduce_resumes_and_exports(tmp_path):
    out = tmp_path / "result.json"
    proc = accelerate_launch(str(SCRIPT), str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["num_processes"] == 2 and result["units"] == 1
    assert result["param_type"] == "DTensor" and result["local_numel"] * 2 == result["full_numel"]  # really sharded
    assert result["moved"] > 1e-3
    assert result["max_diff_fsdp_vs_allreduce"] < 1e-6  # same averaged gradients as the explicit all-reduce
    assert result["max_diff_resumed_vs_uninterrupted"] == 0.0
    assert result["max_diff_export_vs_state"] == 0.0


def _tiny_flow():
    torch.manual_seed(0)
    return TinyFlowGenerator(TinyFlowConfig(image_size=8, patch_size=2, text_hidden=32, vocab_buckets=64, max_length=8, num_steps=2))


def test_gradient_checkpointing_gives_the_same_gradients(tmp_path):
    grads = {}
    for checkpointing in (False, True):
        policy = _tiny_flow()
        cfg = TrainerConfig(steps=1, prompts_per_step=2, log_with=[], progress=False, output_dir=str(tmp_path / str(checkpointing)),
                            gradient_checkpointing=checkpointing)
        reward = FunctionReward(lambda x, p, m: x.mean((1, 2, 3)), name="brightness")
        trainer = Trainer(policy, ShiftTowardReward(), reward, PromptList(["a", "b"]), cfg)
        assert policy.backbone.denoiser.gradient_checkpointing is checkpointing
        x0 = policy.make_noise(2, torch.Generator().manual_seed(1))
        policy.flow_matching_loss(x0, policy.encode(["a", "b"]), generator=torch.Generator().manual_seed(2)).backward()
        grads[checkpointing] = [p.grad.clone() for p in trainer.params if p.grad is not None]
    assert len(grads[True]) == len(grads[False]) > 0
    for a, b in zip(grads[False], grads[True]):
        assert torch.allclose(a, b, atol=1e-6)


def test_policies_without_support_fail_clearly(tmp_path):
    with pytest.raises(ConfigError, match="does not support gradient checkpointing"):
        Trainer(ToyOneStepGenerator(), ShiftTowardReward(), FunctionReward(lambda s, p, m: s[:, 0], name="x0"), PromptList(["a"]),
                TrainerConfig(log_with=[], progress=False, output_dir=str(tmp_path), gradient_checkpointing=True))

    class Unshardable(ToyOneStepGenerator):
        def shard_units(self):
            return []

    with pytest.raises(ConfigError, match="declares no shard_units"):
        shard_policy(Unshardable(), torch.device("cpu"), 2, "no")

    class PartlyShardable(ToyOneStepGenerator):
        def shard_units(self):
            return [self.net[0]]

    with pytest.raises(ConfigError, match="outside its shard_units"):
        shard_policy(PartlyShardable(), torch.device("cpu"), 2, "no")


def test_single_process_fsdp_request_is_a_no_op(tmp_path):
    cfg = TrainerConfig(steps=1, prompts_per_step=4, log_with=[], progress=False, output_dir=str(tmp_path), sharding="fsdp")
    trainer = Trainer(ToyOneStepGenerator(), ShiftTowardReward(), FunctionReward(lambda s, p, m: s[:, 0], name="x0"), PromptList(["a"]), cfg)
    assert trainer.shard_units == []
    trainer.train_step()


@pytest.mark.parametrize("name", ["ddp_cpu_2proc", "fsdp_full_shard", "deepspeed_zero2"])
def test_accelerate_configs_ship_and_parse(name):
    import yaml

    data = yaml.safe_load((ROOT / "configs" / "accelerate" / f"{name}.yaml").read_text())
    expected = {"ddp_cpu_2proc": "MULTI_GPU", "fsdp_full_shard": "FSDP", "deepspeed_zero2": "DEEPSPEED"}[name]
    assert data["distributed_type"] == expected and data["num_processes"] >= 2


@pytest.mark.slow
def test_fsdp_launch_config_shards_the_tiny_image_flow_model(tmp_path):
    """``accelerate launch --config_file configs/accelerate/fsdp_full_shard.yaml`` (2 CPU processes): the trainer
    detects the FSDP launch and shards the tiny generator's text encoder and denoiser."""
    out = tmp_path / "probe.json"
    proc = accelerate_launch("--config_file", str(ROOT / "configs/accelerate/fsdp_full_shard.yaml"), "--num_processes", "2",
                             "--mixed_precision", "no", str(SCRIPT.parent / "fsdp_launch_probe.py"), str(out), "rwr")
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["num_processes"] == 2
    assert result["units"] == ["FSDPTinyTextEncoder", "FSDPSD3Transformer2DModel"]
    assert result["param_types"] == ["DTensor"]
