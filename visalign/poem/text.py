"""PoEM for causal LMs of one tokenizer: a token-level product of experts
``log π̂(y_t | y_<t) ∝ log π_ref + λ Σ_k ĉ_k (log π_k − log π_ref)`` wrapped as a :class:`CausalLMPolicy`, and the
sequence-level variant that draws from ``π_ref(y) Π_k (π_k(y) / π_ref(y))^{λ ĉ_k}`` by sampling-importance-resampling
(SIR) from the token-level proposal.

The experts are separate causal-LM folders of one tokenizer, or LoRA adapters of one base (``from_adapters``, via
``peft``). Per-token renormalisation makes the token-level product only an approximation of the sequence-level tilt (the exact
tilt needs soft values of the future); SIR corrects it with weights ``Π_t Z_t``, the product of the per-token
normalisers, and is exact as the number of proposals grows.
"""
from __future__ import annotations

import inspect
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Sequence

import torch
from torch import nn

from ..text.policy import CausalLMPolicy, TextSamples

COMPOSED_TEXT_FILE = "poem_text.json"
Level = Literal["token", "sequence"]


@dataclass
class ComposedLMOutput:
    """What a ``transformers`` causal LM returns, as far as :class:`CausalLMPolicy` reads it."""

    logits: torch.Tensor
    past_key_values: Any = None

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)


def _cache_keyword(model: nn.Module) -> str:
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _as_coef(coef: torch.Tensor | Sequence[float], k: int) -> torch.Tensor:
    c = torch.as_tensor(coef, dtype=torch.float32).detach().clone()
    if c.shape != (k,):
        raise ValueError(f"coef must have shape [{k}] (one per basis model), got {tuple(c.shape)}")
    if not torch.isfinite(c).all():
        raise ValueError(f"coef has non-finite values: {c.tolist()}")
    return c


class ProductOfExpertsLM(nn.Module):
    """A causal LM whose next-token logits are ``log p_ref + λ Σ_k c_k (log p_k − log p_ref)`` (each ``log p`` a
    log-softmax at that expert's temperature). Experts with ``c_k = 0`` are not run. KV caches are kept per expert."""

    def __init__(
        self,
        reference: nn.Module,
        experts: Sequence[nn.Module],
        coef: torch.Tensor | Sequence[float],
        strength: float = 1.0,
        temperatures: Sequence[float] | None = None,
    ) -> None:
        super().__init__()
        if not experts:
            raise ValueError("ProductOfExpertsLM needs at least one basis model")
        self.reference = reference
        self.experts = nn.ModuleList(experts)
        self.register_buffer("coef", _as_coef(coef, len(experts)), persistent=False)
        self.strength = float(strength)
        temps = list(temperatures) if temperatures is not None else [1.0] * (len(experts) + 1)
        if len(temps) != len(experts) + 1 or any(t <= 0 for t in temps):
            raise ValueError(f"temperatures: need {len(experts) + 1} positive values (reference first), got {temps}")
        self.temperatures = temps
        self._cache_kws = [_cache_keyword(m) for m in [reference, *experts]]

    def active(self) -> list[int]:
        """Indices of the experts with a non-zero coefficient."""
        return [k for k in range(len(self.experts)) if float(self.coef[k]) != 0.0]

    def _logp(self, i: int, model: nn.Module, cache: Any, use_cache: bool, kwargs: dict[str, Any]) -> tuple[torch.Tensor, Any]:
        if cache is not None:
            kwargs = {**kwargs, self._cache_kws[i]: cache}
        out = model(use_cache=use_cache, **kwargs)
        new_cache = out.get(self._cache_kws[i]) if use_cache else None
        return torch.log_softmax(out.logits.float() / self.temperatures[i], dim=-1), new_cache

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        past_key_values: Sequence[Any] | None = None,
        use_cache: bool = False,
    ) -> ComposedLMOutput:
        caches = list(past_key_values) if past_key_values is not None else [None] * (len(self.experts) + 1)
        kwargs = {"input_ids": input_ids, "attention_mask": attention_mask, "position_ids": position_ids}
        ref_logp, caches[0] = self._logp(0, self.reference, caches[0], use_cache, kwargs)
        shift = torch.zeros_like(ref_logp)
        for k in self.active():
            logp, caches[k + 1] = self._logp(k + 1, self.experts[k], caches[k + 1], use_cache, kwargs)
            if logp.shape != ref_logp.shape:
                raise ValueError(f"basis {k} gives logits {tuple(logp.shape)}, the reference {tuple(ref_logp.shape)}: "
                                 "composition needs one vocabulary")
            shift = shift + self.coef[k] * (logp - ref_logp)
        return ComposedLMOutput(ref_logp + self.strength * shift, tuple(caches) if use_cache else None)


class AdapterExpert(nn.Module):
    """One LoRA adapter of a shared ``peft`` model seen as a causal LM (``adapter=None``: the base, adapters off).

    Every expert of an adapter composition wraps the same model, so the base weights are held once; each forward
    activates its adapter first (K + 1 forwards per token, as for separate models)."""

    def __init__(self, peft_model: nn.Module, adapter: str | None) -> None:
        super().__init__()
        self.peft_model = peft_model
        self.adapter = adapter

    def forward(self, **kwargs: Any) -> Any:
        if self.adapter is None:
            with self.peft_model.disable_adapter():
                return self.peft_model(**kwargs)
        self.peft_model.set_adapter(self.adapter)
        return self.peft_model(**kwargs)


class ComposedCausalLMPolicy(CausalLMPolicy):
    """A PoEM-composed text policy usable wherever a :class:`CausalLMPolicy` samples or scores text.

    ``level="token"`` samples the token-level product of experts. ``level="sequence"`` draws ``num_proposals``
    token-level candidates per returned completion and keeps one with probability ∝ ``Π_t Z_t`` (SIR), so samples
    follow the sequence-level tilt; ``token_logprobs`` always scores under the token-level product, and for
    ``greedy=True`` the sequence level returns the candidate with the highest composed sequence log-probability."""

    def __init__(
        self,
        reference: CausalLMPolicy,
        bases: Sequence[CausalLMPolicy],
        coef: torch.Tensor | Sequence[float],
        strength: float = 1.0,
        level: Level = "token",
        num_proposals: int = 16,
        max_new_tokens: int | None = None,
    ) -> None:
        if level not in ("token", "sequence"):
            raise ValueError(f"level must be 'token' or 'sequence', got {level!r}")
        if num_proposals < 1:
            raise ValueError(f"num_proposals must be >= 1, got {num_proposals}")
        vocab = reference.tokenizer.get_vocab()
        for k, b in enumerate(bases):
            if b.tokenizer.get_vocab() != vocab:
                raise ValueError(f"basis {k} uses another tokenizer than the reference; composition needs one vocabulary")
        model = ProductOfExpertsLM(reference.model, [b.model for b in bases], coef, strength,
                                   [reference.temperature, *[b.temperature for b in bases]])
        super().__init__(model, reference.tokenizer, max_new_tokens=max_new_tokens or reference.max_new_tokens,
                         temperature=1.0, disable_dropout=True, use_cache=reference.use_cache)
        self.level: Level = level
        self.num_proposals = num_proposals
        self.last_ess: float | None = None
        self._adapter_sources: tuple[Path, list[Path]] | None = None

    @classmethod
    def from_adapters(
        cls,
        base: str | Path,
        adapters: Sequence[str | Path],
        coef: torch.Tensor | Sequence[float],
        strength: float = 1.0,
        level: Level = "token",
        num_proposals: int = 16,
    ) -> "ComposedCausalLMPolicy":
        """Compose LoRA adapters (``peft`` folders) of one base causal-LM folder; the base is the reference."""
        from peft import PeftModel

        base_policy = CausalLMPolicy.from_pretrained(base)
        if not adapters:
            raise ValueError("from_adapters needs at least one adapter folder")
        for a in adapters:
            if not (Path(a) / "adapter_config.json").is_file():
                raise FileNotFoundError(f"no peft adapter at {a} (missing adapter_config.json)")
        names = [f"basis_{k:03d}" for k in range(len(adapters))]
        shared = PeftModel.from_pretrained(base_policy.model, str(adapters[0]), adapter_name=names[0])
        for name, folder in zip(names[1:], adapters[1:]):
            shared.load_adapter(str(folder), adapter_name=name)
        shared.requires_grad_(False)

        def view(adapter: str | None) -> CausalLMPolicy:
            return CausalLMPolicy(AdapterExpert(shared, adapter), base_policy.tokenizer, max_new_tokens=base_policy.max_new_tokens,
                                  temperature=base_policy.temperature, use_cache=base_policy.use_cache)

        composed = cls(view(None), [view(n) for n in names], coef, strength, level, num_proposals)
        composed._adapter_sources = (Path(base), [Path(a) for a in adapters])
        return composed

    @property
    def coef(self) -> torch.Tensor:
        return self.model.coef

    @property
    def strength(self) -> float:
        return self.model.strength

    # ------------------------------------------------------------------------------------------ sequence level
    @torch.no_grad()
    def sir_log_weights(self, samples: TextSamples) -> torch.Tensor:
        """``log w = Σ_t log Z_t`` per completion: the sequence-level target over the token-level proposal."""
        logits = self.completion_logits(samples.prompt_ids, samples.prompt_mask, samples.completion_ids, samples.completion_mask)
        return (torch.logsumexp(logits.float(), dim=-1) * samples.completion_mask).sum(1)

    @torch.no_grad()
    def sample(
        self,
        prompts: Sequence[str],
        generator: torch.Generator | None = None,
        num_samples: int = 1,
        max_new_tokens: int | None = None,
        greedy: bool = False,
    ) -> TextSamples:
        if self.level == "token":
            return super().sample(prompts, generator, num_samples, max_new_tokens, greedy)
        m = self.num_proposals
        cand = super().sample(prompts, generator, num_samples * m, max_new_tokens, greedy=False)
        logw = self.sir_log_weights(cand).reshape(-1, m).cpu()
        weights = torch.softmax(logw, dim=1)
        self.last_ess = float((1.0 / (weights**2).sum(1)).mean() / m)
        if greedy:
            seq_logp = logw + cand.logprobs.sum(1).reshape(-1, m).cpu()
            pick = seq_logp.argmax(1)
        else:
            pick = torch.multinomial(weights, 1, generator=generator).squeeze(1)
        rows = (torch.arange(len(pick)) * m + pick).to(cand.completion_ids.device)
        return TextSamples([cand.texts[i] for i in rows.tolist()], cand.prompt_ids[rows], cand.prompt_mask[rows],
                           cand.completion_ids[rows], cand.completion_mask[rows], cand.logprobs[rows])

    # --------------------------------------------------------------------------------------------- checkpoints
    def expert_policies(self) -> list[CausalLMPolicy]:
        """The reference and basis models as plain policies (sharing weights with this one; adapter experts save
        only through the composed folder)."""
        models = [self.model.reference, *self.model.experts]
        return [CausalLMPolicy(m, self.tokenizer, max_new_tokens=self.max_new_tokens, temperature=t, use_cache=self.use_cache)
                for m, t in zip(models, self.model.temperatures)]

    def save_pretrained(self, path: str | Path) -> Path:
        """A folder with ``poem_text.json`` (coefficients, strength, level) and one causal-LM folder per expert."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        names = ["reference", *[f"basis_{k:03d}" for k in range(len(self.model.experts))]]
        if self._adapter_sources is not None:
            import shutil

            base, adapters = self._adapter_sources
            for name, folder in zip(names, [base, *adapters]):
                shutil.copytree(folder, path / name, dirs_exist_ok=True)
        else:
            for name, policy in zip(names, self.expert_policies()):
                policy.save_pretrained(path / name)
        meta = {"kind": "poem_text", "reference": names[0], "bases": names[1:], "coef": self.coef.tolist(),
                "strength": self.strength, "level": self.level, "num_proposals": self.num_proposals,
                "max_new_tokens": self.max_new_tokens, "adapters": self._adapter_sources is not None}
        (path / COMPOSED_TEXT_FILE).write_text(json.dumps(meta, indent=2))
        return path

    @classmethod
    def from_pretrained(cls, path: str | Path, **overrides: Any) -> "ComposedCausalLMPolicy":
        """Load a folder written by :meth:`save_pretrained`; ``overrides`` replace saved settings (e.g. ``level``)."""
        path = Path(path)
        meta_file = path / COMPOSED_TEXT_FILE
        if not meta_file.is_file():
            raise FileNotFoundError(f"no composed text policy at {path} (missing {COMPOSED_TEXT_FILE})")
        meta = {**json.loads(meta_file.read_text()), **overrides}
        if meta.get("adapters"):
            composed = cls.from_adapters(path / meta["reference"], [path / b for b in meta["bases"]], meta["coef"],
                                         meta["strength"], meta["level"], meta["num_proposals"])
            composed.max_new_tokens = meta["max_new_tokens"]
            return composed
        reference = CausalLMPolicy.from_pretrained(path / meta["reference"])
        bases = [CausalLMPolicy.from_pretrained(path / b) for b in meta["bases"]]
        return cls(reference, bases, meta["coef"], meta["strength"], meta["level"], meta["num_proposals"], meta["max_new_tokens"])


@torch.no_grad()
def sequence_log_ratios(reference: CausalLMPolicy, bases: Sequence[CausalLMPolicy], samples: TextSamples) -> torch.Tensor:
    """``ℓ_k(y) = Σ_t log π_k(y_t | ·) − log π_ref(y_t | ·)`` for each completion, ``[N, K]`` (calibration features)."""
    args = (samples.prompt_ids, samples.prompt_mask, samples.completion_ids, samples.completion_mask)
    ref = reference.token_logprobs(*args).sum(1)
    return torch.stack([b.token_logprobs(*args).sum(1) - ref for b in bases], dim=1)


__all__ = ["COMPOSED_TEXT_FILE", "AdapterExpert", "ComposedCausalLMPolicy", "ComposedLMOutput", "ProductOfExpertsLM", "sequence_log_ratios"]
