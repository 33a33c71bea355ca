"""Train a small self-supervised image encoder on rendered VVR v2 scenes and measure how informative it is.

1. Render the pool the v2 base generator was pretrained on (``vvr_pretrain.py --version 2``: the same tasks, seeds
   and 32 px renders).
2. SimCLR: a tiny ViT (patch 4, CLS token) learns to match two views of a render against the other renders of the
   batch (NT-Xent). Views change geometry and add pixel noise but never colour, and are never flipped (see
   ``visalign.features.ssl``). Why contrastive and not DINO-style self-distillation: with a few thousand CPU steps
   NT-Xent's negatives prevent collapse by construction, while a student/teacher objective needs centring /
   sharpening schedules and long training to escape its trivial solutions.
3. Probe on held-out tasks (indices from EVAL_SEED_BASE, never in the pool): linear-probe and 10-NN accuracy for
   object count, the colour of single-colour scenes and the shape of single-shape scenes, side by side for the random
   ``conv`` features, 8×8 ``pixels``, the same ViT untrained, and the trained encoder.
4. Write ``--out`` (``model.safetensors`` + ``config.json`` with the probe figures), loadable as
   ``features: {name: ssl_encoder, path: OUT}``, and ``OUT_neighbours.png`` (held-out queries and their nearest
   renders under ``conv`` and under the encoder); ``--ship DIR`` also writes DIR when the trained encoder's mean
   linear-probe accuracy beats ``conv``'s.

    python pipelines/train_image_encoder.py --minutes 10 --threads 1 --out runs/image_encoder --ship assets/encoders/vvr_ssl
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import torch
from torch import nn

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from pipelines.vvr_pretrain import MAX_COMPLEXITY, budgeted_training, easy_tasks_v2, render, render_pool  # noqa: E402
from visalign.features import BlockLayout, TinyViT, TinyViTConfig, build_features, load_encoder, save_encoder  # noqa: E402
from visalign.features.blocks import token_blocks  # noqa: E402
from visalign.features.probe import knn_accuracy, linear_probe_accuracy  # noqa: E402
from visalign.features.ssl import geometric_views, nt_xent  # noqa: E402
from visalign.vvr.render import to_tensor  # noqa: E402
from visalign.results import ResultRow, Tolerance, write_results  # noqa: E402


class Contrastive(nn.Module):
    """Encoder + SimCLR projection head on [CLS, patch mean] (the head is discarded after training)."""

    def __init__(self, encoder: TinyViT, proj: int = 64) -> None:
        super().__init__()
        d = encoder.config.dim
        self.encoder = encoder
        self.head = nn.Sequential(nn.Linear(2 * d, 2 * d), nn.GELU(), nn.Linear(2 * d, proj))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        tokens = self.encoder(images)
        return self.head(torch.cat([tokens[:, 0], tokens[:, 1:].mean(1)], dim=1))


def probe_labels(metadata: list[dict]) -> dict[str, list[int | None]]:
    """Per render: object count (all), colour (scenes whose objects share one colour), shape (one shape); None where a
    label does not apply. Class indices follow sorted names."""
    objects = [m["task"]["witness"]["objects"] for m in metadata]
    raw = {"count": [len(o) for o in objects],
           "colour": [o[0]["color"] if len({x["color"] for x in o}) == 1 else None for o in objects],
           "shape": [o[0]["shape"] if len({x["shape"] for x in o}) == 1 else None for o in objects]}
    out = {}
    for name, values in raw.items():
        classes = sorted({v for v in values if v is not None})
        out[name] = [None if v is None else classes.index(v) for v in values]
    return out


def probe(features: dict[str, torch.Tensor], labels: dict[str, list[int | None]], train_frac: float = 0.6) -> dict:
    """``{feature space: {label: {"linear": acc, "knn": acc, "n_test": n}}}``; the first ``train_frac`` of the renders
    train the probes, the rest test them."""
    results: dict[str, dict] = {}
    for space, x in features.items():
        results[space] = {}
        for label, ys in labels.items():
            keep = [i for i, y in enumerate(ys) if y is not None]
            cut = int(train_frac * len(keep))
            tr, te = keep[:cut], keep[cut:]
            y = torch.tensor([ys[i] for i in keep])
            args = (x[tr], y[:cut], x[te], y[cut:])
            results[space][label] = {"linear": round(linear_probe_accuracy(*args), 4), "knn": round(knn_accuracy(*args), 4),
                                     "n_test": len(te)}
    return results


def print_table(results: dict) -> None:
    labels = list(next(iter(results.values())))
    print(f"{'features':<16}" + "".join(f"{lab + ' lin':>12}{lab + ' 10nn':>12}" for lab in labels) + f"{'mean lin':>10}")
    for space, row in results.items():
        mean = sum(row[lab]["linear"] for lab in labels) / len(labels)
        print(f"{space:<16}" + "".join(f"{row[lab]['linear']:>12.3f}{row[lab]['knn']:>12.3f}" for lab in labels) + f"{mean:>10.3f}")
    print("n_test: " + ", ".join(f"{lab} {next(iter(results.values()))[lab]['n_test']}" for lab in labels))


def result_rows(results: dict) -> list[ResultRow]:
    """One row per feature space: ``<label>_linear`` and ``<label>_knn`` accuracies (test counts as info)."""
    return [ResultRow(space, {f"{label}_{kind}": r[kind] for label, r in row.items() for kind in ("linear", "knn")},
                      info={f"{label}_n_test": r["n_test"] for label, r in row.items()}) for space, row in results.items()]


def mean_linear(row: dict) -> float:
    return sum(v["linear"] for v in row.values()) / len(row)


def neighbour_sheet(images: torch.Tensor, feats: dict[str, torch.Tensor], path: Path, queries: int = 8, k: int = 5) -> Path:
    """One row per held-out query: the query, then its ``k`` nearest other renders under each feature space (cosine of
    standardised features), spaces separated by a blank tile."""
    from visalign.trainer.visuals import image_grid, to_uint8_images

    tiles = to_uint8_images(images)
    blank = tiles[0] * 0 + 255
    rows = []
    for q in range(queries):
        row = [tiles[q]]
        for x in feats.values():
            z = torch.nn.functional.normalize((x - x.mean(0)) / x.std(0).clamp_min(1e-6), dim=1)
            sim = z @ z[q]
            sim[q] = -2
            row += [blank] + [tiles[i] for i in sim.topk(k).indices.tolist()]
        rows += row
    path.parent.mkdir(parents=True, exist_ok=True)
    image_grid(rows, cols=len(rows) // queries, scale=3).save(path)
    return path


@torch.no_grad()
def encode(fn, images: torch.Tensor, batch: int = 256) -> torch.Tensor:
    return torch.cat([fn(images[i:i + batch]) for i in range(0, images.shape[0], batch)])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=10.0, help="training time budget")
    p.add_argument("--steps", type=int, default=100_000, help="training step cap (the cosine schedule ends at whichever comes first)")
    p.add_argument("--threads", type=int, default=1, help="torch threads (1 is fastest on a shared 2-core machine)")
    p.add_argument("--out", default="runs/image_encoder", help="folder for the encoder (safetensors + config.json)")
    p.add_argument("--ship", default=None, help="also write the encoder here if it beats conv on the mean linear probe")
    p.add_argument("--pool", type=int, default=12000, help="training renders (the v2 base generator's pool)")
    p.add_argument("--max-complexity", type=int, default=MAX_COMPLEXITY, help="largest task complexity in the pool")
    p.add_argument("--probe-n", type=int, default=2400, help="held-out renders for the probes (60%% train, 40%% test)")
    p.add_argument("--batch", type=int, default=128, help="renders per step (two views each)")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--temperature", type=float, default=0.2, help="NT-Xent temperature")
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--depth", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--sheet", default=None, help="nearest-neighbour picture (default: next to --out, OUT_neighbours.png)")
    p.add_argument("--probe-only", action="store_true", help="load the encoder in --out and only probe it (no training)")
    p.add_argument("--results", default=None,
                   help="with --probe-only: write the probe table as a result file (visalign.results format) here")
    args = p.parse_args(argv)
    if args.results and not args.probe_only:
        p.error("--results records the probes of a saved encoder: pass --probe-only (training is time-budgeted, so a "
                "training run does not repeat)")
    began = time.perf_counter()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    tasks = lambda n, seed: easy_tasks_v2(n, seed, args.max_complexity)  # noqa: E731
    config = TinyViTConfig(dim=args.dim, depth=args.depth, heads=4)
    untrained = TinyViT(config).eval()  # the initialisation training starts from (the same seed in --probe-only)
    t0 = time.perf_counter()
    held = tasks(args.probe_n, None)
    probe_images = to_tensor([render(m, 32, i) for i, m in enumerate(held.metadata)])
    labels = probe_labels(held.metadata)
    if args.probe_only:
        encoder, steps, seconds = load_encoder(args.out).eval(), None, None
        untrained = TinyViT(encoder.config).eval() if encoder.config != config else untrained
    else:
        _, images = render_pool(args.pool, args.seed, tasks=tasks)
        print(f"rendered {images.shape[0]} training and {probe_images.shape[0]} held-out scenes in {time.perf_counter() - t0:.0f}s")
        encoder = TinyViT(config)
        encoder.load_state_dict(untrained.state_dict())
        model = Contrastive(encoder)
        pick = torch.Generator().manual_seed(args.seed + 1)

        def loss_fn(g: torch.Generator) -> torch.Tensor:
            batch = images[torch.randint(images.shape[0], (args.batch,), generator=pick)]
            return nt_xent(model(geometric_views(batch, g)), model(geometric_views(batch, g)), args.temperature)

        trained = budgeted_training(model, loss_fn, args.minutes, args.steps, args.lr, args.seed, "simclr")
        steps, seconds = trained.step, round(trained.seconds, 1)
        encoder.eval()

    conv, pixels = build_features("conv"), build_features({"name": "pixels", "size": 8})
    feats = {"conv (random)": encode(conv, probe_images), "pixels 8x8": encode(pixels, probe_images),
             "vit untrained": encode(lambda x: token_blocks(untrained.eval()(x)), probe_images),
             "ssl_encoder": encode(lambda x: token_blocks(encoder(x)), probe_images)}
    results = probe(feats, labels)
    print_table(results)
    sheet_path = Path(args.sheet) if args.sheet else Path(args.out).with_name(Path(args.out).name + "_neighbours.png")
    sheet = neighbour_sheet(probe_images, {k: feats[k] for k in ("conv (random)", "ssl_encoder")}, sheet_path)
    print(f"nearest held-out neighbours (query | conv | ssl_encoder): {sheet}")
    beats = mean_linear(results["ssl_encoder"]) > mean_linear(results["conv (random)"])
    if args.probe_only:
        if args.results:
            write_results(args.results, "ssl_encoder_probe", "python pipelines/train_image_encoder.py",
                          sys.argv[1:] if argv is None else argv, result_rows(results),
                          tolerance=Tolerance(note="a saved encoder, fixed renders and probe seeds: compared exactly"),
                          platform_tolerance=Tolerance(abs=0.01, note="probe fits differ in float rounding elsewhere"),
                          note=f"linear-probe and 10-NN accuracy on {args.probe_n} held-out v2 renders (60% fit, 40% test)",
                          runtime_s=time.perf_counter() - began)
        return 0
    command = "python pipelines/train_image_encoder.py " + " ".join(argv if argv is not None else sys.argv[1:])
    extra = {"training": {"objective": "SimCLR NT-Xent, geometric + noise views (colour kept, no flips)",
                          "pool": args.pool, "max_complexity": args.max_complexity, "steps": steps, "seconds": seconds,
                          "batch": args.batch, "lr": args.lr, "temperature": args.temperature, "threads": args.threads,
                          "seed": args.seed, "command": command},
             "probe": {"held_out_renders": args.probe_n, "train_fraction": 0.6, "results": results,
                       "beats_conv_mean_linear": beats}}
    save_encoder(encoder, args.out, extra)
    BlockLayout.of(build_features({"name": "ssl_encoder", "path": args.out}), 3 * args.dim)  # loads back as features
    print(f"wrote {args.out} ({steps} steps in {seconds}s); beats conv on the mean linear probe: {beats}")
    if args.ship:
        if beats:
            shutil.rmtree(args.ship, ignore_errors=True)
            shutil.copytree(args.out, args.ship)
            load_encoder(args.ship)
            print(f"shipped to {args.ship}")
        else:
            print(f"not shipped: ssl_encoder does not beat conv ({mean_linear(results['ssl_encoder']):.3f} vs "
                  f"{mean_linear(results['conv (random)']):.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
