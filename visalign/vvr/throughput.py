"""Verifier throughput on one core at 64 px and 512 px, next to an open_clip ViT-B-32 image encoder (random
weights) on the same images: ``python -m visalign.vvr.throughput [--n 64]``."""
from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

RATIO_TOLERANCE = 0.5  # verifier/ViT-B-32 ratio within ±50% of the stored one counts as unchanged (busy shared cores)


def _images(n: int, size: int) -> tuple[list[np.ndarray], list[Any]]:
    from .benchmark import generate_split
    from .render import render_task

    tasks = generate_split("bench", n)
    return [render_task(t, size) for t in tasks], tasks


def verifier_rate(images: list[np.ndarray], tasks: list[Any]) -> float:
    from .verifier import verify

    verify(images[0], tasks[0])  # warm-up
    t0 = time.perf_counter()
    for img, task in zip(images, tasks):
        verify(img, task)
    return len(images) / (time.perf_counter() - t0)


def clip_rate(images: list[np.ndarray], batch: int = 16) -> float | None:
    """Images/s of open_clip ViT-B-32 (random weights): resize to 224, normalise, encode. ``None`` without open_clip."""
    try:
        import open_clip
    except Exception as err:  # noqa: BLE001 - any import failure means "not available"
        print(f"open_clip is not available ({type(err).__name__}: {err}); install visalign[clip] for the comparison")
        return None
    import torch
    import torch.nn.functional as F

    model = open_clip.create_model("ViT-B-32", pretrained=None).eval()
    mean = torch.tensor([0.4815, 0.4578, 0.4082]).view(1, 3, 1, 1)
    std = torch.tensor([0.2686, 0.2613, 0.2758]).view(1, 3, 1, 1)

    def run(chunk: list[np.ndarray]) -> None:
        x = torch.from_numpy(np.stack(chunk)).permute(0, 3, 1, 2).float() / 255.0
        x = F.interpolate(x, size=(224, 224), mode="bicubic", align_corners=False)
        with torch.no_grad():
            model.encode_image((x - mean) / std)

    run(images[:2])  # warm-up
    t0 = time.perf_counter()
    for k in range(0, len(images), batch):
        run(images[k:k + batch])
    return len(images) / (time.perf_counter() - t0)


def main(argv: list[str] | None = None) -> int:
    import torch

    p = argparse.ArgumentParser(prog="python -m visalign.vvr.throughput", description=__doc__)
    p.add_argument("--n", type=int, default=64, help="images per resolution")
    p.add_argument("--sizes", type=int, nargs="+", default=[64, 512])
    p.add_argument("--results", default=None, help="also write the result file (visalign.results format) here")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    print("one CPU core (torch.set_num_threads(1)); verifier = parse + check of every constraint")
    print(f"{'size':>6} {'verifier img/s':>15} {'ViT-B-32 img/s':>15} {'ratio':>8}")
    rows = []
    for size in args.sizes:
        images, tasks = _images(args.n, size)
        v = verifier_rate(images, tasks)
        c = clip_rate(images)
        ratio = f"{v / c:7.1f}x" if c else "    n/a"
        print(f"{size:>6} {v:15.1f} {c if c else float('nan'):15.1f} {ratio:>8}")
        rows.append((size, v, c))
    if args.results:
        _write_results(args, argv, rows)
    return 0


def _write_results(args: argparse.Namespace, argv: list[str] | None, rows: list[tuple[int, float, float | None]]) -> None:
    """Rows per image size: the verifier/ViT-B-32 ratio is compared (when open_clip is there); images/s are info."""
    import sys

    from visalign.results import ResultRow, Tolerance, write_results

    result_rows = [ResultRow(f"{size} px", {"ratio_to_vit_b32": v / c} if c else {},
                             info={"verifier_img_per_s": round(v, 1), "vit_b32_img_per_s": None if c is None else round(c, 1)})
                   for size, v, c in rows]
    tolerance = Tolerance(rel=RATIO_TOLERANCE, note="ratio of rates measured side by side; images/s are info, not compared")
    write_results(args.results, "vvr_throughput", "python -m visalign.vvr.throughput", sys.argv[1:] if argv is None else argv,
                  result_rows, tolerance=tolerance, platform_tolerance=tolerance,
                  note=f"one core, {args.n} images per size")


if __name__ == "__main__":
    raise SystemExit(main())
