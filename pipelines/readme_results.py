"""The README's result blocks: which command makes each one, and how its result file renders into the README.

Each ``Entry`` names the command(s) that produce one result file ``assets/results/<name>.json`` (``{out}`` is the
run folder, ``{folder}`` the entry's folder holding every run's, ``{results}`` the file the command writes), whether it belongs to ``reproduce.py --fast`` (a few minutes
at most) or only to ``--all``, the README blocks rendered from the file and the pictures the run also produces.
"""
from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from visalign.results import ResultRow, ResultTable, load_results

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
    pictures: dict[str, str] = field(default_factory=dict)  # file in the run folder ({out}; with several runs the
    # entry's folder, whose run i writes under run_i/) -> path under the repository
    note: str = ""  # for tables merged from several runs
    # no run has written its result file yet (a long command): its README blocks still hold hand-written numbers,
    # which --check-readme reports without failing; the first `reproduce.py --only NAME --write` renders them
    first_run_pending: bool = False

    @property
    def path(self) -> Path:
        return RESULTS_DIR / f"{self.name}.json"


# ---------------------------------------------------------------------------------------------------- formatting
def minus(text: str) -> str:
    return text.replace("-", "−")


def decimals(x: float, digits: int) -> str:
    """``x`` to ``digits`` decimals with a typographic minus, unsigned when it rounds to zero."""
    text = f"{x:.{digits}f}"
    return minus(text[1:] if text.startswith("-") and float(text) == 0 else text)


def pct(p: float, digits: int = 1) -> str:
    return "0%" if p == 0 else f"{100 * p:.{digits}f}%"


def times(r: float) -> str:
    return f"{r:.0f}×" if r >= 10 else f"{r:.1f}×"


def table(head: list[str], lines: list[list[str]]) -> str:
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(rows + ["| " + " | ".join(line) + " |" for line in lines])


def value_se(r: ResultRow, column: str, digits: int = 3, sign: str = "") -> str:
    """A row's ``column`` as ``value (±SE)`` (``sign="+"``: the value always signed)."""
    return minus(f"{r.values[column]:{sign}.{digits}f}") + f" (±{r.se[column]:.{digits}f})"


# ---------------------------------------------------------------------------------------------------- text side
ESTIMATORS = {"grpo": "GRPO", "dr_grpo": "Dr.GRPO", "rloo": "RLOO", "mapp": "MaPP"}


def text_single(t: ResultTable) -> str:
    warm = t.row("warm start").values["exact_match"]
    return table(["warm start", *ESTIMATORS.values()],
                 [[f"{warm:.3f}", *(f"{t.row(k).values['exact_match']:.3f}" for k in ESTIMATORS)]])


def text_seeds(t: ResultTable) -> str:
    """Warm start: mean exact match ± SE over seeds; estimators: mean gain over the same seed's warm start ± SE."""
    return table(["warm start", *ESTIMATORS.values()],
                 [[value_se(t.row("warm start"), "exact_match"), *(value_se(t.row(k), "gain", sign="+") for k in ESTIMATORS)]])


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
VVR_METHODS = {"rwtd": "RWTD", "festdpo": "FestDPO", "rwr": "RWR", "flow_grpo": "Flow-GRPO", "diffusion_nft": "DiffusionNFT"}
VVR_GENERATORS = {"tiny_one_step_vvr": "one-step", "tiny_flow_vvr": "4-step flow", "tiny_one_step_vvr2": "one-step (v2)",
                  "tiny_flow_vvr2": "4-step flow (v2)"}


def change(r, key: str, bold_gains: bool) -> str:
    """``before → after (±SE)``, bold when the gain exceeds twice its paired standard error."""
    text = f"{r.values[f'{key}_before']:.3f} → {r.values[f'{key}_after']:.3f} (±{r.se[f'{key}_after']:.3f})"
    gained = r.values[f"{key}_after"] - r.values[f"{key}_before"] > 2 * r.se[f"{key}_after"]
    return f"**{text}**" if bold_gains and gained else text


def vvr_methods(t: ResultTable) -> str:
    lines = [[VVR_METHODS[r.row], VVR_GENERATORS[r.info["generator"]], change(r, "acc", True), change(r, "soft", False),
              f"{r.info['sec_per_step']:.2f}"] for r in t.rows]
    return table(["method", "generator", "all-satisfied before → after", "soft reward before → after", "s / step"], lines)


def vvr2_change_table(t: ResultTable, head: list[str], label: Callable[[ResultRow], list[str]],
                      samples: bool = True) -> str:
    """One line per row: its ``label`` cells, all-satisfied and soft reward before → after with paired SEs, the
    distance of the aligned model's outputs to the reference's (conv features) and, with ``samples``, the generator
    samples used."""
    lines = [[*label(r), change(r, "acc", True), change(r, "soft", True), f"{r.values['feat_dist_to_ref']:.3f}",
              *([f"{r.values['samples_policy']:.0f} + {r.values['samples_reference']:.0f}"] if samples else [])]
             for r in t.rows]
    return table([*head, "all-satisfied before → after", "soft reward before → after", "distance to reference",
                  *(["generator samples (policy + reference)"] if samples else [])], lines)


def vvr2_methods(t: ResultTable) -> str:
    """The v2 comparison, one line per method."""
    return vvr2_change_table(t, ["method", "generator"],
                             lambda r: [VVR_METHODS[r.row], VVR_GENERATORS[r.info["generator"]]])


def vvr2_lambda(t: ResultTable) -> str:
    """RWTD's λ on the v2 base, one line per λ."""
    return vvr2_change_table(t, ["λ"], lambda r: [LAMBDAS.get(r.row.split("/")[0].removeprefix("lam="), r.row)],
                             samples=False)


def rwtd_published(t: ResultTable) -> str:
    """RWTD in the published regime, one line per λ."""
    return vvr2_change_table(t, ["published regime at"], lambda r: [r.row.split("/")[0].replace("lam=", "λ = ")])


#: the two ways of spending 8x the 300-step table's samples on RWTD (v1 held-out): row label -> table cell
RWTD_BUDGETS = {"accum=8": "8 prompt groups per step, 300 steps", "steps=2400": "1 prompt group per step, 2,400 steps"}


def labelled_changes(header: str, cells: dict[str, str]) -> Renderer:
    """A renderer of a several-run VVR comparison, one line per run: its label's cell, then the before → after changes."""
    return lambda t: vvr2_change_table(t, [header], lambda r: [cells[r.row.split("/")[0]]])


#: RWTD with the two ways of spending 8x the samples (v1 held-out)
rwtd_budget = labelled_changes("8× the samples as", RWTD_BUDGETS)
#: RWTD on the longer-trained v2 base with 8 prompt groups per optimizer step, at two learning rates
rwtd_accum_lr = labelled_changes("learning rate, 8 prompt groups per step",
                                 {"lr=1e-4": "1e-4 (the config's)", "lr=5e-4": "5e-4"})

#: the two v2 bases of the large-evaluation RWTD runs: run label prefix -> table cell
LARGE_EVAL_BASES = {"long": "longer-trained (`assets/vvr2_long`)", "longer": "60 minutes further (`assets/vvr2_longer`)"}
LARGE_EVAL_SEEDS = ("0", "1", "2")
LARGE_EVAL_HEAD = ["all-satisfied before → after", "change / SE", "soft reward before → after", "change / SE",
                   "distance to reference"]


def large_eval_cells(r: ResultRow) -> list[str]:
    """A large-evaluation row's changes at four decimals, each also in its paired standard errors."""
    cells = []
    for key in ("acc", "soft"):
        before, after, se = r.values[f"{key}_before"], r.values[f"{key}_after"], r.se[f"{key}_after"]
        cells += [f"{before:.4f} → {after:.4f} (±{se:.4f})", decimals((after - before) / se, 1)]
    return [*cells, f"{r.values['feat_dist_to_ref']:.3f}"]


def base_and_seed(r: ResultRow) -> tuple[str, str]:
    """The base and training seed of a large-evaluation row named ``<base>-seed=<seed>/<method>``."""
    base, seed = r.row.split("/")[0].split("-seed=")
    return base, seed


def seed_mean_lines(rows: list[ResultRow]) -> list[list[str]]:
    """Per base, the mean change over its training seeds and that mean in its SE over the seeds (the seed as the unit)."""
    by_base: dict[str, list[dict[str, float]]] = {}
    for r in rows:
        base = base_and_seed(r)[0]
        by_base.setdefault(base, []).append({k: r.values[f"{k}_after"] - r.values[f"{k}_before"] for k in ("acc", "soft")})
    lines = []
    for base, changes in by_base.items():
        score = across_seeds(changes, (("acc", ""), ("soft", "")))
        mean = {k: statistics.fmean(c[k] for c in changes) for k in ("acc", "soft")}
        cells = []
        for k in ("acc", "soft"):
            change = decimals(mean[k], 4) if round(mean[k], 4) == 0 else signed(mean[k], 4)
            cells += [change, f"{decimals(score[k], 1)} (over seeds)" if math.isfinite(score[k]) else "no spread over seeds"]
        lines.append([LARGE_EVAL_BASES[base], f"mean of {len(changes)}", *cells, ""])
    return lines


def seed_lines(rows: list[ResultRow]) -> list[list[str]]:
    """One line per run labelled ``<base>-seed=<seed>``: its base, training seed and :func:`large_eval_cells`."""
    return [[LARGE_EVAL_BASES[base], seed, *large_eval_cells(r)] for r in rows for base, seed in [base_and_seed(r)]]


def rwtd_large_eval(t: ResultTable) -> str:
    """RWTD with 8 prompt groups per step on bin 1, scored on 8,192 unseen bin-1 tasks: one line per base and training
    seed, the changes in their paired SEs, then one line per base across its seeds (the seed as the unit)."""
    return table(["base", "training seed", *LARGE_EVAL_HEAD], seed_lines(t.rows) + seed_mean_lines(t.rows))


def rwtd_large_eval_more_seeds(t: ResultTable) -> str:
    """Further training seeds of :func:`rwtd_large_eval`'s runs on one base, then the mean over these and the stored
    seeds of that base (read from ``vvr2_rwtd_accum8_large_eval``'s result file)."""
    bases = {base_and_seed(r)[0] for r in t.rows}
    earlier = [r for r in load_results(entry("vvr2_rwtd_accum8_large_eval").path).rows if base_and_seed(r)[0] in bases]
    return table(["base", "training seed", *LARGE_EVAL_HEAD], seed_lines(t.rows) + seed_mean_lines(earlier + t.rows))


def rwtd_lambda_large_eval(t: ResultTable) -> str:
    """RWTD's λ with 8 prompt groups per step, scored on 8,192 unseen bin-1 tasks: one line per λ."""
    return table(["λ", *LARGE_EVAL_HEAD],
                 [[LAMBDAS[r.row.split("/")[0].removeprefix("lam=")], *large_eval_cells(r)] for r in t.rows])


def methods_large_eval(t: ResultTable) -> str:
    """Every method at one sample budget, scored on 8,192 unseen tasks: one line per method with the changes in their
    paired SEs and the generator samples used."""
    lines = [[VVR_METHODS[r.row.split("/")[-1]], VVR_GENERATORS[r.info["generator"]], *large_eval_cells(r),
              f"{r.values['samples_policy']:.0f} + {r.values['samples_reference']:.0f}"] for r in t.rows]
    return table(["method", "generator", *LARGE_EVAL_HEAD, "generator samples (policy + reference)"], lines)


def methods_seeds_large_eval(t: ResultTable) -> str:
    """Method runs labelled ``<method>-seed=<seed>``, scored on 8,192 unseen tasks: one line per method and training
    seed with the changes in their paired SEs."""
    lines = [[VVR_METHODS[method], VVR_GENERATORS[r.info["generator"]], seed, *large_eval_cells(r)]
             for r in t.rows for method, seed in [r.row.split("/")[0].split("-seed=")]]
    return table(["method", "generator", "training seed", *LARGE_EVAL_HEAD], lines)


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


def pretrain_v2_table(max_complexity: int) -> Callable[[ResultTable], str]:
    """A renderer of a v2 base's strict accuracy (RL reward) on held-out easy tasks (complexity <= ``max_complexity``)
    and per VVRBench v2 bin, the verifier on renders of the same tasks above."""

    def render(t: ResultTable) -> str:
        bins = [r for r in t.rows if r.row.startswith("one-step VVRBench v2 bin")]
        n = t.row("one-step").info["n"]
        renders = next(r for r in t.rows if r.row.startswith("renders "))
        size = renders.row.removeprefix("renders ")

        def cell(row_values: dict, digits: int = 3) -> str:
            return f"{pct(row_values['all_satisfied'])} ({row_values['soft_reward']:.{digits}f})"

        one = t.row("one-step").values
        lines = [[f"renders at {size}", pct(renders.values["all_satisfied"]),
                  *(pct(r.values[f"renders_{size.replace(' ', '')}"]) for r in bins)],
                 ["one-step", f"{pct(one['all_satisfied'])} (RL reward {one['soft_reward']:.3f})", *(cell(r.values) for r in bins)],
                 ["flow, 8 Euler steps", cell(t.row("flow 8 steps").values), *([""] * len(bins))],
                 ["one-step, random init", cell(t.row("one-step random init").values, 0), *([""] * len(bins))]]
        head = ["scored", f"held-out easy (≤ {max_complexity}, {n})",
                *(f"VVRBench v2 bin {r.row[-1]}" if i == 0 else f"bin {r.row[-1]}" for i, r in enumerate(bins))]
        return table(head, lines)

    return render


vvr_pretrain_v2 = pretrain_v2_table(11)


#: run label -> README name of the v2 flow pretrained from scratch with each output and loss (vvr_pretrain_v2_x0_pilot)
VVR_X0_ARMS = {"velocity": ("velocity prediction, velocity loss (as shipped)", ()),
               "sample_x0_loss": ("sample prediction, sample-space loss", ("--prediction", "sample", "--loss-space",
                                                                          "sample"))}


def vvr_x0_pilot(t: ResultTable) -> str:
    """Held-out strict accuracy (± SE) and soft reward of each arm's flow at 8 and 4 Euler steps and in one step."""

    def cell(r: ResultRow) -> str:
        return (f"{pct(r.values['all_satisfied'])} ± {100 * r.se['all_satisfied']:.1f} "
                f"(RL reward {r.values['soft_reward']:.3f})")

    lines = [[name, *(cell(t.row(f"{label}/{row}")) for row in ("flow 8 steps", "flow 4 steps", "one-step"))]
             for label, (name, _) in VVR_X0_ARMS.items()]
    n = t.row("velocity/flow 8 steps").info["n"]
    return table(["v2 flow trained from scratch with", f"8 Euler steps ({n} held-out easy tasks)", "4 Euler steps",
                  "one Euler step"], lines)


VVR_FROM_LEVELS = ("1", "0.9", "0.75", "0.5", "0.25")
#: run label -> (README name, flow checkpoint, VVR version of its held-out tasks)
VVR_FROM_BASES = {"v1": ("`assets/tiny_flow_vvr` (v1)", "assets/tiny_flow_vvr", "1"),
                  "v2": ("`assets/tiny_flow_vvr2` (v2)", "assets/tiny_flow_vvr2", "2"),
                  "v2_long": ("`assets/vvr2_long/tiny_flow_vvr2` (v2, trained 25 minutes further)",
                              "assets/vvr2_long/tiny_flow_vvr2", "2")}


def vvr_from_level(t: ResultTable) -> str:
    """Strict accuracy (± SE) of each VVR flow base finishing held-out renders noised to each level."""
    lines = []
    for key, (label, _, _) in VVR_FROM_BASES.items():
        lines.append([label, f"{t.row(f'{key}/renders_32px').values['all_satisfied']:.3f}",
                      *(value_se(t.row(f"{key}/flow/from_{level}"), "all_satisfied") for level in VVR_FROM_LEVELS)])
    return table(["flow base (192 held-out easy tasks)", "renders", "free sample (from 1)",
                  *(f"from {level}" for level in VVR_FROM_LEVELS[1:])], lines)


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


# ---------------------------------------------------------------------------------------------------- PoEM
def signed(x: float, digits: int) -> str:
    return minus(f"{x:+.{digits}f}")


def _coef(c: float) -> str:
    return "0" if abs(c) < 0.005 else f"{c:.2f}"


def _seeds(t: ResultTable) -> list[str]:
    return [r.row.removesuffix("/held out") for r in t.rows if r.row.endswith("/held out")]


def _spread(values: list[float], digits: int) -> str:
    low, high = f"{min(values):.{digits}f}", f"{max(values):.{digits}f}"
    return low if low == high else f"{low}–{high}"


def _power_bound(x: float) -> str:
    """``< 1e-N`` for the smallest power of ten above ``|x|``."""
    return "0" if x == 0 else f"< 1e{math.floor(math.log10(abs(x))) + 1}"


def poem_in_span(t: ResultTable) -> str:
    rows = [t.row(f"{s}/in span 0.5*r1+0.5*r2") for s in _seeds(t)]
    coefs = {tuple(_coef(c) for c in r.info["coef"]) for r in rows}
    if len(coefs) != 1:
        raise ValueError(f"poem_categorical: the seeds fit different ĉ {sorted(coefs)}; the README states one")
    return (f"recovery {_spread([r.values['recovery'] for r in rows], 4)} and KL(π* ‖ π̂) "
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
            f"the reference still puts mass. In-span recovery drops to\n  {_spread([v['recovery'] for v in in_span], 2)} "
            f"with KL(π* ‖ π̂) up to {max(v['kl'] for v in in_span):.1f}, and the Spearman correlation weakens to "
            f"{minus(f'{max(rho):.2f}')} … {minus(f'{min(rho):.2f}')}")


# ---------------------------------------------------------------------------------------------------- AV-GRPO
AV_METHODS = {"av_grpo": "av_grpo (anchored)", "joint_grpo": "joint", "video_sde": "video_sde", "routed": "routed"}
AV_SEEDS = ("0", "1", "2")


def av_toy_table(t: ResultTable, lines_of: list[tuple[str, str, str]] | None = None, quality_digits: int = 3) -> str:
    """Per line (``lines_of``: run-label prefix of its rows, method, label; default: every method of the plain seed
    runs), the rollouts and each change after training with its paired SE, seeds 0 / 1 / 2."""
    lines_of = lines_of or [("", m, label) for m, label in AV_METHODS.items()]

    def rows(prefix: str, method: str) -> list:
        return [t.row(f"{prefix}seed={seed}/{method}") for seed in AV_SEEDS]

    def cells(runs: list, column: str, digits: int, with_se: bool = True) -> str:
        return " / ".join(signed(r.values[column], digits) + (f" (±{r.se[column]:.{digits}f})" if with_se else "")
                          for r in runs)

    lines = []
    for prefix, method, label in lines_of:
        runs = rows(prefix, method)
        lines.append([label, str(runs[0].info["rollouts"]), cells(runs, "desync", 2),
                      cells(runs, "video_quality", quality_digits), cells(runs, "audio_quality", 1, with_se=False)])
    return table(["method", "rollouts", "Δ desync (frames)", "Δ video quality", "Δ audio quality (dB)"], lines)


def av_toy_large_batch(t: ResultTable) -> str:
    """The four methods at 16 prompts per step, then AV-GRPO without the second z-scoring."""
    return av_toy_table(t, [*(("", m, label) for m, label in AV_METHODS.items()),
                            ("renormalize=false/", "av_grpo", "av_grpo, `renormalize: false`")], quality_digits=4)


def av_toy_travel(t: ResultTable) -> str:
    """The toy comparison scored with the travel term (four decimals: its changes differ in the third)."""
    return av_toy_table(t, quality_digits=4)


def av_toy_base(t: ResultTable) -> str:
    v = t.row(f"seed={AV_SEEDS[0]}/base").values
    desync, video, audio = (minus(f"{v[k]:.{d}f}") for k, d in (("desync", 2), ("video_quality", 3), ("audio_quality", 1)))
    return f"desync {desync} frames, video quality {video} and audio\nquality {audio} dB"


def _seed_list(seeds: list[str]) -> str:
    return seeds[0] if len(seeds) == 1 else ", ".join(seeds[:-1]) + f" and {seeds[-1]}"


def av_toy_budget(t: ResultTable) -> str:
    budget = {s: t.row(f"seed={s}/budget").info for s in AV_SEEDS}
    matched = [s for s in AV_SEEDS if budget[s]["ratio"] is not None]
    missed = [s for s in AV_SEEDS if budget[s]["ratio"] is None]
    parts = []
    if matched:
        ratios = ", ".join(f"{budget[s]['ratio']:.2f}×" for s in matched)
        parts.append(f"AV-GRPO matched joint GRPO's final desync gain at {ratios} joint's rollouts with "
                     f"seed{'s' if len(matched) > 1 else ''} {_seed_list(matched)}.")
    if missed:
        rollouts = t.row(f"seed={missed[0]}/av_grpo").info["rollouts"]
        parts.append(f"With seed{'s' if len(missed) > 1 else ''} {_seed_list(missed)} it did not\n  match it within "
                     f"its {rollouts} rollouts.")
    return " ".join(parts).removesuffix(".")


def run_seeds(t: ResultTable) -> list[str]:
    """The seeds of an entry whose runs are labelled ``seed=S``, in run order."""
    return list(dict.fromkeys(r.row.split("/")[0].removeprefix("seed=") for r in t.rows if r.row.startswith("seed=")))


def av_toy_spearman(t: ResultTable) -> str:
    rho = [v for s in run_seeds(t) for k, v in t.row(f"seed={s}/advantage spearman").values.items()
           if k.startswith("anchored/") and k.endswith("/own_score")]
    return _spread(rho, 2)


# ---------------------------------------------------------------------------------------------------- PoEM, LM and flow
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


# ---------------------------------------------------------------------------------------------------- CoRe
CORE_ARMS = {"fixed": "fixed LRM", "core": "**CoRe**", "anchor_only": "anchor-only refit",
             "generator_only": "generator term only", "oracle": "oracle labels",
             "oracle_core": "CoRe + oracle labels"}


def _mean_sd(v: dict, key: str, digits: int | None = None, suffix: str = "", hide_sd_below: float = 0.0) -> str:
    """``mean ± sd`` (3 significant digits when ``digits`` is None); the SD is left out when below ``hide_sd_below``."""
    mean, sd = v[key], v[f"{key}_sd"]
    if digits is None:
        digits = 1 if abs(mean) >= 10 else 2 if abs(mean) >= 1 else 3
    text = minus(f"{mean:.{digits}f}") + suffix
    return text if sd < hide_sd_below else f"{text} ± {sd:.{digits}f}"


def core_table(t: ResultTable, rows: dict[str, str], one_seed: tuple[str, ...] = (),
               extra: dict[str, tuple[str, str]] | None = None, labels: dict[str, str] | None = None) -> str:
    """The CoRe benchmark table: one line per arm (``rows``: arm -> its row name in ``t``), in CORE_ARMS order; arms in
    ``one_seed`` ran on one seed (no SD, labelled so); ``extra`` (arm -> (label, row name)) adds a line after that arm
    (CoRe without the proximal term); ``labels`` replaces arms' default labels."""
    lines = []
    order = [(arm, (labels or {}).get(arm, label), rows[arm]) for arm, label in CORE_ARMS.items() if arm in rows]
    for arm, (label, row) in (extra or {}).items():
        at = next(i for i, (a, _, _) in enumerate(order) if a == arm) + 1
        order.insert(at, (f"{arm}/extra", label, row))
    for arm, label, row in order:
        v, hide = t.row(row).values, (float("inf") if arm in one_seed else 0.0)
        end, escape = _mean_sd(v, "judge_end", hide_sd_below=hide), _mean_sd(v, "escape_end_x", 2, "×", hide)
        if arm == "core":
            end, escape = f"**{end}**", f"**{escape}**"
        rho = (_mean_sd(v, "spearman_second_half", 2, hide_sd_below=max(hide, 0.05)) if "spearman_second_half" in v
               else "—")
        lines.append([label + (" (seed 0)" if arm in one_seed else ""), _mean_sd(v, "lrm_gain_sd", 2, hide_sd_below=hide),
                      minus(f"{v['judge_base']:.3f}"), _mean_sd(v, "judge_peak", 3, hide_sd_below=hide), end, escape, rho])
    return table(["arm", "LRM gain (SD)", "judge base", "judge peak", "judge end", "escape end",
                  "Spearman(LRM, judge), 2nd half"], lines)


def core_images(t: ResultTable) -> str:
    """Every arm with μ = 3 (``mu=3/…`` rows), then CoRe with μ = 0 (``mu=0/core``) after CoRe, over the same 500 steps."""
    return core_table(t, {arm: f"mu=3/{arm}" for arm in CORE_ARMS}, labels={"core": "**CoRe, μ = 3**"},
                      extra={"core": ("CoRe, μ = 0 (`--proximal 0`)", "mu=0/core")})


def core_video(t: ResultTable) -> str:
    """Claims run (fixed, CoRe), ablations run and the oracle-labelled CoRe, each over seeds 0-2, merged."""
    ablations = ("anchor_only", "generator_only", "oracle")
    run = {**{arm: "claims" for arm in ("fixed", "core")}, **{arm: "ablations" for arm in ablations}, "oracle_core": "bound"}
    return core_table(t, {arm: f"{run[arm]}/{arm}" for arm in CORE_ARMS})


def core_bound(t: ResultTable, prefix: dict[str, str]) -> str:
    """Per seed, the judge's end and peak under CoRe + oracle labels against CoRe's (``prefix``: arm -> its run label),
    with the seed means and how many seeds the oracle-labelled run is at or above CoRe."""
    def values(arm: str, key: str) -> list[float]:
        return [t.row(f"{prefix[arm]}/seed {s}/{arm}").values[key] for s in (0, 1, 2)]

    def listed(v: list[float]) -> str:
        return " / ".join(f"{x:.3f}" for x in v)

    parts = []
    for key, what in (("judge_end", "ends at"), ("judge_peak", "peaks at")):
        oracle, core = values("oracle_core", key), values("core", key)
        above = sum(o >= c for o, c in zip(oracle, core))
        parts.append(f"{what} {listed(oracle)} against CoRe's {listed(core)} (mean {sum(oracle) / 3:.3f} vs "
                     f"{sum(core) / 3:.3f}; at or above CoRe on {above} of 3 seeds)")
    return minus(f"CoRe + oracle labels {parts[0]}, and {parts[1]}, seeds 0 / 1 / 2")


def core_video_bound(t: ResultTable) -> str:
    return core_bound(t, {"oracle_core": "bound", "core": "claims"})


def core_images_bound(t: ResultTable) -> str:
    return core_bound(t, {"oracle_core": "mu=3", "core": "mu=3"})


# ---------------------------------------------------------------------------------------------------- reflection
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


# ---------------------------------------------------------------------------------------------------- config runs
def config_runs(t: ResultTable) -> str:
    """``name before → after`` for every config, comma-separated (an inline block)."""
    return ", ".join(minus(f"{r.row} {r.values['before']:.3f} → {r.values['after']:.3f}") for r in t.rows)


# ---------------------------------------------------------------------------------------------------- pretraining
def pretrain_metrics(t: ResultTable) -> str:
    def color(label: str, name: str, references: bool = True) -> str:
        v = t.row(f"{label}/{name}").values["object_color"]
        if not references:
            return minus(f"{v:.3f}")
        renders, init = (t.row(f"{label}/{r}").values["object_color"] for r in ("renders", "random init"))
        return minus(f"{v:.3f} ({renders:.3f} / {init:.3f})")

    def loss(label: str, name: str) -> str:
        info = t.row(f"{label}/{name}").info
        return f"{info['loss_first20']:.3f} → {info['loss_last20']:.3f}"

    sync = {r: t.row(f"av/{r}").values["av_sync"] for r in ("tiny_av_flow", "renders", "random init")}
    return table(["model", "object_color (renders / random init)", "av_sync (renders / random init)",
                  "loss first → last 20 steps"],
                 [["`tiny_video_flow`", color("video", "tiny_video_flow"), "—", loss("video", "tiny_video_flow")],
                  ["`tiny_video_one_step`", color("video", "tiny_video_one_step", False), "—",
                   loss("video", "tiny_video_one_step") + " (distillation)"],
                  ["`tiny_av_flow`", color("av", "tiny_av_flow"),
                   minus(f"{sync['tiny_av_flow']:.3f} ({sync['renders']:.3f} / {sync['random init']:.3f})"),
                   loss("av", "tiny_av_flow")]])


def pretrain_steps(t: ResultTable) -> str:
    return (f"{t.row('video/tiny_video_flow').info['steps']:,} (video) and {t.row('av/tiny_av_flow').info['steps']:,}\n"
            "(audio-video)")


# ---------------------------------------------------------------------------------------------------- AV-GRPO, tiny AV
def av_tiny_table(t: ResultTable) -> str:
    lines = [[m.removesuffix("_grpo") if m == "joint_grpo" else m,
              *(value_se(t.row(m), k, d, "+") for k, d in (("desync", 2), ("video_quality", 3), ("audio_quality", 1)))]
             for m in AV_METHODS]
    return table(["method", "Δ desync", "Δ video quality", "Δ audio quality (dB)"], lines)


def av_tiny_base(t: ResultTable) -> str:
    v = t.row("base").values
    desync, video, audio = (minus(f"{v[k]:.{d}f}") for k, d in (("desync", 1), ("video_quality", 3), ("audio_quality", 1)))
    return f"desync\n{desync}, video quality {video} and audio quality {audio} dB"


#: the two tiny AV bases (issue 16): run-label prefix -> README name
AV_BASES = {"small": "`assets/av/tiny_av_flow` (width 64, 2 blocks per tower)",
            "large": "`assets/av_large/tiny_av_flow` (width 128, 4 blocks per tower)",
            "synced": "`assets/av_synced/tiny_av_flow` (the larger base continued with `cross_frames: 0`)"}
# the small size trained where the prompt fixes the motion (bursts up to half a frame off the contacts), predicting
# the clean sample with the loss in sample space: the first tiny AV base whose free samples draw the motion
AV_FIXED_BASE = {"fixed": "`assets/av_fixed/tiny_av_flow` (width 64, 2 blocks; fixed-motion world, sample-space loss)"}
AV_VERIFIERS = (("desync", 2), ("video_quality", 3), ("audio_quality", 1), ("video_alignment", 2), ("audio_alignment", 2))
AV_VERIFIER_HEADERS = ["desync (frames)", "video quality", "audio quality (dB)", "video alignment", "audio alignment"]


def av_verifier_cells(verifiers: dict | None) -> list[str]:
    """A base's AV verifier means as table cells (dashes for a row without them, e.g. the renders)."""
    if verifiers is None:
        return ["—"] * len(AV_VERIFIERS)
    return [minus(f"{verifiers[k]:.{d}f}") for k, d in AV_VERIFIERS]


def av_bases(t: ResultTable) -> str:
    """Each tiny AV base and the renders: weights, flow steps, the pretraining measures and the AV verifiers' means."""
    def line(label: str, measured: dict, verifiers: dict | None, info: dict | None) -> list[str]:
        size = f"{info['params'] / 1e6:.2f}M, {info['steps']:,} steps" if info else "—"
        return [label, size, minus(f"{measured['av_sync']:.3f}"), minus(f"{measured['object_color']:.3f}"),
                *av_verifier_cells(verifiers)]

    lines = [line("renders", t.row("small/measured/renders").values, None, None)]
    for key, label in AV_BASES.items():
        flow = t.row(f"{key}/measured/tiny_av_flow")
        lines.append(line(label, flow.values, t.row(f"{key}/verifiers/base").values, flow.info))
    lines.append(line("renders of the fixed-motion world (bursts up to half a frame off)",
                      t.row("fixed/measured/renders").values, None, None))
    for key, label in AV_FIXED_BASE.items():
        flow = t.row(f"{key}/measured/tiny_av_flow")
        lines.append(line(label, flow.values, t.row(f"{key}/verifiers/base").values, flow.info))
    return table(["model", "weights, flow steps", "av_sync", "object_color", *AV_VERIFIER_HEADERS], lines)


AV_CROSS_HEADERS = ["joint samples", "audio for the render's video", "video for the render's audio"]


def av_cross_modal(labels: dict[str, str], renders: str = "renders") -> Renderer:
    """av_sync (± SE over clips) of joint samples and of one modality generated for a rendered partner, for the
    models whose rows ``labels`` names, under the renders' own sync (row ``renders``)."""
    def render(t: ResultTable) -> str:
        lines = [["renders", minus(f"{t.row(renders).values['av_sync']:.3f}"), "—", "—"]]
        for key, label in labels.items():
            r = t.row(key)
            lines.append([label, *(value_se(r, k) for k in ("joint", "given_video", "given_audio"))])
        return table(["model", *AV_CROSS_HEADERS], lines)

    return render


def av_pilot(labels: dict[str, str], with_loss: bool = False) -> Renderer:
    """The pilot bases of ``labels`` (arm -> label) and the renders: pretrain_av.py's measures (and the last-20 loss)
    and the AV verifiers."""
    def line(label: str, measured: ResultRow, verifiers: dict | None) -> list[str]:
        loss = ([f"{measured.info['loss_last20']:.3f}" if verifiers else "—"] if with_loss else [])
        return [label, *(value_se(measured, k) for k in ("av_sync", "object_color")), *loss,
                *av_verifier_cells(verifiers)]

    def render(t: ResultTable) -> str:
        first = next(iter(labels))
        lines = [line("renders", t.row(f"{first}/measured/renders"), None)]
        for arm, label in labels.items():
            lines.append(line(label, t.row(f"{arm}/measured/tiny_av_flow"), t.row(f"{arm}/verifiers/base").values))
        steps = t.row(f"{first}/measured/tiny_av_flow").info["steps"]
        return table([f"base (width 64, 2 blocks, {steps:,} steps)", "av_sync", "object_color",
                      *(["loss (last 20)"] if with_loss else []), *AV_VERIFIER_HEADERS], lines)

    return render


def av_change_table(t: ResultTable, prefixes: dict[str, str]) -> str:
    """Each method's change of every AV verifier (paired SE) and its rollouts, from the runs under each prefix of
    ``prefixes`` (prefix -> what its rows add to the method's label)."""
    digits = dict(AV_VERIFIERS, video_quality=4)
    rows = {r.row: r for r in t.rows}
    lines = [[label + suffix, str(r.info["rollouts"]), *(value_se(r, k, digits[k], "+") for k, _ in AV_VERIFIERS)]
             for m, label in AV_METHODS.items() for p, suffix in prefixes.items()
             for r in [rows.get(f"{p}{m}")] if r is not None]
    return table(["method", "rollouts", "Δ desync", "Δ video quality", "Δ audio quality (dB)", "Δ video alignment",
                  "Δ audio alignment"], lines)


def av_large_budget(t: ResultTable) -> str:
    """Per seed, what AV-GRPO needed to match joint GRPO's final desync gain (runs labelled ``seed=S/pair=1``)."""
    return av_budget(t, "seed={seed}/pair=1/")


def av_per_seed_budget(t: ResultTable) -> str:
    """av_large_budget for runs labelled ``seed=S`` (AV-GRPO and joint GRPO in one av_compare run per seed)."""
    return av_budget(t, "seed={seed}/")


def av_budget(t: ResultTable, prefix: str) -> str:
    """Per seed, what AV-GRPO needed to match joint GRPO's final desync gain (the seed's run: ``prefix`` formatted
    with it)."""
    parts = []
    for seed in run_seeds(t):
        budget = t.row(prefix.format(seed=seed) + "budget")
        gain, ratio = budget.values["joint_desync_gain"], budget.info["ratio"]
        if gain <= 0:
            parts.append(f"seed {seed}: joint GRPO's desync did not improve ({signed(gain, 3)} frames)")
        elif ratio is None:
            parts.append(f"seed {seed}: AV-GRPO did not reach joint GRPO's gain ({signed(gain, 3)} frames) within its "
                         f"{t.row(prefix.format(seed=seed) + 'av_grpo').info['rollouts']} rollouts")
        else:
            parts.append(f"seed {seed}: AV-GRPO matched joint GRPO's gain ({signed(gain, 3)} frames) at {ratio:.2f}× "
                         "joint's rollouts")
    return ";\n".join(parts)


def av_large_table(t: ResultTable) -> str:
    """The four methods on the larger base (per seed, two runs of two methods)."""
    return av_change_table(t, {f"seed={s}/pair={p}/": f", seed {s}" for s in AV_SEEDS for p in (1, 2)})


def av_seeds_table(t: ResultTable) -> str:
    """The four methods on one base (AV-GRPO and joint GRPO on seeds 0-2, the other two on seed 0: AV_SYNCED_RUNS)."""
    return av_change_table(t, {f"seed={s}/pair={p}/": f", seed {s}" for s, p in sorted(AV_SYNCED_RUNS)})


def av_per_seed_table(t: ResultTable) -> str:
    """The methods of runs labelled ``seed=S`` (one per seed)."""
    return av_change_table(t, {f"seed={s}/": f", seed {s}" for s in run_seeds(t)})


def av_audio_quality_alone_table(t: ResultTable) -> str:
    """AV-GRPO training the audio only on audio quality alone, the last sampling step SDE or ODE."""
    return av_change_table(t, {"ode_final_steps=0/": ", audio only on audio quality, last step SDE",
                               "ode_final_steps=1/": ", audio only on audio quality, last step ODE"})


AV_DRIFT_RUNS = {f"reward={r}/kl_steps={k}": (r, k) for k in ("sde", "all") for r in ("av_audio_quality", "null_score")}


def av_audio_drift_table(t: ResultTable) -> str:
    """The audio tower trained alone on audio quality or on the no-signal null_score, the KL on the SDE step or on
    every step."""
    what = {"sde": "KL on the SDE step", "all": "KL on every step"}
    return av_change_table(t, {f"{label}/": f", audio only on {'`null_score`' if r == 'null_score' else 'audio quality'}, "
                                           f"{what[k]}" for label, (r, k) in AV_DRIFT_RUNS.items()})


def av_second_claim(t: ResultTable) -> str:
    """Per seed, AV-GRPO's changes of desync and of each modality's quality in standard errors (from the unrounded
    values), whether the issue's second claim holds there (desync up, both qualities ≥ −1 SE), and the same for the
    seeds pooled by Stouffer's method (Σz / √n: one test of the claim on all the evaluations at once)."""
    metrics = (("desync", "desync"), ("video_quality", "video quality"), ("audio_quality", "audio quality"))
    info = {seed: t.row(f"seed={seed}/av_grpo").info for seed in run_seeds(t)}
    per_seed = {seed: {k: i["change_in_se"][k] or 0.0 for k, _ in metrics} for seed, i in info.items()}
    pooled = {k: sum(z[k] for z in per_seed.values()) / math.sqrt(len(per_seed)) for k, _ in metrics}

    def line(z: dict[str, float]) -> str:
        holds = z["desync"] > 0 and z["video_quality"] >= -1 and z["audio_quality"] >= -1
        return ", ".join(f"{label} {signed(z[k], 1)} SE" for k, label in metrics) + f" ({'holds' if holds else 'fails'})"

    lines = [*(f"seed {seed}: {line(z)}" for seed, z in per_seed.items()),
             f"pooled over the {len(per_seed)} seeds (Stouffer): {line(pooled)}"]
    exact = [i.get("change_exact") for i in info.values()]
    if all(exact):
        lines.append(f"across the {len(exact)} training seeds (the mean change over seeds in its standard error over "
                     f"seeds, which counts the training's own randomness): {line(across_seeds(exact, metrics))}")
    return ";\n".join(lines)


def across_seeds(changes: list[dict[str, float]], metrics: tuple[tuple[str, str], ...]) -> dict[str, float]:
    """Per metric, the mean of the per-seed changes over its standard error across the seeds (one t-like score
    whose spread includes the training runs' own randomness, which a paired SE over evaluation draws leaves out)."""
    out = {}
    for k, _ in metrics:
        values = [c[k] for c in changes]
        se = statistics.stdev(values) / math.sqrt(len(values))
        mean = statistics.fmean(values)
        out[k] = mean / se if se > 0 else math.copysign(math.inf, mean) if mean else 0.0
    return out


AV_LEAK_SOURCES = {"trained": "trained model (joint sample)",
                   "base with the trained video tower": "base + trained video tower",
                   "base with the trained audio tower": "base + trained audio tower",
                   "by trained, partner from base": "trained weights, partner locked to the base's sample",
                   "by base, partner from trained": "base weights, partner locked to the trained sample"}
AV_LEAK_MODELS = {"reset": "AV-GRPO (AdamW cleared at each switch)", "keep": "AV-GRPO, AdamW state kept",
                  "audio_only": "audio tower alone"}


def av_leak_table(t: ResultTable) -> str:
    """Each modality's quality change from the base's joint sample, per trained model and per source of weights and
    partner samples (pipelines/av_leak.py): the video in its paired SEs, the audio in dB ± SE."""
    lines = []
    for model, model_label in AV_LEAK_MODELS.items():
        for source, label in AV_LEAK_SOURCES.items():
            r = t.row(f"leak/{model}/{source}")
            z = r.info["change_in_se"]["video"]
            lines.append([model_label, label, "0" if z is None else f"{signed(r.values['video'], 4)} ({signed(z, 1)} SE)",
                          value_se(r, "audio", 2, "+")])
    return table(["trained", "sampled by", "Δ video quality (in SE)", "Δ audio quality (dB)"], lines)


def av_spearman_table(t: ResultTable) -> str:
    """Per seed, the within-group Spearman ρ of each modality's advantage with its own quality-plus-alignment score
    (± its SE over the groups), in anchored and in both-SDE rollouts of the base, and the mean over the seeds."""
    columns = [f"{mode}/{m}/own_score" for mode in ("anchored", "both_sde") for m in ("video", "audio")]
    seeds = run_seeds(t)
    rows = [t.row(f"seed={seed}/advantage spearman") for seed in seeds]
    lines = [[f"seed {seed}", *(value_se(r, c, 3) for c in columns)] for seed, r in zip(seeds, rows)]
    lines.append(["mean over the seeds", *(f"{statistics.fmean(r.values[c] for r in rows):.3f}" for c in columns)])
    return table(["base rollouts", "video ρ, anchored", "audio ρ, anchored", "video ρ, both SDE", "audio ρ, both SDE"],
                 lines)


#: README blocks of a per-seed entry beyond its table
AV_SEED_PARTS = {"budget": av_per_seed_budget, "spearman": av_toy_spearman, "claim": av_second_claim}


def av_large_batch_table(t: ResultTable) -> str:
    """AV-GRPO and joint GRPO at four times the prompts per step (one run each)."""
    return av_change_table(t, {"av_grpo/": "", "joint_grpo/": ""})


def av_gamed_table(t: ResultTable) -> str:
    """Four steps at the toy's learning rate on the larger base, scored without and with the travel term."""
    return av_change_table(t, {"min_travel=0/": ", `min_travel` 0", "min_travel=0.3/": ", `min_travel` 0.3"})


# ---------------------------------------------------------------------------------------------------- SSL encoder
SSL_ROWS = {"conv (random)": "`conv` (random, 64-d)", "vit untrained": "the same ViT untrained", "ssl_encoder": "`ssl_encoder`"}
SSL_LABELS = ("count", "colour", "shape")


def ssl_probe(t: ResultTable) -> str:
    """Linear (10-NN) accuracy per feature space; the shipped encoder's linear accuracy in bold where it is the best."""
    best = {label: max(t.row(r).values[f"{label}_linear"] for r in SSL_ROWS) for label in SSL_LABELS}

    def cell(row: str, label: str) -> str:
        v = t.row(row).values
        linear = f"{v[f'{label}_linear']:.3f}"
        if row == "ssl_encoder" and v[f"{label}_linear"] == best[label]:
            linear = f"**{linear}**"
        return f"{linear} ({v[f'{label}_knn']:.3f})"

    return table(["features", "object count (7 classes)", "colour, one-colour scenes (8)", "shape, one-shape scenes (3)"],
                 [[label, *(cell(row, lab) for lab in SSL_LABELS)] for row, label in SSL_ROWS.items()])


# ---------------------------------------------------------------------------------------------------- registry
PY = "python"
CORE_VIDEO = (PY, "pipelines/core_video.py", "--results", "{results}", "--out", "{out}", "--arms", "fixed", "core")
COMPARE = (PY, "pipelines/vvr_compare.py", "--results", "{results}")
#: the 64 px VVR v2 base (issue 19): 4×4 space-to-depth UNet, frozen MiniLM-L6, easy pool up to complexity 20
BASE_64 = ("--image-size", "64", "--unet-unshuffle", "4", "--unet-channels", "64", "64", "96", "--text-encoder", "minilm",
           "--max-complexity", "20", "--tag", "_64", "--flow-minutes", "36", "--distill-minutes", "12")
FIT = ("--fit-tasks", "16", "--eval-draws", "32")
#: the longer-trained v2 base (issue 19): the flow trained 25 minutes further and the one-step student distilled from it
LONG_FLOW = "assets/vvr2_long/tiny_flow_vvr2"
LONG_BASES = ("--checkpoint", "assets/vvr2_long/tiny_one_step_vvr2", "--flow-checkpoint", LONG_FLOW)
#: that flow trained 60 minutes further (one core) and a student distilled from it in the same run
LONGER_FLOW = "assets/vvr2_longer/tiny_flow_vvr2"
LONGER_BASES = ("--checkpoint", "assets/vvr2_longer/tiny_one_step_vvr2", "--flow-checkpoint", LONGER_FLOW)
#: the comparison trained and scored on bin-1 tasks of the easy pool (the bin the longer-trained base has signal on)
LONG_BIN1 = (*COMPARE, "--mode", "same_template", "--train-bins", "1")


def large_eval_runs(label: str, bases: tuple[str, ...], seeds: tuple[str, ...], *overrides: str,
                    score_bins: tuple[str, ...] = ()) -> tuple:
    """RWTD runs of 60 steps of 8 prompt groups on bin 1 from ``bases``, one per training seed, scored on 8,192 unseen
    tasks x 2 draws of bin 1, or of ``score_bins`` of the easy pool (row labels ``<label>-seed=<seed>``)."""
    scoring = ("--score-bins", *score_bins) if score_bins else ()
    return tuple((f"{label}-seed={seed}", (*LONG_BIN1, "--methods", "rwtd", *bases, *scoring, "--samples-per-step",
                                            "512", "--eval-n", "8192", "--out", "{out}", "trainer.grad_accum=8",
                                            *overrides, f"trainer.seed={seed}")) for seed in seeds)


def large_eval_method_runs(methods: tuple[str, ...], *overrides: str, samples_per_step: str = "") -> tuple:
    """Each method's 60-step run on bin 1 from the longer-trained bases at the default budget (64 samples per step)
    or at ``samples_per_step``, scored on 8,192 unseen bin-1 tasks x 2 draws (row labels: the method)."""
    budget = ("--samples-per-step", samples_per_step) if samples_per_step else ()
    return tuple((method, (*LONG_BIN1, "--methods", method, *LONG_BASES, *budget, "--eval-n", "8192", "--out", "{out}",
                           *overrides)) for method in methods)


def accum8_method_runs(runs: tuple[tuple[str, str], ...], score_bins: tuple[str, ...]) -> tuple:
    """The flow methods at RWTD's 8-group budget (``vvr2_long_<method>_accum8_large_eval``'s training), one run per
    (method, training seed), scored on 8,192 unseen tasks x 2 draws of ``score_bins`` of the easy pool (row labels
    ``<method>-seed=<seed>``)."""
    return tuple((f"{method}-seed={seed}", (*LONG_BIN1, "--methods", method, *LONG_BASES, "--samples-per-step", "512",
                                            "--score-bins", *score_bins, "--eval-n", "8192", "--out", "{out}",
                                            "trainer.grad_accum=8", f"trainer.seed={seed}"))
                 for method, seed in runs)


def published_rwtd(lam: str) -> tuple[str, ...]:
    """RWTD's published regime on the v1 held-out comparison: 24 + 24 samples per prompt, 8 prompt groups per optimizer
    step, a fixed temperature on the calibrated reward scale, the 0.1 floor, Sinkhorn with the ε floor, η = 0.2 and
    the shipped self-supervised block features; 50 steps = the 300-step table's 19,200 samples."""
    return (*COMPARE, "--methods", "rwtd", "--steps", "50", "--samples-per-step", "384", "--out", "{out}",
            "trainer.grad_accum=8", "algorithm.num_current=24", "algorithm.num_reference=24", f"algorithm.lam={lam}",
            "algorithm.target_ess=null", "algorithm.reward_scale=assets/calibration/vvr_v1_one_step.json",
            "algorithm.beta=0.5", "algorithm.current_floor=0.1", "algorithm.solver=sinkhorn", "algorithm.eps_floor=1e-4",
            "algorithm.step_size=0.2", "algorithm.features={name: ssl_encoder, path: assets/encoders/vvr_ssl}")


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

POEM_CATEGORICAL = (PY, "pipelines/poem_categorical.py", "--results", "{results}", "--out", "{out}")
AV_TOY_TRAVEL = (PY, "pipelines/av_compare.py", "--model", "toy", "--results", "{results}", "--out", "{out}")
AV_TOY = (*AV_TOY_TRAVEL, "--min-travel", "0")  # measured before av_video_quality had its travel term

CORE_IMAGES = (PY, "pipelines/core_compare_images.py", "--steps", "500", "--eval-every", "25", "--results", "{results}",
               "--out", "{out}")
POEM_FLOW = (PY, "pipelines/poem_flow.py", "--results", "{results}", "--out", "{out}")
REFLECTION = (PY, "pipelines/reflection_counting.py", "--seeds", "0", "1", "2", "--results", "{results}", "--out", "{out}")
REFLECTION_RUNS = (("default", ()), ("shared", ("--first-render", "shared")), ("blind", ("--editor-blind-to-prompt",)))
# a fresh run to the step caps: the wall-clock limits are set far beyond them, so the step count and the learning-rate
# schedule do not depend on machine load
PRETRAIN_VIDEO = (PY, "pipelines/pretrain_video.py", "--flow-minutes", "1000", "--distill-minutes", "1000")
PRETRAIN_AV = (PY, "pipelines/pretrain_av.py", "--minutes", "1000")
PRETRAIN_SHIPPED_VIDEO = (PY, "pipelines/pretrain_video.py", "--pictures-only", "--assets", "assets/video")
PRETRAIN_OUT = ("--results", "{results}", "--out", "{out}")
AV_LARGE = "assets/av_large/tiny_av_flow"
AV_COMPARE_TINY = (PY, "pipelines/av_compare.py", "--model", "tiny_av", "--results", "{results}", "--out", "{out}")
AV_SYNCED = "assets/av_synced/tiny_av_flow"


def _av_compare_120(checkpoint: str) -> tuple[str, ...]:
    """av_compare.py on ``checkpoint``: 120 steps at lr 3e-5, evaluated every 24 steps on 64 items."""
    return (*AV_COMPARE_TINY, "--checkpoint", checkpoint, "--steps", "120", "--lr", "3e-5", "--eval-every", "24",
            "--eval-size", "64")


AV_LARGE_COMPARE = _av_compare_120(AV_LARGE)
AV_LARGE_BATCH = (*AV_LARGE_COMPARE, "--prompts-per-step", "8")
AV_PAIRS = {1: ("av_grpo", "joint_grpo"), 2: ("video_sde", "routed")}  # the methods of one av_compare run, by pair
AV_SYNCED_RUNS = (("0", 1), ("1", 1), ("0", 2), ("2", 1))  # (seed, pair): AV-GRPO and joint on three seeds, the others on one
AV_FIXED = "assets/av_fixed/tiny_av_flow"
AV_FIXED_WORLD = ("--fixed-motion", "--audio-jitter", "0.5")
#: av_leak's training runs: label -> av_compare options beyond the kl_all settings
AV_LEAK_RUNS = {"reset": ("--noise-video", "0.7", "--seed", "3"),
                "keep": ("--noise-video", "0.7", "--keep-optimizer", "--seed", "3"),
                "audio_only": ("--order", "audio", "video", "--steps-per-modality", "1000", "--seed", "2")}


def _av_seeds_entry(name: str, checkpoint: str, base: str) -> Entry:
    """AV-GRPO and its baselines on ``checkpoint`` (``base`` names it in the note), 120 steps at lr 3e-5, as
    AV_SYNCED_RUNS: the table per seed, the budget, and the before/after picture of seed 0."""
    return Entry(name, tuple((f"seed={s}/pair={p}", (*_av_compare_120(checkpoint), "--methods", *AV_PAIRS[p], "--seed", s))
                             for s, p in AV_SYNCED_RUNS),
                 fast=False, blocks={name: av_seeds_table, f"{name}/budget": av_large_budget},
                 pictures={"run_0/before_after.png": f"assets/readme/av_grpo_{name.removeprefix('av_compare_')}.png"},
                 note=f"AV-GRPO and its baselines on {base}, 120 steps at lr 3e-5: AV-GRPO and joint GRPO on seeds 0-2, "
                      "video-SDE and routed on seed 0")


def _av_fixed_entry(name: str, settings: tuple[str, ...], extra: tuple[str, ...], parts: tuple[str, ...], what: str,
                    seeds: tuple[str, ...] = AV_SEEDS, picture: bool = False,
                    methods: tuple[str, ...] = ("av_grpo", "joint_grpo")) -> Entry:
    """``methods`` (default AV-GRPO and joint GRPO) on the fixed-motion base as av_compare_tiny_av_fixed, with the
    av_grpo options ``settings`` and the av_compare options ``extra``, one run per seed; ``parts``: README blocks
    beyond the table (keys of AV_SEED_PARTS); ``picture``: keep the first seed's before/after sheet."""
    return Entry(f"av_compare_tiny_av_fixed_{name}",
                 tuple((f"seed={s}", (*_av_compare_120(AV_FIXED), "--methods", *methods, "--set",
                                      *settings, *extra, "--seed", s)) for s in seeds),
                 fast=False, blocks={f"av_compare_tiny_av_fixed_{name}": av_per_seed_table,
                                     **{f"av_compare_tiny_av_fixed_{name}/{part}": AV_SEED_PARTS[part] for part in parts}},
                 pictures={"run_0/before_after.png": f"assets/readme/av_grpo_tiny_av_fixed_{name}.png"} if picture else {},
                 note=f"AV-GRPO and joint GRPO on the fixed-motion tiny AV base as av_compare_tiny_av_fixed, {what} "
                      f"({' '.join(settings)}), seeds {seeds[0]}-{seeds[-1]}")


def _shipped_av(folder: str, *world: str) -> tuple[str, ...]:
    """pretrain_av.py measuring (and drawing) the tiny AV checkpoint shipped in ``folder``, beside the renders of the
    world its ``world`` options describe (default: the random-phase world)."""
    return (PY, "pipelines/pretrain_av.py", "--pictures-only", "--assets", folder, *world, *PRETRAIN_OUT)


def _base_verifiers(checkpoint: str) -> tuple[str, ...]:
    """av_compare.py with no method: the AV verifiers' means of ``checkpoint`` on the world's 64 prompts."""
    return (*AV_COMPARE_TINY, "--checkpoint", checkpoint, "--methods", "--eval-size", "64")


def _trained_checkpoints(arms: dict[str, tuple[str, ...]]) -> dict[str, str]:
    """Arm -> the checkpoint its training run (the entry's i-th run, one per arm, first) writes under ``{folder}``."""
    return {arm: f"{{folder}}/run_{i}/assets/tiny_av_flow" for i, arm in enumerate(arms)}


def _pilot_runs(steps: str, arms: dict[str, tuple[str, ...]]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Bases of the small tiny AV size trained ``steps`` flow steps from scratch, one per arm (its pretrain_av.py
    options), then the AV verifiers on each (after all of them: they read the checkpoints under ``{folder}``)."""
    pilot = (*PRETRAIN_AV, "--steps", steps, "--assets", "{out}/assets", *PRETRAIN_OUT)
    return (*((f"{arm}/measured", (*pilot, *options)) for arm, options in arms.items()),
            *((f"{arm}/verifiers", _base_verifiers(path)) for arm, path in _trained_checkpoints(arms).items()))


TIME_PILOT_ARMS = {"plain": (), "shared_time": ("--shared-time",)}
TIME_PILOT_LABELS = {"plain": "learned positions per tower", "shared_time": "+ `shared_time`"}
# the small base's size with the time-aligned window, trained from scratch with each video-tower option
ARCH_PILOT_ARMS = {"plain": (), "adaptive": ("--adaptive-norm",), "conv": ("--conv-channels", "32"),
                   "both": ("--adaptive-norm", "--conv-channels", "32")}
ARCH_PILOT_LABELS = {"plain": "tokens, time added (as shipped)", "adaptive": "`time_conditioning: adaptive_norm`",
                     "conv": "`conv_channels: 32`", "both": "both"}


# continuing the larger base for 1,500 flow steps at lr 3e-4 (about 20 min each on one core), per arm: the window
# of time-aligned cross-attention (generator.cross_frames) and the fraction of decoupled noise levels
AV_SYNC_ARMS = {"decoupled": ("--decoupled-times", "0.5"), "window": ("--cross-frames", "0"),
                "window_decoupled": ("--cross-frames", "0", "--decoupled-times", "0.5")}
AV_SYNC_LABELS = {"decoupled": "decoupled noise levels (half the items)", "window": "cross-attention within the frame",
                  "window_decoupled": "both"}


def _continued_runs(init: str, arms: dict[str, tuple[str, ...]], levels: tuple[str, ...] = (),
                    cross_options: tuple[str, ...] = ()) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``init`` continued 1,500 flow steps at lr 3e-4 under each of ``arms``, then the cross-modal measure of
    ``init`` and every arm (with clips finished from ``levels``, and ``cross_options``), then the AV verifiers of
    every arm (these read the checkpoints under ``{folder}``)."""
    trained = _trained_checkpoints(arms)
    train = tuple((f"{arm}/measured", (*PRETRAIN_AV, "--init", init, "--steps", "1500", "--lr", "3e-4", *options,
                                       "--assets", "{out}/assets", *PRETRAIN_OUT))
                  for arm, options in arms.items())
    cross = ("cross_modal", (PY, "pipelines/av_cross_modal.py", "--checkpoints", f"base={init}",
                             *(f"{arm}={path}" for arm, path in trained.items()),
                             *(("--from-levels", *levels) if levels else ()), *cross_options,
                             "--results", "{results}", "--out", "{out}"))
    return (*train, cross, *((f"{arm}/verifiers", _base_verifiers(path)) for arm, path in trained.items()))


def av_continued_bases(labels: dict[str, str], first: str = "continued with") -> Renderer:
    """Each continued (or trained) base of ``labels``: flow steps and last-20 loss, and the AV verifiers' means."""
    def render(t: ResultTable) -> str:
        lines = []
        for arm, label in labels.items():
            info = t.row(f"{arm}/measured/tiny_av_flow").info
            lines.append([label, f"{info['steps']:,}", f"{info['loss_last20']:.4f}",
                          *av_verifier_cells(t.row(f"{arm}/verifiers/base").values)])
        return table([first, "flow steps", "loss (last 20)", *AV_VERIFIER_HEADERS], lines)

    return render


# the synced base continued 1,500 flow steps as it was trained, and at noise levels shifted towards pure noise
AV_COMMIT_ARMS = {"continued": (), "shifted": ("--time-shift", "3")}
AV_COMMIT_LABELS = {"continued": "1,500 more steps", "shifted": "1,500 more steps at time shift 3"}
AV_COMMIT_LEVELS = ("1", "0.9", "0.75", "0.5")


LEVEL_HEADERS = ["joint samples", *(f"finished from {level}" for level in AV_COMMIT_LEVELS)]


def synced_and(labels: dict[str, str]) -> dict[str, str]:
    """Cross-modal row key -> label: the synced base, then each continued arm of ``labels``."""
    return {"base": AV_BASES["synced"], **{a: f"+ {l}" for a, l in labels.items()}}


def level_cells(r: ResultRow, prefix: str = "") -> list[str]:
    """A cross-modal row's ``{prefix}joint`` and ``{prefix}from_<level>`` values (± SE), one per commit level."""
    return [value_se(r, f"{prefix}joint"), *(value_se(r, f"{prefix}from_{level}") for level in AV_COMMIT_LEVELS)]


def av_commit_table(t: ResultTable) -> str:
    """av_sync (± SE) of joint samples and of renders noised to each level and finished by the model."""
    lines = [["renders", minus(f"{t.row('cross_modal/renders').values['av_sync']:.3f}"), *["—"] * len(AV_COMMIT_LEVELS)]]
    lines += [[label, *level_cells(t.row(f"cross_modal/{key}"))] for key, label in synced_and(AV_COMMIT_LABELS).items()]
    return table(["model", *LEVEL_HEADERS], lines)


# the synced base continued 1,500 flow steps with convolutions added around its video tokens
AV_CONV_ARMS = {"conv": ("--conv-channels", "32")}
AV_CONV_LABELS = {"conv": "1,500 more steps with `conv_channels: 32`"}


def av_sync_and_quality_levels(labels: dict[str, str]) -> Renderer:
    """av_sync and av_video_quality (± SE) of joint samples and of renders noised to each level and finished, for the
    synced base and each continued arm of ``labels``."""
    def render(t: ResultTable) -> str:
        lines = [[f"{label}: {measure}", *level_cells(t.row(f"cross_modal/{key}"), prefix)]
                 for key, label in synced_and(labels).items()
                 for measure, prefix in (("av_sync", ""), ("video quality", "video_quality/"))]
        return table(["model: measure", *LEVEL_HEADERS], lines)

    return render


# the synced base continued 1,500 flow steps on batches of 4 prompts x 8 clips, the noise paired with each prompt's
# clips independently or by minibatch optimal transport
AV_OT_ARMS = {"grouped": ("--clips-per-prompt", "8"), "coupled": ("--clips-per-prompt", "8", "--ot-coupling")}
AV_OT_LABELS = {"grouped": "1,500 more steps, 8 clips per prompt", "coupled": "the same, noise paired by OT"}


# the synced base continued on a world where the prompt fixes the motion and the bursts are up to half a frame off,
# as it is and with the shared sinusoidal time features switched on (strong frame features)
AV_FIXED_ARMS = {"fixed": (), "fixed_timed": ("--shared-time",)}
AV_FIXED_LABELS = {"fixed": "1,500 steps on the fixed-motion world", "fixed_timed": "the same with `shared_time`"}


def _fixed_motion_runs() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The synced base continued 1,500 flow steps at lr 3e-4 on the fixed-motion world (bursts up to half a frame
    off) under each of AV_FIXED_ARMS, the AV verifiers of each, and the position probe of the synced base and each."""
    trained = _trained_checkpoints(AV_FIXED_ARMS)
    train = tuple((f"{arm}/measured", (*PRETRAIN_AV, "--init", AV_SYNCED, "--steps", "1500", "--lr", "3e-4",
                                       "--fixed-motion", "--audio-jitter", "0.5", *options, "--assets", "{out}/assets",
                                       *PRETRAIN_OUT))
                  for arm, options in AV_FIXED_ARMS.items())
    probe = ("probe", (PY, "pipelines/av_position_probe.py", "--checkpoints", f"base={AV_SYNCED}",
                       *(f"{arm}={path}" for arm, path in trained.items()), "--results", "{results}"))
    return (*train, *((f"{arm}/verifiers", _base_verifiers(path)) for arm, path in trained.items()), probe)


PROBE_LEVELS = ("1", "0.9", "0.75", "0.5")


def av_position_probe(labels: dict[str, str]) -> Renderer:
    """Per probed model (row ``probe/<key>`` of ``labels``): correlation and travel ratio of the clean-video
    estimate's track at each level, and the spread of its video position table across frames and across patches."""
    def render(t: ResultTable) -> str:
        lines = []
        for key, label in labels.items():
            r = t.row(f"probe/{key}")
            lines.append([label, *(f"{value_se(r, f'correlation/{s}')} / {r.values[f'travel/{s}']:.2f}"
                                   for s in PROBE_LEVELS),
                          f"{r.values['pos_std_across_frames']:.4f} / {r.values['pos_std_across_patches']:.4f}"])
        return table(["model", *(f"from {s}: correlation / travel" for s in PROBE_LEVELS),
                      "position table spread: across frames / patches"], lines)

    return render


# the small base's size trained from scratch on the fixed-motion world, the network predicting the velocity or the
# clean sample (JiT-style x-prediction)
PREDICTION_ARMS = {"velocity": (), "sample": ("--sample-prediction",)}
PREDICTION_LABELS = {"velocity": "velocity prediction (as shipped)", "sample": "`prediction: sample`"}


def _prediction_runs(steps: str, arms: dict[str, tuple[str, ...]] = PREDICTION_ARMS, verifiers: bool = False,
                     fixed_motion: bool = True) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Small-size bases trained ``steps`` flow steps from scratch under each of ``arms`` (time-aligned window), on
    the fixed-motion world or the random-phase one; then (with ``verifiers``) the AV verifiers of each, and on the
    fixed-motion world the position probe of each."""
    trained = _trained_checkpoints(arms)
    world = ("--fixed-motion",) if fixed_motion else ()
    train = tuple((f"{arm}/measured", (*PRETRAIN_AV, "--steps", steps, "--cross-frames", "0", *world, *options,
                                       "--assets", "{out}/assets", *PRETRAIN_OUT))
                  for arm, options in arms.items())
    verified = tuple((f"{arm}/verifiers", _base_verifiers(path)) for arm, path in trained.items()) if verifiers else ()
    probe = ("probe", (PY, "pipelines/av_position_probe.py", "--checkpoints",
                       *(f"{arm}={path}" for arm, path in trained.items()), "--results", "{results}"))
    return (*train, *verified, *((probe,) if fixed_motion else ()))


# the same size and world, each output (velocity or clean sample) trained with the loss in velocity space or in
# clean-sample space (the velocity error weighted by t²)
LOSS_SPACE_ARMS = {"velocity": (), "sample": ("--sample-prediction",), "velocity_x0_loss": ("--sample-space-loss",),
                   "sample_x0_loss": ("--sample-prediction", "--sample-space-loss")}
LOSS_SPACE_LABELS = {"velocity": "velocity prediction, velocity loss (as shipped)",
                     "sample": "sample prediction, velocity loss",
                     "velocity_x0_loss": "velocity prediction, sample-space loss",
                     "sample_x0_loss": "sample prediction, sample-space loss"}

AV_STEP_COUNTS = ("4", "8", "16", "32")
AV_STEPS_ARMS = {k: LOSS_SPACE_ARMS[k] for k in ("velocity", "sample_x0_loss")}


def av_sampling_steps(t: ResultTable) -> str:
    """The AV verifiers' means of each random-phase base sampled with more and more Euler steps."""
    return table(["trained from scratch with", "Euler steps", *AV_VERIFIER_HEADERS],
                 [[LOSS_SPACE_LABELS[arm], n, *av_verifier_cells(t.row(f"{arm}/steps={n}/base").values)]
                  for arm in AV_STEPS_ARMS for n in AV_STEP_COUNTS])


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
    Entry("ssl_encoder_probe", ((None, (PY, "pipelines/train_image_encoder.py", "--probe-only", "--out", "assets/encoders/vvr_ssl",
                                        "--sheet", "{out}/neighbours.png", "--results", "{results}")),),
          fast=True, blocks={"ssl_encoder_probe": ssl_probe},
          pictures={"neighbours.png": "assets/readme/vvr_ssl_neighbours.png"}),
    Entry("vvr_from_level", tuple((key, (PY, "pipelines/vvr_from_level.py", "--checkpoints", f"flow={path}", "--version",
                                          version, "--levels", *VVR_FROM_LEVELS, "--results", "{results}"))
                                  for key, (_, path, version) in VVR_FROM_BASES.items()),
          fast=True, blocks={"vvr_from_level": vvr_from_level},
          note="the v1 and v2 VVR flow bases (and the v2 flow trained further) finishing held-out renders noised to "
               "1, 0.9, 0.75, 0.5 and 0.25"),
    Entry("vvr_pretrain", ((None, (PY, "pipelines/vvr_pretrain.py", "--version", "1", "--results", "{results}",
                                   "--assets", "{out}/assets", "--out", "{out}")),), fast=False, blocks={"vvr_pretrain": vvr_pretrain},
          pictures={"one_step_samples.png": "assets/readme/vvr_one_step_samples.png"}),
    Entry("vvr_pretrain_v2", ((None, (PY, "pipelines/vvr_pretrain.py", "--flow-minutes", "32", "--distill-minutes", "15",
                                      "--results", "{results}", "--assets", "{out}/assets", "--out", "{out}")),),
          fast=False, blocks={"vvr_pretrain_v2": vvr_pretrain_v2},
          pictures={"one_step_samples.png": "assets/readme/vvr2_one_step_samples.png"}),
    Entry("vvr_pretrain_v2_64", ((None, (PY, "pipelines/vvr_pretrain.py", *BASE_64, "--assets", "{out}/assets",
                                         "--out", "{out}", "--results", "{results}", "--threads", "1")),),
          fast=False, blocks={"vvr_pretrain_v2_64": pretrain_v2_table(20)},
          pictures={"one_step_samples.png": "assets/readme/vvr2_64_one_step_samples.png"}),
    Entry("vvr_pretrain_v2_long", ((None, (PY, "pipelines/vvr_pretrain.py", "--teacher", LONG_FLOW, "--distill-minutes", "20",
                                           "--distill-steps", "100000", "--threads", "2", "--assets", "{out}/assets",
                                           "--out", "{out}", "--results", "{results}")),),
          fast=False, blocks={"vvr_pretrain_v2_long": vvr_pretrain_v2},
          pictures={"one_step_samples.png": "assets/readme/vvr2_long_one_step_samples.png"},
          note="the one-step student distilled (20 minutes, both cores) from the v2 flow trained 25 minutes further"),
    *(Entry(f"vvr2_long_{mode}_60", ((None, (*COMPARE, "--mode", mode, *LONG_BASES, "--out", "{out}")),), fast=False,
            blocks={f"vvr2_long_{mode}_60": vvr2_methods},
            note=f"every method trained 60 steps from the longer-trained v2 bases ({mode})")
      for mode in ("same_template", "heldout", "easy_to_hard")),
    Entry("vvr2_long_bin1_60", ((None, (*LONG_BIN1, *LONG_BASES, "--out", "{out}")),), fast=False,
          blocks={"vvr2_long_bin1_60": vvr2_methods},
          note="every method trained 60 steps on bin-1 tasks of the easy pool from the longer-trained v2 bases, scored "
               "on 512 unseen bin-1 tasks x 2 draws"),
    Entry("vvr_pretrain_v2_longer", ((None, (PY, "pipelines/vvr_pretrain.py", "--init-flow", LONG_FLOW, "--flow-minutes",
                                             "60", "--flow-steps", "100000", "--lr", "3e-4", "--distill-minutes", "20",
                                             "--distill-steps", "100000", "--pool", "24000", "--threads", "1",
                                             "--assets", "{out}/assets", "--out", "{out}", "--results", "{results}")),),
          fast=False, blocks={"vvr_pretrain_v2_longer": vvr_pretrain_v2},
          pictures={"one_step_samples.png": "assets/readme/vvr2_longer_one_step_samples.png"},
          note="the longer-trained v2 flow trained 60 minutes further on one core (24,000 rendered pairs), and a "
               "one-step student distilled from it for 20 minutes in the same run"),
    Entry("vvr_pretrain_v2_x0_pilot",
          tuple((label, (PY, "pipelines/vvr_pretrain.py", *arm, "--flow-minutes", "120", "--flow-steps", "4000",
                         "--distill-minutes", "0", "--distill-pairs", "0", "--bench-per-bin", "0", "--eval-n", "384",
                         "--threads", "1", "--assets", "{out}/assets", "--out", "{out}", "--results", "{results}"))
                for label, (_, arm) in VVR_X0_ARMS.items()),
          fast=False, blocks={"vvr_pretrain_v2_x0_pilot": vvr_x0_pilot},
          pictures={"run_1/flow_samples.png": "assets/readme/vvr2_x0_flow_samples.png"},
          note="the 32 px v2 flow pretrained from scratch for 4,000 steps (one core each), predicting the velocity "
               "with the velocity loss (as shipped) or the clean sample with the loss in sample space; held-out strict "
               "accuracy and soft reward on 384 easy tasks; the one-step row is the flow's own one Euler step "
               "(no distillation)"),
    Entry("vvr2_longer_bin1_60", ((None, (*LONG_BIN1, *LONGER_BASES, "--out", "{out}")),), fast=False,
          blocks={"vvr2_longer_bin1_60": vvr2_methods},
          note="every method trained 60 steps on bin-1 tasks from the v2 bases trained 60 minutes further"),
    Entry("vvr2_long_bin1_rwtd_300", ((None, (*LONG_BIN1, "--methods", "rwtd", "--steps", "300", *LONG_BASES,
                                               "--out", "{out}")),), fast=False,
          blocks={"vvr2_long_bin1_rwtd_300": vvr2_methods},
          note="RWTD trained 300 steps on bin-1 tasks from the longer-trained v2 one-step base, scored on 512 unseen "
               "bin-1 tasks x 2 draws"),
    Entry("vvr2_long_rwtd_accum8_60", tuple((f"lr={lr}", (*LONG_BIN1, "--methods", "rwtd", *LONG_BASES,
                                                          "--samples-per-step", "512", "--out", "{out}",
                                                          "trainer.grad_accum=8", f"trainer.learning_rate={lr}"))
                                            for lr in ("1e-4", "5e-4")),
          fast=False, blocks={"vvr2_long_rwtd_accum8_60": rwtd_accum_lr},
          note="RWTD 60 steps of 8 prompt groups each (8x the samples of the 60-step tables) on bin-1 tasks from the "
               "longer-trained v2 one-step base, at two learning rates, scored on 512 unseen bin-1 tasks x 2 draws"),
    Entry("vvr2_rwtd_accum8_large_eval",
          (*large_eval_runs("long", LONG_BASES, LARGE_EVAL_SEEDS), *large_eval_runs("longer", LONGER_BASES, LARGE_EVAL_SEEDS)),
          fast=False, blocks={"vvr2_rwtd_accum8_large_eval": rwtd_large_eval},
          note="RWTD 60 steps of 8 prompt groups each on bin-1 tasks from the two longer-trained v2 one-step bases, three "
               "training seeds each, scored on 8,192 unseen bin-1 tasks x 2 draws"),
    Entry("vvr2_long_rwtd_accum8_large_eval_seeds",
          large_eval_runs("long", LONG_BASES, ("3", "4")),
          fast=False, blocks={"vvr2_long_rwtd_accum8_large_eval_seeds": rwtd_large_eval_more_seeds},
          note="training seeds 3 and 4 of vvr2_rwtd_accum8_large_eval's runs on the longer-trained v2 one-step base"),
    Entry("vvr2_longer_rwtd_lr_large_eval",
          large_eval_runs("longer", LONGER_BASES, ("0", "1"), "trainer.learning_rate=5e-5"),
          fast=False, blocks={"vvr2_longer_rwtd_lr_large_eval": rwtd_large_eval},
          note="vvr2_rwtd_accum8_large_eval's runs on the v2 one-step base trained 60 minutes further at half the "
               "learning rate (5e-5), training seeds 0 and 1"),
    Entry("vvr2_long_rwtd_lambda_large_eval",
          tuple((f"lam={lam}", (*LONG_BIN1, "--methods", "rwtd", *LONG_BASES, "--samples-per-step", "512", "--eval-n",
                                "8192", "--out", "{out}", "trainer.grad_accum=8", f"algorithm.lam={lam}"))
                for lam in ("0", "0.85")),
          fast=False, blocks={"vvr2_long_rwtd_lambda_large_eval": rwtd_lambda_large_eval},
          note="RWTD's λ = 0 and 0.85 in the 8-group runs on bin-1 tasks from the longer-trained v2 one-step base "
               "(training seed 0), scored on 8,192 unseen bin-1 tasks x 2 draws"),
    Entry("vvr2_long_rwtd_accum8_easy_to_hard_large_eval",
          large_eval_runs("long", LONG_BASES, ("0", "1", "2", "3", "4"), score_bins=("2",)),
          fast=False, blocks={"vvr2_long_rwtd_accum8_easy_to_hard_large_eval": rwtd_large_eval},
          note="the runs of vvr2_rwtd_accum8_large_eval and vvr2_long_rwtd_accum8_large_eval_seeds on the "
               "longer-trained v2 one-step base (trained on bin 1, training seeds 0-4), scored instead on 8,192 "
               "unseen bin-2 tasks x 2 draws (easy to hard within the easy pool)"),
    Entry("vvr2_long_bin1_60_large_eval",
          large_eval_method_runs(("rwtd", "festdpo", "rwr", "flow_grpo", "diffusion_nft")),
          fast=False, blocks={"vvr2_long_bin1_60_large_eval": methods_large_eval},
          note="vvr2_long_bin1_60 (every method 60 steps on bin-1 tasks from the longer-trained v2 bases at one "
               "sample budget), scored instead on 8,192 unseen bin-1 tasks x 2 draws"),
    Entry("vvr2_long_bin1_60_large_eval_seed1",
          large_eval_method_runs(("flow_grpo", "diffusion_nft", "rwtd"), "trainer.seed=1"),
          fast=False, blocks={"vvr2_long_bin1_60_large_eval_seed1": methods_large_eval},
          note="training seed 1 of vvr2_long_bin1_60_large_eval's runs of the three methods that did not lose there"),
    *(Entry(f"vvr2_long_{method}_accum8_large_eval",
            large_eval_method_runs((method,), "trainer.grad_accum=8", samples_per_step="512"),
            fast=False, blocks={f"vvr2_long_{method}_accum8_large_eval": methods_large_eval},
            note=f"{method} at RWTD's 8-group budget (512 generator samples per step in 8 accumulated rollouts, 60 "
                 "steps) on bin-1 tasks from the longer-trained v2 flow, scored on 8,192 unseen bin-1 tasks x 2 draws")
      for method in ("flow_grpo", "diffusion_nft")),
    Entry("vvr2_long_diffusion_nft_accum8_large_eval_seed1",
          large_eval_method_runs(("diffusion_nft",), "trainer.grad_accum=8", "trainer.seed=1", samples_per_step="512"),
          fast=False, blocks={"vvr2_long_diffusion_nft_accum8_large_eval_seed1": methods_large_eval},
          note="training seed 1 of vvr2_long_diffusion_nft_accum8_large_eval"),
    Entry("vvr2_long_flow_accum8_easy_to_hard_large_eval",
          accum8_method_runs((("flow_grpo", "0"), ("diffusion_nft", "0"), ("diffusion_nft", "1")), score_bins=("2",)),
          fast=False, blocks={"vvr2_long_flow_accum8_easy_to_hard_large_eval": methods_seeds_large_eval},
          note="the runs of vvr2_long_flow_grpo_accum8_large_eval and vvr2_long_diffusion_nft_accum8_large_eval(_seed1) "
               "(trained on bin 1), scored instead on 8,192 unseen bin-2 tasks x 2 draws (easy to hard within the "
               "easy pool)"),
    Entry("vvr2_long_rwtd_accum8_150", ((None, (*LONG_BIN1, "--methods", "rwtd", *LONG_BASES, "--samples-per-step",
                                                 "512", "--steps", "150", "--out", "{out}", "trainer.grad_accum=8")),),
          fast=False, blocks={"vvr2_long_rwtd_accum8_150": vvr2_methods},
          note="RWTD 150 steps of 8 prompt groups each on bin-1 tasks from the longer-trained v2 one-step base, scored "
               "on 512 unseen bin-1 tasks x 2 draws"),
    Entry("vvr2_long_rwtd_lambda_60", tuple((f"lam={lam}", (*LONG_BIN1, "--methods", "rwtd", *LONG_BASES, "--out",
                                                            "{out}", f"algorithm.lam={lam}"))
                                            for lam in ("0", "0.5", "0.85")),
          fast=False, blocks={"vvr2_long_rwtd_lambda_60": vvr2_lambda},
          note="RWTD 60 steps on bin-1 tasks from the longer-trained v2 one-step base at three λ, scored on 512 unseen "
               "bin-1 tasks x 2 draws"),
    Entry("vvr2_rwtd_lambda_60", tuple((f"lam={lam}", (*COMPARE, "--mode", "same_template", "--methods", "rwtd",
                                                       "--out", "{out}", f"algorithm.lam={lam}")) for lam in ("0", "0.5", "0.85")),
          fast=False, blocks={"vvr2_rwtd_lambda_60": vvr2_lambda},
          note="RWTD 60 steps from the shipped v2 one-step base at three λ, scored on 512 unseen easy-pool tasks x 2 draws"),
    Entry("vvr_rwtd_published_v1", tuple((f"lam={lam}", published_rwtd(lam)) for lam in ("0.85", "0.5")), fast=False,
          blocks={"vvr_rwtd_published_v1": rwtd_published},
          note="RWTD in the published regime on the v1 one-step base, scored on 512 held-out easy v1 tasks x 2 draws"),
    Entry("vvr_rwtd_budget_v1", (("accum=8", (*COMPARE, "--methods", "rwtd", "--steps", "300", "--samples-per-step", "512",
                                              "--out", "{out}", "trainer.grad_accum=8")),
                                 ("steps=2400", (*COMPARE, "--methods", "rwtd", "--steps", "2400", "--out", "{out}"))),
          fast=False, blocks={"vvr_rwtd_budget_v1": rwtd_budget},
          note="RWTD (the v1 config) with 8x the 300-step table's samples, as 8 prompt groups per optimizer step or as "
               "8x the steps, scored on 512 held-out easy v1 tasks x 2 draws"),
    Entry("vvr_compare_heldout_60", ((None, (*COMPARE, "--steps", "60", "--out", "{out}")),), fast=False,
          blocks={"vvr_compare_heldout_60": vvr_methods}),
    Entry("vvr2_same_template_60", ((None, (*COMPARE, "--mode", "same_template", "--out", "{out}")),), fast=False,
          blocks={"vvr2_same_template_60": vvr2_methods},
          note="every method trained 60 steps on the v2 easy pool from the shipped v2 bases, scored on 512 unseen tasks "
               "of that pool"),
    *(Entry(f"vvr2_{mode}_rwtd_300", ((None, (*COMPARE, "--mode", mode, "--methods", "rwtd", "--steps", "300", "--out", "{out}")),),
            fast=False, blocks={f"vvr2_{mode}_rwtd_300": vvr2_methods},
            note=f"RWTD trained 300 steps from the shipped v2 one-step base ({mode})")
      for mode in ("same_template", "easy_to_hard")),
    Entry("vvr2_heldout_60", ((None, (*COMPARE, "--mode", "heldout", "--out", "{out}")),), fast=False,
          blocks={"vvr2_heldout_60": vvr2_methods},
          note="every method trained 60 steps on the v2 easy pool from the shipped v2 bases, scored on 100 VVRBench v2 "
               "tasks of each difficulty bin 1-5"),
    Entry("vvr2_easy_to_hard_60", ((None, (*COMPARE, "--mode", "easy_to_hard", "--out", "{out}")),), fast=False,
          blocks={"vvr2_easy_to_hard_60": vvr2_methods},
          note="every method trained 60 steps on bins 1-2 of the bench-matched v2 pool, scored on 100 bench tasks of "
               "each of bins 3-5"),
    Entry("vvr_compare_heldout_300", ((None, (*COMPARE, "--steps", "300", "--out", "{out}")),), fast=False,
          blocks={"vvr_compare_heldout_300": vvr_methods}),
    Entry("vvr_compare_fit", ((None, (*COMPARE, *FIT, "--steps", "300", "--out", "{out}")),), fast=False,
          blocks={"vvr_compare_fit": vvr_methods}),
    Entry("vvr_rwtd_lambda", _lambda_runs(), fast=False, blocks={"vvr_rwtd_lambda": vvr_lambda},
          note="RWTD on VVR over λ, 32 + 32 samples per prompt, 300 steps: fit tasks (two seeds at λ > 0) and held-out"),
    Entry("poem_categorical", ((None, POEM_CATEGORICAL),), fast=True,
          blocks={"poem_categorical/in_span": poem_in_span, "poem_categorical/spearman": poem_spearman},
          pictures={"coverage_vs_error.png": "assets/readme/poem_coverage_vs_error.png"}),
    Entry("poem_categorical_adam_default", ((None, (*POEM_CATEGORICAL, "--adam-default")),), fast=True,
          blocks={"poem_categorical_adam_default": poem_adam_default}),
    Entry("av_compare_toy", tuple((f"seed={s}", (*AV_TOY, "--seed", s)) for s in AV_SEEDS), fast=False,  # ~3 min
          blocks={"av_compare_toy": av_toy_table, "av_compare_toy/base": av_toy_base, "av_compare_toy/budget": av_toy_budget,
                  "av_compare_toy/spearman": av_toy_spearman},
          pictures={"run_0/before_after.png": "assets/readme/av_grpo_toy_before_after.png"},
          note="AV-GRPO and its baselines on the toy two-tower AV flow, 320 steps, training seeds 0, 1 and 2"),
    Entry("av_compare_toy_travel", tuple((f"seed={s}", (*AV_TOY_TRAVEL, "--seed", s)) for s in AV_SEEDS), fast=False,
          blocks={"av_compare_toy_travel": av_toy_travel, "av_compare_toy_travel/budget": av_toy_budget,
                  "av_compare_toy_travel/spearman": av_toy_spearman},  # ~3 min
          note="the toy AV comparison of av_compare_toy, scored with av_video_quality's travel term (min_travel 0.3)"),
    Entry("av_compare_toy_large_batch",
          (*((f"seed={s}", (*AV_TOY, "--prompts-per-step", "16", "--seed", s)) for s in AV_SEEDS),
           *((f"renormalize=false/seed={s}", (*AV_TOY, "--prompts-per-step", "16", "--methods", "av_grpo", "--set",
                                              "renormalize=false", "--seed", s)) for s in AV_SEEDS)),
          fast=False, blocks={"av_compare_toy_large_batch": av_toy_large_batch},  # ~10 min
          note="the toy AV comparison at 16 prompts per step (8x the rollouts per step), seeds 0-2, then AV-GRPO with "
               "renormalize=false"),
    Entry("av_bases", tuple(run for key, folder, world in (("small", "assets/av", ()), ("large", "assets/av_large", ()),
                                                           ("synced", "assets/av_synced", ()),
                                                           ("fixed", "assets/av_fixed", AV_FIXED_WORLD))
                            for run in ((f"{key}/measured", _shipped_av(folder, *world)),
                                        (f"{key}/verifiers", _base_verifiers(f"{folder}/tiny_av_flow")))),
          fast=True, blocks={"av_bases": av_bases},
          note="the four tiny AV bases measured: object_color and av_sync (pretrain_av.py --pictures-only; the fixed "
               "base beside its own world's renders) and the AV verifiers' means on the world's 64 prompts "
               "(av_compare.py with no method)"),
    Entry("av_quality_gamed", tuple((f"min_travel={t}", (*AV_COMPARE_TINY, "--checkpoint", AV_LARGE, "--methods",
                                                         "av_grpo", "joint_grpo", "--steps", "4", "--eval-every", "4",
                                                         "--eval-size", "64", "--min-travel", t)) for t in ("0", "0.3")),
          fast=True, blocks={"av_quality_gamed": av_gamed_table},
          pictures={"run_0/before_after.png": "assets/readme/av_video_quality_gamed.png",
                    "run_1/before_after.png": "assets/readme/av_video_quality_travel.png"},
          note="4 steps of AV-GRPO and joint GRPO at the toy's learning rate 1e-3 on the larger tiny AV base"),
    Entry("av_compare_tiny_av_large",
          tuple((f"seed={s}/pair={p}", (*AV_LARGE_COMPARE, "--methods", *methods, "--seed", s))
                for s in AV_SEEDS for p, methods in AV_PAIRS.items()),
          fast=False, blocks={"av_compare_tiny_av_large": av_large_table,
                              "av_compare_tiny_av_large/budget": av_large_budget},
          pictures={"run_0/before_after.png": "assets/readme/av_grpo_tiny_av_large.png"},
          note="AV-GRPO and its baselines on the larger tiny AV base, 120 steps at lr 3e-5, seeds 0-2, two runs of two "
               "methods per seed"),
    Entry("av_compare_tiny_av_large_batch",
          tuple((m, (*AV_LARGE_BATCH, "--methods", m)) for m in ("av_grpo", "joint_grpo")),
          fast=False, blocks={"av_compare_tiny_av_large_batch": av_large_batch_table},
          pictures={"run_0/before_after.png": "assets/readme/av_grpo_tiny_av_large_batch.png"},
          note="AV-GRPO and joint GRPO on the larger tiny AV base at 8 prompts per step (4x the rollouts), 120 steps at "
               "lr 3e-5, seed 0, one run each"),
    Entry("av_cross_modal", ((None, (PY, "pipelines/av_cross_modal.py", "--checkpoints", "small=assets/av/tiny_av_flow",
                                     f"large={AV_LARGE}", f"synced={AV_SYNCED}", "--results", "{results}",
                                     "--out", "{out}")),),
          fast=True, blocks={"av_cross_modal": av_cross_modal(AV_BASES)},
          pictures={"large_given_video.png": "assets/readme/av_cross_modal_large.png",
                    "synced_given_video.png": "assets/readme/av_cross_modal_synced.png"}),
    _av_seeds_entry("av_compare_tiny_av_synced", AV_SYNCED, "the synced tiny AV base"),
    _av_seeds_entry("av_compare_tiny_av_fixed", AV_FIXED, "the fixed-motion tiny AV base"),
    _av_fixed_entry("ode_final", ("ode_final_steps=1",), (), (), "the last sampling step an ODE step"),
    _av_fixed_entry("sde_first", ("ode_final_steps=3",), ("--budget-curve", "fixed"), ("budget",),
                    "the SDE on the first of the 4 sampling steps only, the budget on the fixed evaluation set"),
    _av_fixed_entry("kl_all", ("ode_final_steps=3", "kl_steps=all"), ("--budget-curve", "fixed"),
                    ("budget", "spearman", "claim"),
                    "the SDE on the first sampling step and the KL on every step, the budget on the fixed evaluation "
                    "set", seeds=("0", "1", "2", "3", "4")),
    _av_fixed_entry("video_noise", ("ode_final_steps=3", "kl_steps=all"),
                    ("--noise-video", "0.7", "--budget-curve", "fixed"), ("budget", "spearman", "claim"),
                    "as kl_all with the video's SDE noise level 0.7 (the audio's), seeds 3 and 4 added after the "
                    "setting was chosen on seeds 1 and 2", seeds=("0", "1", "2", "3", "4"), picture=True),
    _av_fixed_entry("audio_only", ("ode_final_steps=3", "kl_steps=all"),
                    ("--order", "audio", "video", "--steps-per-modality", "1000"), ("claim",),
                    "as kl_all with the audio tower trained alone (no video blocks)", seeds=("0", "1", "2", "3", "4"),
                    methods=("av_grpo",)),
    _av_fixed_entry("keep_optimizer", ("ode_final_steps=3", "kl_steps=all"),
                    ("--noise-video", "0.7", "--keep-optimizer", "--budget-curve", "fixed"),
                    ("budget", "spearman", "claim"),
                    "as video_noise with the AdamW state kept across modality switches (chosen on seeds 3 and 4; "
                    "seeds 0-2, 5 and 6 held out)", seeds=("0", "1", "2", "3", "4", "5", "6")),
    Entry("av_leak", (*((label, (*_av_compare_120(AV_FIXED), "--methods", "av_grpo", "--set", "ode_final_steps=3",
                                 "kl_steps=all", *options)) for label, options in AV_LEAK_RUNS.items()),
                      ("leak", (PY, "pipelines/av_leak.py", "--base", AV_FIXED, "--results", "{results}", "--trained",
                                *(f"{label}={{folder}}/run_{i}/av_grpo/final" for i, label in enumerate(AV_LEAK_RUNS))))),
          fast=False, blocks={"av_leak": av_leak_table},
          note="AV-GRPO on the fixed-motion base (kl_all settings): seed 3 at video noise 0.7 with the AdamW state "
               "cleared at each switch and kept, and seed 2 training the audio tower alone; then each modality's "
               "quality by the source of its weights and of its partner's samples"),
    Entry("av_spearman_fixed", tuple((f"seed={s}", (*_base_verifiers(AV_FIXED), "--spearman-prompts", "128", "--seed", s))
                                     for s in ("0", "1", "2", "3", "4")),
          fast=True, blocks={"av_spearman_fixed": av_spearman_table},
          note="the advantage Spearman correlations of the fixed-motion base on 128 prompts (groups of 8) per seed, "
               "seeds 0-4"),
    Entry("av_audio_drift",
          tuple((label, (*_av_compare_120(AV_FIXED), "--methods", "av_grpo", "--order", "audio", "video",
                         "--steps-per-modality", "1000", "--audio-rewards", reward, "--set", "ode_final_steps=3",
                         f"kl_steps={where}")) for label, (reward, where) in AV_DRIFT_RUNS.items()),
          fast=False, blocks={"av_audio_drift": av_audio_drift_table},
          note="AV-GRPO on the fixed-motion tiny AV base training the audio tower only, 120 steps at lr 3e-5, SDE on "
               "the first sampling step: on audio quality or on the no-signal null_score, the KL on the SDE step or "
               "on every step"),
    Entry("av_audio_quality_alone",
          tuple((f"ode_final_steps={n}", (*_av_compare_120(AV_FIXED), "--methods", "av_grpo", "--order", "audio", "video",
                                          "--steps-per-modality", "1000", "--audio-rewards", "av_audio_quality",
                                          "--set", f"ode_final_steps={n}")) for n in ("0", "1")),
          fast=False, blocks={"av_audio_quality_alone": av_audio_quality_alone_table},
          note="AV-GRPO on the fixed-motion tiny AV base training the audio tower only, on audio quality alone, 120 "
               "steps at lr 3e-5, the last sampling step SDE or ODE"),
    Entry("av_sync_pilot", _continued_runs(AV_LARGE, AV_SYNC_ARMS), fast=False,
          blocks={"av_sync_pilot": av_cross_modal({"cross_modal/base": AV_BASES["large"],
                                                   **{f"cross_modal/{a}": f"+ {l}" for a, l in AV_SYNC_LABELS.items()}},
                                                  renders="cross_modal/renders"),
                  "av_sync_pilot/bases": av_continued_bases(AV_SYNC_LABELS)},
          note="the larger tiny AV base continued 1,500 flow steps under decoupled noise levels, time-aligned "
               "cross-attention, or both; cross-modal av_sync and the AV verifiers of each"),
    Entry("av_conv_pilot", _continued_runs(AV_SYNCED, AV_CONV_ARMS, AV_COMMIT_LEVELS, ("--video-quality",)),
          fast=False, blocks={"av_conv_pilot": av_sync_and_quality_levels(AV_CONV_LABELS),
                              "av_conv_pilot/bases": av_continued_bases(AV_CONV_LABELS)},
          pictures={"run_0/flow.png": "assets/readme/av_conv_samples.png"},
          note="the synced tiny AV base continued 1,500 flow steps with per-frame convolutions around its video tokens; "
               "av_sync and video quality of joint samples and of renders finished from each noise level"),
    Entry("av_ot_pilot", _continued_runs(AV_SYNCED, AV_OT_ARMS, AV_COMMIT_LEVELS, ("--video-quality",)),
          fast=False, blocks={"av_ot_pilot": av_sync_and_quality_levels(AV_OT_LABELS),
                              "av_ot_pilot/bases": av_continued_bases(AV_OT_LABELS)},
          pictures={"run_1/flow.png": "assets/readme/av_ot_samples.png"},
          note="the synced tiny AV base continued 1,500 flow steps on 4 prompts x 8 clips per batch, with the noise "
               "paired independently or by minibatch optimal transport within each prompt's clips; av_sync and video "
               "quality of joint samples and of renders finished from each noise level; the AV verifiers"),
    Entry("av_fixed_motion_pilot", _fixed_motion_runs(), fast=False,
          blocks={"av_fixed_motion_pilot": av_continued_bases(AV_FIXED_LABELS),
                  "av_fixed_motion_pilot/probe": av_position_probe(synced_and(AV_FIXED_LABELS))},
          pictures={"run_0/flow.png": "assets/readme/av_fixed_samples.png"},
          note="the synced tiny AV base continued 1,500 flow steps on the fixed-motion world (bursts up to half a frame "
               "off), as it is and with shared time features; the AV verifiers of each, and the position probe"),
    Entry("av_prediction_pilot", _prediction_runs("3000"), fast=False,
          blocks={"av_prediction_pilot": av_position_probe(PREDICTION_LABELS)},
          note="the small tiny AV size trained 3,000 flow steps from scratch on the fixed-motion world, predicting "
               "the velocity or the clean sample; the position probe of each"),
    Entry("av_loss_space_pilot", _prediction_runs("4000", LOSS_SPACE_ARMS, verifiers=True), fast=False,
          blocks={"av_loss_space_pilot": av_continued_bases(LOSS_SPACE_LABELS, "trained from scratch with"),
                  "av_loss_space_pilot/probe": av_position_probe(LOSS_SPACE_LABELS)},
          pictures={"run_3/flow.png": "assets/readme/av_x0_loss_samples.png"},
          note="the small tiny AV size trained 4,000 flow steps from scratch on the fixed-motion world, predicting the "
               "velocity or the clean sample, with the loss in velocity or clean-sample space; the AV verifiers and "
               "the position probe of each"),
    Entry("av_loss_space_random", _prediction_runs("4000", {k: LOSS_SPACE_ARMS[k] for k in ("velocity", "sample_x0_loss")},
                                                   verifiers=True, fixed_motion=False), fast=False,
          blocks={"av_loss_space_random": av_continued_bases({k: LOSS_SPACE_LABELS[k]
                                                              for k in ("velocity", "sample_x0_loss")},
                                                             "trained from scratch with")},
          pictures={"run_1/flow.png": "assets/readme/av_x0_loss_random_samples.png"},
          note="the small tiny AV size trained 4,000 flow steps from scratch on the random-phase world, as shipped and "
               "predicting the clean sample with the loss in sample space; the AV verifiers of each"),
    Entry("av_random_steps",
          (*_prediction_runs("4000", AV_STEPS_ARMS, fixed_motion=False),
           *((f"{arm}/steps={n}", (*_base_verifiers(path), "--eval-steps", n))
             for arm, path in _trained_checkpoints(AV_STEPS_ARMS).items() for n in AV_STEP_COUNTS)),
          fast=False, blocks={"av_random_steps": av_sampling_steps},
          note="the two random-phase bases of av_loss_space_random trained again, then the AV verifiers of each at "
               "4, 8, 16 and 32 Euler steps"),
    Entry("av_commit_pilot", _continued_runs(AV_SYNCED, AV_COMMIT_ARMS, AV_COMMIT_LEVELS), fast=False,
          blocks={"av_commit_pilot": av_commit_table, "av_commit_pilot/bases": av_continued_bases(AV_COMMIT_LABELS)},
          note="the synced tiny AV base continued 1,500 flow steps as trained and at time shift 3; av_sync of joint "
               "samples and of renders noised to 1, 0.9, 0.75, 0.5 and finished by each model; the AV verifiers"),
    Entry("av_shared_time_pilot", _pilot_runs("1700", TIME_PILOT_ARMS), fast=False,
          blocks={"av_shared_time_pilot": av_pilot(TIME_PILOT_LABELS)},
          note="the small tiny AV base's size and step count pretrained twice: per-token learned positions only, and "
               "with generator.shared_time; each scored by pretrain_av.py's measures and the AV verifiers"),
    Entry("av_shared_time_pilot_long", _pilot_runs("4000", TIME_PILOT_ARMS), fast=False,
          blocks={"av_shared_time_pilot_long": av_pilot(TIME_PILOT_LABELS)},
          note="the shared-time pilot at 4,000 flow steps per arm"),
    Entry("av_arch_pilot", _pilot_runs("1700", {a: ("--cross-frames", "0", *o) for a, o in ARCH_PILOT_ARMS.items()}),
          fast=False, blocks={"av_arch_pilot": av_pilot(ARCH_PILOT_LABELS, with_loss=True)},
          pictures={"run_0/flow.png": "assets/readme/av_arch_pilot_plain.png",
                    "run_3/flow.png": "assets/readme/av_arch_pilot_both.png"},
          note="the small tiny AV base's size with cross_frames 0, 1,700 flow steps from scratch per arm: tokens as "
               "shipped, adaptive LayerNorm time conditioning, per-frame convolutions, both"),
    # long commands (about 5-35 min each on this machine)
    Entry("av_compare_tiny_av", ((None, (PY, "pipelines/av_compare.py", "--model", "tiny_av", "--checkpoint",
                                         "assets/av/tiny_av_flow", "--steps", "120", "--eval-every", "24", "--eval-size", "32",
                                         "--results", "{results}", "--out", "{out}")),),
          fast=False, blocks={"av_compare_tiny_av": av_tiny_table, "av_compare_tiny_av/base": av_tiny_base}),
    Entry("poem_text", ((None, (PY, "pipelines/poem_text.py", "--results", "{results}", "--out", "{out}")),), fast=False,
          blocks={"poem_text": poem_text}),
    Entry("poem_flow", (("seed=0", POEM_FLOW), ("seed=1", (*POEM_FLOW, "--seed", "1", "--reference", "{folder}/run_0/reference"))),
          fast=False, blocks={"poem_flow": poem_flow, "poem_flow/seed1": poem_flow_seed1},
          pictures={"run_0/samples.png": "assets/readme/poem_flow_samples.png"},
          note="PoEM on the tiny flow generator: RL seed 0, then RL seed 1 on seed 0's pretrained reference"),
    Entry("core_compare_images", (("mu=3", CORE_IMAGES), ("mu=0", (*CORE_IMAGES, "--arms", "core", "--proximal", "0"))),
          fast=False, blocks={"core_compare_images": core_images, "core_compare_images/bound": core_images_bound},
          pictures={"run_0/curves.png": "assets/readme/core_images_curves.png",
                    "run_0/samples.png": "assets/readme/core_images_samples.png"},
          note="CoRe, its ablations and the fixed LRM on 8 px smooth images, 500 steps, seeds 0-2: every arm with the "
               "proximal weight μ = 3, then CoRe with μ = 0"),
    Entry("reflection_counting", tuple((label, (*REFLECTION, *extra)) for label, extra in REFLECTION_RUNS), fast=False,
          blocks={"reflection_counting": reflection_table("default"), "reflection_counting/claims": reflection_claims("default"),
                  "reflection_counting/critique": reflection_critique, "reflection_counting/blind": reflection_table("blind"),
                  "reflection_counting/blind_claims": reflection_claims("blind"),
                  "reflection_counting/shared": reflection_table("shared"),
                  "reflection_counting/shared_round0": reflection_shared_round0},
          pictures={"run_0/trajectory.png": "assets/readme/reflection_trajectory.png"},
          note="reflection loops on the counting toy, seeds 0-2: the default (separate first-render head, editor sees the "
               "prompt), the earlier shared first-render head, and an editor blind to the prompt"),
    Entry("config_runs", ((None, (PY, "pipelines/config_runs.py", "--results", "{results}", "--out", "{out}")),), fast=True,
          blocks={"config_runs": config_runs}),
    Entry("pretrain_shipped", (("video", (*PRETRAIN_SHIPPED_VIDEO, *PRETRAIN_OUT)), ("av", _shipped_av("assets/av"))),
          fast=True, blocks={"pretrain_shipped": pretrain_metrics, "pretrain_shipped/steps": pretrain_steps},
          note="the shipped tiny video and audio-video checkpoints measured (their training figures from the "
               "pretrain_metrics.json beside them)"),
    Entry("pretrain_fresh", (("video", (*PRETRAIN_VIDEO, "--assets", "{out}/assets", *PRETRAIN_OUT)),
                             ("av", (*PRETRAIN_AV, "--assets", "{out}/assets", *PRETRAIN_OUT))), fast=False,
          blocks={"pretrain_fresh": pretrain_metrics, "pretrain_fresh/steps": pretrain_steps},
          note="the tiny video and audio-video generators pretrained afresh on the moving-shapes world to the scripts' "
               "step caps (no wall-clock limit in effect); checkpoints go to the run folder, not assets/"),
    Entry("core_compare_video",
          (("claims", CORE_VIDEO), ("ablations", (*CORE_VIDEO[:-2], "anchor_only", "generator_only", "oracle")),
           ("bound", (*CORE_VIDEO[:-2], "oracle_core"))),
          fast=False, blocks={"core_compare_video": core_video,
                              "core_compare_video/bound": core_video_bound},
          pictures={"run_0/curves.png": "assets/readme/core_video_curves.png",
                    "run_0/samples.png": "assets/readme/core_video_samples.png",
                    "run_0/samples.gif": "assets/readme/core_video_samples.gif"},
          note="CoRe on the tiny video flow, 500 generator steps, seeds 0-2: fixed LRM and CoRe (claims), the "
               "ablations, then CoRe + oracle labels"),
)


def entry(name: str) -> Entry:
    for e in ENTRIES:
        if e.name == name:
            return e
    raise KeyError(f"no results entry {name!r}; known: {[e.name for e in ENTRIES]}")
