"""RWTD / FestDPO overhead: OT and KDE time as a fraction of one training step of the tiny one-step image generator.

    visalign bench transport                      # batch 64 and 256, conv features (64-d) and raw pixels (3072-d)
    visalign bench transport --batches 64 --repeats 3

A "step" here is the generator's forward + backward + AdamW step at that batch (the unavoidable cost); the
RWTD extra is cost matrix + POT solve + barycentric projection for N current + N reference particles, and the
FestDPO extra is the two KDEs (policy and reference centres, N each) at 2·N/2 pair points.
"""
from __future__ import annotations

import argparse
import time

import torch

from visalign.algorithms.kde import bandwidth, multi_bandwidth_log_prob
from visalign.algorithms.transport import mixture_target, transport_targets
from visalign.features import build_features
from visalign.generators import TinyOneStepGenerator

SHARE_TOLERANCE = 1.0  # a share up to twice the stored one (or any smaller) counts as unchanged (busy shared cores)
SHARE_TOLERANCE_ABS = 0.03  # ... plus 3 points of a step: millisecond kernels jitter most


def timed(fn, repeats: int) -> float:
    fn()  # warm-up
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - start) / repeats


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--batches", nargs="*", type=int, default=[64, 256])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--results", default=None, help="also write a result file (visalign.results format)")


def run(args: argparse.Namespace) -> int:
    if args.threads:
        torch.set_num_threads(args.threads)
    start = time.perf_counter()
    rows = []
    torch.manual_seed(0)
    gen = TinyOneStepGenerator()
    opt = torch.optim.AdamW(gen.parameters(), lr=1e-4)
    print(f"{'batch':>5} {'features':>9} {'step ms':>8} {'emd ms':>7} {'sinkhorn ms':>11} {'kde ms':>7} {'emd %':>6} {'sinkhorn %':>10} {'kde %':>6}")
    for n in args.batches:
        prompts = ["a red circle left of a blue square"] * n
        noise = gen.make_noise(n, torch.Generator().manual_seed(0))

        def step():
            loss = gen(noise, prompts).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()

        step_s = timed(step, args.repeats)
        with torch.no_grad():
            cur, ref = gen(noise, prompts), gen(gen.make_noise(n, torch.Generator().manual_seed(1)), prompts)
        rewards = torch.randn(2 * n)
        for feat_name in ("conv", "identity"):
            phi = build_features(feat_name)
            with torch.no_grad():
                fc, fr = phi(cur), phi(ref)
            weights = mixture_target(rewards[:n], rewards[n:], 1.0, 0.85)
            tf = torch.cat([fc, fr])
            emd_s = timed(lambda: transport_targets(fc, tf, weights, "emd"), args.repeats)
            sk_s = timed(lambda: transport_targets(fc, tf, weights, "sinkhorn"), args.repeats)
            fc_grad = fc.clone().requires_grad_(True)

            def kde():
                h = bandwidth(fr, "scott")
                pts = fr[: n // 2 * 2]
                (multi_bandwidth_log_prob(pts, fc_grad, [h]) - multi_bandwidth_log_prob(pts, fr, [h])).sum().backward()

            kde_s = timed(kde, args.repeats)
            pct = lambda s: 100 * s / step_s
            print(f"{n:5d} {feat_name:>9} {1000*step_s:8.1f} {1000*emd_s:7.1f} {1000*sk_s:11.1f} {1000*kde_s:7.1f} "
                  f"{pct(emd_s):5.1f}% {pct(sk_s):9.1f}% {pct(kde_s):5.1f}%")
            rows.append((f"batch {n}, {feat_name}", {"emd_share": emd_s / step_s, "sinkhorn_share": sk_s / step_s,
                                                     "kde_share": kde_s / step_s},
                         {"step_ms": round(1000 * step_s, 1), "emd_ms": round(1000 * emd_s, 1),
                          "sinkhorn_ms": round(1000 * sk_s, 1), "kde_ms": round(1000 * kde_s, 1)}))
    if args.results:
        from visalign.results import ResultRow, Tolerance, write_results

        cli_args = ["--batches", *map(str, args.batches), "--repeats", str(args.repeats),
                    *(["--threads", str(args.threads)] if args.threads else [])]
        tolerance = Tolerance(abs=SHARE_TOLERANCE_ABS, rel=SHARE_TOLERANCE,
                              note="time shares of a training step measured side by side; the times themselves are "
                                   "info, not compared")
        write_results(args.results, "transport", "visalign bench transport", cli_args,
                      [ResultRow(name, values, info=info) for name, values, info in rows], tolerance=tolerance,
                      platform_tolerance=tolerance, runtime_s=time.perf_counter() - start)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    raise SystemExit(run(parser.parse_args()))
