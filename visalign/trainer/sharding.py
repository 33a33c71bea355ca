"""Fully-sharded data parallel (torch FSDP2 ``fully_shard``) for a policy, and full-state checkpoints of it.

Objectives call many methods of a policy (``velocity``, ``encode``, ``sample_sde``, ...), not one ``forward``, so the
root-module wrapping of DDP, of accelerate's FSDP ``prepare`` and of DeepSpeed sees only part of the calls. FSDP2
instead hooks the ``forward`` of every module it shards: the policy declares those modules
(:meth:`Policy.shard_units`, innermost first), each entered through its own ``forward`` by every method that uses its
parameters, so whatever method an objective calls gathers the parameters it needs and reduce-scatters their
gradients in backward.
"""
from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ..core.config import ConfigError
from ..core.policy import Policy


def shard_policy(policy: Policy, device: torch.device, num_processes: int, mixed_precision: str) -> list[nn.Module]:
    """``fully_shard`` each of ``policy.shard_units()`` over all processes; returns the units.

    Every trainable parameter must lie in a unit (else its gradient would never be synchronised)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    units = policy.shard_units()
    name = type(policy).__name__
    if not units:
        raise ConfigError(f"trainer.sharding=fsdp: {name} declares no shard_units(), so it cannot be sharded "
                          "(use trainer.sharding=none: gradients are then all-reduced explicitly)")
    covered = {id(p) for unit in units for p in unit.parameters()}
    missed = [n for n, p in policy.trainable_module().named_parameters() if p.requires_grad and id(p) not in covered]
    if missed:
        raise ConfigError(f"trainer.sharding=fsdp: trainable parameters of {name} outside its shard_units(): {missed[:5]}")
    mesh = init_device_mesh(device.type, (num_processes,))
    precision = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) if mixed_precision == "bf16" else MixedPrecisionPolicy()
    for unit in units:
        fully_shard(unit, mesh=mesh, mp_policy=precision)
    return units


def _options(**kwargs: Any):
    from torch.distributed.checkpoint.state_dict import StateDictOptions

    return StateDictOptions(full_state_dict=True, **kwargs)


def full_model_state(module: nn.Module) -> dict[str, torch.Tensor]:
    """Every parameter and buffer gathered in full on the CPU (collective; complete on rank 0)."""
    from torch.distributed.checkpoint.state_dict import get_model_state_dict

    return get_model_state_dict(module, options=_options(cpu_offload=True))


def load_full_model_state(module: nn.Module, state: dict[str, torch.Tensor]) -> None:
    from torch.distributed.checkpoint.state_dict import set_model_state_dict

    result = set_model_state_dict(module, state, options=_options(strict=True))
    if result.missing_keys or result.unexpected_keys:
        raise RuntimeError(f"sharded checkpoint does not match the model: missing {result.missing_keys[:5]}, "
                           f"unexpected {result.unexpected_keys[:5]}")


def full_optimizer_state(module: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """The optimizer state keyed by parameter names, gathered in full on the CPU (collective)."""
    from torch.distributed.checkpoint.state_dict import get_optimizer_state_dict

    return get_optimizer_state_dict(module, optimizer, options=_options(cpu_offload=True))


def load_full_optimizer_state(module: nn.Module, optimizer: torch.optim.Optimizer, state: dict[str, Any]) -> None:
    from torch.distributed.checkpoint.state_dict import set_optimizer_state_dict

    set_optimizer_state_dict(module, optimizer, state, options=_options())


__all__ = ["shard_policy", "full_model_state", "load_full_model_state", "full_optimizer_state",
           "load_full_optimizer_state"]
