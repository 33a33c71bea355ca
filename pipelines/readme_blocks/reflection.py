"""README blocks of the reflection loops (reflection_counting)."""
from __future__ import annotations

from visalign.results import ResultTable

from pipelines.readme_blocks.formatting import Renderer, signed, table


REFLECTION_MODELS = ("SFT", "RL, both heads", "RL, text only", "RL, flow only")
REFLECTION_COLUMNS = {"acc@0": "acc@0", "acc@1": "acc@1", "acc@2": "acc@2", "acc@3": "acc@3", "repair_rate": "repair",
                      "damage_rate": "damage", "parse_gated_acc": "parse-gated", "best_of_4": "best-of-4"}
CRITIQUE_COLUMNS = {"instr_right": "instruction right", "probe_obeys_right": "obeys (right instr.)",
                    "probe_obeys_wrong": "obeys (wrong instr.)", "probe_defies_wrong": "repairs anyway",
                    "instruction_effect": "instruction effect", "clean_probe_defies_wrong": "repairs anyway, clean dots"}
REFLECTION_SEEDS = (0, 1, 2)


def _pm(t: ResultTable, row: str, key: str) -> str:
    """``mean ± population std over seeds`` of one rate, one decimal."""
    r = t.row(row)
    return f"{r.values[key]:.1f} ± {r.info['sd'][key]:.1f}"


def reflection_table(run: str) -> Renderer:
    def render(t: ResultTable) -> str:
        return table(["model", *REFLECTION_COLUMNS.values()],
                     [[m, *(_pm(t, f"{run}/{m}", k) for k in REFLECTION_COLUMNS)] for m in REFLECTION_MODELS])
    return render


def reflection_critique(t: ResultTable) -> str:
    rows = {"SFT": "default/SFT", "RL, both heads (default)": "default/RL, both heads",
            "RL, both heads, shared first render": "shared/RL, both heads",
            "SFT, editor blind to the prompt": "blind/SFT", "RL, both heads, editor blind to the prompt": "blind/RL, both heads"}
    return table(["model", *CRITIQUE_COLUMNS.values()],
                 [[label, *(_pm(t, row, k) for k in CRITIQUE_COLUMNS)] for label, row in rows.items()])


def reflection_claims(run: str) -> Renderer:
    """The issue's claims on the means, each with its per-seed figures and whether it holds on every seed."""
    def render(t: ResultTable) -> str:
        def v(model: str, key: str, seed: int | None = None) -> float:
            return t.row(f"{run}/{model}" if seed is None else f"{run}/seed {seed}/{model}").values[key]

        def verdict(holds: list[bool]) -> str:
            return "every seed" if all(holds) else f"{sum(holds)} of {len(holds)} seeds"

        sft, rl = "SFT", "RL, both heads"
        repair = [v(rl, "repair_rate", s) / v(sft, "repair_rate", s) for s in REFLECTION_SEEDS]
        gain = [v(rl, "acc@3", s) - v(sft, "acc@3", s) for s in REFLECTION_SEEDS]
        round0 = [v(rl, "acc@0", s) - v(sft, "acc@0", s) for s in REFLECTION_SEEDS]
        both = [all(v(rl, "acc@3", s) > v(o, "acc@3", s) for o in ("RL, text only", "RL, flow only")) for s in REFLECTION_SEEDS]
        best = [v(rl, "acc@3", s) >= v(rl, "best_of_4", s) for s in REFLECTION_SEEDS]
        per_seed = ", ".join(f"{v(sft, 'repair_rate', s):.1f} → {v(rl, 'repair_rate', s):.1f}" for s in REFLECTION_SEEDS)
        return "\n".join([
            f"- RL raises the repair rate {v(rl, 'repair_rate') / v(sft, 'repair_rate'):.1f}× ({v(sft, 'repair_rate'):.1f} → "
            f"{v(rl, 'repair_rate'):.1f}; per seed {per_seed}; ≥ 2× on {verdict([r >= 2 for r in repair])}).",
            f"- Final accuracy gains {v(rl, 'acc@3') - v(sft, 'acc@3'):.1f} points ({v(sft, 'acc@3'):.1f} → {v(rl, 'acc@3'):.1f}; "
            f"≥ 10 points on {verdict([g >= 10 for g in gain])}).",
            f"- Round-0 accuracy moves by {signed(v(rl, 'acc@0') - v(sft, 'acc@0'), 1)} points (within 3 points on "
            f"{verdict([abs(r) <= 3 for r in round0])}).",
            f"- Both heads ({v(rl, 'acc@3'):.1f}) against text-only ({v('RL, text only', 'acc@3'):.1f}) and flow-only "
            f"({v('RL, flow only', 'acc@3'):.1f}): both heads ahead of each on {verdict(both)}. Per seed, both vs flow-only: "
            + ", ".join(f"{v(rl, 'acc@3', s):.1f} vs {v('RL, flow only', 'acc@3', s):.1f}" for s in REFLECTION_SEEDS) + ".",
            f"- Reflection at 4 images ({v(rl, 'acc@3'):.1f}) against best-of-4 ({v(rl, 'best_of_4'):.1f}): reflection at "
            f"least as good on {verdict(best)}. Per seed: "
            + ", ".join(f"{v(rl, 'acc@3', s):.1f} vs {v(rl, 'best_of_4', s):.1f}" for s in REFLECTION_SEEDS) + "."])
    return render


def reflection_shared_round0(t: ResultTable) -> str:
    def moved(model: str) -> str:
        return signed(t.row(f"shared/{model}").values["acc@0"] - t.row("shared/SFT").values["acc@0"], 1)
    return f"{moved('RL, both heads')} points ({moved('RL, flow only')} flow-only)"
