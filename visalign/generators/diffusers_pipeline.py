"""Wrap any diffusers pipeline loaded from a local folder (SD3.5, SANA-Sprint, FLUX, Wan, ...) as a :class:`Generator`.

The denoiser (``pipe.transformer`` or ``pipe.unet``) is the trainable module; all other components are frozen.
With ``lora_rank > 0`` a peft LoRA adapter is added to the denoiser and only the adapter trains; the reference
(:meth:`frozen_copy`) is then the *same* pipeline run with the adapter disabled, so no second copy of the weights
is held. Samples are ``B×3×H×W`` in [-1, 1]; the noise is the pipeline's initial ``latents``.
"""
from __future__ import annotations

import inspect
import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable, ClassVar, Sequence

import torch
from torch import nn

from ..core.config import check, option
from ..core.generator import CONFIG_FILE, Generator, register_generator

LORA_FILE = "lora.safetensors"
PIPELINE_DIR = "pipeline"
_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass
class DiffusersConfig:
    """Where the pipeline lies and how it is called."""

    path: str = option("", "local diffusers pipeline folder (model_index.json); never downloaded")
    num_inference_steps: int = option(4, "denoising steps per sample")
    guidance_scale: float = option(1.0, "classifier-free guidance scale (1: off)")
    height: int | None = option(None, "image height (null: the pipeline's default)")
    width: int | None = option(None, "image width (null: the pipeline's default)")
    dtype: str = option("float32", "weights dtype: float32, bfloat16 or float16")
    latent_shape: list[int] | None = option(
        None, "shape of one item's initial latents (null: derived from the pipeline)")
    lora_rank: int = option(0, "rank of a peft LoRA adapter on the denoiser (0: train the full denoiser)")
    lora_alpha: float | None = option(None, "LoRA alpha (null: the rank)")
    lora_targets: list[str] = option(
        help="denoiser module names the LoRA adapter wraps",
        factory=lambda: ["to_q", "to_k", "to_v", "to_out.0"])
    call_kwargs: dict[str, Any] = option(help="extra keyword arguments for the pipeline call", factory=dict)

    def __post_init__(self) -> None:
        check(self.num_inference_steps >= 1, f"num_inference_steps must be >= 1, got {self.num_inference_steps}")
        check(self.dtype in _DTYPES, f"dtype must be one of {sorted(_DTYPES)}, got {self.dtype!r}")
        check(self.lora_rank >= 0, f"lora_rank must be >= 0, got {self.lora_rank}")
        check(bool(self.lora_targets), "lora_targets must not be empty")


def load_pipeline(path: str | Path, dtype: torch.dtype = torch.float32) -> Any:
    """``DiffusionPipeline.from_pretrained`` from a local folder only (never downloads).

    Components saved as absent (``[null, null]`` in ``model_index.json``, e.g. SD3 without T5) are passed as ``None``.
    """
    from diffusers import DiffusionPipeline

    path = Path(path)
    index = path / "model_index.json"
    if not index.is_file():
        raise FileNotFoundError(f"no diffusers pipeline at {path} (expected a folder with model_index.json)")
    absent = {k: None for k, v in json.loads(index.read_text()).items() if isinstance(v, list) and v[0] is None}
    return DiffusionPipeline.from_pretrained(str(path), local_files_only=True, dtype=dtype, **absent)


def add_lora(denoiser: nn.Module, rank: int, alpha: float | None, targets: Sequence[str]) -> None:
    """A peft LoRA adapter (``default``) on ``denoiser``'s ``targets``; B starts at zero, so outputs are unchanged."""
    from peft import LoraConfig

    denoiser.add_adapter(LoraConfig(r=rank, lora_alpha=alpha or rank, target_modules=list(targets), init_lora_weights=True))


def save_checkpoint_folder(path: str | Path, name: str, config: Any, pipeline: Any,
                           save_lora: Callable[[Path], None] | None) -> Path:
    """``generator.json`` plus either the LoRA weights (``save_lora(folder)``; ``config.path``, the base pipeline,
    stored resolved) or the whole pipeline under ``pipeline/``."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    if save_lora is not None:
        if not config.path:
            raise ValueError("a LoRA checkpoint stores only the adapter; set config.path to the base pipeline folder")
        save_lora(path)
        config = replace(config, path=str(Path(config.path).resolve()))
    else:
        pipeline.save_pretrained(str(path / PIPELINE_DIR))
    (path / CONFIG_FILE).write_text(json.dumps({"type": name, "config": asdict(config)}, indent=2))
    return path


def checkpoint_config(path: Path, meta: dict[str, Any]) -> dict[str, Any]:
    """The generator config of a checkpoint folder, pointing at its own ``pipeline/`` when it holds one."""
    config = dict(meta.get("config") or {})
    if (path / PIPELINE_DIR).is_dir():
        config["path"] = str(path / PIPELINE_DIR)
    return config


def denoiser_of(pipeline: Any) -> nn.Module:
    for name in ("transformer", "unet"):
        module = getattr(pipeline, name, None)
        if isinstance(module, nn.Module):
            return module
    raise ValueError(f"{type(pipeline).__name__} has neither a transformer nor a unet to train")


@register_generator("diffusers")
class DiffusersPipelineGenerator(Generator):
    """A local diffusers pipeline as a generator: ``sample`` calls the pipeline with the given latents."""

    kind: ClassVar[str] = "multi_step"
    config_class = DiffusersConfig

    def __init__(self, config: DiffusersConfig | None = None, pipeline: Any = None) -> None:
        super().__init__(config or DiffusersConfig())
        if pipeline is None:
            if not self.config.path:
                raise ValueError("the diffusers generator needs config.path (a local pipeline folder) or a pipeline object")
            pipeline = load_pipeline(self.config.path, _DTYPES[self.config.dtype])
        self.pipeline = pipeline
        pipeline.set_progress_bar_config(disable=True)
        self.components = nn.ModuleDict({k: v for k, v in pipeline.components.items() if isinstance(v, nn.Module)})
        self.components.requires_grad_(False)
        if self.config.lora_rank > 0:
            self._add_lora()
        else:
            self.denoiser.requires_grad_(True)

    def _add_lora(self) -> None:
        c = self.config
        add_lora(self.denoiser, c.lora_rank, c.lora_alpha, c.lora_targets)

    @property
    def denoiser(self) -> nn.Module:
        return denoiser_of(self.pipeline)

    @property
    def uses_lora(self) -> bool:
        return self.config.lora_rank > 0

    def trainable_module(self) -> nn.Module:
        return self.denoiser

    def shard_units(self) -> list[nn.Module]:
        return [self.denoiser]

    def enable_gradient_checkpointing(self) -> None:
        self.denoiser.enable_gradient_checkpointing()

    def _size(self) -> tuple[int, int]:
        pipe = self.pipeline
        scale = getattr(pipe, "vae_scale_factor", 1)
        default = getattr(pipe, "default_sample_size", None) or self.denoiser.config.sample_size
        default = default * scale if isinstance(default, int) else default[0] * scale
        return self.config.height or default, self.config.width or default

    @property
    def noise_shape(self) -> tuple[int, ...]:
        if self.config.latent_shape:
            return tuple(self.config.latent_shape)
        height, width = self._size()
        scale = getattr(self.pipeline, "vae_scale_factor", 1)
        return (self.denoiser.config.in_channels, height // scale, width // scale)

    def encode(self, prompts: Sequence[str] | None) -> list[str] | None:
        """Prompts are passed through: the pipeline encodes them itself."""
        return None if prompts is None else list(prompts)

    def generate(self, noise: torch.Tensor, cond: list[str] | None = None) -> torch.Tensor:
        """Run the pipeline from ``noise`` as initial latents; differentiable when grad is enabled."""
        pipe = self.pipeline
        call = type(pipe).__call__
        params = inspect.signature(call).parameters
        if "latents" not in params:
            raise TypeError(f"{type(pipe).__name__} takes no `latents`; it cannot be driven by external noise")
        if torch.is_grad_enabled():  # pipelines decorate __call__ with torch.no_grad(); call the undecorated function
            call = getattr(call, "__wrapped__", call)
        height, width = self._size()
        kwargs: dict[str, Any] = dict(
            latents=noise.to(self.device, self.dtype),
            num_inference_steps=self.config.num_inference_steps,
            output_type="pt",
            return_dict=False,
        )
        if "prompt" in params:
            kwargs["prompt"] = cond if cond is not None else [""] * noise.shape[0]
        for key, value in (("guidance_scale", self.config.guidance_scale), ("height", height), ("width", width)):
            if key in params:
                kwargs[key] = value
        kwargs.update(self.config.call_kwargs)
        images = call(pipe, **kwargs)[0]
        return images * 2 - 1

    def frozen_copy(self) -> Generator:
        """Full-finetune: a deep copy. LoRA: a view of this pipeline with the adapter disabled (no extra weights)."""
        if not self.uses_lora:
            return super().frozen_copy()
        return LoraReference(self)

    def save_pretrained(self, path: str | Path) -> Path:
        """LoRA with a base ``path``: only ``lora.safetensors``; otherwise the whole pipeline under ``pipeline/``."""
        return save_checkpoint_folder(path, self.name, self.config, self.pipeline, self._save_lora if self.uses_lora else None)

    def _save_lora(self, folder: Path) -> None:
        from peft.utils import get_peft_model_state_dict
        from safetensors.torch import save_file

        state = {k: v.detach().contiguous().cpu() for k, v in get_peft_model_state_dict(self.denoiser).items()}
        save_file(state, str(folder / LORA_FILE))

    @classmethod
    def load_checkpoint(cls, path: Path, meta: dict[str, Any], map_location: str | torch.device = "cpu") -> "DiffusersPipelineGenerator":
        """Rebuild from ``generator.json``: the saved pipeline, or the base pipeline plus ``lora.safetensors``."""
        path = Path(path)
        model = cls.from_config(checkpoint_config(path, meta))
        if model.uses_lora:
            from peft.utils import set_peft_model_state_dict
            from safetensors.torch import load_file

            lora_path = path / LORA_FILE
            if not lora_path.is_file():
                raise FileNotFoundError(f"LoRA checkpoint {path} has no {LORA_FILE}")
            result = set_peft_model_state_dict(model.denoiser, load_file(str(lora_path)))
            unexpected = getattr(result, "unexpected_keys", None)
            if unexpected:
                raise ValueError(f"{lora_path}: unexpected LoRA keys {unexpected[:5]}")
        return model.to(map_location)


class PolicyView:
    """Mixin of a reference that borrows its policy's device, latent dtype, noise shape and prompt encoding
    (``_policy``, set unregistered so the reference owns none of the policy's weights)."""

    _policy: Generator

    @property
    def device(self) -> torch.device:
        return self._policy.device

    @property
    def dtype(self) -> torch.dtype:
        return self._policy.dtype

    @property
    def noise_shape(self) -> tuple[int, ...]:
        return self._policy.noise_shape

    def encode(self, prompts: Sequence[str] | None) -> Any:
        return self._policy.encode(prompts)


class LoraReference(PolicyView, Generator):
    """The reference of a LoRA-trained pipeline: the shared base weights with the adapter switched off.

    It holds no parameters of its own (so nothing here can receive gradients) and always samples without grad.
    """

    kind: ClassVar[str] = "multi_step"

    def __init__(self, policy: DiffusersPipelineGenerator) -> None:
        super().__init__(policy.config)
        object.__setattr__(self, "_policy", policy)  # not registered: the reference owns no parameters
        self.eval()

    def generate(self, noise: torch.Tensor, cond: list[str] | None = None) -> torch.Tensor:
        denoiser = self._policy.denoiser
        denoiser.disable_adapters()
        try:
            with torch.no_grad():
                return self._policy.generate(noise, cond)
        finally:
            denoiser.enable_adapters()

    def save_pretrained(self, path: str | Path) -> Path:
        raise NotImplementedError("a LoRA reference is the base pipeline at config.path; save the policy instead")
