"""Rerun the commands behind the README's tables and say, per table, whether its numbers still come back.

    python pipelines/reproduce.py --fast              # the entries that take a few minutes at most
    python pipelines/reproduce.py --all               # every entry (the VVR comparisons take hours)
    python pipelines/reproduce.py --only toy_tilt     # one entry (repeatable)
    python pipelines/reproduce.py --only NAME --jobs 2    # its independent runs two at a time
    python pipelines/reproduce.py --fast --write      # ... and store the fresh result files, pictures and README blocks
    python pipelines/reproduce.py --only NAME --runs DIR --resume   # continue runs a stop interrupted (see --resume)
    python pipelines/reproduce.py --list              # entries, their commands and stored state; runs nothing
    python pipelines/reproduce.py --check-readme      # README blocks == rendering of the stored files; runs nothing
    python pipelines/reproduce.py --render            # rewrite the README blocks from the stored files; runs nothing
    python pipelines/reproduce.py --gather NAME       # store NAME's result from the stored results of its parts

Each entry's command writes a result file (``visalign.results``); it is compared with ``assets/results/<name>.json``
within the tolerance stored there (exact for deterministic runs on the platform that wrote it, standard errors or
ratios for noisy ones; wall times are never compared). Per entry it prints ``unchanged``, the rows that moved, or
``not yet regenerated`` for a stored file reconstructed by hand that no run has written. An entry marked
``first_run_pending`` (a long command no run has written a file for yet) has no stored file: ``--list`` and
``--check-readme`` say so, its README blocks keep their hand-written text, and its first ``--write`` renders them.
An entry that ``gathers`` others (runs made and checkpointed apart, e.g. one per training seed) is stored by
``--gather NAME`` from their stored results, exactly what rerunning all its runs with ``--only NAME`` gives. Exit status 1 when a table
moved, its arguments differ or the README disagrees with the stored files.
"""
from __future__ import annotations

import argparse
import copy
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipelines.readme_results import ENTRIES, README, Entry, entry  # noqa: E402
from visalign.results import (  # noqa: E402
    Comparison,
    ResultRow,
    ResultTable,
    Run,
    compare,
    load_results,
    read_blocks,
    replace_blocks,
)


def _argv(template: tuple[str, ...], out: Path, results: Path, folder: Path) -> list[str]:
    argv = [a.replace("{out}", str(out)).replace("{folder}", str(folder)).replace("{results}", str(results)) for a in template]
    return [sys.executable if a == "python" and i == 0 else a for i, a in enumerate(argv)]


def run_waves(e: Entry) -> list[list[int]]:
    """Indices of ``e``'s runs in waves that may run side by side: a run whose command reads ``{folder}`` (an earlier
    run's output) starts a new wave after every earlier run."""
    waves: list[list[int]] = []
    for i, (_, template) in enumerate(e.runs):
        if not waves or any("{folder}" in a for a in template):
            waves.append([])
        waves[-1].append(i)
    return waves


def run_entry(e: Entry, runs_dir: Path, log=print, jobs: int = 1, resume: bool = False) -> ResultTable:
    """Run every command of ``e`` in a fresh folder under ``runs_dir`` (``resume``: in the folder an interrupted run
    left, so commands that checkpoint continue), up to ``jobs`` at a time where they do not depend on each other, and
    return the merged fresh result, with the run folder written as ``{out}`` in its recorded arguments."""
    folder = runs_dir / e.name
    if folder.exists() and not resume:
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    paths = [(folder / (f"run_{i}" if len(e.runs) > 1 else "out"), folder / f"result_{i}.json") for i in range(len(e.runs))]

    def run(i: int) -> None:
        template = e.runs[i][1]
        argv = _argv(template, *paths[i], folder)
        log(f"[{e.name}] {' '.join(template)}")
        with (folder / f"log_{i}.txt").open("w") as log_file:
            proc = subprocess.run(argv, cwd=ROOT, env=env, stdout=log_file, stderr=subprocess.STDOUT)
        if proc.returncode != 0:
            tail = (folder / f"log_{i}.txt").read_text().splitlines()[-20:]
            raise RuntimeError(f"{e.name}: command failed with exit status {proc.returncode}: {' '.join(argv)}\n" + "\n".join(tail))

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for wave in run_waves(e):
            for done in [pool.submit(run, i) for i in wave]:
                done.result()
    tables = []
    for (label, _), (out, results) in zip(e.runs, paths):
        table = load_results(results)
        for r in table.runs:
            r.args = [a.replace(str(out), "{out}").replace(str(folder), "{folder}") for a in r.args]
            r.label = label
        tables.append(table)
    return merge(e, tables)


def merge(e: Entry, tables: list[ResultTable]) -> ResultTable:
    """One result per entry: a single run as it is (named after the entry), several runs with labelled rows."""
    first = tables[0]
    if len(tables) == 1:
        first.name = e.name
        return first
    rows = [ResultRow(f"{t.runs[0].label}/{r.row}", r.values, r.se, r.info) for t in tables for r in t.rows]
    runtime = sum(t.runtime_s or 0.0 for t in tables)
    return ResultTable(name=e.name, runs=[Run(t.runs[0].command, t.runs[0].args, t.runs[0].label) for t in tables],
                       rows=rows, tolerance=first.tolerance, platform_tolerance=first.platform_tolerance,
                       commit=first.commit, dirty=any(t.dirty for t in tables), platform=first.platform,
                       note=e.note, runtime_s=round(runtime, 1))


def gather(e: Entry, stored: dict[str, ResultTable]) -> ResultTable:
    """``e``'s result merged from the stored results of the entries it gathers, whose runs (one each) must be ``e``'s
    runs in order and whose results come from one platform: the same table a rerun of ``e`` gives, with no run repeated."""
    by_name = {x.name: x for x in ENTRIES}
    unknown = [n for n in e.gathers if n not in by_name]
    if not e.gathers or unknown:
        raise ValueError(f"{e.name}: gathers no entries" if not e.gathers else f"{e.name}: unknown entries {unknown}")
    if e.pictures:
        raise ValueError(f"{e.name}: a gathered entry has no run folder to copy pictures from; name them in its parts")
    parts = [by_name[n] for n in e.gathers]
    if [template for p in parts for _, template in p.runs] != [template for _, template in e.runs] or any(len(p.runs) != 1 for p in parts):
        raise ValueError(f"{e.name}: its runs are not the runs of {list(e.gathers)} (one each, in order)")
    missing = [n for n in e.gathers if n not in stored]
    if missing:
        raise FileNotFoundError(f"{e.name}: no stored result for {missing} (run reproduce.py --only NAME --write first)")
    tables = [copy.deepcopy(stored[n]) for n in e.gathers]
    if any(t.platform != tables[0].platform for t in tables):
        raise ValueError(f"{e.name}: the results of {list(e.gathers)} come from different platforms")
    for t, (label, _) in zip(tables, e.runs):
        t.runs[0].label = label
    return merge(e, tables)


def rendered_blocks(tables: dict[str, ResultTable]) -> dict[str, str]:
    """README block name -> text, for the entries whose tables are given."""
    return {block: render(tables[e.name]) for e in ENTRIES if e.name in tables for block, render in e.blocks.items()}


def stored_tables() -> dict[str, ResultTable]:
    """The stored result of every entry that has one (a first run still pending has none)."""
    return {e.name: load_results(e.path) for e in ENTRIES if e.path.is_file()}


def pending_blocks(tables: dict[str, ResultTable]) -> dict[str, str]:
    """README block -> its entry, for entries whose first run is still pending and that have no stored file."""
    return {block: e.name for e in ENTRIES if e.first_run_pending and e.name not in tables for block in e.blocks}


def readme_mismatches(readme_text: str, tables: dict[str, ResultTable]) -> list[str]:
    """Every README block that differs from its rendering, every block with no entry and every entry block missing
    (blocks of an entry whose first run is pending hold hand-written numbers and are not compared)."""
    blocks, expected = read_blocks(readme_text), rendered_blocks(tables)
    owner = {block: e.name for e in ENTRIES for block in e.blocks}
    pending = pending_blocks(tables)
    problems = [f"README block {name!r} has no results entry" if name not in owner else
                f"README block {name!r}: no stored result file {owner[name]}.json"
                for name in sorted(set(blocks) - set(expected) - set(pending))]
    problems += [f"README has no block {name!r}" for name in sorted(set(expected) - set(blocks))]
    for name in sorted(set(blocks) & set(expected)):
        if blocks[name] != expected[name]:
            problems.append(f"README block {name!r} differs from its result file:\n--- README\n{blocks[name]}\n"
                            f"--- rendered\n{expected[name]}")
    return problems


def write(e: Entry, fresh: ResultTable, runs_dir: Path) -> None:
    """Store the fresh result, copy its pictures and rewrite its README blocks (all rendered and found first, so a
    result the README cannot show changes nothing)."""
    readme = replace_blocks(README.read_text(), rendered_blocks({e.name: fresh}))
    folder = runs_dir / e.name / ("out" if len(e.runs) == 1 else "")
    pictures = {folder / src: ROOT / dst for src, dst in e.pictures.items()}
    missing = [str(src) for src in pictures if not src.is_file()]
    if missing:
        raise FileNotFoundError(f"{e.name}: the run wrote no {missing}")
    fresh.save(e.path)
    for src, dst in pictures.items():
        shutil.copyfile(src, dst)
    README.write_text(readme)


def kept_result(e: Entry) -> Path:
    """Where a fresh result that could not be written is kept (``--write-kept`` stores it later)."""
    return ROOT / "runs" / "reproduce_unwritten" / f"{e.name}.json"


def selected(args: argparse.Namespace) -> list[Entry]:
    if args.only:
        return [entry(n) for n in args.only]
    return [e for e in ENTRIES if args.all or e.fast]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--fast", action="store_true", help="entries that take a few minutes at most")
    which.add_argument("--all", action="store_true", help="every entry")
    which.add_argument("--only", action="append", metavar="NAME", help="this entry (repeatable)")
    which.add_argument("--list", action="store_true", help="list entries and the state of their stored files")
    which.add_argument("--check-readme", action="store_true", help="compare the README blocks with the stored files")
    which.add_argument("--render", action="store_true", help="rewrite the README blocks from the stored files")
    which.add_argument("--write-kept", metavar="NAME", help="store the result a failed --write kept in "
                       "runs/reproduce_unwritten/NAME.json (after fixing what failed), with the pictures of its runs in --runs")
    which.add_argument("--gather", metavar="NAME", help="store entry NAME's result merged from the stored results of "
                       "the entries it gathers (their runs, run apart) and render its README blocks; runs nothing")
    p.add_argument("--write", action="store_true", help="store fresh results, pictures and README blocks")
    p.add_argument("--runs", default=None, help="run folders go here (default: a temporary folder, removed after)")
    p.add_argument("--resume", action="store_true", help="keep the run folders an interrupted run left in --runs, so "
                   "commands that checkpoint (vvr_compare.py --save-every) continue from their last checkpoint")
    p.add_argument("--jobs", type=int, default=1, help="an entry's independent runs side by side, this many at a time "
                   "(wall times depend on it, results do not: each run is its own process)")
    args = p.parse_args(argv)
    if args.jobs < 1:
        p.error(f"--jobs must be at least 1, got {args.jobs}")
    if args.write and (args.list or args.check_readme or args.render or args.gather):
        p.error("--write goes with --fast, --all or --only (it stores the results of fresh runs)")
    if args.resume and not args.runs:
        p.error("--resume continues the runs left in a --runs folder; name it")

    if args.list:
        for e in ENTRIES:
            t = load_results(e.path) if e.path.is_file() else None
            state = ("no stored file" + (" (first run pending)" if e.first_run_pending else "") if t is None else "not yet regenerated" if not t.regenerated
                     else f"written at {t.commit[:10]}{'+dirty' if t.dirty else ''}, {t.runtime_s} s")
            print(f"{e.name:26s} {'fast' if e.fast else 'all ':4s}  {state}")
            if e.gathers:
                print(f"{'':32s}gathered from {', '.join(e.gathers)} (--gather {e.name})")
            for _, template in e.runs:
                print(f"{'':32s}{' '.join(template)}")
        return 0
    if args.check_readme or args.render:
        tables = stored_tables()
        if args.render:
            README.write_text(replace_blocks(README.read_text(), rendered_blocks(tables)))
        problems = readme_mismatches(README.read_text(), tables)
        for name in sorted(set(pending_blocks(tables).values())):
            how = f"--gather {name}" if entry(name).gathers else f"--only {name} --write"
            print(f"{name}: first run pending, its README blocks are hand-written "
                  f"(pipelines/reproduce.py {how} renders them)")
        print("\n".join(problems) if problems else "README blocks match the stored result files")
        return 1 if problems else 0

    if args.write_kept:
        e = entry(args.write_kept)
        kept = kept_result(e)
        if not kept.is_file():
            raise SystemExit(f"{e.name}: no kept result at {kept} (only a --write that failed keeps one)")
        write(e, load_results(kept), Path(args.runs) if args.runs else ROOT / "runs" / "reproduce")
        kept.unlink()
        print(f"{e.name}: wrote {e.path} from {kept}" + (", README blocks " + ", ".join(e.blocks) if e.blocks else ""))
        return 0

    if args.gather:
        e = entry(args.gather)
        write(e, gather(e, stored_tables()), ROOT / "runs")
        print(f"{e.name}: wrote {e.path} from {', '.join(e.gathers)}" + (", README blocks " + ", ".join(e.blocks) if e.blocks else ""))
        return 0

    failed, begin = False, time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="reproduce_") as tmp:
        runs_dir = Path(args.runs) if args.runs else Path(tmp)
        for e in selected(args):
            start = time.perf_counter()
            try:
                fresh = run_entry(e, runs_dir, jobs=args.jobs, resume=args.resume)
            except RuntimeError as err:
                print(f"{e.name}: failed\n  {err}", flush=True)
                failed = True
                continue
            seconds = time.perf_counter() - start
            if e.path.is_file():
                result: Comparison = compare(load_results(e.path), fresh)
                print(result.report() + f"  [{seconds:.0f} s]", flush=True)
                failed |= result.status in ("moved", "arguments differ")
            else:
                print(f"{e.name}: no stored result yet  [{seconds:.0f} s]", flush=True)
            if args.write:
                try:
                    write(e, fresh, runs_dir)
                except Exception as err:  # a renderer bug must not lose hours of runs: the fresh result is kept
                    kept = fresh.save(kept_result(e))
                    print(f"{e.name}: not written ({err}); the fresh result is kept at {kept} (store it with "
                          f"--write-kept {e.name} once fixed)", flush=True)
                    failed = True
                    continue
                print(f"{e.name}: wrote {e.path}" + (", README blocks " + ", ".join(e.blocks) if e.blocks else ""))
    print(f"total {time.perf_counter() - begin:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
