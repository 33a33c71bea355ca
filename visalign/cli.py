"""The ``visalign`` command: train, sample, bench, demo. Heavy imports happen inside each command."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Sequence

DEMO_CONFIG = Path(__file__).resolve().parent.parent / "configs" / "demo.yaml"


def _cmd_train(args: argparse.Namespace) -> int:
    import json

    from .run import build_trainer, load_run_config

    if args.help_config:
        return _cmd_config_help(argparse.Namespace(sections=[args.config] if args.config else []))
    if not args.config:
        print("error: visalign train needs a YAML config", file=sys.stderr)
        return 2
    config = load_run_config(args.config, [*args.overrides, *(["trainer.overwrite=true"] if args.overwrite else [])])
    trainer = build_trainer(config)
    start = time.perf_counter()
    summary = trainer.train()
    if trainer.accelerator.is_main_process:
        print(json.dumps(summary, indent=2))
        print(f"run folder: {config.trainer.output_dir}")
        if args.results:
            _write_eval_results(args, trainer.history, summary, time.perf_counter() - start)
    trainer.close()
    return 0


def _write_eval_results(args: argparse.Namespace, history: list[dict], summary: dict, seconds: float) -> None:
    """Result file of a run: eval reward before and after training (``visalign.results`` format)."""
    from .results import ResultRow, Tolerance, write_results

    before = next((r["eval/reward_mean"] for r in history if r.get("step") == 0 and "eval/reward_mean" in r), None)
    if before is None or "eval/reward_mean" not in summary:
        raise ValueError("--results needs the eval reward before and after training; this run logged none")
    values = {"before": before, "after": summary["eval/reward_mean"]}
    command_args = args.command_args if args.command_args is not None else [str(args.config), *args.overrides]
    write_results(args.results, args.results_name, f"visalign {args.command}", command_args,
                  [ResultRow("eval reward", values, info={"steps": summary.get("step")})],
                  tolerance=Tolerance(note="fixed seeds: compared exactly on the platform (and thread count) that wrote it"),
                  note="eval/reward_mean before and after training (the trainer's eval batch and eval seed)",
                  runtime_s=seconds)


def _cmd_config_help(args: argparse.Namespace) -> int:
    from .config_help import config_sections, format_sections

    for spec in args.sections or [None]:
        print(format_sections(config_sections(spec)))
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
    command_args = ["--out", args.out, *(["--config", args.config] if args.config else []), *args.overrides]
    return _cmd_train(argparse.Namespace(config=config, overrides=overrides, results=args.results, results_name="demo",
                                         command="demo", command_args=command_args, overwrite=args.overwrite,
                                         help_config=False))


def _at_least(minimum: int):
    """argparse type: an integer >= ``minimum`` (argparse then reports a bad value as a usage error, exit 2)."""

    def parse(text: str) -> int:
        value = int(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    parse.__name__ = f"integer >= {minimum}"
    return parse


def _cmd_sample(args: argparse.Namespace) -> int:
    import torch

    from .core.generator import load_generator
    from .trainer.visuals import save_samples

    Path(args.out).parent.mkdir(parents=True, exist_ok=True)  # an unwritable --out fails before any sampling
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
    overhead.add_argument("--results", default=None, help="also write a result file (visalign.results format)")
    overhead.set_defaults(bench_func=lambda a: _bench_module("overhead").run(a))
    transport = sub.add_parser("transport", help="OT (RWTD) and KDE (FestDPO) time as a fraction of a training step")
    transport.add_argument("--batches", nargs="*", type=int, default=[64, 256])
    transport.add_argument("--repeats", type=int, default=5)
    transport.add_argument("--threads", type=int, default=None, help="torch threads (1 gives stable ratios on a busy machine)")
    transport.add_argument("--results", default=None, help="also write a result file (visalign.results format)")
    transport.set_defaults(bench_func=lambda a: _bench_module("transport_overhead").run(a))
    from .reward_cli import add_benches

    add_benches(sub)
    memory = sub.add_parser("memory", help="peak memory and step time of one training step per generator")
    _bench_module("memory").add_arguments(memory)
    memory.set_defaults(bench_func=lambda a: _bench_module("memory").run(a))
    try:
        from .vvr.bench import add_bench_arguments, run_bench
    except ImportError:
        return
    vvr = sub.add_parser("vvr", help="score images or a generator on VVR tasks: visalign's splits or the paper's files (--tasks)")
    add_bench_arguments(vvr)
    vvr.set_defaults(bench_func=run_bench)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="visalign",
        description="Align image, video and audio-video generators (and LLMs) with rewards and preferences.",
        epilog="Examples:\n  visalign demo\n  visalign train configs/demo.yaml trainer.steps=200 algorithm.beta=0.5\n"
        "  visalign sample --checkpoint runs/demo/final --prompt 'a red circle' --out grid.png\n"
        "  visalign bench vvr --split bench --images DIR --out report/\n"
        "  visalign poem --reference REF --bases A B --reward brightness --basis-rewards r_a r_b --out composed/",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    train = sub.add_parser("train", help="train from a YAML config with key.path=value overrides")
    train.add_argument("config", nargs="?", help="YAML run config (sections: generator, reward, algorithm, prompts, trainer)")
    train.add_argument("overrides", nargs="*", help="overrides such as trainer.steps=200")
    train.add_argument("--results", default=None, help="also write eval reward before/after as a result file (JSON)")
    train.add_argument("--overwrite", action="store_true", help="write into a non-empty output folder (trainer.overwrite=true)")
    train.add_argument("--help-config", action="store_true",
                       help="print the fields (type, default, help) of the config's trainer, algorithm and generator "
                            "sections (of every section without a config) and exit")
    train.set_defaults(func=_cmd_train, results_name="train", command_args=None)

    config_help = sub.add_parser("config-help", help="print config fields with type, default and help text")
    config_help.add_argument("sections", nargs="*", help="run, trainer, algorithm, generator, an algorithm or generator "
                             "name (e.g. diffusion_nft, tiny_flow) or a YAML run config; none: everything")
    config_help.set_defaults(func=_cmd_config_help)

    train_reward = sub.add_parser("train-reward", help="fit a latent reward model to preference pairs (YAML config)")
    train_reward.add_argument("config", help="YAML: pairs (safetensors), output_dir, lrm (model keys), training")
    train_reward.add_argument("overrides", nargs="*", help="overrides such as training.steps=200")
    train_reward.set_defaults(func=_cmd_train_reward)

    demo = sub.add_parser("demo", help="the embedded demo: align the shipped tiny generator on CPU in minutes")
    demo.add_argument("--out", default="runs/demo", help="run folder (default: runs/demo)")
    demo.add_argument("--config", default=None, help=f"config to use instead of {DEMO_CONFIG.name}")
    demo.add_argument("--results", default=None, help="also write eval reward before/after as a result file (JSON)")
    demo.add_argument("overrides", nargs="*", help="overrides such as trainer.steps=50")
    demo.add_argument("--overwrite", action="store_true", help="write into a non-empty --out folder (a previous demo's)")
    demo.set_defaults(func=_cmd_demo)

    sample = sub.add_parser("sample", help="draw samples from a generator checkpoint into an image grid")
    sample.add_argument("--checkpoint", required=True, help="folder written by Generator.save_pretrained")
    sample.add_argument("--prompt", action="append", help="a prompt (repeatable)")
    sample.add_argument("--prompts-file", help="text file with one prompt per line")
    sample.add_argument("--n", type=_at_least(1), default=16, help="number of samples for unconditional generators")
    sample.add_argument("--seed", type=_at_least(0), default=0)
    sample.add_argument("--out", default="samples.png")
    sample.set_defaults(func=_cmd_sample)

    from .poem.cli import add_arguments as add_poem_arguments, run as run_poem

    poem = sub.add_parser("poem", help="PoEM: compose tuned checkpoints for a new reward (coverage, c_hat, composed model)")
    add_poem_arguments(poem)
    poem.set_defaults(func=run_poem)

    bench = sub.add_parser("bench", help="benchmarks: vvr (VVRBench reports), overhead (trainer cost), transport (OT/KDE cost), memory (peak memory, step time)")
    _add_bench_commands(bench)
    bench.set_defaults(func=_cmd_bench)
    from .reward_cli import add_commands

    add_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run a command. Bad user input (config, file, flag, task; :class:`~visalign.core.errors.InputError` and
    missing, unreadable or unwritable files) prints ``error: …`` and returns 2; any other exception is a bug and
    keeps its traceback."""
    args = build_parser().parse_args(argv)
    from .core.errors import InputError

    input_errors: tuple[type[Exception], ...] = (InputError, FileNotFoundError, PermissionError, NotADirectoryError,
                                                 IsADirectoryError, FileExistsError)
    if args.command == "poem":
        input_errors += (ValueError,)
    try:
        return args.func(args)
    except input_errors as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
