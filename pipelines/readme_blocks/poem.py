"""README blocks of PoEM: categorical, LM and flow predictions of RL outcomes."""
from __future__ import annotations

import math
import re

from visalign.results import ResultTable

from pipelines.readme_blocks.formatting import decimals, minus, table, value_range


def _coef(c: float) -> str:
    return "0" if abs(c) < 0.005 else f"{c:.2f}"


def _seeds(t: ResultTable) -> list[str]:
    return [r.row.removesuffix("/held out") for r in t.rows if r.row.endswith("/held out")]


def _power_bound(x: float) -> str:
    """``< 1e-N`` for the smallest power of ten above ``|x|``."""
    return "0" if x == 0 else f"< 1e{math.floor(math.log10(abs(x))) + 1}"


def poem_in_span(t: ResultTable) -> str:
    rows = [t.row(f"{s}/in span 0.5*r1+0.5*r2") for s in _seeds(t)]
    coefs = {tuple(_coef(c) for c in r.info["coef"]) for r in rows}
    if len(coefs) != 1:
        raise ValueError(f"poem_categorical: the seeds fit different ĉ {sorted(coefs)}; the README states one")
    return (f"recovery {value_range([r.values['recovery'] for r in rows], 4)} and KL(π* ‖ π̂) "
            f"{_power_bound(max(abs(r.values['kl']) for r in rows))} on all {len(rows)} toy seeds (log-ratio OLS:\n"
            f"  ĉ = ({', '.join(coefs.pop())}))")


def poem_spearman(t: ResultTable) -> str:
    rho = [t.row(f"{s}/held out").values["spearman"] for s in _seeds(t)]
    rewards = sum(t.row(f"{s}/held out").info["rewards"] for s in _seeds(t))
    total = t.row("all seeds").values
    held = sum(r <= -0.6 for r in rho)
    cells = [minus(f"{r:.2f}") for r in rho]
    mean, pooled = minus(f"{total['spearman_mean']:.2f}"), minus(f"{total['spearman_pooled']:.2f}")
    return (f"{', '.join(cells[:-1])} and {cells[-1]} on the {len(rho)} seeds (mean {mean}; {pooled} over\n"
            f"  all {rewards} rewards). The claimed ≤ −0.6 holds on "
            f"{held} of {len(rho)} seeds")


def poem_adam_default(t: ResultTable) -> str:
    seeds = _seeds(t)
    held = [t.row(f"{s}/held out").values for s in seeds]
    in_span = [t.row(f"{s}/in span 0.5*r1+0.5*r2").values for s in seeds]
    rho = [h["spearman"] for h in held]
    kl_gap = re.sub(r"e([+-])0*(\d)", r"e\1\2", f"{max(h['basis_kl_to_optimum_max'] for h in held):.0e}").replace("e+", "e")
    return (f"within {kl_gap} of the optimum in KL,\n"
            f"  but their log-ratios are off by up to {max(h['basis_log_ratio_error_max'] for h in held):.0f} nats where "
            f"the reference still puts mass. In-span recovery drops to\n  {value_range([v['recovery'] for v in in_span], 2)} "
            f"with KL(π* ‖ π̂) up to {max(v['kl'] for v in in_span):.1f}, and the Spearman correlation weakens to "
            f"{minus(f'{max(rho):.2f}')} … {minus(f'{min(rho):.2f}')}")


POEM_TEXT_REWARDS = {"correct+even": "0.5·correct + 0.5·even", "short+high": "0.5·short + 0.5·high",
                     "repeat": "repeated digit (outside)"}
POEM_TEXT_FITS = {"rewards": "rewards", "log_ratios": "log-ratios"}


def _coef_cell(c: float) -> str:
    """An exact zero (a reward fit on its own basis) as ``0``, anything else to two decimals (no sign on a value that
    rounds to zero)."""
    return "0" if round(c, 4) == 0 else decimals(c, 2)


def poem_text(t: ResultTable) -> str:
    def composed(v: dict, level: str) -> str:
        recovery = v.get(f"{level}_recovery")
        return f"{v[f'{level}_E']:.3f}" + ("" if recovery is None else f" ({minus(f'{recovery:.2f}')})")

    lines = []
    for key, label in POEM_TEXT_REWARDS.items():
        for fit, fit_label in POEM_TEXT_FITS.items():
            r = t.row(f"{key}/{fit}")
            v = r.values
            lines.append([label, fit_label, f"{v['coverage']:.3f}", ", ".join(_coef_cell(c) for c in r.info["coef"]),
                          f"{v['E_ref']:.3f} → {v['E_direct']:.3f}", composed(v, "token"), composed(v, "sequence")])
    return table(["new reward", "fit", "coverage", "ĉ (correct, short, even, high)", "E_ref → E_direct", "token-level",
                  "sequence-level (SIR)"], lines)


POEM_FLOW_REWARDS = {"0.5*brightness+0.5*mean_redness": "0.5·brightness + 0.5·mean_redness",
                     "centre_of_mass_y": "centre_of_mass_y (outside)"}


def poem_flow(t: ResultTable) -> str:
    lines = []
    for key, label in POEM_FLOW_REWARDS.items():
        r = t.row(f"seed=0/{key}")
        v = r.values
        share = decimals(v["share_of_direct_gain"], 2)
        lines.append([label, f"{v['coverage']:.3f}", ", ".join(_coef_cell(c) for c in r.info["coef"]),
                      minus(f"{v['E_ref']:.3f} → {v['E_direct']:.3f}"), minus(f"{v['E_poem']:.3f}"), f"**{share}**"])
    return table(["new reward", "coverage", "ĉ (brightness, redness, com-x, contrast)", "E_ref → E_direct", "PoEM",
                  "share of the direct gain"], lines)


def poem_flow_seed1(t: ResultTable) -> str:
    def phrase(key: str) -> str:
        v = t.row(f"seed=1/{key}").values
        return minus(f"{v['share_of_direct_gain']:.2f} ({v['E_ref']:.3f} → {v['E_direct']:.3f}, PoEM {v['E_poem']:.3f})")

    first, second = (phrase(k) for k in POEM_FLOW_REWARDS)
    return f"{first} and {second}"
