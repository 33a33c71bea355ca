"""README blocks of the VVR image results: method comparisons, RWTD's regimes, the v2 bases and the self-supervised
encoder."""
from __future__ import annotations

import math
import statistics
from typing import Callable

from visalign.results import ResultRow, ResultTable, load_results

from pipelines.readme_blocks.formatting import (
    across_seeds, decimals, pct, Renderer, RESULTS_DIR, signed, table, times, value_se)


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

#: the v2 bases of the large-evaluation runs (RWTD from the one-step students, Flow-GRPO from vvr2_ema2's flow):
#: run label prefix -> table cell
LARGE_EVAL_BASES = {"long": "longer-trained (`assets/vvr2_long`)", "longer": "60 minutes further (`assets/vvr2_longer`)",
                    "ema2": "averaged, trained further (`assets/vvr2_ema2`)"}
LARGE_EVAL_SEEDS = ("0", "1", "2")
LARGE_EVAL_HEAD = ["all-satisfied before → after", "change / SE", "soft reward before → after", "change / SE",
                   "distance to reference"]


def large_eval_cells(r: ResultRow, prefix: str = "") -> list[str]:
    """A large-evaluation row's changes at four decimals, each also in its paired standard errors (``prefix``: the
    columns of one scored bin, e.g. ``bin2_``), and its distance to the reference."""
    cells = []
    for key in ("acc", "soft"):
        before, after = r.values[f"{prefix}{key}_before"], r.values[f"{prefix}{key}_after"]
        se = r.se[f"{prefix}{key}_after"]
        cells += [f"{before:.4f} → {after:.4f} (±{se:.4f})", decimals((after - before) / se, 1)]
    return [*cells, f"{r.values['feat_dist_to_ref']:.3f}"]


def base_and_seed(r: ResultRow) -> tuple[str, str]:
    """The base and training seed of a large-evaluation row named ``<base>-seed=<seed>/<method>``."""
    base, seed = r.row.split("/")[0].split("-seed=")
    return base, seed


def seed_mean_lines(rows: list[ResultRow], prefix: str = "") -> list[list[str]]:
    """Per base, the mean change over its training seeds and that mean in its SE over the seeds (the seed as the unit;
    ``prefix``: the columns of one scored bin, e.g. ``bin2_``)."""
    by_base: dict[str, list[dict[str, float]]] = {}
    for r in rows:
        base = base_and_seed(r)[0]
        by_base.setdefault(base, []).append({k: r.values[f"{prefix}{k}_after"] - r.values[f"{prefix}{k}_before"]
                                             for k in ("acc", "soft")})
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


def seed_lines(rows: list[ResultRow], prefix: str = "") -> list[list[str]]:
    """One line per run labelled ``<base>-seed=<seed>``: its base, training seed and :func:`large_eval_cells`."""
    return [[LARGE_EVAL_BASES[base], seed, *large_eval_cells(r, prefix)]
            for r in rows for base, seed in [base_and_seed(r)]]


def large_eval_by_seed(t: ResultTable) -> str:
    """One method's runs labelled ``<base>-seed=<seed>`` (8 prompt groups per step on bin 1, scored on 8,192 unseen
    tasks): one line per base and training seed, the changes in their paired SEs, then one line per base across its
    seeds (the seed as the unit)."""
    return table(["base", "training seed", *LARGE_EVAL_HEAD], seed_lines(t.rows) + seed_mean_lines(t.rows))


def large_eval_by_seed_and_bin(t: ResultTable) -> str:
    """:func:`large_eval_by_seed` for runs scored on several bins: per scored bin, one line per base and training seed,
    then one line per base across its seeds (the distance to the reference is over all scored bins)."""
    lines = []
    for b in scored_bins(t.rows[0]):
        lines += [[line[0], b, *line[1:]] for line in seed_lines(t.rows, f"bin{b}_") + seed_mean_lines(t.rows, f"bin{b}_")]
    return table(["base", "scored bin", "training seed", *LARGE_EVAL_HEAD], lines)


def rwtd_large_eval_more_seeds(t: ResultTable) -> str:
    """Further training seeds of :func:`large_eval_by_seed`'s runs on one base, then the mean over these and the stored
    seeds of that base (read from ``vvr2_rwtd_accum8_large_eval``'s result file)."""
    bases = {base_and_seed(r)[0] for r in t.rows}
    earlier = [r for r in load_results(RESULTS_DIR / "vvr2_rwtd_accum8_large_eval.json").rows if base_and_seed(r)[0] in bases]
    return table(["base", "training seed", *LARGE_EVAL_HEAD], seed_lines(t.rows) + seed_mean_lines(earlier + t.rows))


#: RWTD's regression arms from vvr2_ema2's student: run label -> (regression space, step size η)
RWTD_REGRESSION_ARMS = {"features-eta=0.5": ("conv features (the config's)", "0.5 (the config's)"),
                        "features-eta=1": ("conv features (the config's)", "1"),
                        "samples-eta=1": ("samples (barycentric images)", "1"),
                        "grid4-eta=0.5": ("conv features on a 4 × 4 grid", "0.5 (the config's)")}


def rwtd_regression_arms(t: ResultTable) -> str:
    """RWTD from ``assets/vvr2_ema2``'s student with other regression settings (one run per arm; a single run's rows
    are unprefixed, its label is the run's), training seed 0, per scored bin, after the config's arm: training seed 0
    of ``vvr2_ema2_rwtd_accum8_bins`` (read from its result file)."""
    features = load_results(RESULTS_DIR / "vvr2_ema2_rwtd_accum8_bins.json").row("ema2-seed=0/rwtd")
    arms = [("features-eta=0.5", features), *((r.row.split("/")[0] if len(t.runs) > 1 else t.runs[0].label, r)
                                              for r in t.rows)]
    lines = [[*RWTD_REGRESSION_ARMS[label], b, *large_eval_cells(r, f"bin{b}_")]
             for b in scored_bins(features) for label, r in arms]
    return table(["regression onto", "η", "scored bin", *LARGE_EVAL_HEAD], lines)


#: one-step bases of rwtd_targets: checkpoint name -> table cell
RWTD_TARGET_BASES = {"long": "`vvr2_long` (RWTD gains)", "longer": "`vvr2_longer` (RWTD flat)",
                     "ema2": "`vvr2_ema2` (RWTD loses)"}
RWTD_TARGET_KINDS = {"current": "current samples u", "eta=0.5": "targets, η = 0.5", "eta=1": "targets, η = 1 (ū)"}


def rwtd_targets_table(t: ResultTable) -> str:
    """RWTD's sample-space targets beside the current samples, per base: strict and soft reward, each target's change
    from the samples with its SE over prompt groups."""
    lines = []
    for r in t.rows:
        base, kind = r.row.split("/")
        cells = []
        for k in ("strict", "soft"):
            change = (f"{signed(r.values[f'{k}_change'], 3)} (±{r.se[f'{k}_change']:.3f})"
                      if f"{k}_change" in r.values else "")
            cells += [f"{r.values[k]:.3f}", change]
        lines.append([RWTD_TARGET_BASES[base], RWTD_TARGET_KINDS[kind], *cells])
    return table(["one-step base", "images", "strict", "change (± SE over groups)", "soft reward", "change (± SE)"],
                 lines)


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


def scored_bins(r: ResultRow) -> list[str]:
    """The difficulty bins a run was scored on separately (its ``bin<b>_`` columns), in order."""
    return sorted({k.split("_")[0].removeprefix("bin") for k in r.values if k.startswith("bin")})


def methods_per_bin(t: ResultTable) -> str:
    """Method runs scored on unseen tasks of several bins: one line per method and scored bin, the changes in their
    paired SEs (the distance to the reference is over all scored bins)."""
    lines = [[VVR_METHODS[r.row.split("/")[-1]], VVR_GENERATORS[r.info["generator"]], b,
              *large_eval_cells(r, f"bin{b}_")]
             for r in t.rows for b in scored_bins(r)]
    return table(["method", "generator", "scored bin", *LARGE_EVAL_HEAD], lines)


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
                 *(["flow, 8 Euler steps, raw weights (not averaged)", cell(raw.values), *([""] * len(bins))]
                   for raw in t.rows if raw.row == "flow 8 steps, raw weights"),
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


def vvr_bases_table(t: ResultTable) -> str:
    """Per base checkpoint and easy-pool bin: strict accuracy and soft reward, each with its change from the first
    base of its run (± paired SE over tasks; rows ``[<run>/]<base>/bin <b>``); the first bases' cells carry no change."""
    bases = list(dict.fromkeys(r.row.rsplit("/bin ", 1)[0] for r in t.rows))
    bins = list(dict.fromkeys(r.row.rsplit("/bin ", 1)[1] for r in t.rows))
    runs = [base.rsplit("/", 1)[0] if "/" in base else "" for base in bases]

    def cell(r: ResultRow, key: str, first: bool) -> str:
        value = f"{r.values[key]:.4f}"
        return value if first else f"{value} ({signed(r.values[f'{key}_change'], 4)} ± {r.se[f'{key}_change']:.4f})"

    groups = "solved_group" in t.rows[0].values  # several draws per task: tasks whose draws hold a solved image

    def group_cells(r: ResultRow) -> list[str]:
        return [f"{r.values['solved_group']:.3f} ± {r.se['solved_group']:.3f}"] if groups else []

    lines = []
    for i, base in enumerate(bases):
        rows = [t.row(f"{base}/bin {b}") for b in bins]
        first = runs.index(runs[i]) == i
        lines.append([f"`{rows[0].info['checkpoint']}`",
                      *(c for r in rows for c in (cell(r, "acc", first), cell(r, "soft", first), *group_cells(r)))])
    n = t.rows[0].info
    whats = ("strict", "soft reward", "tasks with a solved draw (± SE)") if groups else ("strict", "soft reward")
    head = ["base (change from the first of its kind ± paired SE)", *(f"bin {b} {what}" for b in bins for what in whats)]
    draws = f"{n['draws']} noise draw" + ("s" if n["draws"] > 1 else "")
    return table(head, lines) + f"\n\n{n['tasks']:,} unseen tasks per bin × {draws}."
