"""The README's result blocks: which command makes each one, and which renderer turns its result file into the README.

Each ``Entry`` names the command(s) that produce one result file ``assets/results/<name>.json`` (``{out}`` is the
run folder, ``{folder}`` the entry's folder holding every run's, ``{results}`` the file the command writes), whether
it belongs to ``reproduce.py --fast`` (a few minutes at most) or only to ``--all``, the README blocks rendered from
the file and the pictures the run also produces. The renderers live in ``pipelines/readme_blocks/``, one module per
part of the README.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pipelines.readme_blocks.formatting import Renderer, RESULTS_DIR, ROOT
from pipelines.readme_blocks.text import text_seeds, text_single, text_threads, THREADS
from pipelines.readme_blocks.toys import toy_baselines, toy_lambda, toy_methods
from pipelines.readme_blocks.demo import config_runs, demo
from pipelines.readme_blocks.vvr import (
    LAMBDAS, LARGE_EVAL_SEEDS, methods_large_eval, methods_per_bin, methods_seeds_large_eval, pretrain_v2_table, rwtd_accum_lr,
    rwtd_budget, rwtd_lambda_large_eval, large_eval_by_seed, rwtd_large_eval_more_seeds, large_eval_by_seed_and_bin,
    rwtd_published, rwtd_regression_arms, rwtd_targets_table, ssl_probe,
    vvr2_lambda, vvr2_methods, vvr_accuracy, vvr_bases_table, VVR_FROM_BASES, vvr_from_level, VVR_FROM_LEVELS,
    vvr_lambda, vvr_methods, vvr_pretrain, vvr_pretrain_v2, vvr_throughput, VVR_X0_ARMS, vvr_x0_pilot)
from pipelines.readme_blocks.poem import (
    poem_adam_default, poem_flow, poem_flow_seed1, poem_in_span, poem_spearman, poem_text)
from pipelines.readme_blocks.av import (
    av_audio_drift_table, av_audio_quality_alone_table, AV_BASES, av_bases, AV_COMMIT_LABELS, AV_COMMIT_LEVELS,
    av_commit_table, av_continued_bases, av_cross_modal, AV_DRIFT_RUNS, av_gamed_table, av_large_batch_table,
    av_large_budget, av_large_table, av_leak_table, av_per_seed_table, av_pilot, av_position_probe, av_sampling_steps,
    AV_SEED_PARTS, AV_SEEDS, av_seeds_table, AV_VISIBLE_PX, av_visible_table, av_spearman_table, AV_STEP_COUNTS, AV_STEPS_LOSS_SPACES,
    av_sync_and_quality_levels, AV_SYNCED_RUNS, av_tiny_base, av_tiny_table, av_toy_base, av_toy_budget,
    av_toy_large_batch, av_toy_spearman, av_toy_table, av_toy_travel, LOSS_SPACE_LABELS, pretrain_metrics,
    pretrain_steps, synced_and)
from pipelines.readme_blocks.core_coevolve import core_images, core_images_bound, core_video, core_video_bound
from pipelines.readme_blocks.reflection import (
    reflection_claims, reflection_critique, reflection_shared_round0, reflection_table)


README = ROOT / "README.md"


@dataclass(frozen=True)
class Entry:
    name: str
    runs: tuple[tuple[str | None, tuple[str, ...]], ...]  # (label, python argv with {out} / {results} placeholders)
    fast: bool
    blocks: dict[str, Renderer] = field(default_factory=dict)
    pictures: dict[str, str] = field(default_factory=dict)  # file in the run folder ({out}; with several runs the
    # entry's folder, whose run i writes under run_i/) -> path under the repository
    note: str = ""  # for tables merged from several runs
    # no run has written its result file yet (a long command): its README blocks still hold hand-written numbers,
    # which --check-readme reports without failing; the first `reproduce.py --only NAME --write` renders them
    first_run_pending: bool = False
    # entries whose runs are this entry's runs, in order (one run each, e.g. training seeds run and checkpointed
    # apart): `reproduce.py --gather NAME` stores their stored results merged under this entry's labels, rerunning none
    gathers: tuple[str, ...] = ()

    @property
    def path(self) -> Path:
        return RESULTS_DIR / f"{self.name}.json"


PY = "python"
CORE_VIDEO = (PY, "pipelines/core_video.py", "--results", "{results}", "--out", "{out}", "--arms", "fixed", "core")
COMPARE = (PY, "pipelines/vvr_compare.py", "--results", "{results}")
#: the 64 px VVR v2 base (issue 19): 4×4 space-to-depth UNet, frozen MiniLM-L6, easy pool up to complexity 20
#: folder suffix of the 64 px checkpoints (``vvr_pretrain.py --tag``): assets/<base>/tiny_<kind>_vvr2_64
TAG_64 = "_64"
BASE_64_MODEL = ("--image-size", "64", "--unet-unshuffle", "4", "--unet-channels", "64", "64", "96", "--text-encoder",
                 "minilm", "--max-complexity", "20", "--tag", TAG_64)
BASE_64 = (*BASE_64_MODEL, "--flow-minutes", "36", "--distill-minutes", "12")
FIT = ("--fit-tasks", "16", "--eval-draws", "32")
#: the longer-trained v2 base (issue 19): the flow trained 25 minutes further and the one-step student distilled from it
LONG_FLOW = "assets/vvr2_long/tiny_flow_vvr2"
LONG_BASES = ("--checkpoint", "assets/vvr2_long/tiny_one_step_vvr2", "--flow-checkpoint", LONG_FLOW)
#: that flow trained 60 minutes further (one core) and a student distilled from it in the same run
LONGER_FLOW = "assets/vvr2_longer/tiny_flow_vvr2"
LONGER_BASES = ("--checkpoint", "assets/vvr2_longer/tiny_one_step_vvr2", "--flow-checkpoint", LONGER_FLOW)
#: that flow trained further on bins 1-2 of the easy pool, its weights averaged (vvr_pretrain_v2_ema)
EMA_FLOW = "assets/vvr2_ema/tiny_flow_vvr2"
#: that averaged flow trained 151 minutes further (vvr_bases_v2_ema2)
EMA2_FLOW = "assets/vvr2_ema2/tiny_flow_vvr2"
#: its one-step student (vvr_pretrain_v2_ema2_student) with that flow
EMA2_BASES = ("--checkpoint", "assets/vvr2_ema2/tiny_one_step_vvr2", "--flow-checkpoint", EMA2_FLOW)


def bin_compare(train_bin: str) -> tuple[str, ...]:
    """The comparison on unseen tasks of the training distribution, trained on ``train_bin`` of the easy pool."""
    return (*COMPARE, "--mode", "same_template", "--train-bins", train_bin)


#: the comparison trained and scored on bin-1 tasks of the easy pool (the bin the longer-trained base has signal on)
LONG_BIN1 = bin_compare("1")


def large_eval_runs(label: str, bases: tuple[str, ...], seeds: tuple[str, ...], *overrides: str,
                    score_bins: tuple[str, ...] = ()) -> tuple:
    """RWTD runs of 60 steps of 8 prompt groups on bin 1 from ``bases``, one per training seed, scored on 8,192 unseen
    tasks x 2 draws of bin 1, or of ``score_bins`` of the easy pool (row labels ``<label>-seed=<seed>``)."""
    scoring = ("--score-bins", *score_bins) if score_bins else ()
    return tuple((f"{label}-seed={seed}", (*LONG_BIN1, "--methods", "rwtd", *bases, *scoring, "--samples-per-step",
                                            "512", "--eval-n", "8192", "--out", "{out}", "trainer.grad_accum=8",
                                            *overrides, f"trainer.seed={seed}")) for seed in seeds)


def large_eval_method_runs(methods: tuple[str, ...], *overrides: str, samples_per_step: str = "") -> tuple:
    """Each method's 60-step run on bin 1 from the longer-trained bases at the default budget (64 samples per step)
    or at ``samples_per_step``, scored on 8,192 unseen bin-1 tasks x 2 draws (row labels: the method)."""
    budget = ("--samples-per-step", samples_per_step) if samples_per_step else ()
    return tuple((method, (*LONG_BIN1, "--methods", method, *LONG_BASES, *budget, "--eval-n", "8192", "--out", "{out}",
                           *overrides)) for method in methods)


def accum8_method_runs(runs: tuple[tuple[str, str], ...], score_bins: tuple[str, ...]) -> tuple:
    """The flow methods at RWTD's 8-group budget (``vvr2_long_<method>_accum8_large_eval``'s training), one run per
    (method, training seed), scored on 8,192 unseen tasks x 2 draws of ``score_bins`` of the easy pool (row labels
    ``<method>-seed=<seed>``)."""
    return tuple((f"{method}-seed={seed}", (*LONG_BIN1, "--methods", method, *LONG_BASES, "--samples-per-step", "512",
                                            "--score-bins", *score_bins, "--eval-n", "8192", "--out", "{out}",
                                            "trainer.grad_accum=8", f"trainer.seed={seed}"))
                 for method, seed in runs)


def ema_bins_run(method: str, score_bins: tuple[str, ...] = ("1", "2"), eval_n: int = 2048,
                 seed: int | None = None, train_bin: str = "1", flow: str = EMA_FLOW, save_every: int = 0) -> tuple:
    """A flow method at the 8-group budget trained on ``train_bin`` from ``flow`` (default ``assets/vvr2_ema``'s;
    training ``seed``, default the config's), scored on ``eval_n`` unseen tasks x 2 draws of each of ``score_bins``
    (row label: the method); ``save_every`` checkpoints it, so ``reproduce.py --resume`` continues a stopped run."""
    seeded = () if seed is None else (f"trainer.seed={seed}",)
    saving = ("--save-every", str(save_every)) if save_every else ()
    return ((method, (*bin_compare(train_bin), "--methods", method, "--flow-checkpoint", flow, "--samples-per-step",
                      "512", "--score-bins", *score_bins, "--eval-n", str(eval_n), *saving, "--out", "{out}",
                      "trainer.grad_accum=8", *seeded)),)


def ema2_bin2_run(seed: int) -> tuple:
    """Flow-GRPO's easy-to-hard run from ``assets/vvr2_ema2``'s flow, training ``seed`` (trained on bin 1, scored on
    8,192 unseen bin-2 tasks x 2 draws; checkpointed every 5 steps, so it can span stops)."""
    return ema_bins_run("flow_grpo", ("2",), eval_n=8192, seed=seed, flow=EMA2_FLOW, save_every=5)


def bases_compare(bases: tuple[str, ...], kind: str, *options: str, tags: dict[str, str] | None = None) -> tuple[str, ...]:
    """``vvr_bases.py`` on the shipped ``assets/<base>/tiny_<kind>_vvr2<tag>`` checkpoints of ``bases`` (changes from
    the first; ``tags`` gives a base's folder suffix, ``--tag`` of its pretraining), with ``options``."""
    tags = tags or {}
    return (PY, "pipelines/vvr_bases.py", "--checkpoints",
            *(f"{base}=assets/{base}/tiny_{kind}_vvr2{tags.get(base, '')}" for base in bases), *options,
            "--results", "{results}")


def published_rwtd(lam: str) -> tuple[str, ...]:
    """RWTD's published regime on the v1 held-out comparison: 24 + 24 samples per prompt, 8 prompt groups per optimizer
    step, a fixed temperature on the calibrated reward scale, the 0.1 floor, Sinkhorn with the ε floor, η = 0.2 and
    the shipped self-supervised block features; 50 steps = the 300-step table's 19,200 samples."""
    return (*COMPARE, "--methods", "rwtd", "--steps", "50", "--samples-per-step", "384", "--out", "{out}",
            "trainer.grad_accum=8", "algorithm.num_current=24", "algorithm.num_reference=24", f"algorithm.lam={lam}",
            "algorithm.target_ess=null", "algorithm.reward_scale=assets/calibration/vvr_v1_one_step.json",
            "algorithm.beta=0.5", "algorithm.current_floor=0.1", "algorithm.solver=sinkhorn", "algorithm.eps_floor=1e-4",
            "algorithm.step_size=0.2", "algorithm.features={name: ssl_encoder, path: assets/encoders/vvr_ssl}")


def _lambda_runs() -> tuple[tuple[str, tuple[str, ...]], ...]:
    runs = []
    for lam in LAMBDAS:
        runs.append((f"fit lam={lam}", (*COMPARE, *FIT, "--steps", "300", "--methods", "rwtd", "--out", "{out}", f"algorithm.lam={lam}")))
        if lam != "0":
            runs.append((f"fit lam={lam} seed=1", (*COMPARE, *FIT, "--steps", "300", "--methods", "rwtd", "--out", "{out}",
                                                   f"algorithm.lam={lam}", "trainer.seed=1")))
    for lam in LAMBDAS:
        runs.append((f"held-out lam={lam}", (*COMPARE, "--steps", "300", "--methods", "rwtd", "--out", "{out}", f"algorithm.lam={lam}")))
    return tuple(runs)


TEXT = (PY, "pipelines/text_arithmetic.py", "--results", "{results}", "--output", "{out}")

POEM_CATEGORICAL = (PY, "pipelines/poem_categorical.py", "--results", "{results}", "--out", "{out}")
AV_TOY_TRAVEL = (PY, "pipelines/av_compare.py", "--model", "toy", "--results", "{results}", "--out", "{out}")
AV_TOY = (*AV_TOY_TRAVEL, "--min-travel", "0")  # measured before av_video_quality had its travel term

CORE_IMAGES = (PY, "pipelines/core_compare_images.py", "--steps", "500", "--eval-every", "25", "--results", "{results}",
               "--out", "{out}")
POEM_FLOW = (PY, "pipelines/poem_flow.py", "--results", "{results}", "--out", "{out}")
REFLECTION = (PY, "pipelines/reflection_counting.py", "--seeds", "0", "1", "2", "--results", "{results}", "--out", "{out}")
REFLECTION_RUNS = (("default", ()), ("shared", ("--first-render", "shared")), ("blind", ("--editor-blind-to-prompt",)))
# a fresh run to the step caps: the wall-clock limits are set far beyond them, so the step count and the learning-rate
# schedule do not depend on machine load
PRETRAIN_VIDEO = (PY, "pipelines/pretrain_video.py", "--flow-minutes", "1000", "--distill-minutes", "1000")
PRETRAIN_AV = (PY, "pipelines/pretrain_av.py", "--minutes", "1000")
PRETRAIN_SHIPPED_VIDEO = (PY, "pipelines/pretrain_video.py", "--pictures-only", "--assets", "assets/video")
PRETRAIN_OUT = ("--results", "{results}", "--out", "{out}")
AV_LARGE = "assets/av_large/tiny_av_flow"
AV_COMPARE_TINY = (PY, "pipelines/av_compare.py", "--model", "tiny_av", "--results", "{results}", "--out", "{out}")
AV_SYNCED = "assets/av_synced/tiny_av_flow"


def _av_compare_120(checkpoint: str) -> tuple[str, ...]:
    """av_compare.py on ``checkpoint``: 120 steps at lr 3e-5, evaluated every 24 steps on 64 items."""
    return (*AV_COMPARE_TINY, "--checkpoint", checkpoint, "--steps", "120", "--lr", "3e-5", "--eval-every", "24",
            "--eval-size", "64")


AV_LARGE_COMPARE = _av_compare_120(AV_LARGE)
AV_LARGE_BATCH = (*AV_LARGE_COMPARE, "--prompts-per-step", "8")
AV_PAIRS = {1: ("av_grpo", "joint_grpo"), 2: ("video_sde", "routed")}  # the methods of one av_compare run, by pair


AV_FIXED = "assets/av_fixed/tiny_av_flow"
AV_FIXED_WORLD = ("--fixed-motion", "--audio-jitter", "0.5")
#: av_leak's training runs: label -> av_compare options beyond the kl_all settings
AV_LEAK_RUNS = {"reset": ("--noise-video", "0.7", "--seed", "3"),
                "keep": ("--noise-video", "0.7", "--keep-optimizer", "--seed", "3"),
                "audio_only": ("--order", "audio", "video", "--steps-per-modality", "1000", "--seed", "2")}


def _av_seeds_entry(name: str, checkpoint: str, base: str) -> Entry:
    """AV-GRPO and its baselines on ``checkpoint`` (``base`` names it in the note), 120 steps at lr 3e-5, as
    AV_SYNCED_RUNS: the table per seed, the budget, and the before/after picture of seed 0."""
    return Entry(name, tuple((f"seed={s}/pair={p}", (*_av_compare_120(checkpoint), "--methods", *AV_PAIRS[p], "--seed", s))
                             for s, p in AV_SYNCED_RUNS),
                 fast=False, blocks={name: av_seeds_table, f"{name}/budget": av_large_budget},
                 pictures={"run_0/before_after.png": f"assets/readme/av_grpo_{name.removeprefix('av_compare_')}.png"},
                 note=f"AV-GRPO and its baselines on {base}, 120 steps at lr 3e-5: AV-GRPO and joint GRPO on seeds 0-2, "
                      "video-SDE and routed on seed 0")


def _av_fixed_entry(name: str, settings: tuple[str, ...], extra: tuple[str, ...], parts: tuple[str, ...], what: str,
                    seeds: tuple[str, ...] = AV_SEEDS, picture: bool = False,
                    methods: tuple[str, ...] = ("av_grpo", "joint_grpo")) -> Entry:
    """``methods`` (default AV-GRPO and joint GRPO) on the fixed-motion base as av_compare_tiny_av_fixed, with the
    av_grpo options ``settings`` and the av_compare options ``extra``, one run per seed; ``parts``: README blocks
    beyond the table (keys of AV_SEED_PARTS); ``picture``: keep the first seed's before/after sheet."""
    return Entry(f"av_compare_tiny_av_fixed_{name}",
                 tuple((f"seed={s}", (*_av_compare_120(AV_FIXED), "--methods", *methods, "--set",
                                      *settings, *extra, "--seed", s)) for s in seeds),
                 fast=False, blocks={f"av_compare_tiny_av_fixed_{name}": av_per_seed_table,
                                     **{f"av_compare_tiny_av_fixed_{name}/{part}": AV_SEED_PARTS[part] for part in parts}},
                 pictures={"run_0/before_after.png": f"assets/readme/av_grpo_tiny_av_fixed_{name}.png"} if picture else {},
                 note=f"AV-GRPO and joint GRPO on the fixed-motion tiny AV base as av_compare_tiny_av_fixed, {what} "
                      f"({' '.join(settings)}), seeds {seeds[0]}-{seeds[-1]}")


def _av_visible_entry(source: Entry) -> Entry:
    """``source``'s runs, training unchanged, with the video quality also read at a resolution of AV_VISIBLE_PX
    pixels on the evaluation set: the changes per seed, and the second claim per seed with that readout."""
    name = f"{source.name}_visible"
    return Entry(name, tuple((label, (*argv, "--eval-video-tolerance-px", AV_VISIBLE_PX)) for label, argv in source.runs),
                 fast=False, blocks={name: av_visible_table, f"{name}/claim": AV_SEED_PARTS["claim_visible"]},
                 note=f"{source.name}'s runs (the same training) with av_video_quality also read at a resolution of "
                      f"{AV_VISIBLE_PX} px of motion residual on the evaluation set")


AV_FIXED_SDE_FIRST = _av_fixed_entry(
    "sde_first", ("ode_final_steps=3",), ("--budget-curve", "fixed"), ("budget",),
    "the SDE on the first of the 4 sampling steps only, the budget on the fixed evaluation set")
AV_FIXED_KL_ALL = _av_fixed_entry(
    "kl_all", ("ode_final_steps=3", "kl_steps=all"), ("--budget-curve", "fixed"), ("budget", "spearman", "claim"),
    "the SDE on the first sampling step and the KL on every step, the budget on the fixed evaluation set",
    seeds=("0", "1", "2", "3", "4"))
AV_FIXED_VIDEO_NOISE = _av_fixed_entry(
    "video_noise", ("ode_final_steps=3", "kl_steps=all"), ("--noise-video", "0.7", "--budget-curve", "fixed"),
    ("budget", "spearman", "claim"),
    "as kl_all with the video's SDE noise level 0.7 (the audio's), seeds 3 and 4 added after the setting was chosen "
    "on seeds 1 and 2", seeds=("0", "1", "2", "3", "4"), picture=True)
AV_FIXED_KEEP_OPTIMIZER = _av_fixed_entry(
    "keep_optimizer", ("ode_final_steps=3", "kl_steps=all"),
    ("--noise-video", "0.7", "--keep-optimizer", "--budget-curve", "fixed"), ("budget", "spearman", "claim"),
    "as video_noise with the AdamW state kept across modality switches (chosen on seeds 3 and 4; seeds 0-2, 5 and 6 "
    "held out)", seeds=("0", "1", "2", "3", "4", "5", "6"))


def _shipped_av(folder: str, *world: str) -> tuple[str, ...]:
    """pretrain_av.py measuring (and drawing) the tiny AV checkpoint shipped in ``folder``, beside the renders of the
    world its ``world`` options describe (default: the random-phase world)."""
    return (PY, "pipelines/pretrain_av.py", "--pictures-only", "--assets", folder, *world, *PRETRAIN_OUT)


def _base_verifiers(checkpoint: str) -> tuple[str, ...]:
    """av_compare.py with no method: the AV verifiers' means of ``checkpoint`` on the world's 64 prompts."""
    return (*AV_COMPARE_TINY, "--checkpoint", checkpoint, "--methods", "--eval-size", "64")


def _trained_checkpoints(arms: dict[str, tuple[str, ...]]) -> dict[str, str]:
    """Arm -> the checkpoint its training run (the entry's i-th run, one per arm, first) writes under ``{folder}``."""
    return {arm: f"{{folder}}/run_{i}/assets/tiny_av_flow" for i, arm in enumerate(arms)}


def _pilot_runs(steps: str, arms: dict[str, tuple[str, ...]]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Bases of the small tiny AV size trained ``steps`` flow steps from scratch, one per arm (its pretrain_av.py
    options), then the AV verifiers on each (after all of them: they read the checkpoints under ``{folder}``)."""
    pilot = (*PRETRAIN_AV, "--steps", steps, "--assets", "{out}/assets", *PRETRAIN_OUT)
    return (*((f"{arm}/measured", (*pilot, *options)) for arm, options in arms.items()),
            *((f"{arm}/verifiers", _base_verifiers(path)) for arm, path in _trained_checkpoints(arms).items()))


TIME_PILOT_ARMS = {"plain": (), "shared_time": ("--shared-time",)}
TIME_PILOT_LABELS = {"plain": "learned positions per tower", "shared_time": "+ `shared_time`"}
# the small base's size with the time-aligned window, trained from scratch with each video-tower option
ARCH_PILOT_ARMS = {"plain": (), "adaptive": ("--adaptive-norm",), "conv": ("--conv-channels", "32"),
                   "both": ("--adaptive-norm", "--conv-channels", "32")}
ARCH_PILOT_LABELS = {"plain": "tokens, time added (as shipped)", "adaptive": "`time_conditioning: adaptive_norm`",
                     "conv": "`conv_channels: 32`", "both": "both"}


# continuing the larger base for 1,500 flow steps at lr 3e-4 (about 20 min each on one core), per arm: the window
# of time-aligned cross-attention (generator.cross_frames) and the fraction of decoupled noise levels
AV_SYNC_ARMS = {"decoupled": ("--decoupled-times", "0.5"), "window": ("--cross-frames", "0"),
                "window_decoupled": ("--cross-frames", "0", "--decoupled-times", "0.5")}
AV_SYNC_LABELS = {"decoupled": "decoupled noise levels (half the items)", "window": "cross-attention within the frame",
                  "window_decoupled": "both"}


def _continued_runs(init: str, arms: dict[str, tuple[str, ...]], levels: tuple[str, ...] = (),
                    cross_options: tuple[str, ...] = ()) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``init`` continued 1,500 flow steps at lr 3e-4 under each of ``arms``, then the cross-modal measure of
    ``init`` and every arm (with clips finished from ``levels``, and ``cross_options``), then the AV verifiers of
    every arm (these read the checkpoints under ``{folder}``)."""
    trained = _trained_checkpoints(arms)
    train = tuple((f"{arm}/measured", (*PRETRAIN_AV, "--init", init, "--steps", "1500", "--lr", "3e-4", *options,
                                       "--assets", "{out}/assets", *PRETRAIN_OUT))
                  for arm, options in arms.items())
    cross = ("cross_modal", (PY, "pipelines/av_cross_modal.py", "--checkpoints", f"base={init}",
                             *(f"{arm}={path}" for arm, path in trained.items()),
                             *(("--from-levels", *levels) if levels else ()), *cross_options,
                             "--results", "{results}", "--out", "{out}"))
    return (*train, cross, *((f"{arm}/verifiers", _base_verifiers(path)) for arm, path in trained.items()))


# the synced base continued 1,500 flow steps as it was trained, and at noise levels shifted towards pure noise
AV_COMMIT_ARMS = {"continued": (), "shifted": ("--time-shift", "3")}


# the synced base continued 1,500 flow steps with convolutions added around its video tokens
AV_CONV_ARMS = {"conv": ("--conv-channels", "32")}
AV_CONV_LABELS = {"conv": "1,500 more steps with `conv_channels: 32`"}


# the synced base continued 1,500 flow steps on batches of 4 prompts x 8 clips, the noise paired with each prompt's
# clips independently or by minibatch optimal transport
AV_OT_ARMS = {"grouped": ("--clips-per-prompt", "8"), "coupled": ("--clips-per-prompt", "8", "--ot-coupling")}
AV_OT_LABELS = {"grouped": "1,500 more steps, 8 clips per prompt", "coupled": "the same, noise paired by OT"}


# the synced base continued on a world where the prompt fixes the motion and the bursts are up to half a frame off,
# as it is and with the shared sinusoidal time features switched on (strong frame features)
AV_FIXED_ARMS = {"fixed": (), "fixed_timed": ("--shared-time",)}
AV_FIXED_LABELS = {"fixed": "1,500 steps on the fixed-motion world", "fixed_timed": "the same with `shared_time`"}


def _fixed_motion_runs() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The synced base continued 1,500 flow steps at lr 3e-4 on the fixed-motion world (bursts up to half a frame
    off) under each of AV_FIXED_ARMS, the AV verifiers of each, and the position probe of the synced base and each."""
    trained = _trained_checkpoints(AV_FIXED_ARMS)
    train = tuple((f"{arm}/measured", (*PRETRAIN_AV, "--init", AV_SYNCED, "--steps", "1500", "--lr", "3e-4",
                                       "--fixed-motion", "--audio-jitter", "0.5", *options, "--assets", "{out}/assets",
                                       *PRETRAIN_OUT))
                  for arm, options in AV_FIXED_ARMS.items())
    probe = ("probe", (PY, "pipelines/av_position_probe.py", "--checkpoints", f"base={AV_SYNCED}",
                       *(f"{arm}={path}" for arm, path in trained.items()), "--results", "{results}"))
    return (*train, *((f"{arm}/verifiers", _base_verifiers(path)) for arm, path in trained.items()), probe)


# the small base's size trained from scratch on the fixed-motion world, the network predicting the velocity or the
# clean sample (JiT-style x-prediction)
PREDICTION_ARMS = {"velocity": (), "sample": ("--sample-prediction",)}
PREDICTION_LABELS = {"velocity": "velocity prediction (as shipped)", "sample": "`prediction: sample`"}


def _prediction_runs(steps: str, arms: dict[str, tuple[str, ...]] = PREDICTION_ARMS, verifiers: bool = False,
                     fixed_motion: bool = True, fixed_offset: bool = False) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Small-size bases trained ``steps`` flow steps from scratch under each of ``arms`` (time-aligned window), on
    the fixed-motion world or the random-phase one (with ``fixed_offset``: its phase alone random); then (with
    ``verifiers``) the AV verifiers of each, and on the fixed-motion world the position probe of each."""
    trained = _trained_checkpoints(arms)
    world = ("--fixed-motion",) if fixed_motion else ("--fixed-offset",) if fixed_offset else ()
    train = tuple((f"{arm}/measured", (*PRETRAIN_AV, "--steps", steps, "--cross-frames", "0", *world, *options,
                                       "--assets", "{out}/assets", *PRETRAIN_OUT))
                  for arm, options in arms.items())
    verified = tuple((f"{arm}/verifiers", _base_verifiers(path)) for arm, path in trained.items()) if verifiers else ()
    probe = ("probe", (PY, "pipelines/av_position_probe.py", "--checkpoints",
                       *(f"{arm}={path}" for arm, path in trained.items()), "--results", "{results}"))
    return (*train, *verified, *((probe,) if fixed_motion else ()))


# the same size and world, each output (velocity or clean sample) trained with the loss in velocity space or in
# clean-sample space (the velocity error weighted by t²)
LOSS_SPACE_ARMS = {"velocity": (), "sample": ("--sample-prediction",), "velocity_x0_loss": ("--sample-space-loss",),
                   "sample_x0_loss": ("--sample-prediction", "--sample-space-loss")}


AV_STEPS_ARMS = {k: LOSS_SPACE_ARMS[k] for k in AV_STEPS_LOSS_SPACES}

# the recipe that places the shape (clean-sample output, sample-space loss) on the random-phase world, each drawn
# prompt rendered 8 times per batch, its noise paired with the clips independently or by minibatch optimal transport
RANDOM_OT_ARMS = {"clips8": (*LOSS_SPACE_ARMS["sample_x0_loss"], "--clips-per-prompt", "8"),
                  "clips8_ot": (*LOSS_SPACE_ARMS["sample_x0_loss"], "--clips-per-prompt", "8", "--ot-coupling")}
RANDOM_OT_LABELS = {"clips8": "sample prediction, sample-space loss, 8 clips per prompt",
                    "clips8_ot": "the same, noise paired by OT"}
# the same recipe where only the phase is random (four motions per prompt, the shape across the middle)
FIXED_OFFSET_ARMS = {"sample_x0_loss": LOSS_SPACE_ARMS["sample_x0_loss"], "clips8_ot": RANDOM_OT_ARMS["clips8_ot"]}
FIXED_OFFSET_LABELS = {"sample_x0_loss": LOSS_SPACE_LABELS["sample_x0_loss"],
                       "clips8_ot": "the same, 8 clips per prompt, noise paired by OT"}


ENTRIES: tuple[Entry, ...] = (
    Entry("text_arithmetic", ((None, TEXT),), fast=True, blocks={"text_arithmetic": text_single}),
    Entry("text_arithmetic_seeds", ((None, (*TEXT, "--seeds", "0", "1", "2", "3", "4")),), fast=False,
          blocks={"text_arithmetic_seeds": text_seeds}),
    Entry("text_arithmetic_threads", tuple((f"threads={n}", (*TEXT, "--threads", n)) for n in THREADS), fast=False,
          blocks={"text_arithmetic_threads": text_threads},
          note="the text comparison (seed 0) with other torch thread counts: same code, other float rounding"),
    # not in the README: a short configuration (about 10 s on idle cores) for the default test suite
    Entry("text_arithmetic_short", ((None, (*TEXT, "--pretrain-steps", "200", "--rl-steps", "5", "--prompts-per-step", "8",
                                           "--group-size", "4", "--estimators", "grpo,mapp")),), fast=True),
    Entry("toy_tilt", ((None, (PY, "pipelines/toy_tilt.py", "--results", "{results}", "--out", "{out}")),), fast=False,
          blocks={"toy_tilt/methods": toy_methods, "toy_tilt/baselines": toy_baselines, "toy_tilt/lambda": toy_lambda},
          pictures={"samples.png": "assets/readme/toy_tilt_samples.png", "lambda_curve.png": "assets/readme/lambda_curve.png"}),
    Entry("demo", ((None, (PY, "-m", "visalign.cli", "demo", "--results", "{results}", "--out", "{out}")),), fast=False,
          blocks={"demo": demo}),
    # not in the README: drift checks of the two cost benchmarks (time ratios only)
    Entry("overhead", ((None, (PY, "-m", "visalign.cli", "bench", "overhead", "--results", "{results}", "--threads", "1")),),
          fast=True),
    Entry("transport", ((None, (PY, "-m", "visalign.cli", "bench", "transport", "--results", "{results}", "--threads", "1")),),
          fast=True),
    Entry("vvr_verifier_accuracy", ((None, (PY, "-m", "visalign.vvr.accuracy", "--results", "{results}", "--split", "bench",
                                            "--limit", "1000")),),
          fast=False, blocks={"vvr_verifier_accuracy": vvr_accuracy}),
    Entry("vvr_throughput", ((None, (PY, "-m", "visalign.vvr.throughput", "--results", "{results}")),), fast=False,
          blocks={"vvr_throughput": vvr_throughput}),
    Entry("ssl_encoder_probe", ((None, (PY, "pipelines/train_image_encoder.py", "--probe-only", "--out", "assets/encoders/vvr_ssl",
                                        "--sheet", "{out}/neighbours.png", "--results", "{results}")),),
          fast=True, blocks={"ssl_encoder_probe": ssl_probe},
          pictures={"neighbours.png": "assets/readme/vvr_ssl_neighbours.png"}),
    Entry("vvr_from_level", tuple((key, (PY, "pipelines/vvr_from_level.py", "--checkpoints", f"flow={path}", "--version",
                                          version, "--levels", *VVR_FROM_LEVELS, "--results", "{results}"))
                                  for key, (_, path, version) in VVR_FROM_BASES.items()),
          fast=True, blocks={"vvr_from_level": vvr_from_level},
          note="the v1 and v2 VVR flow bases (and the v2 flow trained further) finishing held-out renders noised to "
               "1, 0.9, 0.75, 0.5 and 0.25"),
    Entry("vvr_pretrain", ((None, (PY, "pipelines/vvr_pretrain.py", "--version", "1", "--results", "{results}",
                                   "--assets", "{out}/assets", "--out", "{out}")),), fast=False, blocks={"vvr_pretrain": vvr_pretrain},
          pictures={"one_step_samples.png": "assets/readme/vvr_one_step_samples.png"}),
    Entry("vvr_pretrain_v2", ((None, (PY, "pipelines/vvr_pretrain.py", "--flow-minutes", "32", "--distill-minutes", "15",
                                      "--results", "{results}", "--assets", "{out}/assets", "--out", "{out}")),),
          fast=False, blocks={"vvr_pretrain_v2": vvr_pretrain_v2},
          pictures={"one_step_samples.png": "assets/readme/vvr2_one_step_samples.png"}),
    Entry("vvr_pretrain_v2_64", ((None, (PY, "pipelines/vvr_pretrain.py", *BASE_64, "--assets", "{out}/assets",
                                         "--out", "{out}", "--results", "{results}", "--threads", "1")),),
          fast=False, blocks={"vvr_pretrain_v2_64": pretrain_v2_table(20)},
          pictures={"one_step_samples.png": "assets/readme/vvr2_64_one_step_samples.png"}),
    Entry("vvr_pretrain_v2_64_long",
          ((None, (PY, "pipelines/vvr_pretrain.py", *BASE_64_MODEL, "--flow-minutes", "1000", "--flow-steps", "10000",
                   "--ema-decay", "0.999", "--pool", "32000", "--distill-minutes", "1000", "--distill-steps", "1500",
                   "--eval-n", "384", "--save-every", "500", "--threads", "2", "--assets", "{out}/assets", "--out",
                   "{out}", "--results", "{results}")),),
          fast=False, blocks={"vvr_pretrain_v2_64_long": pretrain_v2_table(20)},
          pictures={"one_step_samples.png": "assets/readme/vvr2_64_long_one_step_samples.png",
                    "flow_samples.png": "assets/readme/vvr2_64_long_flow_samples.png"},
          note="the 64 px base trained longer: 10,000 flow steps (75 minutes on two threads) on 32,000 "
               "rendered pairs of the easy pool's bins 1-2 with a weight average (decay 0.999), then 1,500 distillation "
               "steps; checkpointed every 500 steps, so a stopped run continues with --resume"),
    Entry("vvr_pretrain_v2_long", ((None, (PY, "pipelines/vvr_pretrain.py", "--teacher", LONG_FLOW, "--distill-minutes", "20",
                                           "--distill-steps", "100000", "--threads", "2", "--assets", "{out}/assets",
                                           "--out", "{out}", "--results", "{results}")),),
          fast=False, blocks={"vvr_pretrain_v2_long": vvr_pretrain_v2},
          pictures={"one_step_samples.png": "assets/readme/vvr2_long_one_step_samples.png"},
          note="the one-step student distilled (20 minutes, both cores) from the v2 flow trained 25 minutes further"),
    *(Entry(f"vvr2_long_{mode}_60", ((None, (*COMPARE, "--mode", mode, *LONG_BASES, "--out", "{out}")),), fast=False,
            blocks={f"vvr2_long_{mode}_60": vvr2_methods},
            note=f"every method trained 60 steps from the longer-trained v2 bases ({mode})")
      for mode in ("same_template", "heldout", "easy_to_hard")),
    Entry("vvr2_long_bin1_60", ((None, (*LONG_BIN1, *LONG_BASES, "--out", "{out}")),), fast=False,
          blocks={"vvr2_long_bin1_60": vvr2_methods},
          note="every method trained 60 steps on bin-1 tasks of the easy pool from the longer-trained v2 bases, scored "
               "on 512 unseen bin-1 tasks x 2 draws"),
    Entry("vvr_pretrain_v2_longer", ((None, (PY, "pipelines/vvr_pretrain.py", "--init-flow", LONG_FLOW, "--flow-minutes",
                                             "60", "--flow-steps", "100000", "--lr", "3e-4", "--distill-minutes", "20",
                                             "--distill-steps", "100000", "--pool", "24000", "--threads", "1",
                                             "--assets", "{out}/assets", "--out", "{out}", "--results", "{results}")),),
          fast=False, blocks={"vvr_pretrain_v2_longer": vvr_pretrain_v2},
          pictures={"one_step_samples.png": "assets/readme/vvr2_longer_one_step_samples.png"},
          note="the longer-trained v2 flow trained 60 minutes further on one core (24,000 rendered pairs), and a "
               "one-step student distilled from it for 20 minutes in the same run"),
    Entry("vvr_pretrain_v2_x0_pilot",
          tuple((label, (PY, "pipelines/vvr_pretrain.py", *arm, "--flow-minutes", "120", "--flow-steps", "4000",
                         "--distill-minutes", "0", "--distill-pairs", "0", "--bench-per-bin", "0", "--eval-n", "384",
                         "--threads", "1", "--assets", "{out}/assets", "--out", "{out}", "--results", "{results}"))
                for label, (_, arm) in VVR_X0_ARMS.items()),
          fast=False, blocks={"vvr_pretrain_v2_x0_pilot": vvr_x0_pilot},
          pictures={"run_1/flow_samples.png": "assets/readme/vvr2_x0_flow_samples.png"},
          note="the 32 px v2 flow pretrained from scratch for 4,000 steps (one core each), predicting the velocity "
               "with the velocity loss (as shipped) or the clean sample with the loss in sample space; held-out strict "
               "accuracy and soft reward on 384 easy tasks; the one-step row is the flow's own one Euler step "
               "(no distillation)"),
    Entry("vvr_pretrain_v2_ema", ((None, (PY, "pipelines/vvr_pretrain.py", "--init-flow", LONGER_FLOW, "--flow-minutes",
                                          "240", "--flow-steps", "8000", "--lr", "3e-4", "--ema-decay", "0.999",
                                          "--distill-minutes", "60", "--distill-steps", "2500", "--pool", "32000",
                                          "--max-complexity", "20", "--seed", "1", "--eval-n", "384", "--threads",
                                          "1", "--assets", "{out}/assets", "--out", "{out}", "--results",
                                          "{results}")),),
          fast=False, blocks={"vvr_pretrain_v2_ema": pretrain_v2_table(20)},
          pictures={"one_step_samples.png": "assets/readme/vvr2_ema_one_step_samples.png",
                    "flow_samples.png": "assets/readme/vvr2_ema_flow_samples.png"},
          note="the v2 flow of assets/vvr2_longer trained 8,000 steps further on one core on 32,000 fresh rendered "
               "pairs of the easy pool's bins 1-2 (complexity <= 20, training seed 1), shipping an exponential "
               "moving average of its weights (decay 0.999), and a one-step student distilled from it (2,500 steps) "
               "in the same run"),
    Entry("vvr_pretrain_v2_ema2_student",
          ((None, (PY, "pipelines/vvr_pretrain.py", "--teacher", EMA2_FLOW, "--distill-minutes", "90", "--distill-steps",
                   "2500", "--max-complexity", "20", "--seed", "5", "--eval-n", "384", "--threads", "2", "--assets",
                   "{out}/assets", "--out", "{out}", "--results", "{results}")),),
          fast=False, blocks={"vvr_pretrain_v2_ema2_student": pretrain_v2_table(20)},
          pictures={"one_step_samples.png": "assets/readme/vvr2_ema2_one_step_samples.png"},
          note="a one-step student distilled (2,500 steps, both cores) from the flow trained 151 minutes further "
               "(assets/vvr2_ema2)"),
    Entry("vvr_bases_v2",
          tuple((kind, bases_compare(("vvr2_long", "vvr2_longer", "vvr2_ema"), kind, "--eval-n", "1024"))
                for kind in ("flow", "one_step")),
          fast=False, blocks={"vvr_bases_v2": vvr_bases_table},
          note="the shipped v2 bases (longer-trained, trained 60 minutes further, trained further on bins 1-2 with "
               "an EMA), flows and one-step students, on the same 1,024 unseen tasks of each easy-pool bin"),
    Entry("vvr_bases_v2_ema2",
          tuple((kind, bases_compare(("vvr2_ema", "vvr2_ema2"), kind, "--eval-n", "1024"))
                for kind in ("flow", "one_step")),
          fast=False, blocks={"vvr_bases_v2_ema2": vvr_bases_table},
          note="the averaged bins 1-2 flow (vvr2_ema) and the same flow trained 151 minutes further "
               "(vvr2_ema2), and their one-step students, on vvr_bases_v2's 1,024 unseen tasks of each easy-pool bin"),
    Entry("vvr_bases_v2_64_long",
          tuple((kind, bases_compare(("vvr2_ema2", "vvr2_64_long"), kind, "--eval-n", "1024",
                                     tags={"vvr2_64_long": TAG_64}))
                for kind in ("flow", "one_step")),
          fast=False, blocks={"vvr_bases_v2_64_long": vvr_bases_table},
          note="the 64 px MiniLM base (assets/vvr2_64_long, vvr_pretrain_v2_64_long) against the 32 px base the "
               "method results start from (assets/vvr2_ema2), flows and one-step students, on vvr_bases_v2's 1,024 "
               "unseen tasks of each easy-pool bin"),
    Entry("vvr_bases_v2_group_signal",
          ((None, bases_compare(("vvr2_ema", "vvr2_ema2"), "flow", "--bins", "2", "--eval-n", "256", "--eval-draws",
                                "16")),),
          fast=False, blocks={"vvr_bases_v2_group_signal": vvr_bases_table},
          note="the two averaged flows on 256 unseen bin-2 tasks x 16 draws (a Flow-GRPO group): how many tasks' "
               "groups hold a solved image"),
    Entry("vvr2_longer_bin1_60", ((None, (*LONG_BIN1, *LONGER_BASES, "--out", "{out}")),), fast=False,
          blocks={"vvr2_longer_bin1_60": vvr2_methods},
          note="every method trained 60 steps on bin-1 tasks from the v2 bases trained 60 minutes further"),
    Entry("vvr2_long_bin1_rwtd_300", ((None, (*LONG_BIN1, "--methods", "rwtd", "--steps", "300", *LONG_BASES,
                                               "--out", "{out}")),), fast=False,
          blocks={"vvr2_long_bin1_rwtd_300": vvr2_methods},
          note="RWTD trained 300 steps on bin-1 tasks from the longer-trained v2 one-step base, scored on 512 unseen "
               "bin-1 tasks x 2 draws"),
    Entry("vvr2_long_rwtd_accum8_60", tuple((f"lr={lr}", (*LONG_BIN1, "--methods", "rwtd", *LONG_BASES,
                                                          "--samples-per-step", "512", "--out", "{out}",
                                                          "trainer.grad_accum=8", f"trainer.learning_rate={lr}"))
                                            for lr in ("1e-4", "5e-4")),
          fast=False, blocks={"vvr2_long_rwtd_accum8_60": rwtd_accum_lr},
          note="RWTD 60 steps of 8 prompt groups each (8x the samples of the 60-step tables) on bin-1 tasks from the "
               "longer-trained v2 one-step base, at two learning rates, scored on 512 unseen bin-1 tasks x 2 draws"),
    Entry("vvr2_rwtd_accum8_large_eval",
          (*large_eval_runs("long", LONG_BASES, LARGE_EVAL_SEEDS), *large_eval_runs("longer", LONGER_BASES, LARGE_EVAL_SEEDS)),
          fast=False, blocks={"vvr2_rwtd_accum8_large_eval": large_eval_by_seed},
          note="RWTD 60 steps of 8 prompt groups each on bin-1 tasks from the two longer-trained v2 one-step bases, three "
               "training seeds each, scored on 8,192 unseen bin-1 tasks x 2 draws"),
    Entry("vvr2_long_rwtd_accum8_large_eval_seeds",
          large_eval_runs("long", LONG_BASES, ("3", "4")),
          fast=False, blocks={"vvr2_long_rwtd_accum8_large_eval_seeds": rwtd_large_eval_more_seeds},
          note="training seeds 3 and 4 of vvr2_rwtd_accum8_large_eval's runs on the longer-trained v2 one-step base"),
    Entry("vvr2_longer_rwtd_lr_large_eval",
          large_eval_runs("longer", LONGER_BASES, ("0", "1"), "trainer.learning_rate=5e-5"),
          fast=False, blocks={"vvr2_longer_rwtd_lr_large_eval": large_eval_by_seed},
          note="vvr2_rwtd_accum8_large_eval's runs on the v2 one-step base trained 60 minutes further at half the "
               "learning rate (5e-5), training seeds 0 and 1"),
    Entry("vvr2_long_rwtd_lambda_large_eval",
          tuple((f"lam={lam}", (*LONG_BIN1, "--methods", "rwtd", *LONG_BASES, "--samples-per-step", "512", "--eval-n",
                                "8192", "--out", "{out}", "trainer.grad_accum=8", f"algorithm.lam={lam}"))
                for lam in ("0", "0.85")),
          fast=False, blocks={"vvr2_long_rwtd_lambda_large_eval": rwtd_lambda_large_eval},
          note="RWTD's λ = 0 and 0.85 in the 8-group runs on bin-1 tasks from the longer-trained v2 one-step base "
               "(training seed 0), scored on 8,192 unseen bin-1 tasks x 2 draws"),
    Entry("vvr2_long_rwtd_accum8_easy_to_hard_large_eval",
          large_eval_runs("long", LONG_BASES, ("0", "1", "2", "3", "4"), score_bins=("2",)),
          fast=False, blocks={"vvr2_long_rwtd_accum8_easy_to_hard_large_eval": large_eval_by_seed},
          note="the runs of vvr2_rwtd_accum8_large_eval and vvr2_long_rwtd_accum8_large_eval_seeds on the "
               "longer-trained v2 one-step base (trained on bin 1, training seeds 0-4), scored instead on 8,192 "
               "unseen bin-2 tasks x 2 draws (easy to hard within the easy pool)"),
    Entry("vvr2_long_bin1_60_large_eval",
          large_eval_method_runs(("rwtd", "festdpo", "rwr", "flow_grpo", "diffusion_nft")),
          fast=False, blocks={"vvr2_long_bin1_60_large_eval": methods_large_eval},
          note="vvr2_long_bin1_60 (every method 60 steps on bin-1 tasks from the longer-trained v2 bases at one "
               "sample budget), scored instead on 8,192 unseen bin-1 tasks x 2 draws"),
    Entry("vvr2_long_bin1_60_large_eval_seed1",
          large_eval_method_runs(("flow_grpo", "diffusion_nft", "rwtd"), "trainer.seed=1"),
          fast=False, blocks={"vvr2_long_bin1_60_large_eval_seed1": methods_large_eval},
          note="training seed 1 of vvr2_long_bin1_60_large_eval's runs of the three methods that did not lose there"),
    *(Entry(f"vvr2_long_{method}_accum8_large_eval",
            large_eval_method_runs((method,), "trainer.grad_accum=8", samples_per_step="512"),
            fast=False, blocks={f"vvr2_long_{method}_accum8_large_eval": methods_large_eval},
            note=f"{method} at RWTD's 8-group budget (512 generator samples per step in 8 accumulated rollouts, 60 "
                 "steps) on bin-1 tasks from the longer-trained v2 flow, scored on 8,192 unseen bin-1 tasks x 2 draws")
      for method in ("flow_grpo", "diffusion_nft")),
    Entry("vvr2_long_diffusion_nft_accum8_large_eval_seed1",
          large_eval_method_runs(("diffusion_nft",), "trainer.grad_accum=8", "trainer.seed=1", samples_per_step="512"),
          fast=False, blocks={"vvr2_long_diffusion_nft_accum8_large_eval_seed1": methods_large_eval},
          note="training seed 1 of vvr2_long_diffusion_nft_accum8_large_eval"),
    Entry("vvr2_long_flow_grpo_accum8_large_eval_seed1",
          large_eval_method_runs(("flow_grpo",), "trainer.grad_accum=8", "trainer.seed=1", samples_per_step="512"),
          fast=False, blocks={"vvr2_long_flow_grpo_accum8_large_eval_seed1": methods_large_eval},
          note="training seed 1 of vvr2_long_flow_grpo_accum8_large_eval"),
    Entry("vvr2_long_festdpo_accum8_large_eval",
          large_eval_method_runs(("festdpo",), "trainer.grad_accum=8", samples_per_step="512"),
          fast=False, blocks={"vvr2_long_festdpo_accum8_large_eval": methods_large_eval},
          note="FestDPO at the 8-group budget (512 generator samples per step in 8 accumulated rollouts, 60 "
               "steps) on bin-1 tasks from the longer-trained v2 one-step base, scored on 8,192 unseen bin-1 tasks x 2 "
               "draws"),
    Entry("vvr2_long_rwr_accum8_large_eval",
          large_eval_method_runs(("rwr",), "trainer.grad_accum=8", samples_per_step="512"),
          fast=False, blocks={"vvr2_long_rwr_accum8_large_eval": methods_large_eval},
          note="RWR at the 8-group budget (512 generator samples per step in 8 accumulated rollouts, 60 steps) on "
               "bin-1 tasks from the longer-trained v2 one-step base, scored on 8,192 unseen bin-1 tasks x 2 draws"),
    *(Entry(f"vvr2_ema_{method}_accum8_bins", ema_bins_run(method), fast=False,
            blocks={f"vvr2_ema_{method}_accum8_bins": methods_per_bin},
            note=f"{label} at the 8-group budget trained on bin-1 tasks from the v2 flow trained further on bins 1-2 "
                 "(assets/vvr2_ema), scored on 2,048 unseen tasks x 2 draws of bin 1 (held out) and of bin 2 (easy to "
                 "hard)")
      for method, label in (("diffusion_nft", "DiffusionNFT"), ("flow_grpo", "Flow-GRPO"))),
    Entry("vvr2_ema_flow_grpo_accum8_bin2_seed1", ema_bins_run("flow_grpo", ("2",), eval_n=8192, seed=1),
          fast=False, blocks={"vvr2_ema_flow_grpo_accum8_bin2_seed1": methods_per_bin},
          note="training seed 1 of vvr2_ema_flow_grpo_accum8_bins, scored on 8,192 unseen bin-2 tasks x 2 draws (easy "
               "to hard)"),
    Entry("vvr2_ema_flow_grpo_accum8_bin2_trained",
          ema_bins_run("flow_grpo", ("2",), eval_n=8192, seed=1, train_bin="2"), fast=False,
          blocks={"vvr2_ema_flow_grpo_accum8_bin2_trained": methods_per_bin},
          note="vvr2_ema_flow_grpo_accum8_bin2_seed1 trained on bin-2 tasks instead of bin 1, scored on the same 8,192 "
               "unseen bin-2 tasks x 2 draws: how much of bin 2 the base lets RL reach when it trains there"),
    Entry("vvr2_ema2_flow_grpo_accum8_bin2_seed1", ema2_bin2_run(1), fast=False,
          blocks={"vvr2_ema2_flow_grpo_accum8_bin2_seed1": methods_per_bin},
          note="vvr2_ema_flow_grpo_accum8_bin2_seed1 from the flow trained 151 minutes further (assets/vvr2_ema2): "
               "trained on bin-1 tasks, scored on 8,192 unseen bin-2 tasks x 2 draws (easy to hard); checkpointed "
               "every 5 steps, so a stopped run continues with --resume"),
    *(Entry(f"vvr2_ema2_flow_grpo_accum8_bin2_seed{seed}", ema2_bin2_run(seed), fast=False,
            note=f"training seed {seed} of vvr2_ema2_flow_grpo_accum8_bin2_seed1 (trained on bin-1 tasks from "
                 "assets/vvr2_ema2's flow, scored on 8,192 unseen bin-2 tasks x 2 draws); shown in "
                 "vvr2_ema2_flow_grpo_accum8_bin2_seeds")
      for seed in (0, 2)),
    Entry("vvr2_ema2_flow_grpo_accum8_bin2_seeds",
          tuple((f"ema2-seed={seed}", ema2_bin2_run(seed)[0][1]) for seed in (0, 1, 2)),
          fast=False, blocks={"vvr2_ema2_flow_grpo_accum8_bin2_seeds": large_eval_by_seed},
          gathers=tuple(f"vvr2_ema2_flow_grpo_accum8_bin2_seed{seed}" for seed in (0, 1, 2)),
          note="vvr2_ema2_flow_grpo_accum8_bin2_seed0, _seed1 and _seed2 side by side: Flow-GRPO trained on bin-1 tasks "
               "from assets/vvr2_ema2's flow, scored on 8,192 unseen bin-2 tasks x 2 draws, with the mean over the "
               "training seeds"),
    Entry("vvr2_ema2_rwtd_accum8_bins",
          large_eval_runs("ema2", EMA2_BASES, ("0", "1", "2", "3"), score_bins=("1", "2")),
          fast=False, blocks={"vvr2_ema2_rwtd_accum8_bins": large_eval_by_seed_and_bin},
          note="RWTD 60 steps of 8 prompt groups each on bin-1 tasks from assets/vvr2_ema2's one-step student, four "
               "training seeds, each scored on 8,192 unseen tasks x 2 draws of bin 1 (same distribution) and of bin 2 "
               "(easy to hard)"),
    Entry("rwtd_targets",
          ((None, (PY, "pipelines/rwtd_targets.py", "--checkpoints", "long=assets/vvr2_long/tiny_one_step_vvr2",
                   "longer=assets/vvr2_longer/tiny_one_step_vvr2", "ema2=assets/vvr2_ema2/tiny_one_step_vvr2",
                   "--groups", "24", "--results", "{results}")),),
          fast=False, blocks={"rwtd_targets": rwtd_targets_table},
          note="RWTD's sample-space transport targets scored beside the current samples they move, on 24 bin-1 "
               "prompt groups of each one-step base RWTD was trained from"),
    Entry("vvr2_ema2_rwtd_full_step",
          tuple((f"{space}-eta=1", large_eval_runs("ema2", EMA2_BASES, ("0",), f"algorithm.regression_space={space}",
                                                   "algorithm.step_size=1", score_bins=("1", "2"))[0][1])
                for space in ("features", "samples")),
          fast=False, blocks={"vvr2_ema2_rwtd_full_step": rwtd_regression_arms},
          note="training seed 0 of vvr2_ema2_rwtd_accum8_bins with the full transport step (algorithm.step_size=1), "
               "regressing conv features (the config's) or the samples themselves (algorithm.regression_space=samples), "
               "scored on the same unseen bin-1 and bin-2 tasks"),
    Entry("vvr2_ema2_rwtd_grid_features",
          (("grid4-eta=0.5", large_eval_runs("ema2", EMA2_BASES, ("0",), "algorithm.features={name: conv, grid: 4}",
                                             score_bins=("1", "2"))[0][1]),),
          fast=False, blocks={"vvr2_ema2_rwtd_grid_features": rwtd_regression_arms},
          note="training seed 0 of vvr2_ema2_rwtd_accum8_bins with conv features pooled on a 4 x 4 grid (the config's "
               "are pooled over the whole image, blind to where objects are), scored on the same unseen bin-1 and "
               "bin-2 tasks"),
    Entry("vvr2_long_flow_accum8_easy_to_hard_large_eval",
          accum8_method_runs((("flow_grpo", "0"), ("diffusion_nft", "0"), ("diffusion_nft", "1")), score_bins=("2",)),
          fast=False, blocks={"vvr2_long_flow_accum8_easy_to_hard_large_eval": methods_seeds_large_eval},
          note="the runs of vvr2_long_flow_grpo_accum8_large_eval and vvr2_long_diffusion_nft_accum8_large_eval(_seed1) "
               "(trained on bin 1), scored instead on 8,192 unseen bin-2 tasks x 2 draws (easy to hard within the "
               "easy pool)"),
    Entry("vvr2_long_rwtd_accum8_150", ((None, (*LONG_BIN1, "--methods", "rwtd", *LONG_BASES, "--samples-per-step",
                                                 "512", "--steps", "150", "--out", "{out}", "trainer.grad_accum=8")),),
          fast=False, blocks={"vvr2_long_rwtd_accum8_150": vvr2_methods},
          note="RWTD 150 steps of 8 prompt groups each on bin-1 tasks from the longer-trained v2 one-step base, scored "
               "on 512 unseen bin-1 tasks x 2 draws"),
    Entry("vvr2_long_rwtd_lambda_60", tuple((f"lam={lam}", (*LONG_BIN1, "--methods", "rwtd", *LONG_BASES, "--out",
                                                            "{out}", f"algorithm.lam={lam}"))
                                            for lam in ("0", "0.5", "0.85")),
          fast=False, blocks={"vvr2_long_rwtd_lambda_60": vvr2_lambda},
          note="RWTD 60 steps on bin-1 tasks from the longer-trained v2 one-step base at three λ, scored on 512 unseen "
               "bin-1 tasks x 2 draws"),
    Entry("vvr2_rwtd_lambda_60", tuple((f"lam={lam}", (*COMPARE, "--mode", "same_template", "--methods", "rwtd",
                                                       "--out", "{out}", f"algorithm.lam={lam}")) for lam in ("0", "0.5", "0.85")),
          fast=False, blocks={"vvr2_rwtd_lambda_60": vvr2_lambda},
          note="RWTD 60 steps from the shipped v2 one-step base at three λ, scored on 512 unseen easy-pool tasks x 2 draws"),
    Entry("vvr_rwtd_published_v1", tuple((f"lam={lam}", published_rwtd(lam)) for lam in ("0.85", "0.5")), fast=False,
          blocks={"vvr_rwtd_published_v1": rwtd_published},
          note="RWTD in the published regime on the v1 one-step base, scored on 512 held-out easy v1 tasks x 2 draws"),
    Entry("vvr_rwtd_budget_v1", (("accum=8", (*COMPARE, "--methods", "rwtd", "--steps", "300", "--samples-per-step", "512",
                                              "--out", "{out}", "trainer.grad_accum=8")),
                                 ("steps=2400", (*COMPARE, "--methods", "rwtd", "--steps", "2400", "--out", "{out}"))),
          fast=False, blocks={"vvr_rwtd_budget_v1": rwtd_budget},
          note="RWTD (the v1 config) with 8x the 300-step table's samples, as 8 prompt groups per optimizer step or as "
               "8x the steps, scored on 512 held-out easy v1 tasks x 2 draws"),
    Entry("vvr_compare_heldout_60", ((None, (*COMPARE, "--steps", "60", "--out", "{out}")),), fast=False,
          blocks={"vvr_compare_heldout_60": vvr_methods}),
    Entry("vvr2_same_template_60", ((None, (*COMPARE, "--mode", "same_template", "--out", "{out}")),), fast=False,
          blocks={"vvr2_same_template_60": vvr2_methods},
          note="every method trained 60 steps on the v2 easy pool from the shipped v2 bases, scored on 512 unseen tasks "
               "of that pool"),
    *(Entry(f"vvr2_{mode}_rwtd_300", ((None, (*COMPARE, "--mode", mode, "--methods", "rwtd", "--steps", "300", "--out", "{out}")),),
            fast=False, blocks={f"vvr2_{mode}_rwtd_300": vvr2_methods},
            note=f"RWTD trained 300 steps from the shipped v2 one-step base ({mode})")
      for mode in ("same_template", "easy_to_hard")),
    Entry("vvr2_heldout_60", ((None, (*COMPARE, "--mode", "heldout", "--out", "{out}")),), fast=False,
          blocks={"vvr2_heldout_60": vvr2_methods},
          note="every method trained 60 steps on the v2 easy pool from the shipped v2 bases, scored on 100 VVRBench v2 "
               "tasks of each difficulty bin 1-5"),
    Entry("vvr2_easy_to_hard_60", ((None, (*COMPARE, "--mode", "easy_to_hard", "--out", "{out}")),), fast=False,
          blocks={"vvr2_easy_to_hard_60": vvr2_methods},
          note="every method trained 60 steps on bins 1-2 of the bench-matched v2 pool, scored on 100 bench tasks of "
               "each of bins 3-5"),
    Entry("vvr_compare_heldout_300", ((None, (*COMPARE, "--steps", "300", "--out", "{out}")),), fast=False,
          blocks={"vvr_compare_heldout_300": vvr_methods}),
    Entry("vvr_compare_fit", ((None, (*COMPARE, *FIT, "--steps", "300", "--out", "{out}")),), fast=False,
          blocks={"vvr_compare_fit": vvr_methods}),
    Entry("vvr_rwtd_lambda", _lambda_runs(), fast=False, blocks={"vvr_rwtd_lambda": vvr_lambda},
          note="RWTD on VVR over λ, 32 + 32 samples per prompt, 300 steps: fit tasks (two seeds at λ > 0) and held-out"),
    Entry("poem_categorical", ((None, POEM_CATEGORICAL),), fast=True,
          blocks={"poem_categorical/in_span": poem_in_span, "poem_categorical/spearman": poem_spearman},
          pictures={"coverage_vs_error.png": "assets/readme/poem_coverage_vs_error.png"}),
    Entry("poem_categorical_adam_default", ((None, (*POEM_CATEGORICAL, "--adam-default")),), fast=True,
          blocks={"poem_categorical_adam_default": poem_adam_default}),
    Entry("av_compare_toy", tuple((f"seed={s}", (*AV_TOY, "--seed", s)) for s in AV_SEEDS), fast=False,  # ~3 min
          blocks={"av_compare_toy": av_toy_table, "av_compare_toy/base": av_toy_base, "av_compare_toy/budget": av_toy_budget,
                  "av_compare_toy/spearman": av_toy_spearman},
          pictures={"run_0/before_after.png": "assets/readme/av_grpo_toy_before_after.png"},
          note="AV-GRPO and its baselines on the toy two-tower AV flow, 320 steps, training seeds 0, 1 and 2"),
    Entry("av_compare_toy_travel", tuple((f"seed={s}", (*AV_TOY_TRAVEL, "--seed", s)) for s in AV_SEEDS), fast=False,
          blocks={"av_compare_toy_travel": av_toy_travel, "av_compare_toy_travel/budget": av_toy_budget,
                  "av_compare_toy_travel/spearman": av_toy_spearman},  # ~3 min
          note="the toy AV comparison of av_compare_toy, scored with av_video_quality's travel term (min_travel 0.3)"),
    Entry("av_compare_toy_large_batch",
          (*((f"seed={s}", (*AV_TOY, "--prompts-per-step", "16", "--seed", s)) for s in AV_SEEDS),
           *((f"renormalize=false/seed={s}", (*AV_TOY, "--prompts-per-step", "16", "--methods", "av_grpo", "--set",
                                              "renormalize=false", "--seed", s)) for s in AV_SEEDS)),
          fast=False, blocks={"av_compare_toy_large_batch": av_toy_large_batch},  # ~10 min
          note="the toy AV comparison at 16 prompts per step (8x the rollouts per step), seeds 0-2, then AV-GRPO with "
               "renormalize=false"),
    Entry("av_bases", tuple(run for key, folder, world in (("small", "assets/av", ()), ("large", "assets/av_large", ()),
                                                           ("synced", "assets/av_synced", ()),
                                                           ("fixed", "assets/av_fixed", AV_FIXED_WORLD))
                            for run in ((f"{key}/measured", _shipped_av(folder, *world)),
                                        (f"{key}/verifiers", _base_verifiers(f"{folder}/tiny_av_flow")))),
          fast=True, blocks={"av_bases": av_bases},
          note="the four tiny AV bases measured: object_color and av_sync (pretrain_av.py --pictures-only; the fixed "
               "base beside its own world's renders) and the AV verifiers' means on the world's 64 prompts "
               "(av_compare.py with no method)"),
    Entry("av_quality_gamed", tuple((f"min_travel={t}", (*AV_COMPARE_TINY, "--checkpoint", AV_LARGE, "--methods",
                                                         "av_grpo", "joint_grpo", "--steps", "4", "--eval-every", "4",
                                                         "--eval-size", "64", "--min-travel", t)) for t in ("0", "0.3")),
          fast=True, blocks={"av_quality_gamed": av_gamed_table},
          pictures={"run_0/before_after.png": "assets/readme/av_video_quality_gamed.png",
                    "run_1/before_after.png": "assets/readme/av_video_quality_travel.png"},
          note="4 steps of AV-GRPO and joint GRPO at the toy's learning rate 1e-3 on the larger tiny AV base"),
    Entry("av_compare_tiny_av_large",
          tuple((f"seed={s}/pair={p}", (*AV_LARGE_COMPARE, "--methods", *methods, "--seed", s))
                for s in AV_SEEDS for p, methods in AV_PAIRS.items()),
          fast=False, blocks={"av_compare_tiny_av_large": av_large_table,
                              "av_compare_tiny_av_large/budget": av_large_budget},
          pictures={"run_0/before_after.png": "assets/readme/av_grpo_tiny_av_large.png"},
          note="AV-GRPO and its baselines on the larger tiny AV base, 120 steps at lr 3e-5, seeds 0-2, two runs of two "
               "methods per seed"),
    Entry("av_compare_tiny_av_large_batch",
          tuple((m, (*AV_LARGE_BATCH, "--methods", m)) for m in ("av_grpo", "joint_grpo")),
          fast=False, blocks={"av_compare_tiny_av_large_batch": av_large_batch_table},
          pictures={"run_0/before_after.png": "assets/readme/av_grpo_tiny_av_large_batch.png"},
          note="AV-GRPO and joint GRPO on the larger tiny AV base at 8 prompts per step (4x the rollouts), 120 steps at "
               "lr 3e-5, seed 0, one run each"),
    Entry("av_cross_modal", ((None, (PY, "pipelines/av_cross_modal.py", "--checkpoints", "small=assets/av/tiny_av_flow",
                                     f"large={AV_LARGE}", f"synced={AV_SYNCED}", "--results", "{results}",
                                     "--out", "{out}")),),
          fast=True, blocks={"av_cross_modal": av_cross_modal(AV_BASES)},
          pictures={"large_given_video.png": "assets/readme/av_cross_modal_large.png",
                    "synced_given_video.png": "assets/readme/av_cross_modal_synced.png"}),
    _av_seeds_entry("av_compare_tiny_av_synced", AV_SYNCED, "the synced tiny AV base"),
    _av_seeds_entry("av_compare_tiny_av_fixed", AV_FIXED, "the fixed-motion tiny AV base"),
    _av_fixed_entry("ode_final", ("ode_final_steps=1",), (), (), "the last sampling step an ODE step"),
    AV_FIXED_SDE_FIRST,
    AV_FIXED_KL_ALL,
    AV_FIXED_VIDEO_NOISE,
    _av_fixed_entry("audio_only", ("ode_final_steps=3", "kl_steps=all"),
                    ("--order", "audio", "video", "--steps-per-modality", "1000"), ("claim",),
                    "as kl_all with the audio tower trained alone (no video blocks)", seeds=("0", "1", "2", "3", "4"),
                    methods=("av_grpo",)),
    AV_FIXED_KEEP_OPTIMIZER,
    *(_av_visible_entry(e) for e in (AV_FIXED_SDE_FIRST, AV_FIXED_KL_ALL, AV_FIXED_VIDEO_NOISE)),
    Entry("av_leak", (*((label, (*_av_compare_120(AV_FIXED), "--methods", "av_grpo", "--set", "ode_final_steps=3",
                                 "kl_steps=all", *options)) for label, options in AV_LEAK_RUNS.items()),
                      ("leak", (PY, "pipelines/av_leak.py", "--base", AV_FIXED, "--results", "{results}", "--trained",
                                *(f"{label}={{folder}}/run_{i}/av_grpo/final" for i, label in enumerate(AV_LEAK_RUNS))))),
          fast=False, blocks={"av_leak": av_leak_table},
          note="AV-GRPO on the fixed-motion base (kl_all settings): seed 3 at video noise 0.7 with the AdamW state "
               "cleared at each switch and kept, and seed 2 training the audio tower alone; then each modality's "
               "quality by the source of its weights and of its partner's samples"),
    Entry("av_spearman_fixed", tuple((f"seed={s}", (*_base_verifiers(AV_FIXED), "--spearman-prompts", "128", "--seed", s))
                                     for s in ("0", "1", "2", "3", "4")),
          fast=True, blocks={"av_spearman_fixed": av_spearman_table},
          note="the advantage Spearman correlations of the fixed-motion base on 128 prompts (groups of 8) per seed, "
               "seeds 0-4"),
    Entry("av_audio_drift",
          tuple((label, (*_av_compare_120(AV_FIXED), "--methods", "av_grpo", "--order", "audio", "video",
                         "--steps-per-modality", "1000", "--audio-rewards", reward, "--set", "ode_final_steps=3",
                         f"kl_steps={where}")) for label, (reward, where) in AV_DRIFT_RUNS.items()),
          fast=False, blocks={"av_audio_drift": av_audio_drift_table},
          note="AV-GRPO on the fixed-motion tiny AV base training the audio tower only, 120 steps at lr 3e-5, SDE on "
               "the first sampling step: on audio quality or on the no-signal null_score, the KL on the SDE step or "
               "on every step"),
    Entry("av_audio_quality_alone",
          tuple((f"ode_final_steps={n}", (*_av_compare_120(AV_FIXED), "--methods", "av_grpo", "--order", "audio", "video",
                                          "--steps-per-modality", "1000", "--audio-rewards", "av_audio_quality",
                                          "--set", f"ode_final_steps={n}")) for n in ("0", "1")),
          fast=False, blocks={"av_audio_quality_alone": av_audio_quality_alone_table},
          note="AV-GRPO on the fixed-motion tiny AV base training the audio tower only, on audio quality alone, 120 "
               "steps at lr 3e-5, the last sampling step SDE or ODE"),
    Entry("av_sync_pilot", _continued_runs(AV_LARGE, AV_SYNC_ARMS), fast=False,
          blocks={"av_sync_pilot": av_cross_modal({"cross_modal/base": AV_BASES["large"],
                                                   **{f"cross_modal/{a}": f"+ {l}" for a, l in AV_SYNC_LABELS.items()}},
                                                  renders="cross_modal/renders"),
                  "av_sync_pilot/bases": av_continued_bases(AV_SYNC_LABELS)},
          note="the larger tiny AV base continued 1,500 flow steps under decoupled noise levels, time-aligned "
               "cross-attention, or both; cross-modal av_sync and the AV verifiers of each"),
    Entry("av_conv_pilot", _continued_runs(AV_SYNCED, AV_CONV_ARMS, AV_COMMIT_LEVELS, ("--video-quality",)),
          fast=False, blocks={"av_conv_pilot": av_sync_and_quality_levels(AV_CONV_LABELS),
                              "av_conv_pilot/bases": av_continued_bases(AV_CONV_LABELS)},
          pictures={"run_0/flow.png": "assets/readme/av_conv_samples.png"},
          note="the synced tiny AV base continued 1,500 flow steps with per-frame convolutions around its video tokens; "
               "av_sync and video quality of joint samples and of renders finished from each noise level"),
    Entry("av_ot_pilot", _continued_runs(AV_SYNCED, AV_OT_ARMS, AV_COMMIT_LEVELS, ("--video-quality",)),
          fast=False, blocks={"av_ot_pilot": av_sync_and_quality_levels(AV_OT_LABELS),
                              "av_ot_pilot/bases": av_continued_bases(AV_OT_LABELS)},
          pictures={"run_1/flow.png": "assets/readme/av_ot_samples.png"},
          note="the synced tiny AV base continued 1,500 flow steps on 4 prompts x 8 clips per batch, with the noise "
               "paired independently or by minibatch optimal transport within each prompt's clips; av_sync and video "
               "quality of joint samples and of renders finished from each noise level; the AV verifiers"),
    Entry("av_fixed_motion_pilot", _fixed_motion_runs(), fast=False,
          blocks={"av_fixed_motion_pilot": av_continued_bases(AV_FIXED_LABELS),
                  "av_fixed_motion_pilot/probe": av_position_probe(synced_and(AV_FIXED_LABELS))},
          pictures={"run_0/flow.png": "assets/readme/av_fixed_samples.png"},
          note="the synced tiny AV base continued 1,500 flow steps on the fixed-motion world (bursts up to half a frame "
               "off), as it is and with shared time features; the AV verifiers of each, and the position probe"),
    Entry("av_prediction_pilot", _prediction_runs("3000"), fast=False,
          blocks={"av_prediction_pilot": av_position_probe(PREDICTION_LABELS)},
          note="the small tiny AV size trained 3,000 flow steps from scratch on the fixed-motion world, predicting "
               "the velocity or the clean sample; the position probe of each"),
    Entry("av_loss_space_pilot", _prediction_runs("4000", LOSS_SPACE_ARMS, verifiers=True), fast=False,
          blocks={"av_loss_space_pilot": av_continued_bases(LOSS_SPACE_LABELS, "trained from scratch with"),
                  "av_loss_space_pilot/probe": av_position_probe(LOSS_SPACE_LABELS)},
          pictures={"run_3/flow.png": "assets/readme/av_x0_loss_samples.png"},
          note="the small tiny AV size trained 4,000 flow steps from scratch on the fixed-motion world, predicting the "
               "velocity or the clean sample, with the loss in velocity or clean-sample space; the AV verifiers and "
               "the position probe of each"),
    Entry("av_loss_space_random", _prediction_runs("4000", {k: LOSS_SPACE_ARMS[k] for k in ("velocity", "sample_x0_loss")},
                                                   verifiers=True, fixed_motion=False), fast=False,
          blocks={"av_loss_space_random": av_continued_bases({k: LOSS_SPACE_LABELS[k]
                                                              for k in ("velocity", "sample_x0_loss")},
                                                             "trained from scratch with")},
          pictures={"run_1/flow.png": "assets/readme/av_x0_loss_random_samples.png"},
          note="the small tiny AV size trained 4,000 flow steps from scratch on the random-phase world, as shipped and "
               "predicting the clean sample with the loss in sample space; the AV verifiers of each"),
    Entry("av_random_steps",
          (*_prediction_runs("4000", AV_STEPS_ARMS, fixed_motion=False),
           *((f"{arm}/steps={n}", (*_base_verifiers(path), "--eval-steps", n))
             for arm, path in _trained_checkpoints(AV_STEPS_ARMS).items() for n in AV_STEP_COUNTS)),
          fast=False, blocks={"av_random_steps": av_sampling_steps},
          note="the two random-phase bases of av_loss_space_random trained again, then the AV verifiers of each at "
               "4, 8, 16 and 32 Euler steps"),
    Entry("av_fixed_offset_pilot", _prediction_runs("4000", FIXED_OFFSET_ARMS, verifiers=True, fixed_motion=False,
                                                    fixed_offset=True),
          fast=False, blocks={"av_fixed_offset_pilot": av_continued_bases(FIXED_OFFSET_LABELS,
                                                                          "trained from scratch with")},
          pictures={"run_0/flow.png": "assets/readme/av_x0_fixed_offset_samples.png"},
          note="the small tiny AV size trained 4,000 flow steps from scratch on a world where only the phase is random "
               "(four motions per prompt, the shape across the middle), predicting the clean sample with the loss in "
               "sample space, with the default batches and with 8 clips per prompt paired to the noise by OT; the AV "
               "verifiers of each"),
    Entry("av_random_ot_pilot", _prediction_runs("4000", RANDOM_OT_ARMS, verifiers=True, fixed_motion=False),
          fast=False, blocks={"av_random_ot_pilot": av_continued_bases(RANDOM_OT_LABELS, "trained from scratch with")},
          pictures={"run_1/flow.png": "assets/readme/av_x0_ot_random_samples.png"},
          note="the small tiny AV size trained 4,000 flow steps from scratch on the random-phase world, predicting the "
               "clean sample with the loss in sample space, 8 clips per drawn prompt, the noise paired independently "
               "or by minibatch optimal transport; the AV verifiers of each"),
    Entry("av_commit_pilot", _continued_runs(AV_SYNCED, AV_COMMIT_ARMS, AV_COMMIT_LEVELS), fast=False,
          blocks={"av_commit_pilot": av_commit_table, "av_commit_pilot/bases": av_continued_bases(AV_COMMIT_LABELS)},
          note="the synced tiny AV base continued 1,500 flow steps as trained and at time shift 3; av_sync of joint "
               "samples and of renders noised to 1, 0.9, 0.75, 0.5 and finished by each model; the AV verifiers"),
    Entry("av_shared_time_pilot", _pilot_runs("1700", TIME_PILOT_ARMS), fast=False,
          blocks={"av_shared_time_pilot": av_pilot(TIME_PILOT_LABELS)},
          note="the small tiny AV base's size and step count pretrained twice: per-token learned positions only, and "
               "with generator.shared_time; each scored by pretrain_av.py's measures and the AV verifiers"),
    Entry("av_shared_time_pilot_long", _pilot_runs("4000", TIME_PILOT_ARMS), fast=False,
          blocks={"av_shared_time_pilot_long": av_pilot(TIME_PILOT_LABELS)},
          note="the shared-time pilot at 4,000 flow steps per arm"),
    Entry("av_arch_pilot", _pilot_runs("1700", {a: ("--cross-frames", "0", *o) for a, o in ARCH_PILOT_ARMS.items()}),
          fast=False, blocks={"av_arch_pilot": av_pilot(ARCH_PILOT_LABELS, with_loss=True)},
          pictures={"run_0/flow.png": "assets/readme/av_arch_pilot_plain.png",
                    "run_3/flow.png": "assets/readme/av_arch_pilot_both.png"},
          note="the small tiny AV base's size with cross_frames 0, 1,700 flow steps from scratch per arm: tokens as "
               "shipped, adaptive LayerNorm time conditioning, per-frame convolutions, both"),
    # long commands (about 5-35 min each on this machine)
    Entry("av_compare_tiny_av", ((None, (PY, "pipelines/av_compare.py", "--model", "tiny_av", "--checkpoint",
                                         "assets/av/tiny_av_flow", "--steps", "120", "--eval-every", "24", "--eval-size", "32",
                                         "--results", "{results}", "--out", "{out}")),),
          fast=False, blocks={"av_compare_tiny_av": av_tiny_table, "av_compare_tiny_av/base": av_tiny_base}),
    Entry("poem_text", ((None, (PY, "pipelines/poem_text.py", "--results", "{results}", "--out", "{out}")),), fast=False,
          blocks={"poem_text": poem_text}),
    Entry("poem_flow", (("seed=0", POEM_FLOW), ("seed=1", (*POEM_FLOW, "--seed", "1", "--reference", "{folder}/run_0/reference"))),
          fast=False, blocks={"poem_flow": poem_flow, "poem_flow/seed1": poem_flow_seed1},
          pictures={"run_0/samples.png": "assets/readme/poem_flow_samples.png"},
          note="PoEM on the tiny flow generator: RL seed 0, then RL seed 1 on seed 0's pretrained reference"),
    Entry("core_compare_images", (("mu=3", CORE_IMAGES), ("mu=0", (*CORE_IMAGES, "--arms", "core", "--proximal", "0"))),
          fast=False, blocks={"core_compare_images": core_images, "core_compare_images/bound": core_images_bound},
          pictures={"run_0/curves.png": "assets/readme/core_images_curves.png",
                    "run_0/samples.png": "assets/readme/core_images_samples.png"},
          note="CoRe, its ablations and the fixed LRM on 8 px smooth images, 500 steps, seeds 0-2: every arm with the "
               "proximal weight μ = 3, then CoRe with μ = 0"),
    Entry("reflection_counting", tuple((label, (*REFLECTION, *extra)) for label, extra in REFLECTION_RUNS), fast=False,
          blocks={"reflection_counting": reflection_table("default"), "reflection_counting/claims": reflection_claims("default"),
                  "reflection_counting/critique": reflection_critique, "reflection_counting/blind": reflection_table("blind"),
                  "reflection_counting/blind_claims": reflection_claims("blind"),
                  "reflection_counting/shared": reflection_table("shared"),
                  "reflection_counting/shared_round0": reflection_shared_round0},
          pictures={"run_0/trajectory.png": "assets/readme/reflection_trajectory.png"},
          note="reflection loops on the counting toy, seeds 0-2: the default (separate first-render head, editor sees the "
               "prompt), the earlier shared first-render head, and an editor blind to the prompt"),
    Entry("config_runs", ((None, (PY, "pipelines/config_runs.py", "--results", "{results}", "--out", "{out}")),), fast=True,
          blocks={"config_runs": config_runs}),
    Entry("pretrain_shipped", (("video", (*PRETRAIN_SHIPPED_VIDEO, *PRETRAIN_OUT)), ("av", _shipped_av("assets/av"))),
          fast=True, blocks={"pretrain_shipped": pretrain_metrics, "pretrain_shipped/steps": pretrain_steps},
          note="the shipped tiny video and audio-video checkpoints measured (their training figures from the "
               "pretrain_metrics.json beside them)"),
    Entry("pretrain_fresh", (("video", (*PRETRAIN_VIDEO, "--assets", "{out}/assets", *PRETRAIN_OUT)),
                             ("av", (*PRETRAIN_AV, "--assets", "{out}/assets", *PRETRAIN_OUT))), fast=False,
          blocks={"pretrain_fresh": pretrain_metrics, "pretrain_fresh/steps": pretrain_steps},
          note="the tiny video and audio-video generators pretrained afresh on the moving-shapes world to the scripts' "
               "step caps (no wall-clock limit in effect); checkpoints go to the run folder, not assets/"),
    Entry("core_compare_video",
          (("claims", CORE_VIDEO), ("ablations", (*CORE_VIDEO[:-2], "anchor_only", "generator_only", "oracle")),
           ("bound", (*CORE_VIDEO[:-2], "oracle_core"))),
          fast=False, blocks={"core_compare_video": core_video,
                              "core_compare_video/bound": core_video_bound},
          pictures={"run_0/curves.png": "assets/readme/core_video_curves.png",
                    "run_0/samples.png": "assets/readme/core_video_samples.png",
                    "run_0/samples.gif": "assets/readme/core_video_samples.gif"},
          note="CoRe on the tiny video flow, 500 generator steps, seeds 0-2: fixed LRM and CoRe (claims), the "
               "ablations, then CoRe + oracle labels"),
)


def entry(name: str) -> Entry:
    for e in ENTRIES:
        if e.name == name:
            return e
    raise KeyError(f"no results entry {name!r}; known: {[e.name for e in ENTRIES]}")
