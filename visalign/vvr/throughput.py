"""Verifier throughput on one core, next to an open_clip ViT-B-32 image encoder (random weights) on the same images:
``python -m visalign.vvr.throughput [--n 64] [--sizes 256 512]``.

Rows: the v2 verifier (parse + every check of a VVRBench v2 task) and the v1 verifier. Without open_clip (the
``clip`` extra needs a matching torchvision), the encoder column uses a ViT-B/32 of the same shape built from plain
torch layers (width 768, 12 layers, 12 heads, 32 px patches at 224 px), timed the same way, and says so."""
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


def _images_v2(n: int, size: int) -> tuple[list[np.ndarray], list[Any]]:
    from .spec_render import render_spec_task
    from .splits import generate_split_v2

    tasks = generate_split_v2("bench", n)
    return [render_spec_task(t, size) for t in tasks], tasks


def verifier_rate_v2(images: list[np.ndarray], tasks: list[Any]) -> float:
    from .spec_verifier import verify_spec

    verify_spec(images[0], tasks[0].spec)  # warm-up
    t0 = time.perf_counter()
    for img, task in zip(images, tasks):
        verify_spec(img, task.spec)
    return len(images) / (time.perf_counter() - t0)


def vit_b32_proxy() -> Any:
    """A ViT-B/32 image tower of open_clip's shape from plain torch layers (random weights)."""
    import torch

    class ViTB32(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.patch = torch.nn.Conv2d(3, 768, 32, 32, bias=False)
            self.cls = torch.nn.Parameter(torch.zeros(1, 1, 768))
            self.pos = torch.nn.Parameter(torch.zeros(1, 50, 768))
            self.pre, self.post = torch.nn.LayerNorm(768), torch.nn.LayerNorm(768)
            layer = torch.nn.TransformerEncoderLayer(768, 12, 3072, activation="gelu", batch_first=True, norm_first=True)
            self.blocks = torch.nn.TransformerEncoder(layer, 12, enable_nested_tensor=False)
            self.proj = torch.nn.Linear(768, 512, bias=False)

        def encode_image(self, x: Any) -> Any:
            t = self.patch(x).flatten(2).transpose(1, 2)
            t = torch.cat([self.cls.expand(len(t), -1, -1), t], 1) + self.pos
            return self.proj(self.post(self.blocks(self.pre(t))[:, 0]))

    return ViTB32().eval()


def verifier_rate(images: list[np.ndarray], tasks: list[Any]) -> float:
    from .verifier import verify

    verify(images[0], tasks[0])  # warm-up
    t0 = time.perf_counter()
    for img, task in zip(images, tasks):
        verify(img, task)
    return len(images) / (time.perf_counter() - t0)


def clip_rate(images: list[np.ndarray], batch: int = 16, proxy: bool = False) -> float | None:
    """Images/s of open_clip ViT-B-32 (random weights): resize to 224, normalise, encode. ``proxy``: the plain-torch
    ViT-B/32 of the same shape instead (:func:`vit_b32_proxy`). ``None`` without open_clip and without ``proxy``."""
    import torch
    import torch.nn.functional as F

    if proxy:
        model = vit_b32_proxy()
    else:
        try:
            import open_clip
        except Exception as err:  # noqa: BLE001 - any import failure means "not available"
            print(f"open_clip is not available ({type(err).__name__}: {err}); install visalign[clip] for the comparison")
            return None
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
    p.add_argument("--sizes", type=int, nargs="+", default=[256, 512])
    p.add_argument("--results", default=None, help="also write the result file (visalign.results format) here")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    c_name = "open_clip ViT-B-32"
    try:
        import open_clip  # noqa: F401
    except Exception:  # noqa: BLE001
        c_name = "ViT-B/32 proxy (plain torch; open_clip unavailable)"
    print(f"one CPU core (torch.set_num_threads(1)); verifier = parse + check of every constraint; encoder: {c_name}")
    print(f"{'size':>6} {'v2 img/s':>10} {'v1 img/s':>10} {'encoder img/s':>14} {'v2/encoder':>11}")
    rows = []
    for size in args.sizes:
        images2, tasks2 = _images_v2(args.n, size)
        images1, tasks1 = _images(args.n, size)
        v2 = verifier_rate_v2(images2, tasks2)
        v1 = verifier_rate(images1, tasks1)
        c = clip_rate(images2, proxy=c_name != "open_clip ViT-B-32")
        print(f"{size:>6} {v2:10.1f} {v1:10.1f} {c or float('nan'):14.1f} {(v2 / c if c else float('nan')):10.1f}x")
        rows.append((size, v2, c, c_name))
    if args.results:
        _write_results(args, argv, rows)
    return 0


def _write_results(args: argparse.Namespace, argv: list[str] | None, rows: list[tuple[int, float, float | None, str]]) -> None:
    """Rows per image size: the v2 verifier / ViT-B-32 ratio is compared; images/s and the encoder used are info."""
    import sys

    from visalign.results import ResultRow, Tolerance, write_results

    result_rows = [ResultRow(f"{size} px", {"ratio_to_vit_b32": v / c} if c else {},
                             info={"verifier_img_per_s": round(v, 1), "vit_b32_img_per_s": None if c is None else round(c, 1),
                                   "encoder": encoder})
                   for size, v, c, encoder in rows]
    tolerance = Tolerance(rel=RATIO_TOLERANCE, note="ratio of rates measured side by side; images/s are info, not compared")
    write_results(args.results, "vvr_throughput", "python -m visalign.vvr.throughput", sys.argv[1:] if argv is None else argv,
                  result_rows, tolerance=tolerance, platform_tolerance=tolerance,
                  note=f"one core, {args.n} images per size")


if __name__ == "__main__":
    raise SystemExit(main())
