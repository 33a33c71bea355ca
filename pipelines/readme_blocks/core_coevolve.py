"""README blocks of CoRe on tiny images and video."""
from __future__ import annotations

from visalign.results import ResultTable

from pipelines.readme_blocks.formatting import minus, table


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
