"""The ``visalign`` command: train, sample, bench, demo. Heavy imports happen inside each command."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

DEMO_CONFIG = Path(__file__).resolve().parent.parent / "configs" / "demo.yaml"


def _cmd_train(args: argparse.Namespace) -> int:
    import json

    from .run import build_trainer, load_run_config

    config = load_run_config(args.config, args.overrides)
    trainer = build_trainer(config)
    summary = trainer.train()
    if trainer.accelerator.is_main_process:
        print(json.dumps(summary, indent=2))
        print(f"run folder: {config.trainer.output_dir}")
    trainer.close()
    return 0


def _cmd_train_reward(args: argparse.Namespace) -> int:
    import json

    from .rewards.latent.train import main as train_reward

    print(json.dumps(train_reward(args.config, args.overrides), indent=2))
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    config = args.config or DEMO_CONFIG
    if not Path(config).is_file():
        print(f"error: demo config not found: {config}", file=sys.stderr)
        return 2
    overrides = [f"trainer.output_dir={args.out}", *args.overrides]
    return _cmd_train(argparse.Namespace(config=config, overrides=overrides))


def _cmd_sample(args: argparse.Namespace) -> int:
    import torch

    from .core.generator import load_generator
    from .trainer.visuals import save_samples

    generator = load_generator(args.checkpoint)
    prompts = list(args.prompt) if args.prompt else None
    if args.prompts_file:
        prompts = [p.strip() for p in Path(args.prompts_file).read_text().splitlines() if p.strip()]
    samples = generator.sample(prompts, n=None if prompts else args.n, generator=torch.Generator().manual_seed(args.seed))
    out = save_samples(samples, Path(args.out), prompts)
    print(f"wrote {out}")
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    return args.bench_func(args)


def _bench_module(name: str):
    import importlib

    return importlib.import_module(f"visalign.benchmarks.{name}")


def _add_bench_commands(bench: argparse.ArgumentParser) -> None:
    sub = bench.add_subparsers(dest="bench_name", metavar="BENCH", required=True)
    overhead = sub.add_parser("overhead", help="trainer time per step vs the bare generator forward+backward")
    overhead.add_argument("--batch-size", type=int, default=64)
    overhead.add_argument("--steps", type=int, default=20)
    overhead.add_argument("--algorithm", default="rwr", help="objective used in the full loop")
    overhead.add_argument("--threads", type=int, default=None, help="torch threads (1 gives stable ratios on a busy machine)")
    overhead.set_defaults(bench_func=lambda a: _bench_module("overhead").run(a))
    transport = sub.add_parser("transport", help="OT (RWTD) and KDE (FestDPO) time as a fraction of a training step")
    transport.add_argument("--batches", nargs="*", type=int, default=[64, 256])
    transport.add_argument("--repeats", type=int, default=5)
    transport.add_argument("--threads", type=int, default=None, help="torch threads (1 gives stable ratios on a busy machine)")
    transport.set_defaults(bench_func=lambda a: _bench_module("transport_overhead").run(a))
    try:
        from .vvr.bench import add_bench_arguments, run_bench
    except ImportError:
        return
    vvr = sub.add_parser("vvr", help="score images or a generator on VVRBench / VVRBench-Challenge")
    add_bench_arguments(vvr)
    vvr.set_defaults(bench_func=run_bench)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="visalign",
        description="Align image, video and audio-video generators (and LLMs) with rewards and preferences.",
        epilog="Examples:\n  visalign demo\n  visalign train configs/demo.yaml trainer.steps=200 algorithm.beta=0.5\n"
        "  visalign sample --checkpoint runs/demo/final --prompt 'a red circle' --out grid.png\n"
        "  visalign bench vvr --split bench --images DIR --out report/",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    train = sub.add_parser("train", help="train from a YAML config with key.path=value overrides")
    train.add_argument("config", help="YAML run config (sections: generator, reward, algorithm, prompts, trainer)")
    train.add_argument("overrides", nargs="*", help="overrides such as trainer.steps=200")
    train.set_defaults(func=_cmd_train)

    train_reward = sub.add_parser("train-reward", help="fit a latent reward model to preference pairs (YAML config)")
    train_reward.add_argument("config", help="YAML: pairs (safetensors), output_dir, lrm (model keys), training")
    train_reward.add_argument("overrides", nargs="*", help="overrides such as training.steps=200")
    train_reward.set_defaults(func=_cmd_train_reward)

    demo = sub.add_parser("demo", help="the embedded demo: align the shipped tiny generator on CPU in minutes")
    demo.add_argument("--out", default="runs/demo", help="run folder (default: runs/demo)")
    demo.add_argument("--config", default=None, help=f"config to use instead of {DEMO_CONFIG.name}")
    demo.add_argument("overrides", nargs="*", help="overrides such as trainer.steps=50")
    demo.set_defaults(func=_cmd_demo)

    sample = sub.add_parser("sample", help="draw samples from a generator checkpoint into an image grid")
    sample.add_argument("--checkpoint", required=True, help="folder written by Generator.save_pretrained")
    sample.add_argument("--prompt", action="append", help="a prompt (repeatable)")
    sample.add_argument("--prompts-file", help="text file with one prompt per line")
    sample.add_argument("--n", type=int, default=16, help="number of samples for unconditional generators")
    sample.add_argument("--seed", type=int, default=0)
    sample.add_argument("--out", default="samples.png")
    sample.set_defaults(func=_cmd_sample)

    bench = sub.add_parser("bench", help="benchmarks: vvr (VVRBench reports), overhead (trainer cost), transport (OT/KDE cost)")
    _add_bench_commands(bench)
    bench.set_defaults(func=_cmd_bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from .core.config import ConfigError

    input_errors: tuple[type[Exception], ...] = (ConfigError, FileNotFoundError)
    if args.command == "bench" and args.bench_name == "vvr":
        from .vvr.bench import BenchInputError

        input_errors += (BenchInputError,)
    try:
        return args.func(args)
    except input_errors as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
