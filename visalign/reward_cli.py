"""Command-line entries for rewards: ``serve-reward``, ``calibrate``, ``bench ocr``, ``bench rewards``.
``visalign.cli`` adds them with two calls; heavy imports happen when a command runs."""
from __future__ import annotations

import argparse
import json


def _serve(args: argparse.Namespace) -> int:
    from .rewards.server import load_serve_config, serve

    config = load_serve_config(args.config, list(args.overrides))
    if args.host is not None:
        config.host = args.host
    if args.port is not None:
        config.port = args.port
    serve(config)
    return 0


def _calibrate(args: argparse.Namespace) -> int:
    from .run import load_run_config
    from .rewards.calibrate import calibrate

    config = load_run_config(args.config, args.overrides)
    result = calibrate(config, args.out, args.prompts, args.samples_per_prompt, args.batch_size, args.seed,
                       source=str(args.config))
    print(json.dumps(result, indent=2))
    print(f"wrote {args.out}; use it with reward: {{name: multi, calibration: {args.out}, rewards: [...]}}")
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    serve = sub.add_parser("serve-reward", help="serve a reward over HTTP for the 'remote' reward client")
    serve.add_argument("config", help="YAML with a 'reward' section (a run config works) and optional 'serve: {host, port}'")
    serve.add_argument("overrides", nargs="*", help="overrides such as reward.device=cuda:1 serve.port=9000")
    serve.add_argument("--host", default=None, help="address to bind (default 127.0.0.1; no authentication)")
    serve.add_argument("--port", type=int, default=None, help="port (0 picks a free one; default 8765)")
    serve.set_defaults(func=_serve)

    cal = sub.add_parser("calibrate", help="freeze each reward's mean/scale on base-model samples (JSON for 'multi')")
    cal.add_argument("config", help="run config: its generator (the base model), prompts and reward are used")
    cal.add_argument("overrides", nargs="*", help="overrides such as generator.checkpoint=DIR")
    cal.add_argument("--out", default="reward_calibration.json")
    cal.add_argument("--prompts", type=int, default=16, help="prompts drawn from the config's prompt source")
    cal.add_argument("--samples-per-prompt", type=int, default=8)
    cal.add_argument("--batch-size", type=int, default=32)
    cal.add_argument("--seed", type=int, default=0)
    cal.set_defaults(func=_calibrate)


def add_benches(sub: argparse._SubParsersAction) -> None:
    ocr = sub.add_parser("ocr", help="OCR reward speed (rapidocr-onnxruntime, extra 'ocr') on rendered text")
    ocr.add_argument("--images", type=int, default=16)
    ocr.add_argument("--size", type=int, default=256)
    ocr.add_argument("--threads", type=int, default=None)
    ocr.set_defaults(bench_func=lambda a: _bench("ocr_speed").run(a))
    rewards = sub.add_parser("rewards", help="CPU throughput of every model reward at its published size (random weights)")
    rewards.add_argument("--only", nargs="*", default=None, help="reward names to measure (default: all)")
    rewards.add_argument("--images", type=int, default=4)
    rewards.add_argument("--tiny", action="store_true", help="tiny test-size models instead of the published sizes")
    rewards.add_argument("--threads", type=int, default=None)
    rewards.set_defaults(bench_func=lambda a: _bench("reward_speed").run(a))


def _bench(name: str):
    import importlib

    return importlib.import_module(f"visalign.benchmarks.{name}")
