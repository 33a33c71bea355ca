"""Tilted-target toys: each method vs the exact target T_β[p_ref] ∝ p_ref·exp(r/β) on a 2-D ring mixture.

Prints MMD and sliced W2 to exact target samples (importance resampling from 200k reference samples) next to
the noise floor (two independent target sets of the same size), and saves the RWTD λ curve (reward vs distance
to the reference), a scatter of the samples and ``results.json``.

References: the shipped checkpoints ``assets/toy/{one_step_ring,flow_ring}`` (``pipelines/toy_references.py``);
``--pretrain`` fits fresh 128-wide ones instead. Methods use the linear reward r = x₀ (β = 1). The λ curve uses the
quadratic reward r = −½‖x − (1, 1)‖², which is bounded above: with an unbounded reward on-policy tilting (λ > 0) has
no fixed point and the current samples run off to infinity.

    python pipelines/toy_tilt.py --out runs/toy_tilt            # all methods + λ curve (177 s and 209 s measured on
                                                                 # one thread of a busy 2-core machine)
    python pipelines/toy_tilt.py --methods rwtd --lams 0 0.5     # a quick subset
"""
from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path

import torch

from visalign.algorithms import FestDPO, FestDPOConfig, FlowGRPO, FlowGRPOConfig, RewardBackprop, RewardBackpropConfig, RWR, RWRConfig, RWTD, RWTDConfig
from visalign.core import Unconditional
from visalign.generators import ToyFlowGenerator, ToyOneStepGenerator
from visalign.generators.toy import ToyConfig
from visalign.core.generator import load_generator
from visalign.rewards.toy import ToyLinearReward, ToyQuadraticReward
from visalign.toys import mmd_rbf, noise_floor, ring_mixture, sliced_w2, tilted_reference_sample
from visalign.toys.pretrain import pretrain_flow, pretrain_one_step
from visalign.results import ResultRow, Tolerance, write_results
from visalign.trainer import Trainer, TrainerConfig

N_EVAL = 2000
ASSETS = Path(__file__).resolve().parents[1] / "assets" / "toy"


def train(policy, algorithm, reward, reference, schedule, out: Path) -> float:
    """Shared Trainer, ``schedule`` = (steps, peak lr) with cosine decay to 0.1·lr; returns seconds per step."""
    steps, lr = schedule
    start = time.perf_counter()
    cfg = TrainerConfig(steps=steps, prompts_per_step=1, learning_rate=lr, lr_schedule="cosine", min_lr_ratio=0.1, log_with=[],
                        progress=False, output_dir=str(out), max_grad_norm=None, eval_batch_size=8, overwrite=True)
    Trainer(policy, algorithm, reward, Unconditional(), cfg, reference=reference).train()
    return (time.perf_counter() - start) / max(steps, 1)


def trainable(reference):
    policy = copy.deepcopy(reference)
    policy.requires_grad_(True)
    return policy.train()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/toy_tilt")
    parser.add_argument("--beta", type=float, default=1.0)
    parser.add_argument("--methods", nargs="*", default=["rwtd", "festdpo_one_step", "festdpo_flow", "rwr", "reward_backprop", "flow_grpo"])
    parser.add_argument("--lams", nargs="*", type=float, default=[0.0, 0.25, 0.5, 0.75, 0.9])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pretrain", action="store_true", help="fit fresh 128-wide references instead of the shipped ones")
    parser.add_argument("--results", default=None, help="also write the result file (visalign.results format) here")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    torch.set_num_threads(1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(args.seed)
    mix, reward, beta = ring_mixture(), ToyLinearReward((1.0, 0.0)), args.beta
    curve_reward = ToyQuadraticReward((1.0, 1.0), scale=0.5)

    if args.pretrain:
        print("pretraining references on the 8-mode ring ...", flush=True)
        one = ToyOneStepGenerator(ToyConfig(hidden=128, layers=3))
        pretrain_one_step(one, mix.sample, steps=1000)
        flow = ToyFlowGenerator(ToyConfig(hidden=128, layers=3, num_steps=4))
        pretrain_flow(flow, mix.sample, steps=2000)
    else:
        one, flow = load_generator(ASSETS / "one_step_ring"), load_generator(ASSETS / "flow_ring")
    refs = {"one_step": one.frozen_copy(), "flow": flow.frozen_copy()}

    def target_sampler(reference, r):
        def sample(n, g):
            seed = int(torch.randint(0, 2**31 - 1, (1,), generator=g))
            return tilted_reference_sample(lambda k, gg: reference.sample(n=k, generator=gg), r, beta, n, seed=seed)[0]
        return sample

    evals = {}
    for key, (family, r) in {"one_step": ("one_step", reward), "flow": ("flow", reward), "curve": ("one_step", curve_reward)}.items():
        ref = refs[family]
        sampler = target_sampler(ref, r)
        floor = noise_floor(sampler, N_EVAL, repeats=5)
        floor_sw = noise_floor(sampler, N_EVAL, distance=sliced_w2, repeats=5)
        evals[key] = (ref, sampler(N_EVAL, torch.Generator().manual_seed(1)), floor, floor_sw, r)

    def measure(policy, family):
        ref, target, floor, floor_sw, reward = evals[family]
        with torch.no_grad():
            x = policy.sample(n=N_EVAL, generator=torch.Generator().manual_seed(2))
            x_ref = ref.sample(n=N_EVAL, generator=torch.Generator().manual_seed(3))
        return {"mmd": mmd_rbf(x, target), "mmd_floor": floor[0], "sw2": sliced_w2(x, target), "sw2_floor": floor_sw[0],
                "reward": float(reward(x).mean()), "target_reward": float(reward(target).mean()),
                "mmd_to_reference": mmd_rbf(x, x_ref)}, x

    runs = {
        "rwtd": ("one_step", lambda: RWTD(RWTDConfig(lam=0.0, beta=beta, num_current=256, num_reference=1024, solver="emd")), (300, 1e-3)),
        # one-step FestDPO anneals the bandwidth from 2.8× to 0.7× Silverman so mass can move between ring modes (festdpo.py docstring)
        "festdpo_one_step": ("one_step", lambda: FestDPO(FestDPOConfig(beta=beta, num_samples=1024, num_pairs=512, bandwidth="silverman",
                                                                        bandwidth_scales=[0.7], bandwidth_anneal=4.0,
                                                                        bandwidth_anneal_steps=250)), (500, 3e-3)),
        "festdpo_flow": ("flow", lambda: FestDPO(FestDPOConfig(beta=beta, num_samples=1024, num_pairs=512, bandwidth="silverman")), (300, 2e-3)),
        "rwr": ("flow", lambda: RWR(RWRConfig(beta=beta, num_samples=256, normalize_rewards=False)), (300, 1e-3)),
        "reward_backprop": ("one_step", lambda: RewardBackprop(RewardBackpropConfig(num_samples=256, anchor_weight=0.5)), (300, 1e-3)),
        "flow_grpo": ("flow", lambda: FlowGRPO(FlowGRPOConfig(group_size=256, num_steps=4, kl_beta=0.04)), (300, 1e-3)),
    }
    results, samples = {}, {}
    for name in args.methods:
        family, make, schedule = runs[name]
        policy = trainable(refs[family])
        sec = train(policy, make(), reward, refs[family], schedule, out / name)
        results[name], samples[name] = measure(policy, family)
        results[name].update(family=family, seconds_per_step=sec)
        r = results[name]
        print(f"{name:18s} [{family:8s}] MMD {r['mmd']:.4f} (floor {r['mmd_floor']:.4f})  SW2 {r['sw2']:.4f} (floor {r['sw2_floor']:.4f})  "
              f"reward {r['reward']:.3f} (target {r['target_reward']:.3f})  MMD-to-ref {r['mmd_to_reference']:.3f}  {sec*1000:.0f} ms/step", flush=True)

    curve = []
    for lam in args.lams:
        policy = trainable(refs["one_step"])
        sec = train(policy, RWTD(RWTDConfig(lam=lam, beta=beta, num_current=256, num_reference=512, solver="emd")), curve_reward,
                    refs["one_step"], (250, 1e-3), out / f"lam_{lam}")
        m, _ = measure(policy, "curve")
        m["seconds_per_step"] = sec
        curve.append({"lam": lam, **m})
        print(f"RWTD λ={lam:.2f}: reward {m['reward']:.3f}  MMD-to-reference {m['mmd_to_reference']:.4f}  "
              f"MMD-to-T_β[p_ref] {m['mmd']:.4f} (floor {m['mmd_floor']:.4f})", flush=True)

    setup = {"beta": beta, "n_eval": N_EVAL, "method_reward": "toy_linear (1, 0)", "curve_reward": "toy_quadratic centre (1, 1) scale 0.5",
             "references": "pretrained 128-wide" if args.pretrain else str(ASSETS), "seed": args.seed}
    (out / "results.json").write_text(json.dumps({"setup": setup, "methods": results, "lambda_curve": curve}, indent=2))
    plot(out, curve, samples, evals)
    print(f"wrote {out}/results.json, {out}/lambda_curve.png, {out}/samples.png")
    if args.results:
        write_results(args.results, "toy_tilt", "python pipelines/toy_tilt.py", sys.argv[1:] if argv is None else argv,
                      result_rows(results, curve), tolerance=Tolerance(note="fixed seeds, one thread: compared exactly"),
                      note="distances to exact samples of the tilted target (methods, linear reward) and the RWTD λ "
                           "curve (quadratic reward); pictures: lambda_curve.png, samples.png",
                      runtime_s=time.perf_counter() - start)
    return 0


def result_rows(methods: dict[str, dict], curve: list[dict]) -> list[ResultRow]:
    """One row per method and one per λ of the curve; seconds per step are ``info`` (wall time is not compared)."""
    def row(name: str, measured: dict) -> ResultRow:
        values = {k: float(v) for k, v in measured.items() if isinstance(v, (int, float)) and k not in ("seconds_per_step", "lam")}
        info = {k: measured[k] for k in ("family", "seconds_per_step") if k in measured}
        return ResultRow(name, values, info=info)

    return [row(name, m) for name, m in methods.items()] + [row(f"lam={c['lam']:g}", c) for c in curve]


def plot(out: Path, curve, samples, evals) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if curve:
        fig, ax = plt.subplots(figsize=(4.5, 3.5))
        ax.plot([c["mmd_to_reference"] for c in curve], [c["reward"] for c in curve], "o-")
        for c in curve:
            ax.annotate(f"λ={c['lam']:g}", (c["mmd_to_reference"], c["reward"]), textcoords="offset points", xytext=(4, -10), fontsize=8)
        ax.axhline(curve[0]["target_reward"], ls="--", c="gray", lw=0.8, label="E_T[r] (λ=0 target)")
        ax.set_title("RWTD over λ (r = −½‖x − (1,1)‖²)", fontsize=9)
        ax.set_xlabel("MMD to reference samples")
        ax.set_ylabel("mean reward")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out / "lambda_curve.png", dpi=120)
        plt.close(fig)
    if samples:
        fig, axes = plt.subplots(1, len(samples) + 1, figsize=(3 * (len(samples) + 1), 3), sharex=True, sharey=True)
        target = evals["one_step"][1]
        axes[0].scatter(target[:, 0], target[:, 1], s=1)
        axes[0].set_title("target (one-step ref)")
        for ax, (name, x) in zip(axes[1:], samples.items()):
            ax.scatter(x[:, 0], x[:, 1], s=1)
            ax.set_title(name, fontsize=9)
        axes[0].set_xlim(-3.5, 3.5)  # shared axes; runaway baselines (rwr, flow_grpo) leave the frame
        axes[0].set_ylim(-3.5, 3.5)
        fig.tight_layout()
        fig.savefig(out / "samples.png", dpi=100)
        plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
