"""README blocks of audio-video alignment: the AV-GRPO toy and tiny-AV comparisons and the video / AV pretraining."""
from __future__ import annotations

import math
import statistics

from visalign.results import ResultRow, ResultTable

from pipelines.readme_blocks.formatting import across_seeds, minus, Renderer, signed, table, value_range, value_se


AV_METHODS = {"av_grpo": "av_grpo (anchored)", "joint_grpo": "joint", "video_sde": "video_sde", "routed": "routed"}
AV_VISIBLE_PX = "0.25"  # resolution (pixels of motion residual) of the video-quality readout of the *_visible entries
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
    return value_range(rho, 2)


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


def second_claim(video: str = "video_quality", video_label: str = "video quality") -> Renderer:
    """Per seed, AV-GRPO's changes of desync and of each modality's quality (the video's by the metric ``video``) in
    standard errors (from the unrounded values; a change with no spread is ±∞ SE, no change 0), whether the issue's
    second claim holds there (desync up, both qualities ≥ −1 SE), and the same for the seeds pooled by Stouffer's
    method (Σz / √n: one test of the claim on all the evaluations at once)."""
    metrics = (("desync", "desync"), (video, video_label), ("audio_quality", "audio quality"))

    def in_se(info: dict, k: str) -> float:
        z = info["change_in_se"][k]
        if z is not None:
            return z
        exact = info.get("change_exact", {}).get(k, 0.0)
        return math.copysign(math.inf, exact) if exact else 0.0

    def render(t: ResultTable) -> str:
        info = {seed: t.row(f"seed={seed}/av_grpo").info for seed in run_seeds(t)}
        per_seed = {seed: {k: in_se(i, k) for k, _ in metrics} for seed, i in info.items()}
        pooled = {k: sum(z[k] for z in per_seed.values()) / math.sqrt(len(per_seed)) for k, _ in metrics}

        def line(z: dict[str, float]) -> str:
            holds = z["desync"] > 0 and z[video] >= -1 and z["audio_quality"] >= -1
            return ", ".join(f"{label} {signed(z[k], 1)} SE" for k, label in metrics) + f" ({'holds' if holds else 'fails'})"

        lines = [*(f"seed {seed}: {line(z)}" for seed, z in per_seed.items()),
                 f"pooled over the {len(per_seed)} seeds (Stouffer): {line(pooled)}"]
        exact = [i.get("change_exact") for i in info.values()]
        if all(exact):
            lines.append(f"across the {len(exact)} training seeds (the mean change over seeds in its standard error "
                         f"over seeds, which counts the training's own randomness): {line(across_seeds(exact, metrics))}")
        return ";\n".join(lines)

    return render


av_second_claim = second_claim()


def av_visible_table(t: ResultTable) -> str:
    """Per seed, AV-GRPO's and joint GRPO's desync and audio-quality changes, the video-quality change read in full
    and at the evaluation's resolution (``--eval-video-tolerance-px``), each ± its paired SE, and the largest motion
    residual of any evaluation clip (the base's first)."""
    base = t.row(f"seed={run_seeds(t)[0]}/base")
    lines = [["base", "—", "—", "—", f"{base.info['largest_residual_px']:.2f}", "—"]]
    for m in ("av_grpo", "joint_grpo"):
        for seed in run_seeds(t):
            r = t.row(f"seed={seed}/{m}")
            lines.append([f"{AV_METHODS[m]}, seed {seed}", value_se(r, "desync", 2, "+"),
                          value_se(r, "audio_quality", 1, "+"), value_se(r, "video_quality", 4, "+"),
                          f"{r.info['largest_residual_px']:.2f}", value_se(r, "video_quality_visible", 4, "+")])
    return table(["method", "Δ desync", "Δ audio quality (dB)", "Δ video quality", "largest motion residual (px)",
                  f"Δ video quality at {AV_VISIBLE_PX} px"], lines)


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
AV_SEED_PARTS = {"budget": av_per_seed_budget, "spearman": av_toy_spearman, "claim": av_second_claim,
                 "claim_visible": second_claim("video_quality_visible", f"video quality at {AV_VISIBLE_PX} px")}


def av_large_batch_table(t: ResultTable) -> str:
    """AV-GRPO and joint GRPO at four times the prompts per step (one run each)."""
    return av_change_table(t, {"av_grpo/": "", "joint_grpo/": ""})


def av_gamed_table(t: ResultTable) -> str:
    """Four steps at the toy's learning rate on the larger base, scored without and with the travel term."""
    return av_change_table(t, {"min_travel=0/": ", `min_travel` 0", "min_travel=0.3/": ", `min_travel` 0.3"})


AV_SYNCED_RUNS = (("0", 1), ("1", 1), ("0", 2), ("2", 1))  # (seed, pair): AV-GRPO and joint on three seeds, the others on one


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


def av_sync_and_quality_levels(labels: dict[str, str]) -> Renderer:
    """av_sync and av_video_quality (± SE) of joint samples and of renders noised to each level and finished, for the
    synced base and each continued arm of ``labels``."""
    def render(t: ResultTable) -> str:
        lines = [[f"{label}: {measure}", *level_cells(t.row(f"cross_modal/{key}"), prefix)]
                 for key, label in synced_and(labels).items()
                 for measure, prefix in (("av_sync", ""), ("video quality", "video_quality/"))]
        return table(["model: measure", *LEVEL_HEADERS], lines)

    return render


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


LOSS_SPACE_LABELS = {"velocity": "velocity prediction, velocity loss (as shipped)",
                     "sample": "sample prediction, velocity loss",
                     "velocity_x0_loss": "velocity prediction, sample-space loss",
                     "sample_x0_loss": "sample prediction, sample-space loss"}

AV_STEP_COUNTS = ("4", "8", "16", "32")
AV_STEPS_LOSS_SPACES = ("velocity", "sample_x0_loss")


def av_sampling_steps(t: ResultTable) -> str:
    """The AV verifiers' means of each random-phase base sampled with more and more Euler steps."""
    return table(["trained from scratch with", "Euler steps", *AV_VERIFIER_HEADERS],
                 [[LOSS_SPACE_LABELS[arm], n, *av_verifier_cells(t.row(f"{arm}/steps={n}/base").values)]
                  for arm in AV_STEPS_LOSS_SPACES for n in AV_STEP_COUNTS])
