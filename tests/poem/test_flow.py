"""The composed flow generator: exact endpoints, per-step coefficients, prompts, checkpoints, use by Flow-GRPO."""
import pytest
import torch

from visalign.core import ConfigError, PromptBatch, TrainContext, build_generator, load_generator
from visalign.algorithms import FlowGRPO, FlowGRPOConfig
from visalign.generators import TinyFlowConfig, TinyFlowGenerator, ToyFlowGenerator
from visalign.generators.toy import ToyConfig
from visalign.poem import ComposedFlowGenerator, path_log_ratios
from visalign.rewards.image_stats import BrightnessReward

PROMPTS = ["a red circle", "a blue square"]


def _toys(n=3):
    out = []
    for seed in range(n):
        torch.manual_seed(seed)
        out.append(ToyFlowGenerator(ToyConfig(dim=2, hidden=16, layers=2, num_steps=4)))
    return out


@pytest.fixture(scope="module")
def tiny():
    out = []
    for seed in range(3):
        torch.manual_seed(seed)
        out.append(TinyFlowGenerator(TinyFlowConfig(image_size=8, patch_size=4, layers=1, heads=1, head_dim=8, text_hidden=16,
                                                    text_layers=1, text_heads=1, vocab_buckets=64, max_length=8, num_steps=3)))
    return out


def _draw(model, noise, prompts=None):
    return model.sample(noise=noise, prompts=prompts)


def test_zero_coefficients_give_the_reference_and_unit_ones_a_basis_exactly():
    ref, a, b = _toys()
    noise = ref.make_noise(16, torch.Generator().manual_seed(0))
    assert torch.equal(_draw(ComposedFlowGenerator.compose(ref, [a, b], [0.0, 0.0]), noise), _draw(ref, noise))
    assert torch.equal(_draw(ComposedFlowGenerator.compose(ref, [a, b], [0.0, 1.0]), noise), _draw(b, noise))
    assert torch.equal(_draw(ComposedFlowGenerator.compose(ref, [a, b], [1.0, 0.0]), noise), _draw(a, noise))


def test_velocity_is_the_reference_plus_weighted_differences():
    ref, a, b = _toys()
    x, t = torch.randn(5, 2), torch.rand(5)
    composed = ComposedFlowGenerator.compose(ref, [a, b], [0.3, -0.6], strength=0.5)
    expected = ref.velocity(x, t) + 0.5 * (0.3 * (a.velocity(x, t) - ref.velocity(x, t)) - 0.6 * (b.velocity(x, t) - ref.velocity(x, t)))
    torch.testing.assert_close(composed.velocity(x, t), expected)


def test_per_step_coefficients_interpolate_between_noise_levels():
    ref, a, b = _toys()
    composed = ComposedFlowGenerator.compose(ref, [a, b], [[1.0, 0.0], [0.0, 2.0]], times=[0.25, 0.75])
    c = composed.coefficients(torch.tensor([0.0, 0.25, 0.5, 0.75, 1.0]))
    torch.testing.assert_close(c, torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.5, 1.0], [0.0, 2.0], [0.0, 2.0]]))
    x = torch.randn(3, 2)
    torch.testing.assert_close(composed.velocity(x, torch.full((3,), 0.8)), 2 * b.velocity(x, torch.full((3,), 0.8)) - ref.velocity(x, torch.full((3,), 0.8)))


def test_prompt_conditioned_experts_each_encode_the_prompts(tiny):
    ref, a, b = tiny
    noise = ref.make_noise(2, torch.Generator().manual_seed(1))
    assert torch.equal(ComposedFlowGenerator.compose(ref, [a, b], [0.0, 1.0]).sample(noise=noise, prompts=PROMPTS),
                       b.sample(noise=noise, prompts=PROMPTS))
    composed = ComposedFlowGenerator.compose(ref, [a, b], [0.5, 0.5])
    x = composed.sample(noise=noise, prompts=PROMPTS)
    assert x.shape == (2, 3, 8, 8) and x.abs().max() <= 1
    assert composed.sample(n=4).shape == (4, 3, 8, 8)  # no prompts: the empty prompt


def test_save_load_round_trip_through_the_generator_registry(tiny, tmp_path):
    ref, a, b = tiny
    composed = ComposedFlowGenerator.compose(ref, [a, b], [[0.2, 0.9], [0.7, -0.1]], times=[0.1, 0.9], strength=0.7)
    composed.save_pretrained(tmp_path / "poem")
    loaded = load_generator(tmp_path / "poem")
    assert isinstance(loaded, ComposedFlowGenerator) and loaded.config.times == [0.1, 0.9]
    noise = ref.make_noise(2, torch.Generator().manual_seed(2))
    assert torch.equal(loaded.sample(noise=noise, prompts=PROMPTS), composed.sample(noise=noise, prompts=PROMPTS))
    built = build_generator({"name": "poem_flow", "reference": str(tmp_path / "poem/reference"),
                             "bases": [str(tmp_path / "poem/basis_000")], "coef": [[1.0]]})
    assert torch.equal(built.sample(noise=noise, prompts=PROMPTS), a.sample(noise=noise, prompts=PROMPTS))


def test_flow_grpo_and_path_log_ratios_run_on_the_composition(tiny):
    ref, a, b = tiny
    composed = ComposedFlowGenerator.compose(ref, [a, b], [0.5, 0.5])
    algo = FlowGRPO(FlowGRPOConfig(group_size=2, num_steps=3))
    ctx = TrainContext(composed, composed.frozen_copy(), BrightnessReward(), torch.device("cpu"))
    algo.setup(ctx)
    rollout = algo.rollout(ctx, PromptBatch(PROMPTS), torch.Generator().manual_seed(0))
    loss, _ = algo.loss(ctx, rollout)
    assert torch.isfinite(loss)
    traj = ref.sample_sde(ref.make_noise(4, torch.Generator().manual_seed(0)), PROMPTS * 2, num_steps=3)
    ratios = path_log_ratios(ref, [ref, a], traj, PROMPTS * 2)
    assert ratios.shape == (4, 2, 3) and ratios[:, 0].abs().max() == 0 and ratios[:, 1].abs().max() > 0


def test_bad_compositions_are_rejected(tiny):
    ref, a, _ = tiny
    toy = _toys(1)[0]
    with pytest.raises(ValueError, match="one architecture"):
        ComposedFlowGenerator.compose(ref, [toy], [1.0])
    torch.manual_seed(0)
    wider = TinyFlowGenerator(TinyFlowConfig(image_size=8, patch_size=4, layers=2, heads=1, head_dim=8, text_hidden=16,
                                             text_layers=1, text_heads=1, vocab_buckets=64, max_length=8))
    with pytest.raises(ValueError, match="differs from the reference"):
        ComposedFlowGenerator.compose(ref, [wider], [1.0])
    with pytest.raises(ConfigError, match="times"):
        ComposedFlowGenerator.compose(ref, [a], [[1.0], [0.0]])
    with pytest.raises(ConfigError, match="increase"):
        ComposedFlowGenerator.compose(ref, [a], [[1.0], [0.0]], times=[0.5, 0.2])
    with pytest.raises(ValueError, match="2 coefficients"):
        ComposedFlowGenerator.compose(ref, [a], [1.0, 0.0])
    with pytest.raises(ConfigError, match="reference"):
        build_generator({"name": "poem_flow", "coef": [[1.0]]})
