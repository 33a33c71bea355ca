"""Step-level credit for multi-turn rollouts.

- :func:`graph_credit` (CRBC / GRAFT style): merge a group's trajectories on shared states, solve the Bellman
  fixed point ``(I - gamma*M) V = b`` over the empirical transitions with absorbing success (V=1) / failure (V=0),
  back up ``Q(s, a) = gamma * V(s')`` and credit each step with ``(Q - V) / max(sigma(s), sigma_min)``.
- :func:`progress_credit` (ProCredit style): credit each turn with its change in verified progress.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Hashable, Sequence

import torch

SUCCESS = "__success__"
FAILURE = "__failure__"


@dataclass
class GraphCredit:
    """Result of :func:`graph_credit`: state values, step Q-values and per-step advantages (one list per trajectory)."""

    values: dict[Hashable, float]
    q_values: list[list[float]]
    step_advantages: list[list[float]]
    sigma: dict[Hashable, float] = field(default_factory=dict)
    num_actions: dict[Hashable, int] = field(default_factory=dict)


def graph_credit(
    trajectories: Sequence[Sequence[Hashable]],
    successes: Sequence[bool],
    gamma: float = 1.0,
    sigma_min: float = 0.1,
    actions: Sequence[Sequence[Hashable]] | None = None,
) -> GraphCredit:
    """Per-step advantages from the merged state graph of a group.

    ``trajectories[k] = [s_0, ..., s_{T-1}]`` are the states at which the ``T`` actions were taken; action ``t``
    leads to ``s_{t+1}`` and the last one to the absorbing outcome (``successes[k]``). With ``n(s)`` visits,
    ``M[s, s'] = n(s -> s') / n(s)`` over non-terminal states and ``b[s] = gamma * n(s -> success) / n(s)``,
    ``V = (I - gamma*M)^{-1} b``. An action is keyed by ``actions[k][t]`` (default: the state it leads to);
    ``Q(s, a) = gamma * mean V(s')`` over its occurrences, ``sigma(s)^2 = sum_a pi(a|s) (Q(s, a) - V(s))^2`` with the
    empirical ``pi``, and the step credit is ``(Q - V) / max(sigma, sigma_min)`` where ``s`` has >= 2 observed
    actions, else 0.
    """
    if len(trajectories) != len(successes):
        raise ValueError(f"{len(trajectories)} trajectories but {len(successes)} outcomes")
    if not 0.0 < gamma <= 1.0:
        raise ValueError(f"gamma must be in (0, 1], got {gamma}")
    if actions is not None and [len(a) for a in actions] != [len(t) for t in trajectories]:
        raise ValueError("actions must have one key per step of each trajectory")
    index: dict[Hashable, int] = {}
    for traj in trajectories:
        if len(traj) == 0:
            raise ValueError("every trajectory needs at least one step")
        for s in traj:
            index.setdefault(s, len(index))
    n = len(index)
    counts = torch.zeros(n, n, dtype=torch.float64)
    to_success = torch.zeros(n, dtype=torch.float64)
    visits = torch.zeros(n, dtype=torch.float64)
    steps: list[list[tuple[int, Hashable, Hashable]]] = []  # (state idx, action key, next state / outcome)
    for k, traj in enumerate(trajectories):
        outcome = SUCCESS if successes[k] else FAILURE
        row = []
        for t, s in enumerate(traj):
            i = index[s]
            nxt = traj[t + 1] if t + 1 < len(traj) else outcome
            visits[i] += 1
            if nxt == SUCCESS:
                to_success[i] += 1
            elif nxt != FAILURE:
                counts[i, index[nxt]] += 1
            key = actions[k][t] if actions is not None else ("next", nxt)
            row.append((i, key, nxt))
        steps.append(row)
    m = counts / visits[:, None]
    b = gamma * to_success / visits
    v = torch.linalg.solve(torch.eye(n, dtype=torch.float64) - gamma * m, b)

    def value(x: Hashable) -> float:
        if x == SUCCESS:
            return 1.0
        if x == FAILURE:
            return 0.0
        return float(v[index[x]])

    q_sum: dict[tuple[int, Hashable], float] = {}
    q_cnt: dict[tuple[int, Hashable], int] = {}
    for row in steps:
        for i, key, nxt in row:
            q_sum[(i, key)] = q_sum.get((i, key), 0.0) + gamma * value(nxt)
            q_cnt[(i, key)] = q_cnt.get((i, key), 0) + 1
    q = {ka: q_sum[ka] / q_cnt[ka] for ka in q_sum}
    var = torch.zeros(n, dtype=torch.float64)
    n_actions = torch.zeros(n, dtype=torch.long)
    for (i, key), qv in q.items():
        var[i] += q_cnt[(i, key)] / visits[i] * (qv - v[i]) ** 2
        n_actions[i] += 1
    sigma = var.sqrt()
    q_values, advantages = [], []
    for row in steps:
        q_row, a_row = [], []
        for i, key, _ in row:
            qv = q[(i, key)]
            q_row.append(qv)
            a_row.append(float((qv - v[i]) / max(float(sigma[i]), sigma_min)) if n_actions[i] >= 2 else 0.0)
        q_values.append(q_row)
        advantages.append(a_row)
    states = list(index)
    return GraphCredit(
        values={s: float(v[index[s]]) for s in states},
        q_values=q_values,
        step_advantages=advantages,
        sigma={s: float(sigma[index[s]]) for s in states},
        num_actions={s: int(n_actions[index[s]]) for s in states},
    )


def combine_credit(
    group_advantages: Sequence[float], step_advantages: Sequence[Sequence[float]], w_group: float = 1.0, w_step: float = 1.0
) -> list[list[float]]:
    """Final per-step advantage ``w_G * A_group(trajectory) + w_S * A_step(t)``."""
    if len(group_advantages) != len(step_advantages):
        raise ValueError(f"{len(group_advantages)} trajectory advantages but {len(step_advantages)} step lists")
    return [[w_group * float(a) + w_step * float(s) for s in row] for a, row in zip(group_advantages, step_advantages)]


def progress_credit(progress: Sequence[float], initial: float = 0.0) -> list[float]:
    """Verified-progress credit: ``c_t = p_t - p_{t-1}`` with ``p_{-1} = initial``, where ``p_t`` is the fraction of
    the task's checks that pass after turn ``t`` (the credits telescope to ``p_T - initial``)."""
    out, prev = [], float(initial)
    for p in progress:
        out.append(float(p) - prev)
        prev = float(p)
    return out
