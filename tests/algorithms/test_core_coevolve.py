"""CoRe: the refit schedule, gradient isolation between the generator step and the LRM refit, shared-t noising of
real and generated latents, every refit arm, config errors and exact resume of generator and LRM together."""
from __future__ import annotations

import pytest
import torch

from visalign.algorithms.core_coevolve import CoRe, CoReConfig, knn_distance
from visalign.core import Unconditional
from visalign.core.config import ConfigError
from visalign.generators.tiny import TinyFlowConfig, TinyFlowGenerator
from visalign.rewards.latent import LatentRewardConfig, LatentPairs, build_lrm, save_lrm, save_pairs
from visalign.rewards.smooth_images import SmoothImageJudge
from visalign.toys.smooth_images import SmoothImages
from visalign.trainer import Trainer, TrainerConfig


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("core")
    winners, losers = SmoothImages().ranked_pairs(64, torch.Generator().manual_seed(0))
    save_pairs(LatentPairs(winners, losers, [""] * 64, "smooth_image_judge"), root / "pairs.safetensors")
    torch.manual_seed(0)
    save_lrm(build_lrm(LatentRewardConfig(latent_shape=[3, 8, 8], hidden=16, layers=1)), root / "lrm")
    return {"lrm": str(root / "lrm"), "pairs": str(root / "pairs.safetensors")}


def tiny_flow() -> TinyFlowGenerator:
    torch.manual_seed(0)
    return TinyFlowGenerator(TinyFlowConfig(image_size=8, patch_size=2, layers=1, heads=2, head_dim=8, text_hidden=16,
                                            text_layers=1, vocab_buckets=64, num_steps=2))


def make_trainer(files, out, steps=4, resume=None, save_every=0, **overrides) -> Trainer:
    config = CoReConfig(**{"lrm": files["lrm"], "pairs": files["pairs"], "every": 2, "lrm_steps": 2, "num_samples": 4,
                           "lrm_batch": 8, **overrides})
    cfg = TrainerConfig(steps=steps, prompts_per_step=1, learning_rate=1e-3, eval_every=0, eval_batch_size=8, log_with=[],
                        progress=False, output_dir=str(out), save_every=save_every, resume_from=resume)
    return Trainer(tiny_flow(), CoRe(config), SmoothImageJudge(), Unconditional(), cfg)


def lrm_params(trainer: Trainer) -> list[torch.Tensor]:
    return [p.detach().clone() for p in trainer.algorithm.lrm.head.parameters()]


def test_refit_schedule_and_metrics(files, tmp_path):
    trainer = make_trainer(files, tmp_path, steps=5, every=2, lrm_steps=3)
    calls = []
    original = trainer.algorithm.refit_loss
    trainer.algorithm.refit_loss = lambda ctx, name, rollouts, k: calls.append((ctx.step, k)) or original(ctx, name, rollouts, k)
    summary = trainer.train()
    assert calls == [(1, 0), (1, 1), (1, 2), (3, 0), (3, 1), (3, 2)]  # every M = 2 updates, k = 3 LRM steps
    refit_steps = [h["step"] for h in trainer.history if "lrm/loss" in h]
    assert refit_steps == [2, 4]
    for key in ("eval/lrm_current", "eval/lrm_original", "eval/escape_knn", "eval/reward_mean"):
        assert key in summary
    assert summary["eval/lrm_current"] != summary["eval/lrm_original"]  # the owned LRM moved, the original did not


def test_fixed_arm_owns_nothing_and_keeps_its_lrm(files, tmp_path):
    trainer = make_trainer(files, tmp_path, steps=3, refit="none")
    before = lrm_params(trainer)
    summary = trainer.train()
    assert trainer.algorithm.owned_models() == {} and trainer.owned == {}
    for p, q in zip(before, lrm_params(trainer)):
        torch.testing.assert_close(p, q, rtol=0, atol=0)
    assert summary["eval/lrm_current"] == summary["eval/lrm_original"]


def test_no_gradient_crosses_between_generator_step_and_refit(files, tmp_path):
    trainer = make_trainer(files, tmp_path)
    algo, ctx = trainer.algorithm, trainer.ctx
    rollout = algo.rollout(ctx, Unconditional().sample(1, torch.Generator()), torch.Generator().manual_seed(3))
    rollout.extras["stop"] = 2
    loss, _ = algo.loss(ctx, rollout)
    loss.backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in trainer.params)
    assert all(p.grad is None for p in algo.lrm.parameters())  # the generator step reads the LRM with detached weights
    trainer.optimizer.zero_grad(set_to_none=True)
    refit, _ = algo.refit_loss(ctx, "lrm", [rollout], 0)
    refit.backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in algo.lrm.head.parameters())
    assert all(p.grad is None for p in trainer.params)  # rollout latents are detached samples


def test_real_and_generated_latents_share_t_and_noise(files, tmp_path, monkeypatch):
    trainer = make_trainer(files, tmp_path, refit="generator_only")
    algo, ctx = trainer.algorithm, trainer.ctx
    rollout = algo.rollout(ctx, Unconditional().sample(1, torch.Generator()), torch.Generator().manual_seed(3))
    seen = []
    monkeypatch.setattr(algo.lrm, "forward", lambda x, t, prompts: seen.append((x.detach(), t.detach())) or x.flatten(1).sum(1))
    algo.refit_loss(ctx, "lrm", [rollout], 0)
    (real_t, t_real), (gen_t, t_gen) = seen
    torch.testing.assert_close(t_real, t_gen)
    # x_t = (1 - t) x_0 + t ε with one ε: the difference is (1 - t)(x_real - x_gen), so x_gen is recovered as a pool row
    tb = t_real.reshape(-1, 1, 1, 1)
    real0 = (real_t - gen_t) / (1 - tb) + rollout.extras["latents"]
    distance = torch.cdist(real0.flatten(1), algo.pool.flatten(1)).min(1).values
    assert distance.max() < 1e-2  # (real pool rows are O(1) apart)


@pytest.mark.parametrize("refit", ["core", "anchor_only", "generator_only", "oracle", "oracle_core"])
def test_every_refit_arm_trains_the_lrm(files, tmp_path, refit):
    trainer = make_trainer(files, tmp_path, refit=refit, proximal=0.1)
    algo, ctx = trainer.algorithm, trainer.ctx
    rollout = algo.rollout(ctx, Unconditional().sample(1, torch.Generator()), torch.Generator().manual_seed(3))
    loss, metrics = algo.refit_loss(ctx, "lrm", [rollout], 0)
    loss.backward()
    assert torch.isfinite(loss) and metrics["lrm/proximal"] == 0.0  # φ_prev is taken at the refit's first step
    expected = {"core": {"lrm/anchor", "lrm/real_vs_generated"}, "anchor_only": {"lrm/anchor"},
                "generator_only": {"lrm/real_vs_generated"}, "oracle": {"lrm/anchor", "lrm/oracle_pairs"},
                "oracle_core": {"lrm/anchor", "lrm/real_vs_generated", "lrm/oracle_pairs"}}[refit]
    assert expected <= set(metrics) and not ({"lrm/anchor", "lrm/real_vs_generated", "lrm/oracle_pairs"} - expected) & set(metrics)
    weight = {"lrm/anchor": algo.config.anchor_weight, "lrm/real_vs_generated": algo.config.gen_weight,
              "lrm/oracle_pairs": algo.config.gen_weight}
    assert loss.item() == pytest.approx(sum(weight[k] * metrics[k] for k in expected), rel=1e-5)  # the listed terms, summed


def test_proximal_term_value_and_it_holds_the_lrm_near_its_pre_refit_weights(files, tmp_path):
    trainer = make_trainer(files, tmp_path / "value", proximal=2.0)
    algo, ctx = trainer.algorithm, trainer.ctx
    rollout = algo.rollout(ctx, Unconditional().sample(1, torch.Generator()), torch.Generator().manual_seed(3))
    algo.refit_loss(ctx, "lrm", [rollout], 0)  # takes φ_prev
    params = [p for p in algo.lrm.parameters() if p.requires_grad]
    with torch.no_grad():
        for p in params:
            p.add_(0.01)
    with_prox = algo.refit_loss(ctx, "lrm", [rollout], 1)
    algo.config.proximal = 0.0
    without = algo.refit_loss(ctx, "lrm", [rollout], 1)
    expected = sum(p.numel() for p in params) * 0.01**2
    assert with_prox[1]["lrm/proximal"] == pytest.approx(expected, rel=1e-4)
    assert float((with_prox[0] - without[0]).detach()) == pytest.approx(2.0 * expected, rel=1e-3)

    def moved(proximal: float) -> float:
        trainer = make_trainer(files, tmp_path / f"mu{proximal}", steps=2, every=2, lrm_steps=6, proximal=proximal,
                               lrm_learning_rate=3e-2)
        before = lrm_params(trainer)
        trainer.train()
        return sum(float((p - q).pow(2).sum()) for p, q in zip(before, lrm_params(trainer))) ** 0.5

    assert moved(30.0) < 0.5 * moved(0.0)


def test_config_errors_name_the_key(files):
    with pytest.raises(ConfigError, match="core.refit"):
        CoReConfig(lrm=files["lrm"], pairs=files["pairs"], refit="sometimes")
    with pytest.raises(ConfigError, match="gen_weight > 0"):
        CoReConfig(lrm=files["lrm"], pairs=files["pairs"], refit="core", gen_weight=0.0)
    with pytest.raises(ConfigError, match="core.lrm"):
        CoReConfig(pairs=files["pairs"])
    with pytest.raises(FileNotFoundError, match="lrm.json"):
        CoRe(CoReConfig(lrm="/nonexistent", pairs=files["pairs"]))


def test_knn_distance():
    support = torch.tensor([[0.0, 0.0], [3.0, 4.0], [6.0, 8.0]])
    torch.testing.assert_close(knn_distance(torch.tensor([[0.0, 0.0]]), support, k=2), torch.tensor([2.5]))


def test_exact_resume_of_generator_and_lrm(files, tmp_path):
    straight = make_trainer(files, tmp_path / "a", steps=6, every=2)
    straight.train()
    first = make_trainer(files, tmp_path / "b", steps=3, every=2, save_every=3)
    first.train()
    resumed = make_trainer(files, tmp_path / "b", steps=6, every=2, resume="latest")
    assert resumed.step == 3
    resumed.train()
    for p, q in zip(straight.params, resumed.params):
        torch.testing.assert_close(p, q, rtol=0, atol=0)
    for p, q in zip(lrm_params(straight), lrm_params(resumed)):
        torch.testing.assert_close(p, q, rtol=0, atol=0)
    keys = ("loss", "lrm/loss", "eval/lrm_current")
    assert [{k: h[k] for k in keys if k in h} for h in straight.history] == [{k: h[k] for k in keys if k in h} for h in resumed.history]


def test_yaml_config_trains_through_the_cli(files, tmp_path, monkeypatch, capsys):
    import json
    from pathlib import Path

    from visalign.cli import main

    root = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(root)
    tiny_flow().save_pretrained(tmp_path / "gen")
    out = tmp_path / "run"
    rc = main(["train", "configs/core_images.yaml", f"generator.checkpoint={tmp_path / 'gen'}", f"algorithm.lrm={files['lrm']}",
               f"algorithm.pairs={files['pairs']}", "algorithm.every=1", "algorithm.lrm_steps=1", "algorithm.num_samples=4",
               "trainer.steps=1", "trainer.eval_batch_size=8", f"trainer.output_dir={out}"])
    assert rc == 0, capsys.readouterr().err
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert any("lrm/loss" in r for r in records) and any("eval/escape_knn" in r for r in records)


def test_backbone_lrm_on_the_generators_own_frozen_block(files, tmp_path):
    """The PAVRM-style LRM (head on the generator's first block) drives both steps; neither leaks gradient."""
    gen = tiny_flow()
    gen.save_pretrained(tmp_path / "gen")
    lrm = build_lrm(LatentRewardConfig(kind="backbone", generator=str(tmp_path / "gen"), blocks=1, hidden=16), generator=gen)
    save_lrm(lrm, tmp_path / "lrm")
    trainer = make_trainer({"lrm": str(tmp_path / "lrm"), "pairs": files["pairs"]}, tmp_path / "run")
    algo, ctx = trainer.algorithm, trainer.ctx
    rollout = algo.rollout(ctx, Unconditional().sample(1, torch.Generator()), torch.Generator().manual_seed(3))
    algo.loss(ctx, rollout)[0].backward()
    assert all(p.grad is None for p in algo.lrm.parameters())
    algo.refit_loss(ctx, "lrm", [rollout], 0)[0].backward()
    assert all(p.grad is None for p in algo.lrm.backbone.parameters())  # the blocks stay frozen
    assert all(p.grad is not None for p in algo.lrm.head.parameters())


def test_r1_penalty_is_half_the_squared_input_gradient_on_real_latents(files, tmp_path, monkeypatch):
    """With a linear LRM r(x) = <w, x> the input gradient is w for every real latent, so R1 = ½‖w‖² exactly, and the
    penalty's gradient reaches the LRM's weights (w ← w − lr·γ·w)."""
    trainer = make_trainer(files, tmp_path, refit="generator_only", r1=2.0)
    algo, ctx = trainer.algorithm, trainer.ctx
    rollout = algo.rollout(ctx, Unconditional().sample(1, torch.Generator()), torch.Generator().manual_seed(3))
    w = torch.randn(3 * 8 * 8, generator=torch.Generator().manual_seed(1), requires_grad=True)
    monkeypatch.setattr(algo.lrm, "forward", lambda x, t, prompts: x.flatten(1) @ w)
    with_r1, metrics = algo.refit_loss(ctx, "lrm", [rollout], 0)
    assert metrics["lrm/r1"] == pytest.approx(0.5 * float(w.detach().pow(2).sum()), rel=1e-5)
    algo.config.r1 = 0.0
    without, metrics_off = algo.refit_loss(ctx, "lrm", [rollout], 0)
    assert "lrm/r1" not in metrics_off
    torch.testing.assert_close(with_r1 - without, 2.0 * 0.5 * w.pow(2).sum())
    (grad,) = torch.autograd.grad(with_r1 - without, w)
    torch.testing.assert_close(grad, 2.0 * w)


def test_negative_r1_is_a_config_error(files):
    with pytest.raises(ConfigError, match="core.r1 must be >= 0"):
        CoReConfig(lrm=files["lrm"], pairs=files["pairs"], r1=-1.0)
