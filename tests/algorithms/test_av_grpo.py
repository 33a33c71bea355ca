"""AV-GRPO (av_grpo): anchored rollouts, ratio 1 with the locked partner, the tower partition, optimizer resets at
switches, the NaN-advantage rule and exact resume mid-cycle, on the toy two-tower audio-video flow."""
import pytest
import torch

from visalign.algorithms.av_grpo import AVGRPO, AVGRPOConfig, modality_partition
from visalign.algorithms.av_rollout import joint_log_prob, part_transitions
from visalign.core import ConfigError, PromptBatch, PromptList, build_algorithm, build_reward
from visalign.core.algorithm import TrainContext
from visalign.toys.av_toy import ToyAVConfig, ToyAVFlow
from visalign.trainer import Trainer, TrainerCallback, TrainerConfig

PROMPTS = ["a red circle bouncing left to right with a high beep", "a red circle bouncing left to right with a low beep"]
COMPONENTS = ["av_video_quality", "av_audio_quality", "av_video_alignment", "av_audio_alignment", "av_desync"]


def make_model(seed=0):
    torch.manual_seed(seed)
    return ToyAVFlow(ToyAVConfig(hidden=16, layers=1, num_steps=3))


def make_reward():
    return build_reward({"name": "multi", "rewards": COMPONENTS})


def context(model):
    return TrainContext(model, model.frozen_copy(), make_reward(), torch.device("cpu"))


def anchored_rollout(modality, seed=0):
    model = make_model()
    algo = AVGRPO(AVGRPOConfig(group_size=4))
    algo.modality = modality
    ctx = context(model)
    algo.setup(ctx)
    return model, algo, ctx, algo.rollout(ctx, PromptBatch(PROMPTS), torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("trained,frozen", [("video", "audio"), ("audio", "video")])
def test_anchored_rollout_locks_the_frozen_modality(trained, frozen):
    model, _, _, rollout = anchored_rollout(trained)
    traj = rollout.extras["trajectory"]
    slices = model.latent_slices()
    groups = traj.latents.reshape(len(PROMPTS), 4, *traj.latents.shape[1:])  # prompt × group × step × D
    locked = groups[..., slices[frozen]]
    assert torch.equal(locked, locked[:, :1].expand_as(locked)), "frozen part differs within a group"
    assert float(locked.var(1).max()) == 0.0
    assert float(groups[:, :, -1, slices[trained]].var(1).min()) > 0, "trained part does not vary"
    scores = {k: v.reshape(len(PROMPTS), 4) for k, v in make_reward_components(rollout).items()}
    own = "av_audio_quality" if frozen == "audio" else "av_video_quality"
    assert float(scores[own].var(1).max()) == 0.0, "the frozen modality's own metric varies within a group"
    assert set(rollout.extras["advantages"]) == {trained}


def make_reward_components(rollout):
    reward = make_reward()
    reward(rollout.samples, rollout.batch.prompts, rollout.batch.metadata)
    return reward.components()


@pytest.mark.parametrize("trained", ["video", "audio"])
def test_ratio_is_one_at_the_old_policy_with_the_locked_partner(trained):
    model, algo, ctx, rollout = anchored_rollout(trained)
    traj = rollout.extras["trajectory"]
    cond = model.encode(rollout.batch.prompts)
    for k in range(traj.num_steps):
        new = part_transitions(model, traj, k, cond)
        ratio = torch.exp(joint_log_prob(model, traj, k, (trained,), new) - joint_log_prob(model, traj, k, (trained,)))
        assert torch.allclose(ratio, torch.ones_like(ratio), atol=1e-5), (k, ratio)
    _, metrics = algo.loss(ctx, rollout)
    assert metrics["av_grpo/ratio"] == pytest.approx(1.0, abs=1e-5)
    # without the partner the public code's caveat shows: the recomputed log-prob is not the rollout's
    frozen = "audio" if trained == "video" else "video"
    stripped = traj.latents.clone()
    stripped[:, :, model.latent_slices()[frozen]] = 0
    traj.latents = stripped
    new = part_transitions(model, traj, 1, cond)
    ratio = torch.exp(joint_log_prob(model, traj, 1, (trained,), new) - joint_log_prob(model, traj, 1, (trained,)))
    assert (ratio - 1).abs().max() > 1e-3


@pytest.mark.parametrize("train_shared", [False, True])
def test_partition_covers_every_parameter_exactly_once_per_mode(train_shared):
    model = make_model()
    names = {n for n, _ in model.named_parameters()}
    towers = {m: {n for n, _ in model.tower_parameters(m)} for m in ("video", "audio")}
    shared = {n for n, _ in model.shared_parameters()}
    assert shared == {"context.weight", "context.bias"}
    for modality, other in (("video", "audio"), ("audio", "video")):
        trained, frozen = modality_partition(model, modality, train_shared=train_shared)
        assert trained | frozen == names and not trained & frozen
        assert towers[modality] <= trained and towers[other] <= frozen
        assert (shared <= trained) if train_shared else (shared <= frozen)
    with pytest.raises(ConfigError, match="matches the tower patterns of"):
        modality_partition(model, "video", {"video": [r"tower"], "audio": [r"audio_tower"]})
    with pytest.raises(ConfigError, match="no parameter matches the audio tower"):
        modality_partition(model, "audio", {"video": [r"video_tower"], "audio": [r"^nothing"]})
    baseline = AVGRPO(AVGRPOConfig(mode="joint", group_size=2))
    ctx = context(model)
    rollout = baseline.rollout(ctx, PromptBatch(PROMPTS[:1]), torch.Generator().manual_seed(0))
    assert baseline.update_plan(ctx, [rollout]).frozen == frozenset()  # baselines train everything


class Recorder(TrainerCallback):
    """Per step: parameters before/after, the optimizer state's parameter count and step counts, the plan's metrics."""

    def __init__(self):
        self.before, self.after, self.state, self.metrics = [], [], [], []

    def on_rollout_begin(self, trainer):
        self.before.append({n: p.detach().clone() for n, p in trainer.policy.named_parameters()})

    def on_step_end(self, trainer, metrics):
        self.after.append({n: p.detach().clone() for n, p in trainer.policy.named_parameters()})
        state = trainer.optimizer.state
        self.state.append(sorted({int(s["step"]) for s in state.values()}) + [len(state)])
        self.metrics.append(metrics)


def train(tmp_path, steps, algo=None, resume=None, save_every=0, seed=0, **overrides):
    model = make_model(seed)
    algo = algo or build_algorithm({"name": "av_grpo", "group_size": 3, "steps_per_modality": 2, **overrides})
    cfg = TrainerConfig(steps=steps, prompts_per_step=2, learning_rate=1e-2, log_with=[], progress=False, eval_batch_size=2,
                        output_dir=str(tmp_path), save_every=save_every, resume_from=resume)
    recorder = Recorder()
    reference = make_model(0).frozen_copy()
    Trainer(model, algo, make_reward(), PromptList(PROMPTS), cfg, reference=reference, callbacks=[recorder]).train()
    return model, algo, recorder


def changed(recorder, step, names):
    return {n for n in names if not torch.equal(recorder.before[step][n], recorder.after[step][n])}


def test_only_the_trained_tower_moves_and_the_optimizer_is_cleared_at_each_switch(tmp_path):
    model, algo, rec = train(tmp_path, steps=5)
    towers = {m: {n for n, _ in model.tower_parameters(m)} for m in ("video", "audio")}
    every = {n for n, _ in model.named_parameters()}
    for step, modality in enumerate(["video", "video", "audio", "audio", "video"]):
        other = "audio" if modality == "video" else "video"
        moved = changed(rec, step, every)
        assert moved and moved <= towers[modality], (step, sorted(moved))
        assert not changed(rec, step, towers[other] | {"context.weight", "context.bias"})
    n_video, n_audio = len(towers["video"]), len(towers["audio"])
    # [distinct AdamW step counts..., tensors in the optimizer state] after each step
    assert rec.state == [[1, n_video], [2, n_video], [1, n_audio], [2, n_audio], [1, n_video]]


def test_per_modality_block_lengths(tmp_path):
    """steps_per_modality {video: 3, audio: 1}: three video steps, one audio step, then video again; the optimizer
    state is cleared at each switch."""
    model, algo, rec = train(tmp_path, steps=6, steps_per_modality={"video": 3, "audio": 1})
    towers = {m: {n for n, _ in model.tower_parameters(m)} for m in ("video", "audio")}
    every = {n for n, _ in model.named_parameters()}
    for step, modality in enumerate(["video", "video", "video", "audio", "video", "video"]):
        assert changed(rec, step, every) <= towers[modality], step
    n_video, n_audio = len(towers["video"]), len(towers["audio"])
    assert rec.state == [[1, n_video], [2, n_video], [3, n_video], [1, n_audio], [1, n_video], [2, n_video]]


def test_nan_advantage_skips_the_step_and_switches_modality(tmp_path):
    class NaNAtStep1(AVGRPO):
        def rollout(self, ctx, batch, generator):
            rollout = super().rollout(ctx, batch, generator)
            if ctx.step == 1:
                rollout.extras["advantages"] = {k: v * float("nan") for k, v in rollout.extras["advantages"].items()}
            return rollout

    algo = NaNAtStep1(AVGRPOConfig(group_size=3, steps_per_modality=3))
    model, _, rec = train(tmp_path, steps=3, algo=algo)
    every = {n for n, _ in model.named_parameters()}
    audio = {n for n, _ in model.tower_parameters("audio")}
    assert changed(rec, 0, every) and not changed(rec, 1, every)
    assert rec.metrics[1]["skipped"] == 1.0 and "loss" not in rec.metrics[1]
    assert rec.metrics[0]["av_grpo/trains_audio"] == 0.0 and rec.metrics[2]["av_grpo/trains_audio"] == 1.0
    assert changed(rec, 2, every) <= audio
    assert rec.state[2] == [1, len(audio)]


def test_resume_mid_cycle_matches_the_uninterrupted_run(tmp_path):
    full, algo, _ = train(tmp_path / "full", steps=5, save_every=3)
    assert algo.modality == "video" and algo.block_step == 1
    resumed, algo2, _ = train(tmp_path / "full", steps=5, resume=str(tmp_path / "full" / "checkpoints" / "step_000003"), seed=1)
    for key, value in full.state_dict().items():
        assert torch.equal(value, resumed.state_dict()[key]), f"{key} differs after resume"


def test_mid_cycle_state_reuses_the_first_modality_prompts():
    algo = AVGRPO(AVGRPOConfig(group_size=2, steps_per_modality=2))
    model = make_model()
    ctx = context(model)
    firsts = []
    for step in range(4):
        ctx.step = step
        batch = PromptBatch([PROMPTS[step % 2], f"a red circle bouncing left to right step {step}"])
        rollout = algo.rollout(ctx, batch, torch.Generator().manual_seed(step))
        firsts.append(rollout.batch.prompts[::2])
        algo.update_plan(ctx, [rollout])
    assert firsts[2] == firsts[0] and firsts[3] == firsts[1]


@pytest.mark.parametrize("overrides,message", [
    ({"mode": "both"}, "av_grpo.mode must be one of"),
    ({"group_size": 1}, "av_grpo.group_size must be >= 2"),
    ({"order": ["video", "video"]}, "av_grpo.order"),
    ({"tower_patterns": {"video": ["x"]}}, "av_grpo.tower_patterns"),
    ({"std_cap": 0.0}, "av_grpo.std_cap"),
    ({"ode_final_steps": -1}, "av_grpo.ode_final_steps"),
    ({"kl_steps": "ode"}, "av_grpo.kl_steps"),
    ({"steps_per_modality": 0}, "av_grpo.steps_per_modality must be >= 1"),
    ({"steps_per_modality": {"video": 2}}, "needs exactly the keys video and audio"),
    ({"steps_per_modality": {"video": 2, "audio": 0}}, "av_grpo.steps_per_modality must be >= 1"),
])
def test_bad_config_is_named(overrides, message):
    with pytest.raises(ConfigError, match=message):
        build_algorithm({"name": "av_grpo", **overrides})


def test_missing_reward_components_are_named():
    model = make_model()
    algo = AVGRPO(AVGRPOConfig(group_size=2, video_rewards=["clip_video"]))
    with pytest.raises(ConfigError, match=r"reward components \['clip_video'\] not found"):
        algo.rollout(context(model), PromptBatch(PROMPTS[:1]), torch.Generator().manual_seed(0))


def test_shipped_config_trains_through_the_cli(tmp_path, monkeypatch, capsys):
    import json
    from pathlib import Path

    from visalign.cli import main

    monkeypatch.chdir(Path(__file__).resolve().parents[2])  # assets/av_toy is relative to the repo root
    out = tmp_path / "run"
    rc = main(["train", "configs/av_grpo.yaml", "trainer.steps=2", f"trainer.output_dir={out}", "trainer.eval_batch_size=4",
               "algorithm.group_size=2"])
    assert rc == 0, capsys.readouterr().err
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if line.strip()]
    assert [r["step"] for r in records if "loss" in r] == [1, 2]
    assert any("eval/av_desync" in r for r in records)


def test_nan_advantage_on_one_rank_skips_the_step_and_switches_modality_on_both(tmp_path):
    """2 CPU processes (gloo): rank 1 alone sees a NaN advantage at step 1; both ranks skip it (no parameter moves on
    either), both switch to audio, and step 2 trains the audio tower on both."""
    import json
    from pathlib import Path

    from tests.conftest import accelerate_launch

    script = Path(__file__).parents[1] / "scripts" / "two_process_av_nan.py"
    prefix = tmp_path / "av_nan"
    proc = accelerate_launch(str(script), str(prefix), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"av_nan.rank{r}.json").read_text()) for r in (0, 1)]
    for result in ranks:
        steps, audio = result["steps"], set(result["towers"]["audio"])
        assert [s["trained"] for s in steps] == ["video", "video", "audio"]
        assert steps[0]["moved"] and steps[0]["skipped"] == 0.0
        assert steps[1]["skipped"] == 1.0 and steps[1]["moved"] == [] and steps[1]["modality_after"] == "audio"
        assert steps[2]["moved"] and set(steps[2]["moved"]) <= audio
    assert ranks[0]["steps"] == ranks[1]["steps"]


def test_keeping_the_optimizer_across_switches_is_an_opt_out(tmp_path):
    """reset_optimizer: false (an ablation; the method clears it) keeps the video tower's AdamW state into audio."""
    model, _, rec = train(tmp_path, steps=3, reset_optimizer=False)
    n_video, n_audio = (len(list(model.tower_parameters(m))) for m in ("video", "audio"))
    assert rec.state == [[1, n_video], [2, n_video], [1, 2, n_video + n_audio]]


def test_reward_set_advantage_averages_z_scores_and_renormalises_only_when_asked():
    from visalign.algorithms.av_grpo import reward_set_advantage

    varied = torch.tensor([1.0, 2.0, 3.0, 4.0, 0.0, 0.0, 1.0, 1.0])
    saturated = torch.ones(8)  # constant in both groups of 4: contributes zeros
    z = torch.cat([(g - g.mean()) / (g.std(unbiased=False) + 1e-6) for g in varied.view(2, 4)])  # population std
    components = {"varied": varied, "saturated": saturated}
    plain = reward_set_advantage(components, ["varied", "saturated"], 4, renormalize=False)
    assert torch.allclose(plain, z / 2, atol=1e-5)  # a saturated component halves the advantage
    again = reward_set_advantage(components, ["varied", "saturated"], 4)
    assert torch.allclose(again, torch.cat([(g - g.mean()) / (g.std(unbiased=False) + 1e-6) for g in (z / 2).view(2, 4)]), atol=1e-4)


@pytest.mark.parametrize("mode", ["anchored", "joint"])
def test_ode_final_steps_end_every_sample_with_an_ode_step_that_is_not_trained(mode):
    """The last step is an Euler step of the recorded state for every modality (no SDE noise in the scored sample),
    its log-prob is 0 and the loss leaves it out; the ratio stays 1 at the old policy."""
    model = make_model()
    algo = AVGRPO(AVGRPOConfig(group_size=4, mode=mode, ode_final_steps=1))
    algo.modality = "audio"
    ctx = context(model)
    algo.setup(ctx)
    rollout = algo.rollout(ctx, PromptBatch(PROMPTS), torch.Generator().manual_seed(0))
    traj = rollout.extras["trajectory"]
    last = traj.num_steps - 1
    assert traj.sde_steps == tuple(range(last))
    with torch.no_grad():
        x = traj.latents[:, last]
        sigma, nxt = float(traj.sigmas[last]), float(traj.sigmas[last + 1])
        expected = model.ode_step(x, model.velocity(x, model.time(sigma, x), traj.cond), sigma, nxt)
    slices = model.latent_slices()
    for m in traj.sde_modalities:
        torch.testing.assert_close(traj.final[:, slices[m]], expected[:, slices[m]])
        assert torch.equal(traj.log_probs[m][:, last], torch.zeros(len(rollout.batch.prompts)))
        assert float(traj.log_probs[m][:, 0].abs().min()) > 0
    _, metrics = algo.loss(ctx, rollout)
    assert metrics["av_grpo/ratio"] == pytest.approx(1.0, abs=1e-5)
    too_many = AVGRPO(AVGRPOConfig(group_size=4, mode=mode, ode_final_steps=traj.num_steps))
    too_many.modality = "audio"
    too_many.setup(ctx)
    with pytest.raises(ConfigError, match="must leave an SDE step"):
        too_many.rollout(ctx, PromptBatch(PROMPTS), torch.Generator().manual_seed(0))


def test_kl_on_every_step_adds_the_ode_steps_kl_to_the_loss():
    """kl_steps: all adds, for each ODE step, its time-weighted β·KL between the policy's and the reference's step
    means (the SDE steps' terms are the same as with kl_steps: sde); with the reference equal to the policy it adds 0."""
    from visalign.algorithms.av_rollout import time_weights

    model, reference = make_model(0), make_model(1).frozen_copy()
    ctx = TrainContext(model, reference, make_reward(), torch.device("cpu"))
    losses = {}
    for where in ("sde", "all"):
        algo = AVGRPO(AVGRPOConfig(group_size=4, ode_final_steps=1, kl_audio=0.3, kl_steps=where))
        algo.modality = "audio"
        algo.setup(ctx)
        rollout = algo.rollout(ctx, PromptBatch(PROMPTS), torch.Generator().manual_seed(0))
        with torch.no_grad():
            losses[where] = float(algo.loss(ctx, rollout)[0])
    traj = rollout.extras["trajectory"]
    last = traj.num_steps - 1
    with torch.no_grad():
        cond, ref_cond = model.encode(rollout.batch.prompts), reference.encode(rollout.batch.prompts)
        (mean, std), (ref_mean, _) = (part_transitions(m, traj, last, c)["audio"]
                                      for m, c in ((model, cond), (reference, ref_cond)))
    kl = float(((mean - ref_mean) ** 2).flatten(1).mean(1).mean() / (2 * std**2))
    assert kl > 0
    expected = 0.3 * kl * float(time_weights(traj.sigmas)[last]) / traj.num_steps
    assert losses["all"] - losses["sde"] == pytest.approx(expected, rel=1e-4)
    same = TrainContext(model, model.frozen_copy(), make_reward(), torch.device("cpu"))
    algo = AVGRPO(AVGRPOConfig(group_size=4, ode_final_steps=1, kl_audio=0.3, kl_steps="all"))
    algo.modality = "audio"
    algo.setup(same)
    rollout = algo.rollout(same, PromptBatch(PROMPTS), torch.Generator().manual_seed(0))
    _, metrics = algo.loss(same, rollout)
    assert metrics["av_grpo/kl"] == pytest.approx(0.0, abs=1e-10)

