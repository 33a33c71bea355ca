"""Multi-turn rollouts: the policy acts, an environment (tool / checker) answers, until done or ``max_turns``.

Environment protocol (stateless, so G sibling rollouts can share one instance)::

    env.step(history, metadata) -> StepResult(observation, reward, done, progress, state)

``history = [prompt, action_1, observation_1, ..., action_t]`` ends with the newest action. The policy's context
for the next turn is the concatenation ``prompt + action_1 + observation_1 + ...``.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Hashable, Sequence

import torch

from .policy import CausalLMPolicy, TextSamples, _pad


@dataclass
class StepResult:
    """What the environment returns after an action.

    ``progress``: fraction of the task's checks passing after this turn (ProCredit). ``state``: a key for the
    state reached (graph credit merges trajectories on equal keys; default: the full history text)."""

    observation: str = ""
    reward: float = 0.0
    done: bool = False
    progress: float | None = None
    state: Hashable | None = None


class TextEnvironment(ABC):
    """A tool / environment for agentic text tasks."""

    def initial_state(self, prompt: str, metadata: dict[str, Any]) -> Hashable:
        """Key of the starting state (default: the prompt)."""
        return prompt

    def initial_progress(self, prompt: str, metadata: dict[str, Any]) -> float:
        """Verified progress before any action."""
        return 0.0

    @abstractmethod
    def step(self, history: list[str], metadata: dict[str, Any]) -> StepResult:
        """React to the newest action ``history[-1]``."""


@dataclass
class Turn:
    """One action of a trajectory with the context it was taken in and the environment's answer."""

    context: str
    action: str
    state: Hashable
    result: StepResult
    completion_ids: list[int]


@dataclass
class Trajectory:
    prompt: str
    metadata: dict[str, Any]
    turns: list[Turn] = field(default_factory=list)
    initial_progress: float = 0.0

    @property
    def reward(self) -> float:
        """Sum of the environment's step rewards."""
        return float(sum(t.result.reward for t in self.turns))

    @property
    def states(self) -> list[Hashable]:
        return [t.state for t in self.turns]

    @property
    def progress(self) -> list[float]:
        """Progress after each turn (a turn without a report keeps the previous value)."""
        out, prev = [], self.initial_progress
        for t in self.turns:
            prev = prev if t.result.progress is None else float(t.result.progress)
            out.append(prev)
        return out


def multiturn_rollout(
    policy: CausalLMPolicy,
    env: TextEnvironment,
    prompts: Sequence[str],
    metadata: Sequence[dict[str, Any]],
    generator: torch.Generator | None,
    group_size: int = 1,
    max_turns: int = 4,
    max_new_tokens: int | None = None,
    greedy: bool = False,
) -> list[Trajectory]:
    """``group_size`` trajectories per prompt (grouped contiguously); every turn samples all live trajectories in one
    batch, one completion each, from a seeded generator."""
    if max_turns < 1:
        raise ValueError(f"max_turns must be >= 1, got {max_turns}")
    trajs = [
        Trajectory(p, dict(m), initial_progress=env.initial_progress(p, m))
        for p, m in zip(prompts, metadata)
        for _ in range(group_size)
    ]
    histories = [[t.prompt] for t in trajs]
    states: list[Hashable] = [env.initial_state(t.prompt, t.metadata) for t in trajs]
    live = list(range(len(trajs)))
    for _ in range(max_turns):
        if not live:
            break
        contexts = ["".join(histories[i]) for i in live]
        s = policy.sample(contexts, generator, num_samples=1, max_new_tokens=max_new_tokens, greedy=greedy)
        still = []
        for row, i in enumerate(live):
            action = s.texts[row]
            histories[i].append(action)
            result = env.step(list(histories[i]), trajs[i].metadata)
            ids = [t for t, m in zip(s.completion_ids[row].tolist(), s.completion_mask[row].tolist()) if m]
            trajs[i].turns.append(Turn(contexts[row], action, states[i], result, ids))
            states[i] = result.state if result.state is not None else "".join(histories[i]) + result.observation
            histories[i].append(result.observation)
            if not result.done:
                still.append(i)
        live = still
    return trajs


def turn_batch(policy: CausalLMPolicy, trajectories: Sequence[Trajectory]) -> tuple[TextSamples, list[tuple[int, int]]]:
    """All turns of all trajectories as one batch of (context, action) rows, plus ``(trajectory, turn)`` indices."""
    contexts, completions, index = [], [], []
    for k, traj in enumerate(trajectories):
        for t, turn in enumerate(traj.turns):
            contexts.append(turn.context)
            completions.append(turn.completion_ids or [policy.tokenizer.eos_token_id])
            index.append((k, t))
    if not contexts:
        raise ValueError("no turns to batch")
    prompt_ids, prompt_mask = policy.encode_prompts(contexts)
    completion_ids, completion_mask = _pad(completions, policy.tokenizer.pad_token_id, left=False, device=policy.device)
    zeros = torch.zeros_like(completion_ids, dtype=torch.float32)
    texts = [trajectories[k].turns[t].action for k, t in index]
    return TextSamples(texts, prompt_ids, prompt_mask, completion_ids, completion_mask, zeros), index


def load_environment(spec: str, **kwargs: Any) -> TextEnvironment:
    """Build an environment from ``path/to/file.py:ClassName`` or ``package.module:ClassName``."""
    import importlib
    import importlib.util
    import sys
    from pathlib import Path

    target, sep, attr = spec.rpartition(":")
    if not sep or not target or not attr:
        raise ValueError(f"environment spec {spec!r} must look like 'file.py:Class' or 'package.module:Class'")
    if target.endswith(".py"):
        path = Path(target)
        if not path.is_file():
            raise FileNotFoundError(f"environment file not found: {path}")
        name = f"visalign_env_{path.stem}_{abs(hash(str(path.resolve())))}"
        module_spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        module_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(target)
    try:
        factory = getattr(module, attr)
    except AttributeError:
        raise AttributeError(f"environment spec {spec!r}: {target} has no attribute {attr!r}") from None
    env = factory(**kwargs)
    if not isinstance(env, TextEnvironment):
        raise TypeError(f"environment spec {spec!r} built a {type(env).__name__}, not a TextEnvironment: subclass "
                        "visalign.text.TextEnvironment (its step(history, metadata) returns a StepResult)")
    return env
