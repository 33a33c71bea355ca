"""A tiny unified reflection model for CPU on the counting toy: a shared trunk that reads (prompt, image, round), a
categorical controller head over a 16-token vocabulary, and a flow editing head over the 6 dot slots conditioned on
the previous image and the instruction.

Parameter groups: the trunk and the text head form the controller (the policy optimizer); the flow head is the
editor (its own optimizer). Revisions read the trunk's features of the previous image detached, so RL's two steps
touch disjoint parameters (SFT trains everything together); the first render is conditioned on the prompt alone,
so it moves only with the flow head. ``pipelines/reflection_counting.py`` freezes the trunk in RL (a trunk moved by
the text step alone shifts the inputs of a frozen editor in text-only RL).

With ``first_render: separate`` first images come from a render head of their own (:attr:`render_flow`, the same
architecture) that belongs to neither the controller nor the editor module, so RL leaves round-0 renders
bit-identical; :meth:`TinyReflectionModel.isolate_first_render` makes it a copy of an SFT-trained flow head.
"""
from __future__ import annotations

import copy
import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Sequence

import torch
from torch import nn
from torch.nn import functional as F

from ..core.config import check, option
from ..core.flow import FlowModel
from ..core.reflection import Controller, ControllerTurns, ReflectionPolicy, Turn, format_turn
from .counting import INSTRUCTIONS, MAX_DOTS, NUM_SITES, image_to_slots, slots_to_image, target_count

SCORE_TOKENS = 11
ACTION_EDIT, ACTION_DONE = 11, 12
EDIT_ADD, EDIT_REMOVE, EDIT_NONE = 13, 14, 15
VOCAB = 16
TURN_LENGTH = 3
MAX_ROUNDS = 3
FIRST_RENDER = ("shared", "separate")
_EDIT_TEXT = {EDIT_ADD: f"[EDIT] {INSTRUCTIONS[0]}", EDIT_REMOVE: f"[EDIT] {INSTRUCTIONS[1]}", EDIT_NONE: "[EDIT] None"}


def token_text(token: int) -> str:
    """The protocol piece a token writes."""
    if token < SCORE_TOKENS:
        return f"[SCORE] {token}/10"
    if token in (ACTION_EDIT, ACTION_DONE):
        return f"[ACTION] {'edit' if token == ACTION_EDIT else 'done'}"
    return _EDIT_TEXT[token]


def decode_tokens(tokens: Sequence[int]) -> str:
    return " ".join(token_text(int(t)) for t in tokens)


def encode_turn(turn: Turn) -> list[int]:
    """Token ids of a well-formed turn (the inverse of :func:`decode_tokens` on the protocol)."""
    payload = {None: EDIT_NONE, INSTRUCTIONS[0]: EDIT_ADD, INSTRUCTIONS[1]: EDIT_REMOVE}
    if turn.instruction not in payload:
        raise ValueError(f"the tiny controller cannot write instruction {turn.instruction!r}")
    tokens = [turn.score, ACTION_EDIT if turn.action == "edit" else ACTION_DONE, payload[turn.instruction]]
    assert decode_tokens(tokens) == format_turn(turn)
    return tokens


@dataclass
class TinyReflectionConfig:
    hidden: int = option(64, "width of the trunk, text head and flow head")
    num_steps: int = option(4, "editor sampling steps")
    shift: float = option(1.0, "editor timestep shift")
    edit_sees_prompt: bool = option(True, "revisions are conditioned on the prompt (and trunk features) besides the "
                                          "previous image and the instruction; false: the instruction is the only "
                                          "route to the target")
    first_render: str = option("shared", "shared: the flow head draws first images and revisions, so RL on "
                                         "revisions also moves first renders; separate: first images come from a "
                                         "render head of their own that neither RL optimizer updates (SFT trains it; "
                                         "isolate_first_render() makes it a copy of a trained flow head)")

    def __post_init__(self) -> None:
        check(self.hidden >= 4, f"tiny_reflection.hidden must be >= 4, got {self.hidden}")
        check(self.num_steps >= 1, f"tiny_reflection.num_steps must be >= 1, got {self.num_steps}")
        check(self.first_render in FIRST_RENDER,
              f"tiny_reflection.first_render must be one of {list(FIRST_RENDER)}, got {self.first_render!r}")


def prompt_features(prompts: Sequence[str], device: torch.device) -> torch.Tensor:
    targets = torch.tensor([target_count(p) for p in prompts], device=device)
    return F.one_hot(targets - 1, MAX_DOTS).float()


class TinyController(Controller):
    """Shared trunk + autoregressive categorical head: position j sees the trunk features, its position and the
    two previous tokens, and picks any of the 16 tokens (so it can break the protocol)."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(MAX_DOTS + NUM_SITES + MAX_ROUNDS, hidden), nn.SiLU(),
                                   nn.Linear(hidden, hidden), nn.SiLU())
        self.position = nn.Embedding(TURN_LENGTH, hidden)
        self.previous = nn.Embedding(VOCAB + 1, hidden)
        self.before_previous = nn.Embedding(VOCAB + 1, hidden)
        self.head = nn.Sequential(nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, VOCAB))

    def features(self, prompts: Sequence[str], images: torch.Tensor, round_index: int) -> torch.Tensor:
        if not 0 <= round_index < MAX_ROUNDS:
            raise ValueError(f"round_index must be in [0, {MAX_ROUNDS}), got {round_index}")
        rounds = torch.zeros(images.shape[0], MAX_ROUNDS, device=images.device)
        rounds[:, round_index] = 1
        x = torch.cat([prompt_features(prompts, images.device), image_to_slots(images).float(), rounds], 1)
        return self.trunk(x)

    def _logits(self, h: torch.Tensor, position: int, tokens: torch.Tensor) -> torch.Tensor:
        start = torch.full((h.shape[0],), VOCAB, dtype=torch.long, device=h.device)
        prev = tokens[:, position - 1] if position >= 1 else start
        prev2 = tokens[:, position - 2] if position >= 2 else start
        pos = torch.full_like(start, position)
        return self.head(h + self.position(pos) + self.previous(prev) + self.before_previous(prev2))

    def propose(self, prompts: Sequence[str], images: torch.Tensor, round_index: int, *,
                generator: torch.Generator | None = None, temperature: float = 1.0) -> ControllerTurns:
        with torch.no_grad():
            h = self.features(prompts, images, round_index)
            tokens = torch.zeros(h.shape[0], TURN_LENGTH, dtype=torch.long, device=h.device)
            log_probs = torch.zeros(h.shape[0], TURN_LENGTH, device=h.device)
            for j in range(TURN_LENGTH):
                logp = torch.log_softmax(self._logits(h, j, tokens) / temperature, -1)
                pick = torch.multinomial(logp.exp().cpu(), 1, generator=generator).squeeze(1).to(h.device)
                tokens[:, j] = pick
                log_probs[:, j] = logp.gather(1, pick[:, None]).squeeze(1)
        texts = [decode_tokens(row) for row in tokens.tolist()]
        return ControllerTurns(tokens, log_probs, torch.ones_like(log_probs), texts)

    def token_log_probs(self, prompts: Sequence[str], images: torch.Tensor, round_index: int, tokens: torch.Tensor,
                        temperature: float = 1.0) -> torch.Tensor:
        return self.all_log_probs(prompts, images, round_index, tokens, temperature).gather(2, tokens[..., None]).squeeze(2)

    def all_log_probs(self, prompts: Sequence[str], images: torch.Tensor, round_index: int, tokens: torch.Tensor,
                      temperature: float = 1.0) -> torch.Tensor:
        """Log-probs ``[B, L, V]`` of every token at every position, teacher-forced on ``tokens``."""
        h = self.features(prompts, images, round_index)
        return torch.stack([torch.log_softmax(self._logits(h, j, tokens) / temperature, -1) for j in range(TURN_LENGTH)], 1)


@dataclass
class TinyEditorConfig:
    num_steps: int = 4
    shift: float = 1.0


COND_DIM = MAX_DOTS + NUM_SITES + len(INSTRUCTIONS) + 1


class TinyFlowEditor(FlowModel):
    """Velocity MLP over 6 slot latents, conditioned on (prompt, previous slots, instruction or "render", trunk
    features); decodes slots to a 1×8×8 image."""

    def __init__(self, hidden: int, num_steps: int, shift: float) -> None:
        super().__init__(TinyEditorConfig(num_steps, shift))
        self.net = nn.Sequential(nn.Linear(NUM_SITES + 1 + COND_DIM + hidden, 2 * hidden), nn.SiLU(),
                                 nn.Linear(2 * hidden, 2 * hidden), nn.SiLU(), nn.Linear(2 * hidden, NUM_SITES))

    @property
    def noise_shape(self) -> tuple[int, ...]:
        return (NUM_SITES,)

    def velocity(self, x: torch.Tensor, t: torch.Tensor, cond: Any = None) -> torch.Tensor:
        if cond is None:
            raise ValueError("the tiny editor needs a condition (render_condition or edit_condition)")
        return self.net(torch.cat([x, t[:, None].to(x.dtype), cond], 1))

    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        return slots_to_image(latents)

    def generate(self, noise: torch.Tensor, cond: Any = None) -> torch.Tensor:
        return self.decode(self.sample_latents(noise, cond))


class TinyReflectionModel(ReflectionPolicy):
    """The unified tiny model: controller (trunk + text head), flow editing head and, with ``first_render:
    separate``, a render head for first images that is in neither the controller nor the editor module."""

    def __init__(self, config: TinyReflectionConfig | None = None) -> None:
        super().__init__()
        self.config = config or TinyReflectionConfig()
        self.text = TinyController(self.config.hidden)
        self.flow = TinyFlowEditor(self.config.hidden, self.config.num_steps, self.config.shift)
        self.render_flow = (TinyFlowEditor(self.config.hidden, self.config.num_steps, self.config.shift)
                            if self.config.first_render == "separate" else None)

    @property
    def controller(self) -> TinyController:
        return self.text

    @property
    def editor(self) -> TinyFlowEditor:
        return self.flow

    @property
    def renderer(self) -> TinyFlowEditor:
        return self.flow if self.render_flow is None else self.render_flow

    def isolate_first_render(self) -> "TinyReflectionModel":
        """Give first images a render head of their own: a copy of the current flow head, outside both RL optimizers'
        modules, so RL on revisions leaves first renders exactly as they are now. Returns ``self``."""
        if self.render_flow is not None:
            raise ValueError("this tiny reflection model already draws first images with a separate render head")
        self.render_flow = copy.deepcopy(self.flow)
        self.config = replace(self.config, first_render="separate")
        return self

    def _condition(self, prompts: Sequence[str], images: torch.Tensor, instruction_ids: torch.Tensor,
                   trunk: bool = True) -> torch.Tensor:
        device = images.device
        features = self.text.features(prompts, images, 0).detach()
        trunk = features if trunk else torch.zeros_like(features)
        prompt = prompt_features(prompts, device)
        if not self.config.edit_sees_prompt:
            revision = (instruction_ids > 0).float()[:, None]
            prompt, trunk = prompt * (1 - revision), trunk * (1 - revision)
        which = F.one_hot(instruction_ids, len(INSTRUCTIONS) + 1).float()
        return torch.cat([prompt, image_to_slots(images).float(), which, trunk], 1)

    def render_condition(self, prompts: Sequence[str]) -> torch.Tensor:
        blank = slots_to_image(torch.zeros(len(prompts), NUM_SITES, device=self.renderer.device))
        return self._condition(prompts, blank, torch.zeros(len(prompts), dtype=torch.long, device=blank.device), trunk=False)

    def edit_condition(self, prompts: Sequence[str], images: torch.Tensor, instructions: Sequence[str]) -> torch.Tensor:
        unknown = sorted({i for i in instructions if i not in INSTRUCTIONS})
        if unknown:
            raise ValueError(f"the tiny editor knows the instructions {list(INSTRUCTIONS)}, not {unknown}")
        ids = torch.tensor([1 + INSTRUCTIONS.index(i) for i in instructions], device=images.device)
        return self._condition(prompts, images, ids)

    def save_pretrained(self, path: str | Path) -> Path:
        from safetensors.torch import save_model

        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        (path / "tiny_reflection.json").write_text(json.dumps(asdict(self.config), indent=2))
        save_model(self, str(path / "model.safetensors"))
        return path

    @classmethod
    def from_pretrained(cls, path: str | Path) -> "TinyReflectionModel":
        from safetensors.torch import load_model

        path = Path(path)
        if not (path / "tiny_reflection.json").is_file():
            raise FileNotFoundError(f"no tiny reflection model at {path} (missing tiny_reflection.json)")
        model = cls(TinyReflectionConfig(**json.loads((path / "tiny_reflection.json").read_text())))
        load_model(model, str(path / "model.safetensors"))
        return model


__all__ = ["TinyReflectionModel", "TinyReflectionConfig", "TinyController", "TinyFlowEditor", "encode_turn",
           "decode_tokens", "VOCAB"]
