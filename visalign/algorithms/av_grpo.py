"""AV-GRPO: modality-anchored GRPO for two-tower audio-video flow models, and its baselines in one framework.

``mode: anchored`` (AV-GRPO). Per prompt one deterministic ODE draw of both modalities (the reference trajectory,
under the current weights) is computed; in each of the G samples of that prompt the *frozen* modality's latent part
is overwritten with the reference's at every step, so it has zero within-group variance, and only the *trained*
modality is sampled by the SDE (noise level per modality, per-step std capped). Its advantage is built from its own
reward set: every component z-scored within the group, averaged, z-scored again. Objective, per SDE step k:

    λ_k · [max(−A·ρ_k, −A·clip(ρ_k, 1 ± c)) + β_m · ‖μ_θ,k − μ_ref,k‖² / (2σ_k²)],   ρ_k = π_θ(x_{k+1}|x_k) / π_old

over the trained part m only, with the locked partner in x_k (so ρ = 1 at the old policy). With ``ode_final_steps``
the last steps are ODE steps and carry no policy term; ``kl_steps: all`` keeps the KL term on them (with σ_k the
SDE's std there), so no noise level is left without a trust region. Only that modality's tower updates (plus the
shared parameters with ``train_shared``); the modality alternates every ``steps_per_modality`` steps (one number, or
one per modality as the public code's block table; video, then audio on the same prompts), the optimizer state is
cleared at every switch, and a non-finite advantage on any rank skips the step and switches modality.

Baselines (same sampler, loss and budget accounting): ``joint`` (both modalities SDE, one log-prob over the whole
latent, one advantage from the summed reward, all parameters; verl-omni), ``video_sde`` (video SDE, audio ODE, the
summed-reward advantage on the video log-prob, all parameters; Flow-Factory), ``routed`` (both SDE, each modality's
log-prob driven by its own reward set's advantage, all parameters; OmniNFT-lite, no gradient surgery).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import torch

from ..core.algorithm import Algorithm, Evaluation, TrainContext, UpdatePlan, register_algorithm
from ..core.audio_video import AudioVideoFlowModel
from ..core.config import ConfigError, check, option
from ..core.types import PromptBatch, Rollout
from ..rewards.multi import group_normalize
from .av_rollout import joint_log_prob, part_transitions, sample_av, time_weights

MODES = ("anchored", "joint", "video_sde", "routed")
KL_STEPS = ("sde", "all")


@dataclass
class AVGRPOConfig:
    mode: str = option("anchored", "anchored (AV-GRPO) | joint | video_sde | routed (baselines, see the module docstring)")
    group_size: int = option(8, "samples per prompt (the group whose rewards are normalised)")
    num_steps: int | None = option(None, "sampling steps (null: the model's default)")
    noise_video: float = option(0.7, "SDE noise level a of the video part (std_t = a·sqrt(t/(1-t)))")
    noise_audio: float = option(0.7, "SDE noise level a of the audio part")
    std_cap: float | None = option(0.5, "cap on each SDE step's noise std (null: none)")
    ode_final_steps: int = option(0, "the last this many sampling steps are ODE steps for every modality, so the "
                                     "samples the rewards score carry no SDE noise (those steps are not trained)")
    clip_range: float = option(0.2, "PPO ratio clip c")
    kl_video: float = option(0.01, "β of the velocity KL to the reference on the video part")
    kl_audio: float = option(0.002, "β of the velocity KL to the reference on the audio part")
    kl_steps: str = option("sde", "where the velocity KL applies: sde (the trained SDE steps) | all (every sampling "
                                  "step, the ODE steps too, so no noise level drifts from the reference unseen)")
    time_weighted: bool = option(True, "weight each step's loss by λ_k = sqrt(σ/(Δσ(1−σ))) (normalised to mean 1)")
    adv_clip: float = option(5.0, "advantages are clipped to ±adv_clip")
    renormalize: bool = option(True, "z-score a modality's averaged reward-set score again within the group (false: "
                                     "components that saturate, constant in a group, shrink the advantage instead)")
    video_rewards: list[str] = option(help="reward components (labels of a multi reward) that score the video",
                                      factory=lambda: ["av_video_quality", "av_video_alignment", "av_desync"])
    audio_rewards: list[str] = option(help="reward components that score the audio",
                                      factory=lambda: ["av_audio_quality", "av_audio_alignment", "av_desync"])
    order: list[str] = option(help="modalities in the order they are trained within a cycle (anchored)",
                              factory=lambda: ["video", "audio"])
    steps_per_modality: int | dict[str, int] = option(4, "optimizer steps (fresh rollouts each) before switching "
                                                         "modality, or per modality ({video: 8, audio: 4}) (anchored)")
    same_prompts: bool = option(True, "later modalities of a cycle reuse the first modality's prompts, in order (anchored)")
    reset_optimizer: bool = option(True, "anchored: clear the AdamW state at every modality switch (the method's rule); "
                                         "false keeps it (an ablation)")
    train_shared: bool = option(False, "anchored: also update the parameters that belong to no tower")
    tower_patterns: dict[str, list[str]] | None = option(None, "regexes over parameter names per modality (cross-"
                                                               "attention into a modality belongs to it); null: the model's")

    def __post_init__(self) -> None:
        check(self.mode in MODES, f"av_grpo.mode must be one of {list(MODES)}, got {self.mode!r}")
        check(self.group_size >= 2, f"av_grpo.group_size must be >= 2 samples per prompt, got {self.group_size}")
        check(self.num_steps is None or self.num_steps >= 1, f"av_grpo.num_steps must be >= 1, got {self.num_steps}")
        check(self.noise_video > 0 and self.noise_audio > 0,
              f"av_grpo.noise_video and noise_audio must be > 0, got {self.noise_video}, {self.noise_audio}")
        check(self.std_cap is None or self.std_cap > 0, f"av_grpo.std_cap must be > 0 or null, got {self.std_cap}")
        check(self.ode_final_steps >= 0, f"av_grpo.ode_final_steps must be >= 0, got {self.ode_final_steps}")
        check(self.clip_range > 0, f"av_grpo.clip_range must be > 0, got {self.clip_range}")
        check(self.kl_video >= 0 and self.kl_audio >= 0, "av_grpo.kl_video and kl_audio must be >= 0")
        check(self.kl_steps in KL_STEPS, f"av_grpo.kl_steps must be one of {list(KL_STEPS)}, got {self.kl_steps!r}")
        check(self.adv_clip > 0, f"av_grpo.adv_clip must be > 0, got {self.adv_clip}")
        check(bool(self.video_rewards) and bool(self.audio_rewards), "av_grpo.video_rewards and audio_rewards must be non-empty")
        check(sorted(self.order) == ["audio", "video"], f"av_grpo.order must list video and audio once each, got {self.order}")
        if isinstance(self.steps_per_modality, dict):
            check(set(self.steps_per_modality) == {"video", "audio"}, "av_grpo.steps_per_modality per modality needs "
                  f"exactly the keys video and audio, got {sorted(self.steps_per_modality)}")
        check(all(n >= 1 for n in self.block_lengths.values()),
              f"av_grpo.steps_per_modality must be >= 1, got {self.steps_per_modality}")
        if self.tower_patterns is not None:
            check(set(self.tower_patterns) == {"video", "audio"},
                  f"av_grpo.tower_patterns needs exactly the keys video and audio, got {sorted(self.tower_patterns)}")

    @property
    def noise_levels(self) -> dict[str, float]:
        return {"video": self.noise_video, "audio": self.noise_audio}

    @property
    def block_lengths(self) -> dict[str, int]:
        """Optimizer steps of each modality's block."""
        n = self.steps_per_modality
        return dict(n) if isinstance(n, dict) else {"video": n, "audio": n}

    @property
    def kl_betas(self) -> dict[str, float]:
        return {"video": self.kl_video, "audio": self.kl_audio}


def modality_partition(model: AudioVideoFlowModel, modality: str, patterns: dict[str, list[str]] | None = None,
                       train_shared: bool = False) -> tuple[frozenset[str], frozenset[str]]:
    """(trained, frozen) parameter names when training ``modality``'s tower: its tower (plus the shared parameters
    with ``train_shared``) against everything else. A parameter matched by both towers' patterns is an error."""
    patterns = patterns if patterns is not None else model.tower_patterns()
    compiled = {m: [re.compile(p) for p in patterns[m]] for m in model.modalities}
    names = [n for n, _ in model.trainable_module().named_parameters()]
    owner: dict[str, str | None] = {}
    for n in names:
        owners = [m for m, rs in compiled.items() if any(r.search(n) for r in rs)]
        if len(owners) > 1:
            raise ConfigError(f"parameter {n!r} matches the tower patterns of {owners}; each belongs to one tower")
        owner[n] = owners[0] if owners else None
    if not any(o == modality for o in owner.values()):
        raise ConfigError(f"no parameter matches the {modality} tower patterns {patterns[modality]}")
    trained = frozenset(n for n in names if owner[n] == modality or (train_shared and owner[n] is None))
    return trained, frozenset(names) - trained


def require_av_model(policy: Any) -> AudioVideoFlowModel:
    if not isinstance(policy, AudioVideoFlowModel):
        raise ConfigError(f"av_grpo needs an audio-video flow model (the AudioVideoFlowModel protocol), got "
                          f"{type(policy).__name__}")
    return policy


def reward_set_advantage(components: dict[str, torch.Tensor], names: list[str], group_size: int,
                         renormalize: bool = True) -> torch.Tensor:
    """Each named component z-scored within its group and averaged; with ``renormalize``, z-scored within the group
    again (so a group whose other components are constant, saturated, gets unit-scale advantages from the one left)."""
    missing = sorted(set(names) - set(components))
    if missing:
        raise ConfigError(f"av_grpo: reward components {missing} not found; the reward gives {sorted(components)} "
                          "(use a multi reward with these labels)")
    score = sum(group_normalize(components[n], group_size) for n in names) / len(names)
    return group_normalize(score, group_size) if renormalize else score


@register_algorithm("av_grpo")
class AVGRPO(Algorithm):
    """Modality-anchored GRPO (``mode: anchored``) and its joint / video-SDE / routed baselines (module docstring)."""

    config_class = AVGRPOConfig
    needs_reference = True

    def __init__(self, config: AVGRPOConfig | None = None) -> None:
        super().__init__(config or AVGRPOConfig())
        self.modality = self.config.order[0]
        self.block_step = 0
        self.prompt_queue: list[dict[str, list]] = []

    @property
    def samples_per_prompt(self) -> int:
        """Group samples plus, when anchored, the reference ODE draw."""
        return self.config.group_size + (self.config.mode == "anchored")

    @property
    def anchored(self) -> bool:
        return self.config.mode == "anchored"

    def setup(self, ctx: TrainContext) -> None:
        model = require_av_model(ctx.policy)
        for m in model.modalities:
            modality_partition(model, m, self.config.tower_patterns, self.config.train_shared)

    # ------------------------------------------------------------------ schedule
    def _cycle_batch(self, batch: PromptBatch) -> PromptBatch:
        """The first modality of a cycle queues its prompts; later ones take them back in order."""
        if not (self.anchored and self.config.same_prompts):
            return batch
        if self.modality == self.config.order[0]:
            self.prompt_queue.append({"prompts": list(batch.prompts), "metadata": list(batch.metadata)})
            return batch
        if not self.prompt_queue:
            return batch
        queued = self.prompt_queue.pop(0)
        return PromptBatch(queued["prompts"], queued["metadata"])

    def _switch(self) -> None:
        order = self.config.order
        self.modality = order[(order.index(self.modality) + 1) % len(order)]
        self.block_step = 0
        if self.modality == order[0]:
            self.prompt_queue.clear()

    def update_plan(self, ctx: TrainContext, rollouts: list[Rollout]) -> UpdatePlan:
        """Anchored: freeze the other tower, clear the optimizer at the first step of every block, and skip the step
        and switch modality when an advantage is non-finite on any rank. Baselines: all parameters; skip likewise."""
        bad = ctx.any_rank(any(not torch.isfinite(a).all() for r in rollouts for a in r.extras["advantages"].values()))
        if not self.anchored:
            return UpdatePlan(skip=bad)
        model = require_av_model(ctx.policy)
        _, frozen = modality_partition(model, self.modality, self.config.tower_patterns, self.config.train_shared)
        plan = UpdatePlan(frozen=frozen, reset_optimizer=self.config.reset_optimizer and self.block_step == 0, skip=bad)
        self.block_step += 1
        if bad or self.block_step == self.config.block_lengths[self.modality]:
            self._switch()
        return plan

    # ------------------------------------------------------------------ rollout
    def _behaviours(self) -> dict[str, str]:
        mode = self.config.mode
        if mode == "anchored":
            return {m: "sde" if m == self.modality else "locked" for m in ("video", "audio")}
        if mode == "video_sde":
            return {"video": "sde", "audio": "ode"}
        return {"video": "sde", "audio": "sde"}

    def _heads(self, rollout_modality: str | None) -> list[tuple[tuple[str, ...], str]]:
        """(log-prob parts, advantage name) pairs of the loss."""
        mode = self.config.mode
        if mode == "anchored":
            return [((rollout_modality,), rollout_modality)]
        if mode == "joint":
            return [(("video", "audio"), "total")]
        if mode == "video_sde":
            return [(("video",), "total")]
        return [(("video",), "video"), (("audio",), "audio")]

    def rollout(self, ctx: TrainContext, batch: PromptBatch, generator: torch.Generator) -> Rollout:
        cfg = self.config
        policy = require_av_model(ctx.policy)
        batch = self._cycle_batch(batch)
        expanded = batch.repeat_interleave(cfg.group_size)
        behaviours = self._behaviours()
        locked = None
        with torch.no_grad():
            cond = policy.encode(expanded.prompts)
            if self.anchored:
                ref_noise = policy.make_noise(len(batch), generator)
                reference = policy.sample_sde(ref_noise, batch.prompts, num_steps=cfg.num_steps, sde_steps=())
                locked = reference.latents.repeat_interleave(cfg.group_size, 0)
            noise = policy.make_noise(len(expanded), generator)
            steps = len(policy.sigmas(cfg.num_steps)) - 1
            check(cfg.ode_final_steps < steps, f"av_grpo.ode_final_steps ({cfg.ode_final_steps}) must leave an SDE "
                                               f"step of the {steps} sampling steps")
            traj = sample_av(policy, noise, cond, behaviours, noise_levels=cfg.noise_levels, std_cap=cfg.std_cap,
                             generator=generator, num_steps=cfg.num_steps, locked=locked,
                             sde_steps=range(steps - cfg.ode_final_steps))
            samples = policy.decode(traj.final)
        rewards = ctx.score(samples, expanded)
        components = ctx.reward.components()
        modality = self.modality if self.anchored else None
        advantages = {}
        for _, name in self._heads(modality):
            if name == "total":
                adv = group_normalize(rewards, cfg.group_size)
            else:
                adv = reward_set_advantage(components, cfg.video_rewards if name == "video" else cfg.audio_rewards,
                                           cfg.group_size, cfg.renormalize)
            advantages[name] = adv.to(ctx.device).clamp(-cfg.adv_clip, cfg.adv_clip)
        return Rollout(samples=samples, batch=expanded, rewards=rewards, noise=noise,
                       extras={"trajectory": traj, "advantages": advantages, "modality": modality})

    # ------------------------------------------------------------------ loss
    def loss(self, ctx: TrainContext, rollout: Rollout) -> tuple[torch.Tensor, dict[str, float]]:
        cfg, traj = self.config, rollout.extras["trajectory"]
        policy, ref = require_av_model(ctx.policy), ctx.reference
        heads = self._heads(rollout.extras["modality"])
        kl_parts = {m for parts, _ in heads for m in parts if cfg.kl_betas[m] > 0}
        cond = policy.encode(rollout.batch.prompts)
        ref_cond = ref.encode(rollout.batch.prompts) if ref is not None and kl_parts else None
        weights = time_weights(traj.sigmas) if cfg.time_weighted else torch.ones(traj.num_steps)
        total = torch.zeros((), device=ctx.device)
        ratios, clipped, kls = [], [], []
        every_step = cfg.kl_steps == "all" and ref_cond is not None
        for k in range(traj.num_steps) if every_step else traj.sde_steps:
            new = part_transitions(policy, traj, k, cond)
            step_loss = torch.zeros((), device=ctx.device)
            trained_heads = heads if k in traj.sde_steps else ()  # an ODE step carries the KL term only
            for parts, name in trained_heads:
                adv = rollout.extras["advantages"][name]
                ratio = torch.exp(joint_log_prob(policy, traj, k, parts, new) - joint_log_prob(policy, traj, k, parts))
                step_loss = step_loss + torch.maximum(-adv * ratio, -adv * ratio.clamp(1 - cfg.clip_range, 1 + cfg.clip_range)).mean()
                ratios.append(float(ratio.detach().mean()))
                clipped.append(float(((ratio.detach() - 1).abs() > cfg.clip_range).float().mean()))
            if ref_cond is not None:
                with torch.no_grad():
                    old = part_transitions(ref, traj, k, ref_cond, slices=policy.latent_slices())
                for m in kl_parts:
                    (mean, std), (ref_mean, _) = new[m], old[m]
                    kl = ((mean - ref_mean).float() ** 2).flatten(1).mean(1).mean() / (2 * std**2)
                    step_loss = step_loss + cfg.kl_betas[m] * kl
                    kls.append(float(kl.detach()))
            total = total + float(weights[k]) * step_loss / traj.num_steps
        metrics = {"av_grpo/ratio": sum(ratios) / len(ratios), "av_grpo/clip_frac": sum(clipped) / len(clipped),
                   "av_grpo/kl": sum(kls) / len(kls) if kls else 0.0}
        if rollout.extras["modality"] is not None:
            metrics["av_grpo/trains_audio"] = float(rollout.extras["modality"] == "audio")
        return total, metrics

    def evaluate(self, ctx: TrainContext, batch: PromptBatch, generator: torch.Generator) -> Evaluation:
        """ODE samples of the policy, scored; the mean of every reward component is a metric."""
        samples = ctx.policy.sample(batch.prompts, generator=generator)
        rewards = ctx.score(samples, batch)
        metrics = {f"eval/{k}": float(v.float().mean()) for k, v in ctx.reward.components().items()}
        return Evaluation(samples, rewards, metrics)

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        return {"modality": self.modality, "block_step": self.block_step, "prompt_queue": list(self.prompt_queue)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("modality") not in self.config.order:
            raise ValueError(f"av_grpo state names modality {state.get('modality')!r}, expected one of {self.config.order}")
        self.modality, self.block_step = state["modality"], int(state["block_step"])
        self.prompt_queue = [{"prompts": list(q["prompts"]), "metadata": list(q["metadata"])} for q in state["prompt_queue"]]


__all__ = ["AVGRPO", "AVGRPOConfig", "MODES", "modality_partition", "reward_set_advantage"]
