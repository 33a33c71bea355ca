"""``visalign poem`` / ``python -m visalign.poem``: fit ĉ for a new reward from K tuned checkpoints on a calibration
set drawn from the reference, print coverage and ĉ, and save the composed model as a checkpoint folder.

Generator checkpoints (folders with ``generator.json``, flow-matching models) give a ``poem_flow`` generator; causal-LM
folders give a composed text policy. Imports stay inside :func:`run` so ``visalign --help`` stays fast."""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Sequence


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--reference", required=True, help="checkpoint folder of the reference (pre-RL) model")
    parser.add_argument("--bases", nargs="+", required=True, help="checkpoint folders of the K tuned models")
    parser.add_argument("--reward", required=True,
                        help="new reward: a registered name, file.py:Class, or inline YAML such as "
                             "'[{name: brightness, weight: 0.5}, {name: mean_redness, weight: 0.5}]'")
    parser.add_argument("--basis-rewards", nargs="+", default=None,
                        help="the rewards the bases were tuned on (same order); regress on them instead of log-ratios")
    parser.add_argument("--beta", type=float, default=None, help="KL strength of the bases' RL (needed for log-ratio fits)")
    parser.add_argument("--calibration", type=int, default=256, help="calibration samples drawn from the reference")
    parser.add_argument("--group-size", type=int, default=4, help="samples per prompt (centring is within prompts)")
    parser.add_argument("--prompts", default="unconditional",
                        help="prompt source: a registered name (e.g. text_addition) or inline YAML {name: ..., ...}")
    parser.add_argument("--method", choices=["ols", "nnls"], default="ols")
    parser.add_argument("--standardize", action="store_true",
                        help="fit reward z-scores (bases trained with group-normalised advantages, e.g. GRPO)")
    parser.add_argument("--strength", type=float, default=1.0, help="decoding strength lambda")
    parser.add_argument("--per-step", action="store_true", help="flow: one coefficient vector per sampler step")
    parser.add_argument("--level", choices=["token", "sequence"], default="token", help="text: token-level or SIR")
    parser.add_argument("--num-proposals", type=int, default=16, help="text, sequence level: SIR candidates per sample")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True, help="folder for the composed checkpoint and poem_fit.json")


def _spec(text: str) -> Any:
    import yaml

    stripped = text.strip()
    return yaml.safe_load(stripped) if stripped[:1] in "[{" else stripped


def _kind(folder: Path) -> str:
    from ..core.generator import CONFIG_FILE

    if (folder / CONFIG_FILE).is_file():
        return "generator"
    if (folder / "config.json").is_file():
        return "text"
    raise FileNotFoundError(f"{folder} is neither a generator checkpoint ({CONFIG_FILE}) nor a causal-LM folder (config.json)")


def compose_checkpoints(args: argparse.Namespace) -> dict[str, Any]:
    """Everything ``visalign poem`` does; returns the fit summary written to ``poem_fit.json``."""
    import torch

    from ..core.prompts import build_prompt_source
    from ..core.reward import build_reward
    from .calibrate import calibrate_flow, calibrate_text, fit_calibration

    folders = [Path(args.reference), *[Path(b) for b in args.bases]]
    kinds = {_kind(f) for f in folders}
    if len(kinds) != 1:
        raise ValueError("the reference and the bases must all be generator checkpoints or all causal-LM folders")
    kind = kinds.pop()
    if args.basis_rewards is not None and len(args.basis_rewards) != len(args.bases):
        raise ValueError(f"{len(args.basis_rewards)} basis rewards for {len(args.bases)} bases")
    reward = build_reward(_spec(args.reward))
    basis_rewards = [build_reward(_spec(r)) for r in args.basis_rewards] if args.basis_rewards else None
    prompt_spec = _spec(args.prompts)
    prompts = build_prompt_source(prompt_spec if isinstance(prompt_spec, dict) else {"name": prompt_spec})
    generator = torch.Generator().manual_seed(args.seed)
    names = [Path(b).name for b in args.bases]
    if kind == "generator":
        from ..core.generator import load_generator
        from .flow import ComposedFlowGenerator

        reference, bases = load_generator(folders[0]), [load_generator(f) for f in folders[1:]]
        cal = calibrate_flow(reference, bases, reward, prompts, args.calibration, args.group_size, generator, basis_rewards)
        fit, times = fit_calibration(cal, args.beta, args.method, args.standardize, args.per_step, names)
        composed = ComposedFlowGenerator.compose(reference, bases, fit.coef, times, args.strength)
    else:
        from ..text.policy import CausalLMPolicy
        from .text import ComposedCausalLMPolicy

        if args.per_step:
            raise ValueError("--per-step applies to flow generators")
        reference = CausalLMPolicy.from_pretrained(folders[0])
        bases = [CausalLMPolicy.from_pretrained(f) for f in folders[1:]]
        cal = calibrate_text(reference, bases, reward, prompts, args.calibration, args.group_size, generator, basis_rewards)
        fit, times = fit_calibration(cal, args.beta, args.method, args.standardize, False, names)
        composed = ComposedCausalLMPolicy(reference, bases, fit.coef, args.strength, args.level, args.num_proposals)
    out = Path(args.out)
    composed.save_pretrained(out)
    summary = {"kind": kind, "reward": args.reward, **fit.to_dict(), "times": times, "strength": args.strength}
    (out / "poem_fit.json").write_text(json.dumps(summary, indent=2))
    return summary


def run(args: argparse.Namespace) -> int:
    summary = compose_checkpoints(args)
    print(f"coverage (R^2 on {summary['num_samples']} calibration samples, {summary['features']}): {summary['coverage']:.4f}")
    coef = summary["coef"]
    rows = coef if isinstance(coef[0], list) else [coef]
    times = summary["times"] or [None]
    for t, row in zip(times, rows):
        label = "c_hat" if t is None else f"c_hat(t={t:.3f})"
        print(f"{label}: " + ", ".join(f"{n}={c:+.4f}" for n, c in zip(summary["names"], row)))
    print(f"composed model: {args.out}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    import sys

    from ..core.config import ConfigError

    parser = argparse.ArgumentParser(prog="python -m visalign.poem", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except (ConfigError, FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
