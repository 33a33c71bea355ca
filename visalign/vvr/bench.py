"""Bench runner: ``visalign bench vvr (--split NAME | --tasks FILE) (--images DIR | --generator CONFIG_OR_PATH) --out DIR``.

``--tasks`` reads the paper's released files (JSONL or Parquet rows with ``visual_spec_json``), visalign's own v2
files, or v1 JSONL. v2 reports strict accuracy overall, per difficulty bin and per criterion, next to the strict
accuracy of constant images (the prompt-independent floor). Also runnable as ``python -m visalign.vvr.bench ...``.
"""
from __future__ import annotations

import argparse
import warnings
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from PIL import Image, UnidentifiedImageError

from ..core.errors import InputError
from .benchmark import SPLITS, load_split
from .spec_task import SpecTask
from .splits import EVAL_SPLITS, SPLITS_V2, TaskFileError, load_split_v2, read_task_file
from .task import Task

V1_SPLITS = tuple(f"{k}-v1" for k in SPLITS)

IMAGE_EXTS = (".png", ".jpg", ".jpeg", ".webp", ".bmp", ".tif", ".tiff")
MIN_SIZE, MAX_SIZE = 32, 4096


class BenchInputError(InputError):
    """Bad benchmark input (missing or extra image, wrong size or mode, unreadable file)."""


def add_bench_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Arguments of ``visalign bench vvr``."""
    parser.add_argument("--split", choices=[*EVAL_SPLITS, *V1_SPLITS], default="bench",
                        help="visalign's split (default: bench, VVRBench v2; *-v1: the old open-world splits)")
    parser.add_argument("--tasks", default=None,
                        help="task file instead of --split: JSONL or Parquet rows with visual_spec_json (the paper's "
                             "released files or visalign's), or v1 JSONL")
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--images", help="folder with one image per task, named <task_id>.png (or .jpg/.webp)")
    src.add_argument("--generator", help="generator checkpoint folder, or YAML config with a 'generator:' section")
    parser.add_argument("--out", required=True, help="output folder for report.json, report.md, failures.png")
    parser.add_argument("--limit", type=int, default=None, help="only the first N tasks")
    parser.add_argument("--batch-size", type=int, default=16, help="generator batch size")
    parser.add_argument("--seed", type=int, default=0, help="generator sampling seed")
    parser.add_argument("--failures", type=int, default=16, help="failed tasks shown in failures.png")
    parser.add_argument("--paper-tolerances", action="store_true",
                        help="v2: the format's absolute-pixel tolerances and per-relation overrides at each image's "
                             "native size (comparable with the paper's numbers; default: resolution-independent)")
    parser.add_argument("--missing-as-failure", action="store_true",
                        help="v2: score tasks without an image as failures instead of stopping with an error")
    return parser


def _split_ids(args: argparse.Namespace) -> set[str] | None:
    if args.tasks:
        return None
    if args.split in V1_SPLITS:
        sp = SPLITS[args.split[:-3]]
        return {f"{sp.prefix}-{i:05d}" for i in range(sp.size)}
    sp2 = SPLITS_V2[args.split]
    return {f"{sp2.prefix}-{i:05d}" for i in range(sp2.size or 0)}


def load_tasks(args: argparse.Namespace) -> list[Task] | list[SpecTask]:
    if args.limit is not None and args.limit < 1:
        raise BenchInputError(f"--limit must be >= 1, got {args.limit}")
    if args.seed < 0:
        raise BenchInputError(f"--seed must be >= 0, got {args.seed}")
    if args.batch_size < 1:
        raise BenchInputError(f"--batch-size must be >= 1, got {args.batch_size}")
    if args.tasks:
        try:
            tasks = read_task_file(args.tasks)[: args.limit]
        except TaskFileError as err:
            raise BenchInputError(str(err)) from err
    elif args.split in V1_SPLITS:
        tasks = load_split(args.split[:-3], args.limit)
    else:
        tasks = load_split_v2(args.split, args.limit)
    if not tasks:
        raise BenchInputError("no tasks to evaluate")
    return tasks


def load_image(path: Path) -> np.ndarray:
    """Read one image as uint8 RGB; errors name the file. The size in the header is checked before any pixel is
    decoded, so an oversized file or a decompression bomb costs no memory; a truncated file is named as such."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path) as im:
                w, h = im.size
                if w != h or not MIN_SIZE <= w <= MAX_SIZE:
                    raise BenchInputError(f"{path}: image is {w}x{h}; VVR needs square images between {MIN_SIZE} and "
                                          f"{MAX_SIZE} px")
                if im.mode not in ("RGB", "RGBA", "P"):
                    raise BenchInputError(f"{path}: image mode {im.mode!r} is not supported (need RGB, RGBA or palette)")
                im.load()
                if im.mode != "RGB":
                    im = im.convert("RGBA")
                    bg = Image.new("RGB", im.size, (255, 255, 255))
                    bg.paste(im, mask=im.split()[3])
                    im = bg
                return np.asarray(im, dtype=np.uint8).copy()
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as err:
        raise BenchInputError(f"{path}: image is too large to decode safely ({err})") from err
    except (UnidentifiedImageError, OSError, SyntaxError) as err:
        reason = "the file is truncated" if "truncated" in str(err) else "cannot read image"
        raise BenchInputError(f"{path}: {reason} ({err})") from err


def find_images(folder: str | Path, tasks: Sequence[Task | SpecTask], known_ids: set[str] | None,
                missing_ok: bool = False) -> dict[str, Path]:
    """Map task id -> image file, checking that every task has exactly one image (unless ``missing_ok``) and no
    file is unexpected."""
    folder = Path(folder)
    if not folder.is_dir():
        raise BenchInputError(f"--images {folder}: not a folder")
    found: dict[str, Path] = {}
    for p in sorted(folder.iterdir()):
        if p.suffix.lower() not in IMAGE_EXTS or p.name.startswith("."):
            continue
        if p.stem in found:
            raise BenchInputError(f"two images for task {p.stem!r}: {found[p.stem].name} and {p.name}")
        found[p.stem] = p
    wanted = [t.id for t in tasks]
    allowed = known_ids if known_ids is not None else set(wanted)
    extra = sorted(set(found) - allowed - set(wanted))
    if extra:
        names = ", ".join(found[e].name for e in extra[:5])
        raise BenchInputError(f"{len(extra)} image(s) in {folder} match no task id: {names}" + (" ..." if len(extra) > 5 else ""))
    missing = [i for i in wanted if i not in found]
    if missing and not missing_ok:
        raise BenchInputError(f"{len(missing)} of {len(wanted)} tasks have no image in {folder}: "
                              + ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else ""))
    return {i: found[i] for i in wanted if i in found}


def _load_generator(spec: str) -> Any:
    from ..core.generator import build_generator, load_generator

    path = Path(spec)
    if path.is_dir():
        return load_generator(path)
    if path.suffix in (".yaml", ".yml"):
        from ..core.config import load_yaml
        from ..run import resolve_config_paths

        cfg = resolve_config_paths(load_yaml(path), path.resolve().parent)
        if not isinstance(cfg.get("generator"), dict):
            raise BenchInputError(f"{path}: config has no 'generator:' section")
        return build_generator(cfg["generator"])
    raise BenchInputError(f"--generator {spec}: expected a checkpoint folder or a .yaml config")


def generate_images(spec: str, tasks: Sequence[Task | SpecTask], out: Path, batch_size: int, seed: int) -> dict[str, Path]:
    """Sample one image per task prompt from a visalign generator and save them as ``out/<id>.png``."""
    import torch
    from tqdm import tqdm

    gen = _load_generator(spec)
    gen.eval()
    out.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    for start in tqdm(range(0, len(tasks), batch_size), desc="generating", unit="batch"):
        batch = tasks[start:start + batch_size]
        g = torch.Generator().manual_seed(seed + start)
        with torch.no_grad():
            x = gen.sample(prompts=[t.prompt for t in batch], generator=g)
        if not isinstance(x, torch.Tensor) or x.dim() != 4 or x.shape[1] != 3:
            raise BenchInputError(f"generator {spec} returned {getattr(x, 'shape', type(x))}, expected B x 3 x H x W images")
        arr = ((x.detach().float().clamp(-1, 1) + 1) * 127.5).round().to(torch.uint8).permute(0, 2, 3, 1).cpu().numpy()
        for t, img in zip(batch, arr):
            paths[t.id] = out / f"{t.id}.png"
            Image.fromarray(img).save(paths[t.id])
    return paths


def _images(args: argparse.Namespace, tasks: Sequence[Task | SpecTask], out: Path) -> tuple[dict[str, Path], str]:
    if args.images:
        return find_images(args.images, tasks, _split_ids(args), args.missing_as_failure), f"images:{args.images}"
    return generate_images(args.generator, tasks, out / "images", args.batch_size, args.seed), f"generator:{args.generator}"


def _same_size(files: dict[str, Path]):
    first: list[tuple[int, ...]] = []

    def load(task_id: str) -> np.ndarray:
        img = load_image(files[task_id])
        if not first:
            first.append(img.shape)
        elif img.shape != first[0]:
            raise BenchInputError(f"{files[task_id]}: size {img.shape[1]}x{img.shape[0]} differs from the other images "
                                  f"({first[0][1]}x{first[0][0]})")
        return img
    return load, first


def run_bench(args: argparse.Namespace) -> int:
    """Run the benchmark; writes report.json, report.md, results.jsonl and failures.png into ``args.out``."""
    out = Path(args.out)
    tasks = load_tasks(args)
    if isinstance(tasks[0], SpecTask):
        return _run_v2(args, tasks, out)
    if args.paper_tolerances:
        raise BenchInputError("--paper-tolerances applies to v2 tasks (the paper's format), not to v1 tasks")
    return _run_v1(args, tasks, out)


def _run_v2(args: argparse.Namespace, tasks: list[SpecTask], out: Path) -> int:
    from tqdm import tqdm

    from .floors import floor_scores
    from .spec_report import failure_grid, summarize, task_row, write_report
    from .spec_verifier import verify_spec

    files, source = _images(args, tasks, out)
    load, first = _same_size(files)
    mode = "paper" if args.paper_tolerances else "default"
    rows, failures = [], []
    for task in tqdm(tasks, desc="verifying", unit="image"):
        if task.id not in files:
            rows.append(task_row(task, None))
            continue
        img = load(task.id)
        res = verify_spec(img, task.spec, mode)
        rows.append(task_row(task, res))
        if not res.strict and len(failures) < args.failures:
            failures.append((img, task, res))
    size = min(first[0][:2]) if first else 256
    floors = floor_scores(tasks, size, mode)
    name = "custom" if args.tasks else args.split
    summary = summarize(rows, name, source, mode, floors)
    paths = write_report(out, summary, rows)
    grid = failure_grid(failures, out / "failures.png")
    floor_text = ", ".join(f"{k} {100 * v['strict']:.2f}%" for k, v in floors.items())
    print(f"VVR v2 {name}: strict accuracy {100 * summary['strict_accuracy']:.2f}% on {len(rows)} tasks "
          f"({mode} tolerances); constant images: {floor_text}")
    print(f"wrote {paths['json']}, {paths['markdown']}" + (f", {grid}" if grid else ""))
    return 0


def _run_v1(args: argparse.Namespace, tasks: list[Task], out: Path) -> int:
    from tqdm import tqdm

    from .report import failure_grid, summarize, task_row, write_report
    from .verifier import verify

    files, source = _images(args, tasks, out)
    missing = [t.id for t in tasks if t.id not in files]
    if missing:
        raise BenchInputError(f"{len(missing)} v1 tasks have no image: {', '.join(missing[:5])}")
    load, _ = _same_size(files)
    rows, failures = [], []
    for task in tqdm(tasks, desc="verifying", unit="image"):
        img = load(task.id)
        res = verify(img, task)
        rows.append(task_row(task, res))
        if not res.all_satisfied and len(failures) < args.failures:
            failures.append((img, task, res))
    name = "custom" if args.tasks else args.split
    summary = summarize(rows, name, source)
    paths = write_report(out, summary, rows)
    grid = failure_grid(failures, out / "failures.png")
    print(f"VVR {name}: accuracy {100 * summary['accuracy']:.2f}% on {len(rows)} tasks "
          f"(mean fraction {100 * summary['mean_fraction']:.1f}%)")
    print(f"wrote {paths['json']}, {paths['markdown']}" + (f", {grid}" if grid else ""))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = add_bench_arguments(argparse.ArgumentParser(prog="python -m visalign.vvr.bench", description=__doc__))
    args = parser.parse_args(argv)
    try:
        return run_bench(args)
    except (BenchInputError, FileNotFoundError, ValueError) as err:
        parser.exit(2, f"error: {err}\n")
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
