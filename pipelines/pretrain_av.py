"""Pretrain the tiny built-in audio-video flow generator shipped in ``assets/av/`` on the moving-shapes world (CPU).

Clips: 16×16 px, 8 frames at 8 fps, a coloured shape bouncing between two walls, and 1 s of mono audio at 2048 Hz
with a decaying tone burst (256 Hz "low" or 640 Hz "high" beep, from the prompt) at every wall contact. The model
(``tiny_av_flow``: a video tower and an audio tower with cross-attention both ways) is trained by conditional flow
matching on the flat ``[video | audio]`` latent of fresh renders. Measures ``object_color`` and ``av_sync`` for the
renders, the random init and the trained model on every prompt of the world; writes ``pretrain_metrics.json`` beside
the checkpoint and contact sheets (waveform under the frames), GIFs and WAVs to ``--out``.

    python pipelines/pretrain_av.py                         # ~5 min on 2 CPU cores, writes assets/av/
    python pipelines/pretrain_av.py --minutes 0.2 --assets /tmp/av   # smoke run
    python pipelines/pretrain_av.py --pictures-only         # pictures of the shipped model
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from visalign.core.generator import load_generator
from visalign.generators.tiny_av import TinyAudioVideoConfig, TinyAudioVideoFlowGenerator
from visalign.rewards.video import AudioVideoSyncReward, ObjectColorReward
from visalign.toys.moving_shapes import WorldConfig, all_prompts, render_batch
from visalign.toys.video_pretrain import fit, flow_loss
from visalign.trainer.visuals import save_samples

MODEL = dict(image_size=16, frames=8, fps=8.0, patch_size=4, width=64, layers=2, heads=4, text_hidden=32,
             text_layers=2, text_heads=2, vocab_buckets=256, max_length=16, sample_rate=2048, audio_patch=64)


@torch.no_grad()
def measure(sample_fn, prompts: list[str], seed: int = 1234) -> tuple[dict[str, float], dict]:
    x = sample_fn(prompts, torch.Generator().manual_seed(seed))
    meta = [{}] * len(prompts)
    return {"object_color": round(ObjectColorReward()(x, prompts, meta).mean().item(), 4),
            "av_sync": round(AudioVideoSyncReward()(x, prompts, meta).mean().item(), 4)}, x


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=5.0)
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--num-steps", type=int, default=4, help="sampling steps stored in the checkpoint's config")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (1 is fastest on a shared 2-core machine)")
    p.add_argument("--assets", type=Path, default=Path("assets/av"))
    p.add_argument("--out", type=Path, default=Path("runs/pretrain_av"))
    p.add_argument("--pictures-only", action="store_true", help="load the checkpoint in --assets and draw it")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    world = WorldConfig(size=MODEL["image_size"], frames=MODEL["frames"], fps=MODEL["fps"], sample_rate=MODEL["sample_rate"])
    prompts = all_prompts(audio=True)
    metrics: dict[str, object] = {}
    if args.pictures_only:
        model = load_generator(args.assets / "tiny_av_flow")
    else:
        torch.manual_seed(args.seed)
        model = TinyAudioVideoFlowGenerator(TinyAudioVideoConfig(**MODEL, num_steps=args.num_steps))
        metrics["random_init"], _ = measure(lambda ps, g: model.sample(ps, generator=g), prompts)
        start = time.perf_counter()
        losses = fit(model, flow_loss(model, world, args.batch, audio=True), args.steps, args.lr, args.minutes, args.seed,
                     "audio-video flow matching")
        metrics["flow_matching"] = {"steps": len(losses), "seconds": round(time.perf_counter() - start, 1),
                                    "loss_first20": round(sum(losses[:20]) / 20, 4), "loss_last20": round(sum(losses[-20:]) / 20, 4)}
        model.save_pretrained(args.assets / "tiny_av_flow")
    metrics["renders"], renders = measure(lambda ps, g: render_batch(ps, world, g, audio=True), prompts)
    metrics["flow"], samples = measure(lambda ps, g: model.sample(ps, generator=g), prompts)
    print(json.dumps(metrics, indent=2))
    if not args.pictures_only:
        (args.assets / "pretrain_metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    rows = torch.arange(0, 64, 9)[:6]  # six prompts: several colours, shapes, motions, both pitches
    for name, x in (("renders", renders), ("flow", samples)):
        r = AudioVideoSyncReward()(x, prompts, [{}] * len(prompts))
        picked = {k: v[rows] if isinstance(v, torch.Tensor) else v for k, v in x.items()}
        path = save_samples(picked, args.out / f"{name}.png", [prompts[i] for i in rows], rewards=r[rows])
        print("wrote", path, "with its GIF and WAVs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
