"""Does a tiny AV model know where the shape belongs in each frame before the noise tells it?

On the fixed-motion world (:attr:`WorldConfig.fixed_motion`: the prompt alone fixes every frame's position), each
render is noised to level s with ``--draws`` noise draws, and the model's clean-video estimate ``x_s − s·v`` is
averaged over the draws. Its salience-weighted track along the prompt's motion axis is compared with the render's: the
Pearson correlation over the frames and the travel ratio (the estimate's track spread over the render's). A model that
places the shape from the prompt and the frame scores 1 and 1 at every level; one that only follows the noisy input
scores about 0 near s = 1 and rises as s falls. Also prints how much the video tower's learned position table varies
across frames (at a fixed patch) against across patches (in a frame). Standard errors over the prompts.

    python pipelines/av_position_probe.py --checkpoints fixed=assets/av_fixed/tiny_av_flow
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from visalign.core.flow import noise_latents
from visalign.core.generator import load_generator
from visalign.results import ResultRow, Tolerance, write_results
from visalign.rewards.video import frames_of, object_track
from visalign.toys.moving_shapes import MOTIONS, WorldConfig, all_prompts, parse_prompt, render_batch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from checkpoint_args import parse_checkpoints  # noqa: E402


def motion_tracks(video: torch.Tensor, prompts: list[str]) -> torch.Tensor:
    """``B×T``: the salience-weighted centre along each prompt's motion axis, per frame."""
    track = object_track(frames_of(video, "av_position_probe"))
    axes = torch.tensor([MOTIONS[parse_prompt(p).motion][0] for p in prompts])
    return track.gather(2, axes.view(-1, 1, 1).expand(-1, track.shape[1], 1)).squeeze(2)


def correlation(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Per-row Pearson correlation of ``B×T`` tracks (0 where one is constant)."""
    a, b = a - a.mean(1, keepdim=True), b - b.mean(1, keepdim=True)
    return (a * b).sum(1) / (a.norm(dim=1) * b.norm(dim=1)).clamp_min(1e-8)


@torch.no_grad()
def clean_estimates(model, x0: torch.Tensor, prompts: list[str], level: float, draws: int,
                    generator: torch.Generator) -> torch.Tensor:
    """The model's clean-latent estimate ``x_s − s·v(x_s, s)`` at noise level ``level``, averaged over ``draws``."""
    cond = model.encode(prompts)
    levels = torch.full((x0.shape[0],), level)
    total = torch.zeros_like(x0)
    for _ in range(draws):
        xt = noise_latents(x0, levels, torch.randn(x0.shape, generator=generator))
        total += xt - level * model.velocity(xt, model.time(level, xt), cond)
    return total / draws


def position_table_spread(model) -> dict[str, float]:
    """RMS over the width of the video position table's std across frames (per patch) and across patches (per frame)."""
    c = model.config
    pos = model.backbone.video_tower.pos.detach()[0].reshape(c.frames, (c.image_size // c.patch_size) ** 2, -1)
    return {"pos_std_across_frames": round(float(pos.std(0).pow(2).mean().sqrt()), 4),
            "pos_std_across_patches": round(float(pos.std(1).pow(2).mean().sqrt()), 4)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoints", nargs="+", required=True, help="name=path of tiny_av_flow checkpoints")
    p.add_argument("--levels", type=float, nargs="+", default=[1.0, 0.9, 0.75, 0.5], help="noise levels (0, 1]")
    p.add_argument("--draws", type=int, default=8, help="noise draws averaged per render and level")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--results", default=None, help="also write the result file (visalign.results format) here")
    args = p.parse_args(argv)
    if any(not 0 < level <= 1 for level in args.levels):
        p.error(f"--levels must lie in (0, 1], got {args.levels}")
    if args.draws < 1:
        p.error(f"--draws must be >= 1, got {args.draws}")
    began = time.perf_counter()
    torch.set_num_threads(args.threads)
    prompts = all_prompts(audio=True)
    rows = []
    for name, path in parse_checkpoints(args.checkpoints).items():
        model = load_generator(path).eval()
        c = model.config
        world = WorldConfig(size=c.image_size, frames=c.frames, fps=c.fps, sample_rate=c.sample_rate, fixed_motion=True)
        clips = render_batch(prompts, world, torch.Generator().manual_seed(args.seed), audio=True)
        x0, target = model.encode_samples(clips), motion_tracks(clips["video"], prompts)
        spread = target.std(1)
        scores = {}
        for level in args.levels:
            estimate = model.decode(clean_estimates(model, x0, prompts, level, args.draws,
                                                    torch.Generator().manual_seed(args.seed + 1)))["video"]
            track = motion_tracks(estimate, prompts)
            scores[f"correlation/{level:g}"] = correlation(track, target)
            scores[f"travel/{level:g}"] = track.std(1) / spread
        means = {k: round(v.mean().item(), 4) for k, v in scores.items()}
        rows.append(ResultRow(name, {**means, **position_table_spread(model)},
                              se={k: round(float(v.std() / len(v) ** 0.5), 4) for k, v in scores.items()}))
        print(name, rows[-1].values)
    if args.results:
        write_results(args.results, "av_position_probe", "python pipelines/av_position_probe.py",
                      sys.argv[1:] if argv is None else argv, rows,
                      tolerance=Tolerance(note="saved checkpoints, fixed renders and noise: compared exactly"),
                      platform_tolerance=Tolerance(se_multiple=2.0),
                      note=f"fixed-motion world, {len(prompts)} prompts x {args.draws} noise draws per level: "
                           "correlation and travel ratio of the clean-video estimate's track with the render's; the video position "
                           "table's spread across frames and across patches",
                      runtime_s=time.perf_counter() - began)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
