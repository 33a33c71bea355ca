"""Reflection protocol: a controller that critiques an image in a strict text protocol, and an image-conditioned flow
editor that re-renders it (generate → critique → revise).

A controller turn is one line ``[SCORE] s/10 [ACTION] edit|done [EDIT] <instruction>`` (``done`` requires
``[EDIT] None``); :func:`parse_turn` accepts exactly that and nothing else, so a malformed turn is detected, not
guessed at. A :class:`ReflectionPolicy` exposes the two parts: a :class:`Controller` (text head: sampled tokens with
their log-probs, and differentiable re-scoring) and a :class:`FlowModel` editor with :meth:`render_condition` (the
first image, from the prompt) and :meth:`edit_condition` (previous image + instruction). A unified model implements
the policy directly; :class:`ReflectionPair` joins separate parts. The text part is what the policy's optimizer
trains (:meth:`Policy.trainable_module`); the editor is trained by a second optimizer (:meth:`editor_module`).
"""
from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import torch
from torch import nn

from .flow import FlowModel
from .policy import Policy

TURN_PATTERN = re.compile(r"\[SCORE\] (10|[0-9])/10 \[ACTION\] (edit|done) \[EDIT\] (\S(?:.*\S)?)")


@dataclass(frozen=True)
class Turn:
    """A parsed controller turn: self-assessed score 0..10, action and the edit instruction (None for ``done``)."""

    score: int
    action: str
    instruction: str | None


def parse_turn(text: str) -> Turn | None:
    """The turn ``text`` states, or None when it breaks the protocol (wrong order, unknown action, ``done`` with an
    instruction, ``edit`` without one, anything before or after the line)."""
    match = TURN_PATTERN.fullmatch(text)
    if match is None:
        return None
    score, action, payload = int(match.group(1)), match.group(2), match.group(3)
    if (action == "done") != (payload == "None"):
        return None
    return Turn(score, action, None if payload == "None" else payload)


def format_turn(turn: Turn) -> str:
    """The protocol line of ``turn`` (inverse of :func:`parse_turn`)."""
    return f"[SCORE] {turn.score}/10 [ACTION] {turn.action} [EDIT] {turn.instruction or 'None'}"


@dataclass
class ControllerTurns:
    """A batch of sampled controller turns: token ids ``[B, L]``, their sampling log-probs ``[B, L]``, a 0/1 mask of
    the policy-sampled positions ``[B, L]`` (host-forced tokens are 0) and the decoded texts."""

    tokens: torch.Tensor
    log_probs: torch.Tensor
    mask: torch.Tensor
    texts: list[str]


class Controller(nn.Module, ABC):
    """The text head: looks at (prompt, current image, round) and writes one protocol turn."""

    @abstractmethod
    def propose(self, prompts: Sequence[str], images: torch.Tensor, round_index: int, *,
                generator: torch.Generator | None = None, temperature: float = 1.0) -> ControllerTurns:
        """Sample one turn per row without grad."""

    @abstractmethod
    def token_log_probs(self, prompts: Sequence[str], images: torch.Tensor, round_index: int, tokens: torch.Tensor,
                        temperature: float = 1.0) -> torch.Tensor:
        """Differentiable log-probs ``[B, L]`` of ``tokens`` under the current weights (same temperature)."""


class ReflectionPolicy(Policy):
    """A model that can draw an image, critique it and revise it.

    Members: :attr:`controller` (the text head, trained by the policy's optimizer), :attr:`editor` (a
    :class:`FlowModel` sampled with :meth:`edit_condition` for each revision; trained through :meth:`editor_module`
    by a second optimizer) and :attr:`renderer` (the flow model sampled with :meth:`render_condition` for the first
    image; the editor by default). The controller's and the editor's parameter sets are disjoint."""

    @property
    @abstractmethod
    def controller(self) -> Controller: ...

    @property
    @abstractmethod
    def editor(self) -> FlowModel: ...

    @abstractmethod
    def render_condition(self, prompts: Sequence[str]) -> Any:
        """Editor condition for the first image (prompt only)."""

    @abstractmethod
    def edit_condition(self, prompts: Sequence[str], images: torch.Tensor, instructions: Sequence[str]) -> Any:
        """Editor condition for a revision of ``images`` following ``instructions`` (differentiable in the editor)."""

    @property
    def renderer(self) -> FlowModel:
        """The flow model that draws first images with :meth:`render_condition`: the editor, unless the policy keeps
        first renders on parameters of their own (which then neither optimizer updates)."""
        return self.editor

    def trainable_module(self) -> nn.Module:
        return self.controller

    def editor_module(self) -> nn.Module:
        return self.editor

    def render(self, prompts: Sequence[str], generator: torch.Generator | None = None) -> torch.Tensor:
        """First images, one per prompt, by the renderer's ODE sampler (no grad, no log-prob)."""
        renderer = self.renderer
        noise = renderer.make_noise(len(prompts), generator)
        self.record_draws(len(prompts))
        with torch.no_grad():
            return renderer.decode(renderer.sample_latents(noise, self.render_condition(prompts)))

    def sample(self, prompts: Sequence[str] | None = None, *, generator: torch.Generator | None = None,
               num_samples: int = 1) -> torch.Tensor:
        """Single-shot first images, ``num_samples`` per prompt (the reflection loop itself is
        ``visalign.reflection.run_trajectories``)."""
        if prompts is None:
            raise ValueError("a reflection policy needs prompts")
        return self.render([p for p in prompts for _ in range(num_samples)], generator)


class ReflectionPair(ReflectionPolicy):
    """Separate parts: any :class:`Controller` as critic and a :class:`FlowModel` editor whose condition is built by
    ``conditioner`` — an ``nn.Module`` with ``render(prompts)`` and ``edit(prompts, images, instructions)``
    methods, trained with the editor."""

    def __init__(self, controller: Controller, editor: FlowModel, conditioner: "EditConditioner") -> None:
        super().__init__()
        self._controller = controller
        self.editor_parts = nn.ModuleDict({"flow": editor, "conditioner": conditioner})

    @property
    def controller(self) -> Controller:
        return self._controller

    @property
    def editor(self) -> FlowModel:
        return self.editor_parts["flow"]  # type: ignore[return-value]

    def editor_module(self) -> nn.Module:
        return self.editor_parts

    def render_condition(self, prompts: Sequence[str]) -> Any:
        return self.editor_parts["conditioner"].render(prompts)

    def edit_condition(self, prompts: Sequence[str], images: torch.Tensor, instructions: Sequence[str]) -> Any:
        return self.editor_parts["conditioner"].edit(prompts, images, instructions)

    def save_pretrained(self, path: str | Path) -> Path:
        from safetensors.torch import save_model

        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        save_model(self, str(path / "reflection_pair.safetensors"))
        return path


class EditConditioner(nn.Module, ABC):
    """Builds a flow editor's condition: from the prompt (first image) or from (prompt, previous image, instruction)."""

    @abstractmethod
    def render(self, prompts: Sequence[str]) -> Any: ...

    @abstractmethod
    def edit(self, prompts: Sequence[str], images: torch.Tensor, instructions: Sequence[str]) -> Any: ...


__all__ = ["Turn", "parse_turn", "format_turn", "ControllerTurns", "Controller", "ReflectionPolicy", "ReflectionPair",
           "EditConditioner", "TURN_PATTERN"]
