"""Text pipeline: 2-digit addition with a tiny GPT-2, brief supervised warm-up, then RL with each advantage
estimator (GRPO, Dr.GRPO, RLOO, MaPP) under the same rollout budget on the shared Trainer.

Prints greedy exact-match accuracy on held-out prompts before and after RL for every estimator.

    python pipelines/text_arithmetic.py                     # 32 s on 2 idle cores (measured); 11 min at load 7
    python pipelines/text_arithmetic.py --seeds 0 1 2 3 4   # the whole comparison per seed, mean ± SE over seeds
    python pipelines/text_arithmetic.py --rl-steps 2 --pretrain-steps 20   # smoke run

The run is deterministic for one CPU, library versions and ``--threads``, and only there: the 400 warm-start steps at
learning rate 3e-3 amplify float rounding, so another thread count gives another warm start (0.31-0.53 instead of
0.379 for 1, 3 or 4 threads) and another table, and another CPU or library version can do the same. Compare
estimators over seeds, not within one run.

A warm start already in ``<output>/warm_start`` is reused. Same budget for every estimator: ``rl_steps x
prompts_per_step x group_size`` sampled completions (default 60 x 16 x 8 = 7680), learning rate 3e-4, PPO clip 0.2,
no KL; Dr.GRPO uses the constant-normaliser loss aggregation, the others the token mean.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

from visalign.text import (
    ADDITION_CHARS,
    AdditionTask,
    CausalLMPolicy,
    ExactMatchReward,
    TextGRPO,
    TextGRPOConfig,
    char_tokenizer,
    tiny_causal_lm,
)
from visalign.results import ResultRow, Tolerance, write_results
from visalign.trainer import Trainer, TrainerConfig


def accuracy(policy: CausalLMPolicy, prompts: list[str], metadata: list[dict], reward: ExactMatchReward) -> float:
    s = policy.sample(prompts, None, greedy=True)
    return float(reward(s.texts, prompts, metadata).mean())


def pretrain(task: AdditionTask, folder: Path, steps: int, batch: int, lr: float, seed: int) -> tuple[CausalLMPolicy, float]:
    """Supervised next-token warm-up on training pairs (answer tokens + EOS), saved to ``folder``; returns the policy
    and its mean loss over the last 10 steps."""
    tok = char_tokenizer(ADDITION_CHARS)
    policy = CausalLMPolicy(tiny_causal_lm(tok, "gpt2", hidden=64, layers=2, heads=4, max_positions=32, seed=seed), tok,
                            max_new_tokens=4, temperature=1.0)
    prompts, meta = task.split("train")
    opt = torch.optim.AdamW(policy.parameters(), lr=lr)
    g = torch.Generator().manual_seed(seed)
    losses = []
    for step in range(steps):
        idx = torch.randint(len(prompts), (batch,), generator=g).tolist()
        pi, pm = policy.encode_prompts([prompts[i] for i in idx])
        ci, cm = policy.encode_completions([meta[i]["answer"] for i in idx])
        loss = -(policy.token_logprobs(pi, pm, ci, cm).sum() / cm.sum())
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    policy.save_pretrained(folder)
    return policy, sum(losses[-10:]) / max(len(losses[-10:]), 1)


ESTIMATORS = ("grpo", "dr_grpo", "rloo", "mapp")


def run_seed(args: argparse.Namespace, seed: int, out: Path) -> dict:
    """Warm start (or reuse ``out/warm_start``), then RL with every estimator; accuracies, training rewards and times."""
    task = AdditionTask(digits=2, num_eval=256, seed=seed)
    reward = ExactMatchReward()
    eval_prompts, eval_meta = task.split("eval")
    warm = out / "warm_start"
    t0 = time.time()
    if (warm / "config.json").is_file():
        print(f"reusing warm start {warm}")
        pretrain_s = pretrain_loss = None
    else:
        _, pretrain_loss = pretrain(task, warm, args.pretrain_steps, 64, args.pretrain_lr, seed)
        pretrain_s = time.time() - t0
        print(f"pretrained {args.pretrain_steps} steps in {pretrain_s:.0f}s")
    base = CausalLMPolicy.from_pretrained(warm)
    before = accuracy(base, eval_prompts, eval_meta, reward)
    print(f"seed {seed}: held-out exact match before RL: {before:.3f}  ({len(eval_prompts)} prompts)")
    results = {"seed": seed, "before": before, "pretrain_loss": pretrain_loss,
               "pretrain_seconds": None if pretrain_s is None else round(pretrain_s, 1)}
    for name in args.estimators.split(","):
        t = time.time()
        policy = CausalLMPolicy.from_pretrained(warm)
        algo = TextGRPO(TextGRPOConfig(group_size=args.group_size, advantage=name))
        cfg = TrainerConfig(steps=args.rl_steps, prompts_per_step=args.prompts_per_step, learning_rate=args.lr, max_grad_norm=1.0,
                            eval_batch_size=len(eval_prompts), output_dir=str(out / name), seed=seed, log_with=[],
                            cpu=True, progress=False, overwrite=True)
        trainer = Trainer(policy, algo, reward, task.prompt_source(), cfg)
        summary = trainer.train()
        after = accuracy(policy, eval_prompts, eval_meta, reward)
        train_rewards = [r["reward/mean"] for r in trainer.history if "reward/mean" in r]
        results[name] = {"after": after, "trainer_eval": summary.get("eval/reward_mean"),
                         "train_reward": sum(train_rewards) / max(len(train_rewards), 1), "seconds": round(time.time() - t, 1)}
        print(f"{name:8s} held-out exact match {before:.3f} -> {after:.3f}   ({time.time() - t:.0f}s)", flush=True)
    results["seconds"] = round(time.time() - t0, 1)
    return results


def result_rows(per_seed: list[dict], estimators: list[str]) -> list[ResultRow]:
    """One row for the warm start (held-out exact match, final pretraining loss) and one per estimator (held-out exact
    match, its gain over the warm start of the same seed, mean training reward): means over seeds, with standard
    errors when there are several; times are ``info``."""
    def stats(values: list[float]) -> tuple[float, float | None]:
        n = len(values)
        mean = sum(values) / n
        return mean, (statistics.stdev(values) / n ** 0.5 if n > 1 else None)

    def row(name: str, columns: dict[str, list[float]], info: dict) -> ResultRow:
        values, se = {}, {}
        for column, series in columns.items():
            values[column], err = stats(series)
            if err is not None:
                se[column] = err
        return ResultRow(name, values, se, info)

    warm = {"exact_match": [r["before"] for r in per_seed]}
    if all(r["pretrain_loss"] is not None for r in per_seed):  # not when a warm start was reused
        warm["pretrain_loss"] = [r["pretrain_loss"] for r in per_seed]
    rows = [row("warm start", warm, {"pretrain_seconds": [r["pretrain_seconds"] for r in per_seed]})]
    for name in estimators:
        rows.append(row(name, {"exact_match": [r[name]["after"] for r in per_seed],
                               "gain": [r[name]["after"] - r["before"] for r in per_seed],
                               "train_reward": [r[name]["train_reward"] for r in per_seed]},
                        {"seconds": [r[name]["seconds"] for r in per_seed]}))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--output", default="runs/text_arithmetic")
    ap.add_argument("--pretrain-steps", type=int, default=400)
    ap.add_argument("--pretrain-lr", type=float, default=3e-3)
    ap.add_argument("--rl-steps", type=int, default=60)
    ap.add_argument("--prompts-per-step", type=int, default=16)
    ap.add_argument("--group-size", type=int, default=8)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--estimators", default=",".join(ESTIMATORS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seeds", type=int, nargs="+", default=None,
                    help="run the whole comparison once per seed (warm start included) and report mean ± SE")
    ap.add_argument("--threads", type=int, default=2, help="torch threads (the numbers depend on it, see the docstring)")
    ap.add_argument("--results", default=None, help="also write the result file (visalign.results format) here")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    out = Path(args.output)
    estimators = args.estimators.split(",")
    unknown = sorted(set(estimators) - set(ESTIMATORS))
    if unknown:
        ap.error(f"unknown estimators {unknown}; choose from {list(ESTIMATORS)}")
    seeds = args.seeds or [args.seed]
    start = time.time()
    per_seed = [run_seed(args, s, out if len(seeds) == 1 else out / f"seed_{s}") for s in seeds]
    completions = args.rl_steps * args.prompts_per_step * args.group_size
    setup = {"rl_steps": args.rl_steps, "prompts_per_step": args.prompts_per_step, "group_size": args.group_size,
             "completions": completions}
    results = {**per_seed[0], **setup} if len(seeds) == 1 else {"seeds": per_seed, **setup}
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))
    if args.results:
        several = len(seeds) > 1
        write_results(args.results, "text_arithmetic", "python pipelines/text_arithmetic.py",
                      sys.argv[1:] if argv is None else argv, result_rows(per_seed, estimators),
                      tolerance=Tolerance(note="deterministic for one platform and thread count: compared exactly"),
                      platform_tolerance=Tolerance(se_multiple=2.0, note="across platforms the float path differs and "
                                                   "training diverges: within 2 combined standard errors") if several else None,
                      note=f"held-out greedy exact match on 256 2-digit additions after {completions} RL completions; "
                           + (f"mean ± SE over seeds {seeds}" if several else f"seed {seeds[0]}"),
                      runtime_s=time.time() - start)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
