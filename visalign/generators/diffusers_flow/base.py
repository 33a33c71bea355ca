"""Base of the diffusers flow adapters: a local diffusers pipeline driven step by step as a :class:`FlowModel`.

The adapter never calls the pipeline's ``__call__``. It borrows the pipeline's components (text encoders, denoiser,
VAE, scheduler config) and implements the :class:`FlowModel` members: ``encode`` (prompt embeddings, cached per
prompt text), ``velocity`` (one denoiser call in the flow convention ``v = ε - x_0``, with optional classifier-free
guidance), ``sigmas`` (the pipeline's own flow schedule) and ``decode`` (VAE). ODE / SDE sampling with log-probs,
flow matching and DRaFT-K are the shared :class:`FlowModel` code, so Flow-GRPO, RWR and reward backprop drive every
family the same way. A family subclass provides four small hooks: ``_encode_batch``, ``_denoise``,
``noise_shape`` and ``_decode_latents``.

LoRA (peft, on the denoiser only): the reference is the same weights with the adapter switched off (no second copy),
and adapters are saved as ``pytorch_lora_weights.safetensors`` in the layout ``pipe.load_lora_weights`` reads.
"""
from __future__ import annotations

import copy
from abc import abstractmethod
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterator, Sequence

import torch
from torch import nn

from ...core.config import check, option
from ...core.flow import FlowModel
from ..diffusers_pipeline import PolicyView, add_lora, checkpoint_config, load_pipeline, save_checkpoint_folder

LORA_WEIGHTS_FILE = "pytorch_lora_weights.safetensors"
"""diffusers' ``LORA_WEIGHT_NAME_SAFE``: the file ``pipe.load_lora_weights(folder)`` looks for."""
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
Embeds = dict[str, torch.Tensor]


@dataclass
class DiffusersFlowConfig:
    """Where the pipeline lies and how the adapter steps it."""

    path: str = option("", "local diffusers pipeline folder (with model_index.json); never downloaded")
    num_steps: int = option(8, "default number of sampling steps")
    height: int | None = option(None, "image height in pixels (default: the pipeline's default size)")
    width: int | None = option(None, "image width in pixels (default: the pipeline's default size)")
    guidance_scale: float = option(1.0, "classifier-free guidance scale; > 1 also runs the denoiser on negative_prompt")
    negative_prompt: str = option("", "the unconditional prompt of classifier-free guidance")
    max_sequence_length: int | None = option(None, "text tokens per prompt (default: the family's usual length)")
    dtype: str = option("float32", "weights dtype of the pipeline: float32, bfloat16 or float16 (LoRA weights stay float32)")
    gradient_checkpointing: bool = option(False, "recompute the denoiser's activations in backward (less memory)")
    decode: bool = option(True, "false: samples are the clean latents (rewards on latents, no VAE decode)")
    lora_rank: int = option(0, "LoRA rank on the denoiser; 0 trains the whole denoiser")
    lora_alpha: float | None = option(None, "LoRA alpha (default: the rank)")
    lora_targets: list[str] = option(help="denoiser module names that get LoRA layers",
                                     factory=lambda: ["to_q", "to_k", "to_v", "to_out.0"])
    prompt_cache_size: int = option(1024, "prompt embeddings kept, by prompt text (least recently used dropped)")

    def __post_init__(self) -> None:
        check(self.num_steps >= 1, f"num_steps must be >= 1, got {self.num_steps}")
        check(self.dtype in DTYPES, f"dtype must be one of {sorted(DTYPES)}, got {self.dtype!r}")
        check(self.guidance_scale >= 1.0, f"guidance_scale must be >= 1 (1 = no guidance), got {self.guidance_scale}")
        check(self.lora_rank >= 0, f"lora_rank must be >= 0, got {self.lora_rank}")
        check(bool(self.lora_targets), "lora_targets must not be empty")
        check(self.prompt_cache_size >= 1, f"prompt_cache_size must be >= 1, got {self.prompt_cache_size}")
        for key in ("height", "width", "max_sequence_length"):
            value = getattr(self, key)
            check(value is None or value >= 1, f"{key} must be >= 1 or null, got {value}")


class PromptEmbeddingCache:
    """Embeddings of single prompts, keyed by text, least recently used dropped beyond ``size``.

    ``get`` encodes each prompt it has not seen on its own (without grad: text encoders are frozen) and stacks
    per-prompt rows, so a group of G samples of one prompt costs one encoder pass. One prompt per pass keeps an
    embedding bitwise independent of which prompts shared its batch (batched matmuls round differently), so runs
    and resumed runs stay reproducible whatever the cache held."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._rows: OrderedDict[str, Embeds] = OrderedDict()
        self.misses = 0

    def __len__(self) -> int:
        return len(self._rows)

    def clear(self) -> None:
        self._rows.clear()

    def get(self, prompts: Sequence[str], encode: Callable[[list[str]], Embeds]) -> Embeds:
        for text in dict.fromkeys(p for p in prompts if p not in self._rows):
            with torch.no_grad():
                self._rows[text] = {k: v[0].detach() for k, v in encode([text]).items()}
            self.misses += 1
        rows = []
        for text in prompts:
            self._rows.move_to_end(text)
            rows.append(self._rows[text])
        out = {k: torch.stack([r[k] for r in rows]) for k in rows[0]}
        while len(self._rows) > self.size:
            self._rows.popitem(last=False)
        return out


@dataclass
class PromptCond:
    """Encoded prompts for one batch: the family's embedding tensors, and the negative prompt's (CFG) or None."""

    embeds: Embeds
    negative: Embeds | None = None

    def __len__(self) -> int:
        return next(iter(self.embeds.values())).shape[0]


class DiffusersFlowModel(FlowModel):
    """A local diffusers pipeline stepped by visalign (see module docstring). Subclasses name the pipeline class
    (``pipeline_class``) and implement the four family hooks."""

    kind: ClassVar[str] = "multi_step"
    config_class: ClassVar[type] = DiffusersFlowConfig
    pipeline_class: ClassVar[str] = ""
    default_max_sequence_length: ClassVar[int] = 77
    timestep_scale: ClassVar[float] = 1000.0
    """The denoiser's ``timestep`` is ``t * timestep_scale`` (flow time ``t`` in [0, 1])."""

    def __init__(self, config: DiffusersFlowConfig | None = None, pipeline: Any = None) -> None:
        super().__init__(config or self.config_class())
        if pipeline is None:
            if not self.config.path:
                raise ValueError(f"{type(self).__name__} needs config.path (a local diffusers pipeline folder) or a pipeline object")
            pipeline = load_pipeline(self.config.path, DTYPES[self.config.dtype])
        elif self.config.dtype != "float32":
            pipeline.to(dtype=DTYPES[self.config.dtype])
        found = type(pipeline).__name__
        if found != self.pipeline_class:
            raise ValueError(f"{type(self).__name__} drives a {self.pipeline_class}; {self.config.path or 'the given pipeline'} "
                             f"holds a {found} (pick the adapter of that family)")
        self.pipeline = pipeline
        pipeline.set_progress_bar_config(disable=True)
        self.components = nn.ModuleDict({k: v for k, v in pipeline.components.items() if isinstance(v, nn.Module)})
        self.components.requires_grad_(False)
        self.components.eval()
        self.prompt_cache = PromptEmbeddingCache(self.config.prompt_cache_size)
        self._check_pipeline()
        if self.config.gradient_checkpointing:
            self.denoiser.enable_gradient_checkpointing()
        if self.uses_lora:
            self._add_lora()
        else:
            self.denoiser.requires_grad_(True)

    # ------------------------------------------------------------------ family hooks
    def _check_pipeline(self) -> None:
        """Raise a clear error for pipeline variants this adapter cannot drive."""

    @abstractmethod
    def _encode_batch(self, prompts: list[str]) -> Embeds:
        """Prompt embeddings of a batch, batch-first tensors (the pipeline's ``encode_prompt``, guidance off)."""

    @abstractmethod
    def _denoise(self, denoiser: nn.Module, x: torch.Tensor, t: torch.Tensor, embeds: Embeds) -> torch.Tensor:
        """One denoiser call: flow velocity ``ε - x_0`` at latents ``x`` and flow time ``t`` ([B], in [0, 1])."""

    def _decode_latents(self, latents: torch.Tensor) -> torch.Tensor:
        """Clean latents -> samples in [-1, 1] through the VAE (here: a KL VAE with scaling and shift factors)."""
        config = self.vae.config
        scaled = latents / config.scaling_factor + (config.shift_factor or 0.0)
        return self.vae.decode(scaled.to(self.weight_dtype), return_dict=False)[0].float().clamp(-1, 1)

    # ------------------------------------------------------------------ components
    @property
    def denoiser(self) -> nn.Module:
        return self.components["transformer"]

    @property
    def vae(self) -> nn.Module:
        return self.components["vae"]

    @property
    def uses_lora(self) -> bool:
        return self.config.lora_rank > 0

    @property
    def dtype(self) -> torch.dtype:
        """Latents and noise stay float32 whatever the weights' dtype; they are cast at the denoiser's input."""
        return torch.float32

    @property
    def weight_dtype(self) -> torch.dtype:
        return DTYPES[self.config.dtype]

    @property
    def max_sequence_length(self) -> int:
        return self.config.max_sequence_length or self.default_max_sequence_length

    def trainable_module(self) -> nn.Module:
        return self.denoiser

    def train(self, mode: bool = True) -> "DiffusersFlowModel":
        """Only the denoiser changes mode: text encoders and VAE stay in eval (no dropout in cached embeddings)."""
        self.training = mode
        self.denoiser.train(mode)
        return self

    def _add_lora(self) -> None:
        c = self.config
        add_lora(self.denoiser, c.lora_rank, c.lora_alpha, c.lora_targets)
        for p in self.denoiser.parameters():
            if p.requires_grad:
                p.data = p.data.float()

    @contextmanager
    def adapter_disabled(self) -> Iterator[None]:
        """The base weights: LoRA layers switched off inside the block (reference of a LoRA run)."""
        self.denoiser.disable_adapters()
        try:
            yield
        finally:
            self.denoiser.enable_adapters()

    # ------------------------------------------------------------------ FlowModel
    def encode(self, prompts: Sequence[str] | None) -> PromptCond | None:
        """Prompt embeddings from the cache (encoded once per new prompt text); the negative prompt's too under CFG."""
        if prompts is None:
            return None
        prompts = list(prompts)
        embeds = self.prompt_cache.get(prompts, self._encode_batch)
        negative = None
        if self.config.guidance_scale > 1:
            negative = self.prompt_cache.get([self.config.negative_prompt] * len(prompts), self._encode_batch)
        return PromptCond(embeds, negative)

    def velocity(self, x: torch.Tensor, t: torch.Tensor, cond: PromptCond | None = None) -> torch.Tensor:
        return self.guided_velocity(self.denoiser, x, t, cond)

    def guided_velocity(self, denoiser: nn.Module, x: torch.Tensor, t: torch.Tensor, cond: PromptCond | None) -> torch.Tensor:
        """Velocity of ``denoiser`` with classifier-free guidance when ``guidance_scale > 1`` (one batched call on
        [negative; positive])."""
        if cond is None:
            cond = self.encode([""] * x.shape[0])
        if len(cond) != x.shape[0]:
            raise ValueError(f"{x.shape[0]} latents but {len(cond)} encoded prompts")
        embeds = {k: v.to(x.device) for k, v in cond.embeds.items()}
        if cond.negative is None or self.config.guidance_scale <= 1:
            return self._denoise(denoiser, x, t, embeds).to(x.dtype)
        both = {k: torch.cat([cond.negative[k].to(x.device), v]) for k, v in embeds.items()}
        uncond, text = self._denoise(denoiser, torch.cat([x, x]), torch.cat([t, t]), both).to(x.dtype).chunk(2)
        return uncond + self.config.guidance_scale * (text - uncond)

    def sigmas(self, num_steps: int | None = None) -> torch.Tensor:
        key = (num_steps or self.num_steps, 0.0)
        if key not in self._sigma_cache:
            self._sigma_cache[key] = self._schedule(key[0]).float().cpu()
        return self._sigma_cache[key]

    def _schedule(self, num_steps: int) -> torch.Tensor:
        """Noise levels 1 → 0 of the pipeline's flow-matching Euler scheduler (its shift / dynamic shift). Other flow
        schedulers (Wan's UniPC, Sana's DPM-Solver) are replaced by the Euler one with their ``flow_shift``."""
        from diffusers import FlowMatchEulerDiscreteScheduler

        config = self.pipeline.scheduler.config
        if type(self.pipeline.scheduler).__name__ == "FlowMatchEulerDiscreteScheduler":
            scheduler = FlowMatchEulerDiscreteScheduler.from_config(config)
        else:
            scheduler = FlowMatchEulerDiscreteScheduler(shift=float(config.get("flow_shift") or 1.0))
        scheduler.set_timesteps(num_steps, **self._schedule_kwargs(num_steps, scheduler.config))
        return scheduler.sigmas

    def _schedule_kwargs(self, num_steps: int, scheduler_config: Any) -> dict[str, Any]:
        """Extra ``set_timesteps`` arguments (e.g. ``mu`` of a resolution-dependent shift)."""
        if not scheduler_config.get("use_dynamic_shifting"):
            return {}
        from diffusers.pipelines.flux.pipeline_flux import calculate_shift

        mu = calculate_shift(self.image_seq_len, scheduler_config.get("base_image_seq_len", 256),
                             scheduler_config.get("max_image_seq_len", 4096), scheduler_config.get("base_shift", 0.5),
                             scheduler_config.get("max_shift", 1.15))
        return {"mu": mu}

    @property
    def image_seq_len(self) -> int:
        """Denoiser tokens per item (drives the dynamic timestep shift of schedulers with ``use_dynamic_shifting``)."""
        raise ValueError(f"{type(self).__name__} does not support a scheduler with use_dynamic_shifting")

    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        """Samples in [-1, 1] through the VAE, or the latents themselves with ``decode: false``."""
        if not self.config.decode:
            return latents
        return self._decode_latents(latents)

    # ------------------------------------------------------------------ sizes
    def _image_size(self) -> tuple[int, int]:
        pipe = self.pipeline
        default = pipe.default_sample_size * pipe.vae_scale_factor
        return self.config.height or default, self.config.width or default

    # ------------------------------------------------------------------ reference, checkpoints
    def frozen_copy(self) -> "DiffusersReference":
        """LoRA: this model with the adapter off (no extra weights). Full fine-tune: a frozen copy of the denoiser
        only; text encoders, VAE and the prompt cache are shared."""
        return DiffusersReference(self, None if self.uses_lora else copy.deepcopy(self.denoiser))

    def lora_state_dict(self) -> dict[str, torch.Tensor]:
        """The adapter in diffusers' LoRA layout (``transformer.<module>.lora_A.weight`` ...)."""
        from peft.utils import get_peft_model_state_dict

        return {f"transformer.{k}": v.detach().contiguous().cpu() for k, v in get_peft_model_state_dict(self.denoiser).items()}

    def save_pretrained(self, path: str | Path) -> Path:
        """LoRA: ``pytorch_lora_weights.safetensors`` (diffusers' layout, with the peft config as metadata) plus
        ``generator.json`` pointing at the base folder; full fine-tune: the whole pipeline under ``pipeline/``."""
        return save_checkpoint_folder(path, self.name, self.config, self.pipeline, self._save_lora if self.uses_lora else None)

    def _save_lora(self, folder: Path) -> None:
        from peft.utils import get_peft_model_state_dict

        layers = {k: v.detach().contiguous().cpu() for k, v in get_peft_model_state_dict(self.denoiser).items()}
        type(self.pipeline).save_lora_weights(
            str(folder), transformer_lora_layers=layers, weight_name=LORA_WEIGHTS_FILE,
            transformer_lora_adapter_metadata=self.denoiser.peft_config["default"].to_dict())

    @classmethod
    def load_checkpoint(cls, path: Path, meta: dict[str, Any], map_location: str | torch.device = "cpu") -> "DiffusersFlowModel":
        """Rebuild from ``generator.json``: the saved pipeline, or the base pipeline plus the LoRA file."""
        model = cls.from_config(checkpoint_config(Path(path), meta))
        if model.uses_lora:
            model.load_lora(Path(path) / LORA_WEIGHTS_FILE)
        return model.to(map_location)

    def load_lora(self, file: str | Path) -> None:
        """Load adapter weights saved by :meth:`save_pretrained` (or any diffusers LoRA file of this denoiser with the
        same rank and targets); missing or unexpected keys are errors."""
        from peft.utils import set_peft_model_state_dict
        from safetensors.torch import load_file

        file = Path(file)
        if not file.is_file():
            raise FileNotFoundError(f"no LoRA weights at {file}")
        state = load_file(str(file))
        foreign = [k for k in state if not k.startswith("transformer.")]
        if foreign:
            raise ValueError(f"{file}: keys outside the denoiser ('transformer.' prefix): {foreign[:5]}")
        state = {k[len("transformer."):]: v for k, v in state.items()}
        expected = set(self.lora_state_dict())
        missing = sorted(k for k in expected if k[len("transformer."):] not in state)
        if missing:
            raise ValueError(f"{file}: missing LoRA keys {missing[:5]} (rank or lora_targets differ from the config?)")
        result = set_peft_model_state_dict(self.denoiser, state)
        if result.unexpected_keys:
            raise ValueError(f"{file}: unexpected LoRA keys {result.unexpected_keys[:5]}")


class DiffusersReference(PolicyView, FlowModel):
    """The frozen reference of a :class:`DiffusersFlowModel`: the policy's base weights (adapter off) or a frozen
    copy of its denoiser. Shares the policy's text encoders, VAE, schedule and prompt cache; never records grad."""

    kind: ClassVar[str] = "multi_step"

    def __init__(self, policy: DiffusersFlowModel, denoiser: nn.Module | None) -> None:
        super().__init__(policy.config)
        object.__setattr__(self, "_policy", policy)  # not registered: the reference owns none of the policy's weights
        self.denoiser_copy = denoiser
        if denoiser is not None:
            denoiser.requires_grad_(False)
        self.eval()

    def sigmas(self, num_steps: int | None = None) -> torch.Tensor:
        return self._policy.sigmas(num_steps)

    def velocity(self, x: torch.Tensor, t: torch.Tensor, cond: PromptCond | None = None) -> torch.Tensor:
        policy = self._policy
        with torch.no_grad():
            if self.denoiser_copy is not None:
                return policy.guided_velocity(self.denoiser_copy, x, t, cond)
            with policy.adapter_disabled():
                return policy.guided_velocity(policy.denoiser, x, t, cond)

    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        return self._policy.decode(latents)

    def save_pretrained(self, path: str | Path) -> Path:
        raise NotImplementedError("the reference is the base pipeline at config.path; save the policy instead")
