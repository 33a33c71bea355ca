"""Does one tower of an audio-video model read the other? av_sync when one modality is given.

For each checkpoint (tiny AV models of the moving-shapes world), on the world's prompts (``--draws`` renders each):
``av_sync`` of joint samples, of audio generated while the video is held on a render's noised path
(:func:`visalign.toys.video_pretrain.sample_given`), and of video generated for a render's audio. A model whose audio
tower reads the video gets the renders' sync (0.82) when the video is given, whatever its joint samples do; one that
ignores the other tower stays at chance (0) in all three. ``--from-levels`` adds one condition per level s: both
modalities of a render noised to s, finished by the model (:func:`visalign.core.flow.sample_from_level`);
where joint samples fail but clips finished from s sync, the model cannot commit to a motion above s.
``--video-quality`` also scores the video of every condition but the render's own (``av_video_quality``, travel
term included). Standard errors over the clips. Writes contact sheets of the audio each model makes for six rendered videos.

    python pipelines/av_cross_modal.py --checkpoints small=assets/av/tiny_av_flow large=assets/av_large/tiny_av_flow
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from visalign.core.flow import sample_from_level
from visalign.core.generator import load_generator
from visalign.results import ResultRow, Tolerance, write_results
from visalign.rewards.av_verifiers import VideoQuality
from visalign.rewards.video import AudioVideoSyncReward
from visalign.toys.moving_shapes import WorldConfig, all_prompts, render_batch
from visalign.toys.video_pretrain import sample_given
from visalign.trainer.visuals import save_samples

sys.path.insert(0, str(Path(__file__).resolve().parent))
from checkpoint_args import parse_checkpoints  # noqa: E402

CONDITIONS = ("joint", "given_video", "given_audio")


@torch.no_grad()
def measure(model, prompts: list[str], clips: dict, noise: torch.Tensor, from_levels: tuple[float, ...] = (),
            video_quality: bool = False) -> tuple[dict[str, torch.Tensor], dict]:
    """Per-clip av_sync under each condition (and for clips finished from each of ``from_levels``; with
    ``video_quality`` also ``video_quality/<condition>`` where the model made the video), and the samples generated
    for a given video."""
    sync = AudioVideoSyncReward()
    meta = [{}] * len(prompts)
    cond = model.encode(prompts)
    x0 = model.encode_samples(clips)
    latents = {"joint": model.sample_latents(noise, cond),
               "given_video": sample_given(model, x0, "video", noise, cond),
               "given_audio": sample_given(model, x0, "audio", noise, cond),
               **{f"from_{level:g}": sample_from_level(model, x0, level, noise, cond) for level in from_levels}}
    samples = {k: model.decode(v) for k, v in latents.items()}
    scores = {k: sync(s, prompts, meta) for k, s in samples.items()}
    if video_quality:
        quality = VideoQuality()
        scores.update({f"video_quality/{k}": quality(s, prompts, meta) for k, s in samples.items() if k != "given_video"})
    return scores, samples["given_video"]


def row(name: str, scores: dict[str, torch.Tensor], info: dict) -> ResultRow:
    return ResultRow(name, {k: round(v.mean().item(), 4) for k, v in scores.items()},
                     se={k: round(float(v.std() / len(v) ** 0.5), 4) for k, v in scores.items()}, info=info)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoints", nargs="+", required=True, help="name=path of tiny_av_flow checkpoints")
    p.add_argument("--draws", type=int, default=2, help="renders (and noise draws) per prompt")
    p.add_argument("--from-levels", type=float, nargs="*", default=[],
                   help="also finish renders noised to these levels (0 < s <= 1), 8 Euler steps each")
    p.add_argument("--video-quality", action="store_true",
                   help="also score av_video_quality of the model's video under each condition")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", type=Path, default=Path("runs/av_cross_modal"))
    p.add_argument("--results", default=None, help="also write the result file (visalign.results format) here")
    args = p.parse_args(argv)
    if args.draws < 1:
        p.error(f"--draws must be >= 1, got {args.draws}")
    if any(not 0 < level <= 1 for level in args.from_levels):
        p.error(f"--from-levels must lie in (0, 1], got {args.from_levels}")
    began = time.perf_counter()
    torch.set_num_threads(args.threads)
    models = {name: load_generator(path).eval() for name, path in parse_checkpoints(args.checkpoints).items()}
    first = next(iter(models.values())).config
    world_keys = ("image_size", "frames", "fps", "sample_rate")
    for name, model in models.items():
        if any(getattr(model.config, k) != getattr(first, k) for k in world_keys):
            its_world = ", ".join(f"{k}={getattr(model.config, k)}" for k in world_keys)
            p.error(f"checkpoint {name!r} renders another world ({its_world}) than the first; the renders are shared, "
                    "so compare models of one world")
    world = WorldConfig(size=first.image_size, frames=first.frames, fps=first.fps, sample_rate=first.sample_rate)
    prompts = all_prompts(audio=True) * args.draws
    g = torch.Generator().manual_seed(args.seed)
    clips = render_batch(prompts, world, g, audio=True)
    rows = [ResultRow("renders", {"av_sync": round(AudioVideoSyncReward()(clips, prompts, [{}] * len(prompts)).mean().item(), 4)})]
    shown = torch.arange(0, 64, 9)[:6]
    for name, model in models.items():
        noise = torch.randn((len(prompts), *model.noise_shape), generator=torch.Generator().manual_seed(args.seed + 1))
        scores, given_video = measure(model, prompts, clips, noise, tuple(args.from_levels), args.video_quality)
        rows.append(row(name, scores, {"params": sum(q.numel() for q in model.parameters())}))
        print(name, {k: f"{v:.3f} ± {rows[-1].se[k]:.3f}" for k, v in rows[-1].values.items()})
        picked = {k: v[shown] if isinstance(v, torch.Tensor) else v for k, v in given_video.items()}
        path = save_samples(picked, args.out / f"{name}_given_video.png", [prompts[i] for i in shown],
                            rewards=scores["given_video"][shown])
        print("wrote", path)
    if args.results:
        write_results(args.results, "av_cross_modal", "python pipelines/av_cross_modal.py",
                      sys.argv[1:] if argv is None else argv, rows,
                      tolerance=Tolerance(note="saved checkpoints, fixed renders and noise: compared exactly"),
                      platform_tolerance=Tolerance(se_multiple=2.0),
                      note=f"av_sync on the world's {len(prompts) // args.draws} prompts x {args.draws} renders: joint "
                           "samples, audio for the render's video, video for the render's audio"
                           + ("; from_s: the render noised to level s, finished in 8 Euler steps" if args.from_levels else "")
                           + ("; video_quality/<condition>: av_video_quality of the model's video" if args.video_quality else ""),
                      runtime_s=time.perf_counter() - began)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
