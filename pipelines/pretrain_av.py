"""Pretrain the tiny built-in audio-video flow generator shipped in ``assets/av/`` on the moving-shapes world (CPU).

Clips: 16×16 px, 8 frames at 8 fps, a coloured shape bouncing between two walls, and 1 s of mono audio at 2048 Hz
with a decaying tone burst (256 Hz "low" or 640 Hz "high" beep, from the prompt) at every wall contact. The model
(``tiny_av_flow``: a video tower and an audio tower with cross-attention both ways) is trained by conditional flow
matching on the flat ``[video | audio]`` latent of fresh renders. Measures ``object_color`` and ``av_sync`` for the
renders, the random init and the trained model on every prompt of the world; writes ``pretrain_metrics.json`` beside
the checkpoint and contact sheets (waveform under the frames), GIFs and WAVs to ``--out``.

    python pipelines/pretrain_av.py                         # ~5 min on 2 CPU cores, writes assets/av/
    python pipelines/pretrain_av.py --minutes 0.2 --assets /tmp/av   # smoke run
    python pipelines/pretrain_av.py --pictures-only         # measure and draw the shipped model
    python pipelines/pretrain_av.py --init assets/av_large/tiny_av_flow --steps 1500 --lr 3e-4 --cross-frames 0 \
        --assets assets/av_synced --minutes 1000           # the synced base: continue under time-aligned cross-attention
    python pipelines/pretrain_av.py --init assets/av_synced/tiny_av_flow --steps 1500 --lr 3e-4 --clips-per-prompt 8 \
        --ot-coupling --assets /tmp/av_ot                    # ... continued with noise paired to clips by transport
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from functools import partial
from pathlib import Path

import torch

from visalign.core.generator import load_generator
from visalign.generators import add_frame_convs
from visalign.generators.tiny_av import TinyAudioVideoConfig, TinyAudioVideoFlowGenerator
from visalign.results import ResultRow, Tolerance, write_results
from visalign.rewards.video import AudioVideoSyncReward, ObjectColorReward
from visalign.toys.moving_shapes import WorldConfig, all_prompts, render_batch
from visalign.toys.video_pretrain import BUDGET_NOTE, MEASURED_TOLERANCE, fit, flow_loss, shipped_training, training_record
from visalign.trainer.visuals import save_samples

MODEL = dict(image_size=16, frames=8, fps=8.0, patch_size=4, width=64, layers=2, heads=4, text_hidden=32,
             text_layers=2, text_heads=2, vocab_buckets=256, max_length=16, sample_rate=2048, audio_patch=64)


@torch.no_grad()
def measure(sample_fn, prompts: list[str], seed: int = 1234,
            errors: dict[str, dict[str, float]] | None = None, name: str = "") -> tuple[dict[str, float], dict]:
    """Mean ``object_color`` and ``av_sync`` over ``prompts`` (one sample each) and the samples; their standard errors
    over the prompts go to ``errors[name]`` when given."""
    x = sample_fn(prompts, torch.Generator().manual_seed(seed))
    meta = [{}] * len(prompts)
    scores = {"object_color": ObjectColorReward()(x, prompts, meta), "av_sync": AudioVideoSyncReward()(x, prompts, meta)}
    if errors is not None:
        errors[name] = {k: float(v.std() / len(v) ** 0.5) for k, v in scores.items()}
    return {k: round(v.mean().item(), 4) for k, v in scores.items()}, x


def with_config(model: TinyAudioVideoFlowGenerator, **changes) -> TinyAudioVideoFlowGenerator:
    """``model``'s weights in a model whose config differs by ``changes`` that hold no weights: the cross-attention
    window (a mask, so a checkpoint trained with full cross-attention continues under it), the shared time features
    (a fixed sinusoidal table) or the sampling shift."""
    changed = TinyAudioVideoFlowGenerator(dataclasses.replace(model.config, **changes))
    changed.load_state_dict(model.state_dict())
    return changed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=5.0)
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--num-steps", type=int, default=4, help="sampling steps stored in the checkpoint's config")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--width", type=int, default=None, help=f"token width of both towers (default {MODEL['width']})")
    p.add_argument("--layers", type=int, default=None, help=f"transformer blocks per tower (default {MODEL['layers']})")
    p.add_argument("--shared-time", action="store_true", help="both towers' tokens get the same embedding of their time "
                   "in seconds (generator.shared_time)")
    p.add_argument("--adaptive-norm", action="store_true",
                   help="each block reads the time/prompt vector through adaptive LayerNorm instead of adding it to "
                        "every token (generator.time_conditioning: adaptive_norm)")
    p.add_argument("--sample-prediction", action="store_true",
                   help="the network outputs the clean sample x0 instead of the velocity (JiT-style x-prediction; "
                        "generator.prediction: sample); the loss stays the velocity loss unless --sample-space-loss")
    p.add_argument("--sample-space-loss", action="store_true",
                   help="weight the velocity error by t², i.e. train on the clean-estimate error |x0_hat - x0|^2 "
                        "(flow_matching_loss(loss_space='sample'))")
    p.add_argument("--conv-channels", type=int, default=0,
                   help="per-frame 3x3 convolutions with this many channels around the video tokens "
                        "(generator.conv_channels; 0: none); with --init they are added to the checkpoint, which "
                        "starts out computing what it did")
    p.add_argument("--cross-frames", type=int, default=None,
                   help="time-aligned cross-attention: each token sees the other tower's tokens within this many "
                        "frames of its own (generator.cross_frames; default: all)")
    p.add_argument("--decoupled-times", type=float, default=0.0,
                   help="fraction of training items whose audio noise level is drawn independently of the video's "
                        "(UniDiffuser-style; 0 = one noise level for both)")
    p.add_argument("--time-shift", type=float, default=1.0,
                   help="train on noise levels mapped by SD3's shift s·t/(1+(s-1)·t) (s > 1: more steps near pure noise, "
                        "where a clip commits to its motion) and sample with the same shift (stored in the checkpoint)")
    p.add_argument("--clips-per-prompt", type=int, default=1,
                   help="render each drawn prompt this many times per batch (other phases and offsets; divides --batch)")
    p.add_argument("--ot-coupling", action="store_true",
                   help="pair the noise with each prompt's clips by minibatch optimal transport (needs "
                        "--clips-per-prompt > 1): a noise draw then points at one motion instead of the prompt's mean")
    p.add_argument("--fixed-motion", action="store_true",
                   help="train on a world where the prompt fixes the motion (phase from the prompt, shape across the "
                        "middle): no motion to pick (WorldConfig.fixed_motion)")
    p.add_argument("--fixed-offset", action="store_true",
                   help="train on a world where the shape crosses the middle and only the phase is random: a prompt "
                        "allows 4 motions, no continuum (WorldConfig.fixed_offset)")
    p.add_argument("--audio-jitter", type=float, default=0.0,
                   help="tone bursts start up to this many frames off the wall contacts (uniform, either way), so the "
                        "model starts out of sync (WorldConfig.audio_jitter, in [0, 1))")
    p.add_argument("--init", type=Path, default=None,
                   help="continue training this tiny_av_flow checkpoint (its config sets the model; a fresh warmup + "
                        "cosine schedule)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (1 is fastest on a shared 2-core machine)")
    p.add_argument("--assets", type=Path, default=Path("assets/av"))
    p.add_argument("--out", type=Path, default=Path("runs/pretrain_av"))
    p.add_argument("--pictures-only", action="store_true",
                   help="train nothing: measure and draw the checkpoint in --assets (its training figures come from "
                        "the pretrain_metrics.json beside it)")
    p.add_argument("--results", default=None, help="also write the result file (visalign.results format) here")
    args = p.parse_args(argv)
    if (args.init is not None or args.pictures_only) and (args.width is not None or args.layers is not None
                                                          or args.adaptive_norm or args.sample_prediction):
        p.error("--init and --pictures-only take the model from the checkpoint; drop --width / --layers / "
                "--adaptive-norm / --sample-prediction")
    if args.pictures_only and args.shared_time:
        p.error("--pictures-only measures the checkpoint as it is: drop --shared-time")
    if args.pictures_only and args.conv_channels:
        p.error("--pictures-only measures the checkpoint as it is: drop --conv-channels")
    if args.pictures_only and args.cross_frames is not None:
        p.error("--pictures-only measures the checkpoint as it is: drop --cross-frames")
    if not 0.0 <= args.decoupled_times <= 1.0:
        p.error(f"--decoupled-times is a fraction in [0, 1], got {args.decoupled_times}")
    if args.pictures_only and (args.decoupled_times > 0 or args.time_shift != 1.0 or args.sample_space_loss):
        p.error("--pictures-only trains nothing: drop --decoupled-times / --time-shift / --sample-space-loss")
    if not args.time_shift > 0:
        p.error(f"--time-shift must be > 0, got {args.time_shift}")
    if args.pictures_only and (args.clips_per_prompt != 1 or args.ot_coupling):
        p.error("--pictures-only trains nothing: drop --clips-per-prompt / --ot-coupling")
    if not 0.0 <= args.audio_jitter < 1.0:
        p.error(f"--audio-jitter is in frames, in [0, 1), got {args.audio_jitter}")
    if args.clips_per_prompt < 1 or args.batch % args.clips_per_prompt:
        p.error(f"--clips-per-prompt must divide --batch ({args.batch}), got {args.clips_per_prompt}")
    if args.ot_coupling and args.clips_per_prompt == 1:
        p.error("--ot-coupling pairs noise with several clips of one prompt: set --clips-per-prompt > 1")
    if args.init is not None and args.pictures_only:
        p.error("--pictures-only trains nothing: drop --init")
    if args.fixed_motion and args.fixed_offset:
        p.error("--fixed-motion already fixes the offset: drop --fixed-offset")
    began, errors = time.perf_counter(), {}
    torch.set_num_threads(args.threads)
    world = WorldConfig(size=MODEL["image_size"], frames=MODEL["frames"], fps=MODEL["fps"], sample_rate=MODEL["sample_rate"],
                        fixed_motion=args.fixed_motion, fixed_offset=args.fixed_offset, audio_jitter=args.audio_jitter)
    prompts = all_prompts(audio=True)
    metrics: dict[str, object] = {}
    trained = (load_generator(args.assets / "tiny_av_flow") if args.pictures_only else
               load_generator(args.init) if args.init is not None else None)
    if args.init is not None:
        trained = with_config(trained, **({"cross_frames": args.cross_frames} if args.cross_frames is not None else {}),
                              **({"shared_time": True} if args.shared_time else {}),
                              **({"shift": args.time_shift} if args.time_shift != 1.0 else {}))
        if args.conv_channels:
            trained = add_frame_convs(trained, args.conv_channels)
    size = ({k: getattr(trained.config, k) for k in ("width", "layers", "shared_time", "cross_frames", "time_conditioning",
                                                    "conv_channels")}
            if trained is not None else
            {"width": args.width or MODEL["width"], "layers": args.layers or MODEL["layers"], "shared_time": args.shared_time,
             "cross_frames": args.cross_frames, "time_conditioning": "adaptive_norm" if args.adaptive_norm else "add",
             "conv_channels": args.conv_channels})
    if (trained.config.prediction if trained is not None else "sample" if args.sample_prediction else "velocity") == "sample":
        size["prediction"] = "sample"  # recorded only when not the default, so earlier records keep their keys
    torch.manual_seed(args.seed)  # after loading, which draws the initial weights it then replaces
    model = TinyAudioVideoFlowGenerator(TinyAudioVideoConfig(**{**MODEL, **size}, num_steps=args.num_steps,
                                                             shift=args.time_shift))
    metrics["random_init"], _ = measure(lambda ps, g: model.sample(ps, generator=g), prompts, errors=errors,
                                        name="random init")
    if args.pictures_only:
        model = trained
        metrics.update(shipped_training(args.assets, ("flow_matching",)))
    else:
        if trained is not None:
            model = trained
        start = time.perf_counter()
        loss = partial(model.decoupled_flow_matching_loss, fraction=args.decoupled_times,  # 0: the plain loss
                       time_shift=args.time_shift, loss_space="sample" if args.sample_space_loss else "velocity")
        losses = fit(model, flow_loss(model, world, args.batch, audio=True, loss=loss,
                                      clips_per_prompt=args.clips_per_prompt, ot_coupling=args.ot_coupling),
                     args.steps, args.lr, args.minutes, args.seed, "audio-video flow matching")
        metrics["flow_matching"] = {**training_record(losses, time.perf_counter() - start), **size,
                                    **({"decoupled_times": args.decoupled_times} if args.decoupled_times > 0 else {}),
                                    **({"time_shift": args.time_shift} if args.time_shift != 1.0 else {}),
                                    **({"loss_space": "sample"} if args.sample_space_loss else {}),
                                    **({"clips_per_prompt": args.clips_per_prompt} if args.clips_per_prompt != 1 else {}),
                                    **({"ot_coupling": True} if args.ot_coupling else {}),
                                    **({"fixed_motion": True} if args.fixed_motion else {}),
                                    **({"fixed_offset": True} if args.fixed_offset else {}),
                                    **({"audio_jitter": args.audio_jitter} if args.audio_jitter else {}),
                                    **({"init": str(args.init)} if args.init is not None else {})}
        model.save_pretrained(args.assets / "tiny_av_flow")
    metrics["flow_matching"]["params"] = sum(p.numel() for p in model.parameters())
    metrics["renders"], renders = measure(lambda ps, g: render_batch(ps, world, g, audio=True), prompts, errors=errors,
                                          name="renders")
    metrics["flow"], samples = measure(lambda ps, g: model.sample(ps, generator=g), prompts, errors=errors,
                                       name="tiny_av_flow")
    print(json.dumps(metrics, indent=2))
    if not args.pictures_only:
        (args.assets / "pretrain_metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    rows = torch.arange(0, 64, 9)[:6]  # six prompts: several colours, shapes, motions, both pitches
    for name, x in (("renders", renders), ("flow", samples)):
        r = AudioVideoSyncReward()(x, prompts, [{}] * len(prompts))
        picked = {k: v[rows] if isinstance(v, torch.Tensor) else v for k, v in x.items()}
        path = save_samples(picked, args.out / f"{name}.png", [prompts[i] for i in rows], rewards=r[rows])
        print("wrote", path, "with its GIF and WAVs")
    if args.results:
        write_results(args.results, "pretrain_av", "python pipelines/pretrain_av.py", sys.argv[1:] if argv is None else argv,
                      result_rows(metrics, errors),
                      tolerance=MEASURED_TOLERANCE if args.pictures_only else Tolerance(se_multiple=2.0, note=BUDGET_NOTE),
                      platform_tolerance=Tolerance(se_multiple=2.0),
                      note=f"object_color and av_sync on the world's {len(prompts)} prompts (one sample each, seed 1234); "
                           "losses are the mean of the first / last 20 training steps",
                      runtime_s=time.perf_counter() - began)
    return 0


def result_rows(metrics: dict, errors: dict[str, dict[str, float]]) -> list[ResultRow]:
    """The flow (its training losses as info), the renders and the random init."""
    keys = {"tiny_av_flow": "flow", "renders": "renders", "random init": "random_init"}
    return [ResultRow(name, dict(metrics[key]), se=errors[name], info=metrics["flow_matching"] if key == "flow" else {})
            for name, key in keys.items()]


if __name__ == "__main__":
    raise SystemExit(main())
