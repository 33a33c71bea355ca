"""The README's result blocks: which command makes each one, and how its result file renders into the README.

Each ``Entry`` names the command(s) that produce one result file ``assets/results/<name>.json`` (``{out}`` is the
run folder, ``{results}`` the file the command writes), whether it belongs to ``reproduce.py --fast`` (a few minutes
at most) or only to ``--all``, the README blocks rendered from the file and the pictures the run also produces.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from visalign.results import ResultTable

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "assets" / "results"
README = ROOT / "README.md"

Renderer = Callable[[ResultTable], str]


@dataclass(frozen=True)
class Entry:
    name: str
    runs: tuple[tuple[str | None, tuple[str, ...]], ...]  # (label, python argv with {out} / {results} placeholders)
    fast: bool
    blocks: dict[str, Renderer] = field(default_factory=dict)
    pictures: dict[str, str] = field(default_factory=dict)  # file in the run folder -> path under the repository
    note: str = ""  # for tables merged from several runs

    @property
    def path(self) -> Path:
        return RESULTS_DIR / f"{self.name}.json"


# ---------------------------------------------------------------------------------------------------- formatting
def minus(text: str) -> str:
    return text.replace("-", "−")


def pct(p: float, digits: int = 1) -> str:
    return "0%" if p == 0 else f"{100 * p:.{digits}f}%"


def times(r: float) -> str:
    return f"{r:.0f}×" if r >= 10 else f"{r:.1f}×"


def table(head: list[str], lines: list[list[str]]) -> str:
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(rows + ["| " + " | ".join(line) + " |" for line in lines])


# ---------------------------------------------------------------------------------------------------- text side
ESTIMATORS = {"grpo": "GRPO", "dr_grpo": "Dr.GRPO", "rloo": "RLOO", "mapp": "MaPP"}


def text_single(t: ResultTable) -> str:
    warm = t.row("warm start").values["exact_match"]
    return table(["warm start", *ESTIMATORS.values()],
                 [[f"{warm:.3f}", *(f"{t.row(k).values['exact_match']:.3f}" for k in ESTIMATORS)]])


def text_seeds(t: ResultTable) -> str:
    """Warm start: mean exact match ± SE over seeds; estimators: mean gain over the same seed's warm start ± SE."""
    def cell(name: str, column: str, sign: str = "") -> str:
        r = t.row(name)
        return minus(f"{r.values[column]:{sign}.3f}") + f" (±{r.se[column]:.3f})"

    return table(["warm start", *ESTIMATORS.values()],
                 [[cell("warm start", "exact_match"), *(cell(k, "gain", "+") for k in ESTIMATORS)]])


THREADS = ("1", "3", "4")


def text_threads(t: ResultTable) -> str:
    warm = [t.row(f"threads={n}/warm start").values["exact_match"] for n in THREADS]
    grpo = [t.row(f"threads={n}/grpo").values["exact_match"] for n in THREADS]
    return (f"`--threads 1`, `3` or `4` starts RL from {warm[0]:.3f}, {warm[1]:.3f} or {warm[2]:.3f} and GRPO ends at "
            f"{grpo[0]:.3f}, {grpo[1]:.3f} or {grpo[2]:.3f}")


# ---------------------------------------------------------------------------------------------------- toys
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


# ---------------------------------------------------------------------------------------------------- demo
def demo(t: ResultTable) -> str:
    v = t.row("eval reward").values
    return f"{v['before']:.3f} → {v['after']:.3f}"


# ---------------------------------------------------------------------------------------------------- VVR
VVR_METHODS = {"rwtd": "RWTD", "festdpo": "FestDPO", "rwr": "RWR", "flow_grpo": "Flow-GRPO"}
VVR_GENERATORS = {"tiny_one_step_vvr": "one-step", "tiny_flow_vvr": "4-step flow"}


def change(r, key: str, bold_gains: bool) -> str:
    """``before → after (±SE)``, bold when the gain exceeds twice its paired standard error."""
    text = f"{r.values[f'{key}_before']:.3f} → {r.values[f'{key}_after']:.3f} (±{r.se[f'{key}_after']:.3f})"
    gained = r.values[f"{key}_after"] - r.values[f"{key}_before"] > 2 * r.se[f"{key}_after"]
    return f"**{text}**" if bold_gains and gained else text


def vvr_methods(t: ResultTable) -> str:
    lines = [[VVR_METHODS[r.row], VVR_GENERATORS[r.info["generator"]], change(r, "acc", True), change(r, "soft", False),
              f"{r.info['sec_per_step']:.2f}"] for r in t.rows]
    return table(["method", "generator", "all-satisfied before → after", "soft reward before → after", "s / step"], lines)


LAMBDAS = {"0": "0 (tilted reference only)", "0.5": "0.5 (shipped)", "0.85": "0.85 (published ρ = 0.15)"}


def vvr_lambda(t: ResultTable) -> str:
    def after(label: str) -> str:
        r = t.row(f"{label}/rwtd")
        return f"{r.values['acc_after']:.3f} (±{r.se['acc_after']:.3f})"

    fit_before = t.row("fit lam=0/rwtd").values["acc_before"]
    held_before = t.row("held-out lam=0/rwtd").values["acc_before"]
    lines = []
    for lam, label in LAMBDAS.items():
        fit = after(f"fit lam={lam}")
        if any(r.row == f"fit lam={lam} seed=1/rwtd" for r in t.rows):
            fit += f"; `trainer.seed=1` {after(f'fit lam={lam} seed=1')}"
        lines.append([label, fit, f"{t.row(f'fit lam={lam}/rwtd').values['feat_dist_to_ref']:.3f}",
                      after(f"held-out lam={lam}")])
    return table(["λ", f"fit tasks: all-satisfied after (from {fit_before:.3f})", "distance to reference",
                  f"held-out after (from {held_before:.3f})"], lines)


def vvr_pretrain(t: ResultTable) -> str:
    a = {r.row: r.values["all_satisfied"] for r in t.rows}
    n = t.row("one-step").info["n"]
    return (f"({n} tasks): one-step {pct(a['one-step'])}, flow 8 steps {pct(a['flow 8 steps'])},\n"
            f"4 steps {pct(a['flow 4 steps'])}, random init {pct(a['one-step random init'])} (renders themselves pass "
            f"{pct(a['renders 32 px'])} at 32 px)")


def vvr_pretrain_v2(t: ResultTable) -> str:
    """Strict accuracy (RL reward) of the v2 base on held-out easy tasks and per VVRBench v2 bin, renders above."""
    bins = [r for r in t.rows if r.row.startswith("one-step VVRBench v2 bin")]
    n = t.row("one-step").info["n"]

    def cell(row_values: dict, digits: int = 3) -> str:
        return f"{pct(row_values['all_satisfied'])} ({row_values['soft_reward']:.{digits}f})"

    one = t.row("one-step").values
    lines = [["renders at 32 px", pct(t.row("renders 32 px").values["all_satisfied"]),
              *(pct(r.values["renders_32px"]) for r in bins)],
             ["one-step", f"{pct(one['all_satisfied'])} (RL reward {one['soft_reward']:.3f})", *(cell(r.values) for r in bins)],
             ["flow, 8 Euler steps", cell(t.row("flow 8 steps").values), *([""] * len(bins))],
             ["one-step, random init", cell(t.row("one-step random init").values, 0).replace("(0)", "(0)"), *([""] * len(bins))]]
    head = ["scored", f"held-out easy (≤ 11, {n})", *(f"VVRBench v2 bin {r.row[-1]}" if i == 0 else f"bin {r.row[-1]}"
                                                     for i, r in enumerate(bins))]
    return table(head, lines)


def vvr_accuracy(t: ResultTable) -> str:
    def rate(cond: str, mode: str = "default") -> str:
        return pct(t.row(cond).values[mode], 2)

    mutation = t.row("mutation")
    pairs = {c: pct(t.row(f"pairs/{c}").values["all"], 2) for c in ("blur2", "jpeg30", "clean64")}
    return (f"{rate('clean256')} at 256 px and {rate('clean512')} at 512 px\n"
            f"  ({rate('clean256', 'paper')} / {rate('clean512', 'paper')} under the paper's tolerances), "
            f"{rate('jpeg75')} under JPEG q75 (paper tolerances {rate('jpeg75', 'paper')}),\n"
            f"  {rate('noise10')} under Gaussian noise, {rate('clean64')} at 64 px (paper tolerances "
            f"{rate('clean64', 'paper')}); {mutation.info['n']:,} one-edit\n"
            f"  mutations caught {pct(mutation.values['caught'], 2)}; colour pairs pass {pairs['blur2']} under blur "
            f"sigma 2, {pairs['jpeg30']} under JPEG q30\n  and {pairs['clean64']} at 64 px")


def vvr_throughput(t: ResultTable) -> str:
    small, large = t.row("256 px"), t.row("512 px")
    ratio = large.values.get("ratio_to_vit_b32")
    if ratio is None:
        raise ValueError("vvr_throughput: the result has no encoder ratio")
    return (f"{small.info['verifier_img_per_s']:.0f} images/s at 256 px and {large.info['verifier_img_per_s']:.0f} at "
            f"512 px,\n  {times(ratio)} the {large.info['encoder']} at 512 px")


# ---------------------------------------------------------------------------------------------------- registry
PY = "python"
COMPARE = (PY, "pipelines/vvr_compare.py", "--results", "{results}")
FIT = ("--fit-tasks", "16", "--eval-draws", "32")


def _lambda_runs() -> tuple[tuple[str, tuple[str, ...]], ...]:
    runs = []
    for lam in LAMBDAS:
        runs.append((f"fit lam={lam}", (*COMPARE, *FIT, "--steps", "300", "--methods", "rwtd", "--out", "{out}", f"algorithm.lam={lam}")))
        if lam != "0":
            runs.append((f"fit lam={lam} seed=1", (*COMPARE, *FIT, "--steps", "300", "--methods", "rwtd", "--out", "{out}",
                                                   f"algorithm.lam={lam}", "trainer.seed=1")))
    for lam in LAMBDAS:
        runs.append((f"held-out lam={lam}", (*COMPARE, "--steps", "300", "--methods", "rwtd", "--out", "{out}", f"algorithm.lam={lam}")))
    return tuple(runs)


TEXT = (PY, "pipelines/text_arithmetic.py", "--results", "{results}", "--output", "{out}")

ENTRIES: tuple[Entry, ...] = (
    Entry("text_arithmetic", ((None, TEXT),), fast=True, blocks={"text_arithmetic": text_single}),
    Entry("text_arithmetic_seeds", ((None, (*TEXT, "--seeds", "0", "1", "2", "3", "4")),), fast=False,
          blocks={"text_arithmetic_seeds": text_seeds}),
    Entry("text_arithmetic_threads", tuple((f"threads={n}", (*TEXT, "--threads", n)) for n in THREADS), fast=False,
          blocks={"text_arithmetic_threads": text_threads},
          note="the text comparison (seed 0) with other torch thread counts: same code, other float rounding"),
    # not in the README: a short configuration (about 10 s on idle cores) for the default test suite
    Entry("text_arithmetic_short", ((None, (*TEXT, "--pretrain-steps", "200", "--rl-steps", "5", "--prompts-per-step", "8",
                                           "--group-size", "4", "--estimators", "grpo,mapp")),), fast=True),
    Entry("toy_tilt", ((None, (PY, "pipelines/toy_tilt.py", "--results", "{results}", "--out", "{out}")),), fast=False,
          blocks={"toy_tilt/methods": toy_methods, "toy_tilt/baselines": toy_baselines, "toy_tilt/lambda": toy_lambda},
          pictures={"samples.png": "assets/readme/toy_tilt_samples.png", "lambda_curve.png": "assets/readme/lambda_curve.png"}),
    Entry("demo", ((None, (PY, "-m", "visalign.cli", "demo", "--results", "{results}", "--out", "{out}")),), fast=False,
          blocks={"demo": demo}),
    # not in the README: drift checks of the two cost benchmarks (time ratios only)
    Entry("overhead", ((None, (PY, "-m", "visalign.cli", "bench", "overhead", "--results", "{results}", "--threads", "1")),),
          fast=True),
    Entry("transport", ((None, (PY, "-m", "visalign.cli", "bench", "transport", "--results", "{results}", "--threads", "1")),),
          fast=True),
    Entry("vvr_verifier_accuracy", ((None, (PY, "-m", "visalign.vvr.accuracy", "--results", "{results}", "--split", "bench",
                                            "--limit", "1000")),),
          fast=False, blocks={"vvr_verifier_accuracy": vvr_accuracy}),
    Entry("vvr_throughput", ((None, (PY, "-m", "visalign.vvr.throughput", "--results", "{results}")),), fast=False,
          blocks={"vvr_throughput": vvr_throughput}),
    Entry("vvr_pretrain", ((None, (PY, "pipelines/vvr_pretrain.py", "--version", "1", "--results", "{results}",
                                   "--assets", "{out}/assets", "--out", "{out}")),), fast=False, blocks={"vvr_pretrain": vvr_pretrain},
          pictures={"one_step_samples.png": "assets/readme/vvr_one_step_samples.png"}),
    Entry("vvr_pretrain_v2", ((None, (PY, "pipelines/vvr_pretrain.py", "--flow-minutes", "32", "--distill-minutes", "15",
                                      "--results", "{results}", "--assets", "{out}/assets", "--out", "{out}")),),
          fast=False, blocks={"vvr_pretrain_v2": vvr_pretrain_v2},
          pictures={"one_step_samples.png": "assets/readme/vvr2_one_step_samples.png"}),
    Entry("vvr_compare_heldout_60", ((None, (*COMPARE, "--steps", "60", "--out", "{out}")),), fast=False,
          blocks={"vvr_compare_heldout_60": vvr_methods}),
    Entry("vvr_compare_heldout_300", ((None, (*COMPARE, "--steps", "300", "--out", "{out}")),), fast=False,
          blocks={"vvr_compare_heldout_300": vvr_methods}),
    Entry("vvr_compare_fit", ((None, (*COMPARE, *FIT, "--steps", "300", "--out", "{out}")),), fast=False,
          blocks={"vvr_compare_fit": vvr_methods}),
    Entry("vvr_rwtd_lambda", _lambda_runs(), fast=False, blocks={"vvr_rwtd_lambda": vvr_lambda},
          note="RWTD on VVR over λ, 32 + 32 samples per prompt, 300 steps: fit tasks (two seeds at λ > 0) and held-out"),
)


def entry(name: str) -> Entry:
    for e in ENTRIES:
        if e.name == name:
            return e
    raise KeyError(f"no results entry {name!r}; known: {[e.name for e in ENTRIES]}")
