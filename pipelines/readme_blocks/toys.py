"""README blocks of the tilted-target toys (toy_tilt): methods, baselines and the λ curve."""
from __future__ import annotations

from visalign.results import ResultTable

from pipelines.readme_blocks.formatting import minus, table


TOY_METHODS = {"rwtd": ("RWTD, λ = 0", "one-step MLP"), "festdpo_one_step": ("FestDPO", "one-step MLP"),
               "festdpo_flow": ("FestDPO", "4-step flow, Euler")}


def toy_methods(t: ResultTable) -> str:
    lines = []
    for key, (method, generator) in TOY_METHODS.items():
        v = t.row(key).values
        lines.append([method, generator, f"{v['mmd']:.3f} ({v['mmd_floor']:.3f})", f"{v['sw2']:.3f} ({v['sw2_floor']:.3f})",
                      f"{v['reward']:.3f} ({v['target_reward']:.3f})"])
    return table(["method", "generator", "MMD (noise floor)", "sliced W2 (floor)", "reward (target)"], lines)


def toy_baselines(t: ResultTable) -> str:
    reward = {k: t.row(k).values["reward"] for k in ("rwr", "flow_grpo", "reward_backprop")}
    return (f"reward {reward['rwr']:.0f} and {reward['flow_grpo']:.0f}), reward backprop with its anchor stops at "
            f"{reward['reward_backprop']:.2f}")


def toy_lambda(t: ResultTable) -> str:
    curve = [r for r in t.rows if r.row.startswith("lam=")]
    return table(["λ", *(r.row.removeprefix("lam=") for r in curve)],
                 [["reward", *(minus(f"{r.values['reward']:.3f}") for r in curve)],
                  ["MMD to the reference", *(f"{r.values['mmd_to_reference']:.3f}" for r in curve)]])
