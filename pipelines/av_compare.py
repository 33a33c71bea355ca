"""AV-GRPO against joint GRPO, video-SDE-only and per-modality-routed GRPO on one base audio-video flow model.

Per method (``av_grpo`` modes anchored / joint / video_sde / routed, same steps, prompts, learning rate and reward):
desync, each modality's quality and prompt alignment before -> after on a fixed evaluation set (same prompts and
noise; paired standard errors), rollouts used (generator samples drawn, the anchored reference draw included),
seconds per step, and the rollouts AV-GRPO needed to first match joint GRPO's final desync gain (evaluated every
``--eval-every`` steps; ``--budget-curve fixed`` measures that curve on the table's fixed evaluation set, so the
budget agrees with the table's desync change). Also: Spearman correlation, within groups, between the trained
modality's advantage and its own quality metric in anchored rollouts (and, for contrast, in joint rollouts). Writes ``results.json``, a contact
sheet (frames with the waveform under them, base and after each method) and the desync curves.

    python pipelines/av_compare.py --model toy            # toy two-tower MLP flow (visalign.toys.av_toy), ~45-85 s (4 methods x 320 steps)
    python pipelines/av_compare.py --model tiny_av --checkpoint assets/av/tiny_av_flow   # the tiny transformer AV model
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Sequence

import torch

from visalign.core import PromptList, build_algorithm, build_reward, load_generator
from visalign.core.config import apply_overrides
from visalign.core.types import cat_samples, index_samples
from visalign.results import ResultRow, Tolerance, write_results
from visalign.rewards.av_verifiers import av_parts, bounce_fit
from visalign.trainer import Trainer, TrainerCallback, TrainerConfig

METHODS = {"av_grpo": "anchored", "joint_grpo": "joint", "video_sde": "video_sde", "routed": "routed"}
COMPONENTS = {"av_video_quality": 10.0, "av_audio_quality": 0.05, "av_video_alignment": 1.0, "av_audio_alignment": 1.0,
              "av_desync": 1.0}  # weights of the summed reward (joint / video_sde): each component's spread ~ 1
EVAL_SEED = 10_000  # noise seed of the fixed evaluation set
REPORTED = ["av_desync", "av_video_quality", "av_audio_quality", "av_video_alignment", "av_audio_alignment"]
VISIBLE = "av_video_quality_visible"  # av_video_quality with a resolution (--eval-video-tolerance-px), evaluation only


def make_reward(min_travel: float, extra: Sequence[str] = ()):
    """The summed reward of the five verifiers; ``min_travel`` is av_video_quality's (0: the motion fit alone, which
    objectless frames win). ``extra``: other registered rewards to score beside them at weight 0 (components a reward
    set can name, e.g. the no-signal ``null_score`` control, that the summed reward leaves out)."""
    options = {"av_video_quality": {"min_travel": min_travel}}
    weights = {**COMPONENTS, **{k: 0.0 for k in extra if k not in COMPONENTS}}
    return build_reward({"name": "multi", "rewards": [{"name": k, "weight": w, **options.get(k, {})}
                                                      for k, w in weights.items()]})


def toy_base(path: Path, steps: int, seed: int = 0):
    """The toy AV flow pretrained by flow matching on clips whose audio is up to one half frame early or late."""
    from visalign.toys.av_toy import ToyAVConfig, ToyAVFlow, toy_av_data

    if (path / "generator.json").is_file():
        return load_generator(path)
    torch.manual_seed(seed)
    model = ToyAVFlow(ToyAVConfig(hidden=128, layers=3, num_steps=4))
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    g = torch.Generator().manual_seed(seed)
    prompts = world_prompts()
    for step in range(steps):
        batch = [prompts[i] for i in torch.randint(len(prompts), (256,), generator=g).tolist()]
        x0 = toy_av_data(batch, model.config, g, max_jitter=1)
        loss = model.flow_matching_loss(x0, model.encode(batch), generator=g)
        opt.zero_grad()
        loss.backward()
        for group in opt.param_groups:
            group["lr"] = 2e-3 * 0.5 * (1 + torch.cos(torch.tensor(step / steps * 3.14159)).item())
        opt.step()
    model.save_pretrained(path)
    return model


def world_prompts() -> list[str]:
    from visalign.toys.moving_shapes import all_prompts

    return all_prompts(audio=True)


def toy_prompts() -> list[str]:
    return [f"a red circle bouncing left to right with a {p} beep" for p in ("low", "high")]


def score(samples, prompts: list[str], min_travel: float) -> dict[str, torch.Tensor]:
    """Each verifier's per-sample score of ``samples`` (one per prompt)."""
    reward = make_reward(min_travel)
    reward(samples, prompts, [{}] * len(prompts))
    return {k: v.float() for k, v in reward.components().items()}


def visible_video_quality(samples, prompts: list[str], min_travel: float, tolerance_px: float) -> torch.Tensor:
    """Per-sample ``av_video_quality`` read at a resolution: residuals up to ``tolerance_px`` pixels count as none."""
    reward = build_reward({"name": "av_video_quality", "min_travel": min_travel, "tolerance_px": tolerance_px})
    return reward(samples, prompts, [{}] * len(prompts)).float()


def largest_residual_px(samples) -> float:
    """The largest motion residual (pixels along the motion) of any clip in ``samples``: how far the clips are from
    the resolution of ``visible_video_quality``."""
    fit, pixels = bounce_fit(av_parts(samples, "av_video_quality")[0])
    return round(float((fit.residual * pixels).max()), 4)


def per_sample_metrics(model, prompts: list[str], seed: int, min_travel: float,
                       num_steps: int | None = None) -> tuple[dict[str, torch.Tensor], dict]:
    """Each verifier's per-sample score of the model's ODE samples (``num_steps`` Euler steps; None: its own)."""
    with torch.no_grad():
        noise = model.make_noise(len(prompts), torch.Generator().manual_seed(seed))
        samples = model.generate(noise, model.encode(prompts), num_steps)
    return score(samples, prompts, min_travel), samples


def paired(before: torch.Tensor, after: torch.Tensor) -> dict[str, float | None]:
    """Means before and after, the paired change and its standard error, the change in standard errors (``in_se``)
    and the unrounded change (``exact``): the rounded change of a small metric can read 0.0001 ± 0.0000."""
    diff = after - before
    se = float(diff.std() / diff.numel() ** 0.5)
    return {"before": round(float(before.mean()), 4), "after": round(float(after.mean()), 4),
            "delta": round(float(diff.mean()), 4), "se": round(se, 4),
            "in_se": round(float(diff.mean()) / se, 2) if se > 0 else None, "exact": float(diff.mean())}


class Clock(TrainerCallback):
    """Wall time of the training steps alone (rollout to update)."""

    def __init__(self) -> None:
        self.seconds, self._start = 0.0, 0.0

    def on_rollout_begin(self, trainer) -> None:
        if not self._start:
            self._start = time.perf_counter()

    def on_step_end(self, trainer, metrics) -> None:
        self.seconds += time.perf_counter() - self._start
        self._start = 0.0


class FixedSetDesync(TrainerCallback):
    """At every trainer evaluation, the policy's mean desync on the table's fixed evaluation set (its prompts and
    noise seed): a desync curve whose first and last points are the table's before and after."""

    def __init__(self, prompts: list[str], seed: int, min_travel: float) -> None:
        self.prompts, self.seed, self.min_travel = prompts, seed, min_travel
        self.curve: list[tuple[int, float]] = []

    def on_evaluate(self, trainer, tag, metrics) -> None:
        components, _ = per_sample_metrics(trainer.policy, self.prompts, self.seed, self.min_travel)
        self.curve.append((trainer.step, float(components["av_desync"].mean())))


def spearman(a: torch.Tensor, b: torch.Tensor) -> float:
    ra, rb = a.argsort().argsort().float(), b.argsort().argsort().float()
    ra, rb = ra - ra.mean(), rb - rb.mean()
    return float((ra * rb).sum() / ((ra.norm() * rb.norm()) + 1e-12))


def advantage_correlation(base, prompts: list[str], group: int, seed: int,
                          min_travel: float) -> tuple[dict[str, float], dict[str, float]]:
    """Mean within-group Spearman ρ between a modality's advantage and (a) its own quality metric, (b) its own
    modality-only score (quality and alignment z-scored in the group and summed, desync left out), in anchored
    rollouts and in rollouts where both modalities are sampled (routed); and the standard error of each mean over
    the groups."""
    from visalign.rewards.multi import group_normalize

    from visalign.algorithms.av_grpo import AVGRPO, AVGRPOConfig
    from visalign.core.algorithm import TrainContext
    from visalign.core.types import PromptBatch

    out, errors = {}, {}
    for mode in ("anchored", "routed"):
        for modality in ("video", "audio"):
            algo = AVGRPO(AVGRPOConfig(mode=mode, group_size=group))
            algo.modality = modality
            ctx = TrainContext(base, None, make_reward(min_travel), torch.device("cpu"))
            rollout = algo.rollout(ctx, PromptBatch(prompts), torch.Generator().manual_seed(seed))
            adv = rollout.extras["advantages"][modality].reshape(len(prompts), group)
            comps = ctx.reward.components()
            quality = comps[f"av_{modality}_quality"].float()
            own = group_normalize(quality, group) + group_normalize(comps[f"av_{modality}_alignment"].float(), group)
            name = "anchored" if mode == "anchored" else "both_sde"
            for what, metric in (("quality", quality), ("own_score", own)):
                metric = metric.reshape(len(prompts), group)
                rhos = [spearman(a, o) for a, o in zip(adv, metric) if o.std() > 0]
                key = f"{name}/{modality}/{what}"
                out[key] = round(sum(rhos) / max(len(rhos), 1), 3)
                errors[key] = round(statistics.stdev(rhos) / len(rhos) ** 0.5, 3) if len(rhos) > 1 else 0.0
    return out, errors


def train(method: str, base_path: Path, prompts: list[str], eval_prompts: list[str], args, out: Path):
    policy = load_generator(base_path)
    reference = load_generator(base_path).frozen_copy()
    section = {"name": "av_grpo", "mode": METHODS[method], "group_size": args.group, "num_steps": args.num_steps,
               "steps_per_modality": args.steps_per_modality, "noise_video": args.noise_video,
               "noise_audio": args.noise_audio, "kl_video": args.kl_video, "kl_audio": args.kl_audio,
               "order": args.order, "reset_optimizer": not args.keep_optimizer,
               **({"video_rewards": args.video_rewards} if args.video_rewards else {}),
               **({"audio_rewards": args.audio_rewards} if args.audio_rewards else {})}
    algo = build_algorithm(apply_overrides(section, args.set))
    cfg = TrainerConfig(steps=args.steps, prompts_per_step=args.prompts_per_step, learning_rate=args.lr, max_grad_norm=1.0,
                        eval_every=args.eval_every, eval_batch_size=args.eval_size, log_with=[], progress=True,
                        output_dir=str(out / method), seed=args.seed)
    shutil.rmtree(out / method, ignore_errors=True)  # a fresh metrics.jsonl
    clock = Clock()
    fixed_set = FixedSetDesync(eval_prompts, EVAL_SEED, args.min_travel) if args.budget_curve == "fixed" else None
    extra = [*(args.video_rewards or ()), *(args.audio_rewards or ())]
    trainer = Trainer(policy, algo, make_reward(args.min_travel, extra), PromptList(prompts), cfg, reference=reference,
                      callbacks=[clock, fixed_set] if fixed_set else [clock])
    trainer.train()
    curve = fixed_set.curve if fixed_set else [(r["step"], r["eval/av_desync"]) for r in trainer.history
                                               if "eval/av_desync" in r]
    return policy, {"rollouts": args.steps * args.prompts_per_step * algo.samples_per_prompt,
                    "rollouts_per_step": args.prompts_per_step * algo.samples_per_prompt,
                    "seconds_per_step": round(clock.seconds / args.steps, 3), "desync_curve": curve}


def rollouts_to_match(curve: list[tuple[int, float]], base: float, target_gain: float, per_step: int) -> int | None:
    """Rollouts at the first evaluation whose desync gain over ``base`` reaches ``target_gain`` (None: never)."""
    for step, value in curve:
        if value - base >= target_gain:
            return step * per_step
    return None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=["toy", "tiny_av"], default="toy")
    p.add_argument("--checkpoint", type=Path, default=None, help="tiny_av: the pretrained model folder")
    p.add_argument("--methods", nargs="*", default=list(METHODS), choices=list(METHODS),
                   help="methods to train (none: score the base and its advantage correlations only)")
    p.add_argument("--steps", type=int, default=320)
    p.add_argument("--steps-per-modality", type=int, default=4, help="AV-GRPO block length (a large value and --order "
                   "train one modality only)")
    p.add_argument("--order", nargs=2, default=["video", "audio"], help="AV-GRPO: the modality trained first")
    p.add_argument("--keep-optimizer", action="store_true", help="AV-GRPO ablation: keep the AdamW state across "
                   "modality switches (the method clears it)")
    p.add_argument("--video-rewards", nargs="+", default=None, help="video reward set (default: quality, alignment, desync)")
    p.add_argument("--audio-rewards", nargs="+", default=None, help="audio reward set (default: quality, alignment, desync)")
    p.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                   help="other av_grpo options for every method (e.g. time_weighted=false std_cap=0.1)")
    p.add_argument("--prompts-per-step", type=int, default=2)
    p.add_argument("--group", type=int, default=8)
    p.add_argument("--num-steps", type=int, default=4)
    p.add_argument("--noise-video", type=float, default=0.2)
    p.add_argument("--noise-audio", type=float, default=0.7)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--kl-video", type=float, default=0.01)
    p.add_argument("--kl-audio", type=float, default=0.002)
    p.add_argument("--eval-every", type=int, default=32)
    p.add_argument("--eval-size", type=int, default=64)
    p.add_argument("--pretrain-steps", type=int, default=3000)
    p.add_argument("--eval-video-tolerance-px", type=float, default=None,
                   help="also report av_video_quality read at this resolution (residuals up to this many pixels count "
                        "as none) on the evaluation set; training rewards are unchanged")
    p.add_argument("--min-travel", type=float, default=0.3, help="av_video_quality's min_travel (fraction of the "
                   "frame the fitted bounce must cross; 0: the motion fit alone, as before the travel term existed)")
    p.add_argument("--budget-curve", choices=["periodic", "fixed"], default="periodic",
                   help="the desync curve the budget reads: the trainer's periodic evaluations (their own noise draw) "
                        "or the table's fixed evaluation set at the same steps (agrees with the table; 64 more samples "
                        "per evaluation)")
    p.add_argument("--eval-steps", type=int, default=None, help="Euler steps of the evaluation samples (before and "
                   "after; default: the model's own)")
    p.add_argument("--spearman-prompts", type=int, default=16, help="prompts (groups of --group) of the advantage "
                   "Spearman measurement on the base")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path("runs/av_compare"))
    p.add_argument("--results", default=None, help="also write the result file (visalign.results format) here")
    args = p.parse_args(argv)
    began = time.perf_counter()
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.model == "toy":
        base_path = Path("assets/av_toy/toy_av_flow")
        toy_base(base_path, args.pretrain_steps, args.seed)
        prompts = toy_prompts()
    else:
        if args.checkpoint is None or not (args.checkpoint / "generator.json").is_file():
            raise SystemExit(f"--model tiny_av needs --checkpoint with a pretrained model folder, got {args.checkpoint}")
        base_path, prompts = args.checkpoint, world_prompts()
    eval_prompts = [prompts[i % len(prompts)] for i in range(args.eval_size)]
    base = load_generator(base_path)
    before, base_samples = per_sample_metrics(base, eval_prompts, EVAL_SEED, args.min_travel, args.eval_steps)
    tolerance = args.eval_video_tolerance_px
    reported, results_extra = (REPORTED if tolerance is None else [*REPORTED, VISIBLE]), {}
    if tolerance is not None:
        before[VISIBLE] = visible_video_quality(base_samples, eval_prompts, args.min_travel, tolerance)
        results_extra["base_largest_residual_px"] = largest_residual_px(base_samples)
    rho, rho_se = advantage_correlation(base, [prompts[i % len(prompts)] for i in range(args.spearman_prompts)],
                                        args.group, args.seed, args.min_travel)
    results = {"model": args.model, "settings": {k: str(v) for k, v in vars(args).items()},
               "advantage_spearman_vs_own_quality": rho, "advantage_spearman_se": rho_se,
               "base": {k: round(float(before[k].mean()), 4) for k in reported}, **results_extra, "methods": {}}
    print(json.dumps(results["advantage_spearman_vs_own_quality"]))
    shown = {"base": base_samples}
    for method in args.methods:
        policy, info = train(method, base_path, prompts, eval_prompts, args, args.out)
        after, samples = per_sample_metrics(policy, eval_prompts, EVAL_SEED, args.min_travel, args.eval_steps)
        if tolerance is not None:
            after[VISIBLE] = visible_video_quality(samples, eval_prompts, args.min_travel, tolerance)
            info["largest_residual_px"] = largest_residual_px(samples)
        shown[method] = samples
        info["metrics"] = {k: paired(before[k], after[k]) for k in reported}
        results["methods"][method] = info
        print(method, json.dumps(info["metrics"]), info["rollouts"], info["seconds_per_step"])
    if "av_grpo" in results["methods"] and "joint_grpo" in results["methods"]:
        joint, ours = results["methods"]["joint_grpo"], results["methods"]["av_grpo"]
        start = joint["desync_curve"][0][1]  # the evaluation at step 0 (the same for every method)
        gain = joint["desync_curve"][-1][1] - start
        need = rollouts_to_match(ours["desync_curve"], start, gain, ours["rollouts_per_step"]) if gain > 0 else None
        results["budget"] = {"joint_desync_gain": round(gain, 4), "joint_rollouts": joint["rollouts"],
                             "av_grpo_rollouts_to_match": need,
                             "ratio": round(need / joint["rollouts"], 3) if need is not None else None}
    (args.out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    print_table(results)
    draw(shown, eval_prompts, args.out / "before_after.png")
    if args.results:
        write_results(args.results, f"av_compare_{args.model}", "python pipelines/av_compare.py",
                      sys.argv[1:] if argv is None else argv, result_rows(results),
                      tolerance=Tolerance(note="fixed seeds on one thread: compared exactly"),
                      note=f"{args.model} AV flow, {args.steps} steps, seed {args.seed}: change of each metric on "
                           f"{args.eval_size} fixed evaluation items, paired standard errors; across platforms the "
                           "training diverges by more than those errors (seed-to-seed spread), so no cross-platform "
                           "tolerance is stated",
                      runtime_s=time.perf_counter() - began)
    return 0


def result_rows(results: dict) -> list[ResultRow]:
    """The base's scores, each method's change per metric (paired SE) with its rollouts, the budget AV-GRPO needed
    to match joint GRPO's desync gain, and the within-group advantage Spearman correlations."""
    reported = list(results["base"])
    largest = ({"largest_residual_px": results["base_largest_residual_px"]}
               if "base_largest_residual_px" in results else {})
    rows = [ResultRow("base", {k.removeprefix("av_"): results["base"][k] for k in reported}, info=largest)]
    for method, info in results["methods"].items():
        metrics = info["metrics"]
        rows.append(ResultRow(method, {k.removeprefix("av_"): metrics[k]["delta"] for k in reported},
                              se={k.removeprefix("av_"): metrics[k]["se"] for k in reported},
                              info={"rollouts": info["rollouts"], "seconds_per_step": info["seconds_per_step"],
                                    "change_in_se": {k.removeprefix("av_"): metrics[k]["in_se"] for k in reported},
                                    "change_exact": {k.removeprefix("av_"): metrics[k]["exact"] for k in reported},
                                    **({"largest_residual_px": info["largest_residual_px"]}
                                       if "largest_residual_px" in info else {})}))
    if "budget" in results:
        budget = results["budget"]
        rows.append(ResultRow("budget", {"joint_desync_gain": budget["joint_desync_gain"]},
                              info={k: budget[k] for k in ("joint_rollouts", "av_grpo_rollouts_to_match", "ratio")}))
    rows.append(ResultRow("advantage spearman", dict(results["advantage_spearman_vs_own_quality"]),
                          se=dict(results["advantage_spearman_se"])))
    return rows


def print_table(results: dict) -> None:
    reported = list(results["base"])
    print(f"\n{'method':<11} {'rollouts':>8} {'s/step':>6}  " + "  ".join(f"{k.removeprefix('av_'):>26}" for k in reported))
    for method, info in results["methods"].items():
        cells = "  ".join(f"{m['before']:>7.3f} -> {m['after']:>7.3f} ±{m['se']:.3f}".rjust(26) for m in
                          (info["metrics"][k] for k in reported))
        print(f"{method:<11} {info['rollouts']:>8} {info['seconds_per_step']:>6.2f}  {cells}")
    if "budget" in results:
        print("budget:", json.dumps(results["budget"]))


def draw(shown: dict, prompts: list[str], path: Path, rows: int = 2) -> None:
    """Contact sheet: for the ``rows`` evaluation items whose base sample is most out of sync, the base sample and
    each method's (same prompt and noise)."""
    from visalign.rewards.av_verifiers import Desync
    from visalign.trainer.media import contact_sheet

    base_desync = Desync()(shown["base"], prompts, [{}] * len(prompts))
    picked, captions = [], []
    for i in base_desync.argsort()[:rows].tolist():
        for name, samples in shown.items():
            item = index_samples(samples, slice(i, i + 1))
            lag = float(-Desync()(item, prompts[i: i + 1], [{}])[0])
            picked.append(item)
            captions.append(f"{name}: desync {lag:.2f} fr | {prompts[i]}")
    sheet = cat_samples(picked)
    contact_sheet(sheet["video"], path, captions, audio=sheet["audio"])
    print("wrote", path)


if __name__ == "__main__":
    raise SystemExit(main())
