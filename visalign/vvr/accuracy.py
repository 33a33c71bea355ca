"""Measure the verifier on rendered solutions of visalign's splits.

``python -m visalign.vvr.accuracy --split bench [--limit N] [--workers 2] [--out FILE.json]`` (v2, the default):
every task's witness rendered clean at 256, 512 and 64 px, with JPEG q75 and Gaussian noise (sigma 10) at 256 px,
each read under the default and the paper's tolerances; two one-edit mutations per task (the edit kinds in turn,
and one aimed at a relation of the task) that clearly break the spec, which the verifier must reject; and the
colour-pair cases: every ordered pair of the 8 colours touching, nested and overlapping, under Gaussian blur
sigma 2 and JPEG q30 at 256 px and at 64 px (no fake third colour, no ring objects).

``--v1``: the old open-world measurement on the v1 splits (clean 256 px, JPEG q75, noise, 64 px, one mutation).
"""
from __future__ import annotations

import argparse
import io
import json
import math
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np
from PIL import Image, ImageFilter

CONDITIONS = ("clean256", "jpeg75", "noise10", "clean64", "mutation")
CONDITIONS_V2 = ("clean256", "clean512", "jpeg75", "noise10", "clean64")
PAIR_KINDS = ("touching", "nested", "overlap")
PAIR_CONDITIONS = ("blur2", "jpeg30", "clean64")


def jpeg(img: np.ndarray, quality: int = 75) -> np.ndarray:
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, "JPEG", quality=quality)
    return np.asarray(Image.open(buf).convert("RGB"))


def blur(img: np.ndarray, sigma: float) -> np.ndarray:
    return np.asarray(Image.fromarray(img).filter(ImageFilter.GaussianBlur(sigma)))


# ---------------------------------------------------------------- v1 (open world)


def measure_task(task_dict: dict[str, Any], seed: int = 0) -> dict[str, Any]:
    """v1: outcome of every condition for one task (``True`` = verifier right)."""
    from .mutations import mutate
    from .render import layout, render_scene
    from .task import Task
    from .verifier import verify

    task = Task.from_dict(task_dict)
    scene = layout(task, seed)
    img256 = render_scene(scene, 256, seed=seed)
    out: dict[str, Any] = {"id": task.id, "primary": task.primary, "level": task.level}
    out["clean256"] = verify(img256, task).all_satisfied
    out["jpeg75"] = verify(jpeg(img256), task).all_satisfied
    out["noise10"] = verify(render_scene(scene, 256, noise_std=10.0, seed=seed), task).all_satisfied
    out["clean64"] = verify(render_scene(scene, 64, seed=seed), task).all_satisfied
    mut = mutate(task, scene, seed)
    if mut is not None:
        out["mutation"] = not verify(render_scene(mut[0], 256, seed=seed), task).all_satisfied
        out["mutation_kind"] = mut[1]
    return out


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    summary: dict[str, Any] = {"tasks": len(rows)}
    for cond in CONDITIONS:
        vals = [r[cond] for r in rows if cond in r]
        summary[cond] = {"n": len(vals), "rate": round(float(np.mean(vals)), 5) if vals else None}
    fails = Counter((c, r["primary"]) for r in rows for c in CONDITIONS if c in r and not r[c])
    summary["failures_by_type"] = {f"{c}/{t}": n for (c, t), n in sorted(fails.items())}
    return summary


# ---------------------------------------------------------------- v2 (closed world)


def _relation_objects(task: Any, k: int) -> list[int]:
    from .predicates import assign
    from .spec_geometry import WitnessView

    a = assign(WitnessView(task.witness), task.spec)
    return sorted({i for gid in task.spec.relations[k].ids() for i in a.members.get(gid, [])})


def measure_spec_task(row: dict[str, Any]) -> dict[str, Any]:
    """v2: per condition and tolerance mode whether a correct render passes (strict), and per mutation whether
    the verifier rejects it, for one task row."""
    from .segment import segment
    from .spec_mutations import MUTATIONS, broken_types, mutate_spec
    from .spec_render import render_spec_task
    from .spec_task import SpecTask
    from .spec_verifier import verify_segmentation

    task = SpecTask.from_row(row)
    index = int(task.id.rsplit("-", 1)[-1]) if task.id.rsplit("-", 1)[-1].isdigit() else 0
    img256 = render_spec_task(task, 256)
    images = {"clean256": img256, "clean512": render_spec_task(task, 512), "jpeg75": jpeg(img256),
              "noise10": render_spec_task(task, 256, noise_std=10.0, seed=index), "clean64": render_spec_task(task, 64)}
    out: dict[str, Any] = {"id": task.id, "primary": task.primary, "bin": task.difficulty_bin,
                           "criteria": task.active_criteria}
    for name, img in images.items():
        seg = segment(img)
        for mode in ("default", "paper"):
            res = verify_segmentation(seg, task.spec, mode)
            out[f"{name}/{mode}"] = res.strict
            if not res.strict:
                out[f"{name}/{mode}/failed"] = sorted(k for k, v in res.criteria().items() if not v) + \
                    (["extras"] if res.extras else []) + ([] if res.background_ok else ["background"])
    muts = []
    kind = MUTATIONS[index % len(MUTATIONS)]
    m = mutate_spec(task.witness, task.spec, index, kind=kind, exactly_one=kind not in ("recolour", "reshape"))
    if m is not None:
        muts.append(m)
    if task.spec.relations:
        k = index % len(task.spec.relations)
        want = task.spec.relations[k].type
        m = mutate_spec(task.witness, task.spec, index + 1, kind="move" if index % 2 else "resize",
                        focus=_relation_objects(task, k), want=want) or \
            mutate_spec(task.witness, task.spec, index + 2, focus=_relation_objects(task, k), want=want)
        if m is not None:
            muts.append(m)
    out["mutations"] = []
    for scene, kind, broken in muts:
        seg = segment(render_spec_task(task, 256, scene=scene))
        caught = not verify_segmentation(seg, task.spec, "default").strict
        out["mutations"].append({"kind": kind, "broken": broken_types(broken), "exactly_one": len(broken) == 1,
                                 "caught": caught})
    return out


def pair_case(index: int) -> tuple[Any, Any]:
    """(spec, witness) of colour-pair case ``index``: ordered pair of distinct colours x touching / nested /
    overlap, on the backgrounds in turn."""
    from .colour_model import BACKGROUND_NAMES, COLOUR_NAMES
    from .render import _settle_contacts
    from .spec import EXTENSION_VERSION, PAPER_VERSION, parse_spec
    from .task import Contact, Obj, Scene

    pairs = [(a, b) for a in COLOUR_NAMES for b in COLOUR_NAMES if a != b]
    kind = PAIR_KINDS[index % 3]
    a, b = pairs[(index // 3) % len(pairs)]
    bg = BACKGROUND_NAMES[index % len(BACKGROUND_NAMES)]
    rot = (index * 37) % 360
    if kind == "nested":
        inner_shape = ("square", "circle")[index % 2]
        scene = Scene([Obj(inner_shape, a, 500, 500, 140, rot), Obj("circle", b, 500, 500, 320)], [Contact("inside", 0, 1)])
        groups = [(a, inner_shape), (b, "circle")]
        rel = {"type": "inside", "subject": f"{a}_{inner_shape}", "object": f"{b}_circle"}
    elif kind == "touching":
        front_shape = ("triangle", "square", "circle")[index % 3]
        scene = Scene([Obj(front_shape, a, 700, 520, 170, rot), Obj("square", b, 330, 500, 260, (rot * 7) % 360)],
                      [Contact("touch", 0, 1)])
        _settle_contacts(scene)
        groups = [(a, front_shape), (b, "square")]
        rel = {"type": "touching", "subject": f"{a}_{front_shape}", "object": f"{b}_square"}
    else:
        ang = math.radians(10 + 90 * (index % 4) + (index * 13) % 41 - 20)  # towards a side, not a corner
        edge = 150 / max(abs(math.cos(ang - math.radians(10))), abs(math.sin(ang - math.radians(10))))
        scene = Scene([Obj("circle", a, int(500 + edge * math.cos(ang)), int(500 + edge * math.sin(ang)), 120),
                       Obj("square", b, 500, 500, 300, 10)], [Contact("overlap", 0, 1)])  # circle centre on the edge
        groups = [(a, "circle"), (b, "any")]
        rel = {"type": "overlap", "subject": f"{a}_circle", "object": f"{b}_any"}
    spec = parse_spec({"verifier_version": EXTENSION_VERSION if kind == "overlap" else PAPER_VERSION,
                       "background": {"color": bg},
                       "objects": [{"id": f"{c}_{s}", "color": c, "shape": s, "count": 1} for c, s in groups],
                       "relations": [rel]})
    return spec, scene


N_PAIR_CASES = 56 * 3


def measure_pair(index: int) -> dict[str, Any]:
    from .colour_model import BACKGROUND_COLOURS, OBJECT_COLOURS
    from .render import render_scene
    from .spec_verifier import verify_spec

    spec, scene = pair_case(index)

    def draw(size: int) -> np.ndarray:
        return render_scene(scene, size, spec.background, colours=OBJECT_COLOURS, backgrounds=BACKGROUND_COLOURS)

    img = draw(256)
    images = {"clean256": img, "blur2": blur(img, 2.0), "jpeg30": jpeg(img, 30), "clean64": draw(64)}
    out: dict[str, Any] = {"case": index, "kind": PAIR_KINDS[index % 3], "colours": [g.color for g in spec.groups]}
    for name, im in images.items():
        res = verify_spec(im, spec)
        out[name] = res.strict
        if not res.strict:
            out[f"{name}/seen"] = [o.label() for o in res.seg.components]
    return out


def summarize_v2(rows: list[dict[str, Any]], pairs: list[dict[str, Any]]) -> dict[str, Any]:
    s: dict[str, Any] = {"tasks": len(rows), "conditions": {}, "failures": {}}
    for cond in CONDITIONS_V2:
        for mode in ("default", "paper"):
            key = f"{cond}/{mode}"
            vals = [r[key] for r in rows]
            s["conditions"][key] = round(float(np.mean(vals)), 5) if vals else None
            fails: Counter = Counter(c for r in rows if not r[key] for c in r.get(f"{key}/failed", []))
            s["failures"][key] = dict(fails.most_common())
    per_kind: dict[str, list[bool]] = defaultdict(list)
    per_type: dict[str, list[bool]] = defaultdict(list)
    for r in rows:
        for m in r["mutations"]:
            per_kind[m["kind"]].append(m["caught"])
            for t in set(m["broken"]):
                per_type[t].append(m["caught"])
    allm = [m["caught"] for r in rows for m in r["mutations"]]
    s["mutations"] = {"n": len(allm), "caught": round(float(np.mean(allm)), 5) if allm else None,
                      "exactly_one": sum(m["exactly_one"] for r in rows for m in r["mutations"]),
                      "by_kind": {k: {"n": len(v), "caught": round(float(np.mean(v)), 5)} for k, v in sorted(per_kind.items())},
                      "by_type": {k: {"n": len(v), "caught": round(float(np.mean(v)), 5)} for k, v in sorted(per_type.items())}}
    s["pairs"] = {}
    for cond in ("clean256", *PAIR_CONDITIONS):
        s["pairs"][cond] = {"all": round(float(np.mean([p[cond] for p in pairs])), 5) if pairs else None}
        for kind in PAIR_KINDS:
            vals = [p[cond] for p in pairs if p["kind"] == kind]
            s["pairs"][cond][kind] = round(float(np.mean(vals)), 5) if vals else None
    s["pair_failures"] = [{k: v for k, v in p.items()} for p in pairs
                          if not all(p[c] for c in ("clean256", *PAIR_CONDITIONS))][:40]
    return s


def markdown_v2(s: dict[str, Any]) -> str:
    pct = lambda x: "-" if x is None else f"{100 * x:.2f}%"  # noqa: E731
    lines = [f"Correct renders passing (strict), {s['tasks']} tasks:", "", "| condition | default tolerances | paper tolerances |",
             "|---|---|---|"]
    for cond in CONDITIONS_V2:
        lines.append(f"| {cond} | {pct(s['conditions'][cond + '/default'])} | {pct(s['conditions'][cond + '/paper'])} |")
    m = s["mutations"]
    lines += ["", f"Mutations caught: {pct(m['caught'])} of {m['n']} ({m['exactly_one']} break exactly one check)", "",
              "| edit | n | caught |", "|---|---|---|"]
    lines += [f"| {k} | {v['n']} | {pct(v['caught'])} |" for k, v in m["by_kind"].items()]
    lines += ["", "| broken type | n | caught |", "|---|---|---|"]
    lines += [f"| {k} | {v['n']} | {pct(v['caught'])} |" for k, v in m["by_type"].items()]
    lines += ["", "Colour pairs (56 ordered pairs of the 8 colours each):", "",
              "| condition | all | touching | nested | overlap (ext) |", "|---|---|---|---|---|"]
    for cond, d in s["pairs"].items():
        lines.append(f"| {cond} | {pct(d['all'])} | {pct(d['touching'])} | {pct(d['nested'])} | {pct(d['overlap'])} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from tqdm import tqdm

    p = argparse.ArgumentParser(prog="python -m visalign.vvr.accuracy", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--split", default="bench", help="v2: bench, challenge, fast, extension; with --v1: bench, challenge")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--out", default=None, help="write the summary JSON here (and a .md table beside it)")
    p.add_argument("--v1", action="store_true", help="the old open-world measurement on the v1 splits")
    p.add_argument("--no-pairs", action="store_true", help="skip the colour-pair cases")
    p.add_argument("--results", default=None, help="also write the result file (visalign.results format) here")
    args = p.parse_args(argv)
    if args.v1:
        from .benchmark import load_split

        tasks = [t.to_dict() for t in load_split(args.split, args.limit)]
        with ProcessPoolExecutor(args.workers) as pool:
            rows = list(tqdm(pool.map(measure_task, tasks, chunksize=16), total=len(tasks), desc="verifying"))
        summary = summarize(rows)
        text = json.dumps(summary, indent=2)
    else:
        from .splits import load_split_v2

        rows_in = [t.to_row() for t in load_split_v2(args.split, args.limit)]
        with ProcessPoolExecutor(args.workers) as pool:
            rows = list(tqdm(pool.map(measure_spec_task, rows_in, chunksize=8), total=len(rows_in), desc="verifying"))
            pairs = [] if args.no_pairs else list(tqdm(pool.map(measure_pair, range(N_PAIR_CASES), chunksize=8),
                                                       total=N_PAIR_CASES, desc="colour pairs"))
        summary = summarize_v2(rows, pairs)
        text = json.dumps(summary, indent=2)
        print(markdown_v2(summary))
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
        if not args.v1:
            with open(args.out.rsplit(".", 1)[0] + ".md", "w") as f:
                f.write(markdown_v2(summary))
    if args.results:
        _write_results(args, argv, summary)
    return 0


def _result_rows(summary: dict[str, Any], v1: bool) -> list[Any]:
    """One row per condition: the strict pass rate (v1: per condition; v2: default and paper tolerances, mutations,
    colour pairs)."""
    from visalign.results import ResultRow

    if v1:
        return [ResultRow(cond, {"rate": summary[cond]["rate"]}, info={"n": summary[cond]["n"]})
                for cond in CONDITIONS if summary[cond]["rate"] is not None]
    rows = [ResultRow(cond, {mode: summary["conditions"][f"{cond}/{mode}"] for mode in ("default", "paper")},
                      info={"n": summary["tasks"]}) for cond in CONDITIONS_V2]
    if summary["mutations"]["caught"] is not None:
        rows.append(ResultRow("mutation", {"caught": summary["mutations"]["caught"]}, info={"n": summary["mutations"]["n"]}))
    rows += [ResultRow(f"pairs/{cond}", {"all": d["all"]}) for cond, d in summary["pairs"].items() if d["all"] is not None]
    return rows


def _write_results(args: argparse.Namespace, argv: list[str] | None, summary: dict[str, Any]) -> None:
    import sys

    from visalign.results import Tolerance, write_results

    n = summary["tasks"]
    write_results(args.results, "vvr_verifier_accuracy", "python -m visalign.vvr.accuracy",
                  sys.argv[1:] if argv is None else argv, _result_rows(summary, args.v1),
                  tolerance=Tolerance(note="renders and verifier are deterministic: compared exactly"),
                  note=f"verifier right on rendered solutions of {n} {args.split}{' (v1)' if args.v1 else ''} tasks")


if __name__ == "__main__":
    raise SystemExit(main())
