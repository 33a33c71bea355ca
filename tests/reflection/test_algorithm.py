"""The reflection loop and algorithm on tiny models: strict parsing, no log-prob or gradient from the first image,
disjoint text / flow gradients for separate parts, and exact resume through the Trainer."""
import copy
from pathlib import Path

import pytest
import torch
from torch import nn

from visalign.core import PromptList, build_algorithm
from visalign.core.algorithm import TrainContext
from visalign.core.reflection import EditConditioner, ReflectionPair, Turn, format_turn, parse_turn
from visalign.core.types import PromptBatch
from visalign.reflection import (DotCountReward, Reflection, ReflectionConfig, TinyReflectionConfig,
                                 TinyReflectionModel, count_dots, prompt_for)
from visalign.reflection.counting import MAX_DOTS, NUM_SITES, graded_quality, slots_to_image
from visalign.reflection.tiny import COND_DIM, TinyController, TinyFlowEditor
from visalign.trainer import Trainer, TrainerConfig


@pytest.mark.parametrize("text,turn", [
    ("[SCORE] 7/10 [ACTION] edit [EDIT] add one dot", Turn(7, "edit", "add one dot")),
    ("[SCORE] 10/10 [ACTION] done [EDIT] None", Turn(10, "done", None)),
    ("[SCORE] 0/10 [ACTION] edit [EDIT] make the sky blue", Turn(0, "edit", "make the sky blue")),
    ("[SCORE] 11/10 [ACTION] done [EDIT] None", None),
    ("[SCORE] 7/10 [ACTION] done [EDIT] add one dot", None),      # done with an instruction
    ("[SCORE] 7/10 [ACTION] edit [EDIT] None", None),             # edit without one
    ("[ACTION] edit [SCORE] 7/10 [EDIT] add one dot", None),      # wrong order
    ("[SCORE] 7/10 [ACTION] stop [EDIT] None", None),
    (" [SCORE] 7/10 [ACTION] done [EDIT] None", None),            # anything around the line
    ("[SCORE] 7/10 [ACTION] done [EDIT] None [EDIT] None", None),
])
def test_parse_turn_is_strict(text, turn):
    assert parse_turn(text) == turn
    if turn is not None:
        assert format_turn(turn) == text


def test_counting_verifier():
    images = slots_to_image(torch.tensor([[1.0, 1, 0, 0, 0, 0], [0.9, 0.8, 0.7, 0.2, 0.1, 0.0]]))
    assert count_dots(images).tolist() == [2, 3]
    reward = DotCountReward()
    q = reward(images, ["draw 2 dots", "draw 1 dot"], None)
    assert q.tolist() == pytest.approx([1.0, 0.5 * (1 - 2 / 6)])
    assert (graded_quality(torch.arange(7), torch.full((7,), 3))[torch.arange(7) != 3] < 0.5).all()
    with pytest.raises(ValueError, match="not a counting prompt"):
        reward(images, ["draw 9 dots", "two dots"], None)


class SplitConditioner(EditConditioner):
    """Separate parameters for the first-render condition and the revision condition (so a test can see which one a
    loss reaches)."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.render_embedding = nn.Parameter(torch.randn(MAX_DOTS, COND_DIM + hidden))
        self.edit_layer = nn.Linear(NUM_SITES + 2 + MAX_DOTS, COND_DIM + hidden)

    def render(self, prompts):
        from visalign.reflection.counting import target_count

        return self.render_embedding[[target_count(p) - 1 for p in prompts]]

    def edit(self, prompts, images, instructions):
        from visalign.reflection.counting import image_to_slots
        from visalign.reflection.tiny import prompt_features

        which = torch.tensor([[i == "add one dot", i == "remove one dot"] for i in instructions]).float()
        return self.edit_layer(torch.cat([image_to_slots(images), which, prompt_features(prompts, images.device)], 1))


def make_pair(seed=0, hidden=16):
    torch.manual_seed(seed)
    return ReflectionPair(TinyController(hidden), TinyFlowEditor(hidden, 4, 1.0), SplitConditioner(hidden))


def context(policy):
    return TrainContext(policy, policy.frozen_copy(), DotCountReward(), torch.device("cpu"))


def rollout_with_edits(algorithm, ctx, seed=0):
    """A rollout in which some trajectories edit (the untrained controller writes random turns)."""
    batch = PromptBatch([prompt_for(4), prompt_for(2)])
    for s in range(seed, seed + 20):
        rollout = algorithm.rollout(ctx, batch, torch.Generator().manual_seed(s))
        if rollout.extras["trajectories"].edit_rounds and rollout.extras["advantages"].abs().sum() > 0:
            return rollout
    raise AssertionError("no rollout with edits")


def test_first_image_has_no_log_prob_and_no_gradient():
    policy = make_pair()
    algorithm = Reflection(ReflectionConfig(group_size=4, text_kl_beta=0.0, flow_kl_beta=0.0, max_correct_roots=None))
    ctx = context(policy)
    algorithm.setup(ctx)
    rollout = rollout_with_edits(algorithm, ctx)
    traj = rollout.extras["trajectories"]
    # SDE records exist for revisions only: one row per edit, none for the shared first image
    assert sum(r.rows.numel() for r in traj.edit_rounds) == int(traj.num_edits.sum())
    assert all(r.round_index >= 0 and r.trajectory is not None for r in traj.edit_rounds)
    assert not traj.images[0].requires_grad
    loss, _ = algorithm.refit_loss(ctx, "editor", [rollout], 0)
    loss.backward()
    conditioner = policy.editor_parts["conditioner"]
    assert conditioner.render_embedding.grad is None          # the first render's condition gets no gradient
    assert conditioner.edit_layer.weight.grad.abs().sum() > 0  # the revisions' does


def test_text_and_flow_gradients_touch_disjoint_parameters():
    policy = make_pair(1)
    algorithm = Reflection(ReflectionConfig(group_size=4, max_correct_roots=None))
    ctx = context(policy)
    algorithm.setup(ctx)
    rollout = rollout_with_edits(algorithm, ctx)
    controller = {id(p) for p in policy.controller.parameters()}
    editor = {id(p) for p in policy.editor_module().parameters()}
    assert controller.isdisjoint(editor) and controller | editor == {id(p) for p in policy.parameters()}

    def touched(loss):
        policy.zero_grad(set_to_none=True)
        loss.backward()
        return {id(p) for p in policy.parameters() if p.grad is not None and p.grad.abs().sum() > 0}

    text = touched(algorithm.loss(ctx, rollout)[0])
    flow = touched(algorithm.refit_loss(ctx, "editor", [rollout], 0)[0])
    assert text and flow
    assert text <= controller and flow <= editor


def test_flow_only_leaves_the_controller_and_text_only_owns_no_editor():
    policy = make_pair(2)
    ctx = context(policy)
    flow_only = Reflection(ReflectionConfig(group_size=4, train="flow", max_correct_roots=None))
    flow_only.setup(ctx)
    loss, _ = flow_only.loss(ctx, rollout_with_edits(flow_only, ctx))
    loss.backward()
    assert all(p.grad is None or not p.grad.any() for p in policy.controller.parameters())
    text_only = Reflection(ReflectionConfig(group_size=4, train="text"))
    text_only.setup(ctx)
    assert text_only.owned_models() == {}


def test_malformed_turns_are_counted_and_penalised():
    policy = make_pair(3)
    with torch.no_grad():  # a controller that puts an ACTION token first: every turn is malformed
        policy.controller.head[-1].bias.fill_(-50.0)
        policy.controller.head[-1].bias[12] = 50.0
    algorithm = Reflection(ReflectionConfig(group_size=4, max_correct_roots=None))
    ctx = context(policy)
    rollout = algorithm.rollout(ctx, PromptBatch([prompt_for(3)]), torch.Generator().manual_seed(0))
    traj = rollout.extras["trajectories"]
    assert traj.malformed.all() and (traj.num_edits == 0).all()
    assert rollout.extras["stats"]["rollout/malformed_rate"] == 1.0
    assert (rollout.extras["advantages"] == -0.5).all()  # A = 0 within the group, then min(0, 0) − 0.5


def run_trainer(out, steps, resume=None, seed=0):
    from visalign.reflection.sft import train_sft

    torch.manual_seed(seed)
    policy = TinyReflectionModel(TinyReflectionConfig(hidden=8))
    train_sft(policy, 40, batch_size=32, lr=1e-2, seed=seed)  # a controller that writes well-formed turns
    algorithm = build_algorithm({"name": "reflection", "group_size": 2, "flow_learning_rate": 1e-2,
                                 "updates_per_rollout": 2, "eval_best_of": 2})
    cfg = TrainerConfig(steps=steps, prompts_per_step=2, learning_rate=1e-2, save_every=2, log_with=[], progress=False,
                        output_dir=str(out), resume_from=resume, eval_batch_size=4)
    reference = run_trainer.reference if resume else None
    trainer = Trainer(policy, algorithm, DotCountReward(), PromptList([prompt_for(n) for n in range(1, 6)]), cfg,
                      reference=reference)
    if not resume:
        run_trainer.reference = copy.deepcopy(trainer.reference)
    summary = trainer.train()
    return policy, summary


def test_resume_matches_uninterrupted_run(tmp_path):
    full, summary = run_trainer(tmp_path / "run", steps=4)
    from safetensors.torch import load_file

    start = load_file(str(tmp_path / "run" / "checkpoints" / "step_000002" / "policy.safetensors"))
    # (the steps after the step-2 checkpoint moved both parts)
    moved = {k for k, v in full.state_dict().items() if not torch.equal(v, start[k])}
    assert any(k.startswith("text.") for k in moved) and any(k.startswith("flow.") for k in moved)
    assert "eval/acc@3" in summary and "eval/best_of_2_acc" in summary
    resumed, _ = run_trainer(tmp_path / "run", steps=4, resume=str(tmp_path / "run" / "checkpoints" / "step_000002"), seed=1)
    for key, value in full.state_dict().items():
        assert torch.equal(value, resumed.state_dict()[key]), f"{key} differs after resume"


def test_yaml_config_builds_and_trains_one_step(tmp_path):
    from visalign.run import build_trainer, load_run_config

    torch.manual_seed(0)
    TinyReflectionModel(TinyReflectionConfig(hidden=8)).save_pretrained(tmp_path / "sft")
    cfg = load_run_config(Path(__file__).resolve().parents[2] / "configs" / "reflection_counting.yaml", [
        f"policy.path={tmp_path / 'sft'}", f"trainer.output_dir={tmp_path / 'rl'}", "trainer.steps=1",
        "trainer.eval_batch_size=2", "algorithm.group_size=2", "algorithm.eval_best_of=0"])
    trainer = build_trainer(cfg)
    assert isinstance(trainer.algorithm, Reflection) and set(trainer.owned) == {"editor"}
    trainer.train()
    assert TinyReflectionModel.from_pretrained(tmp_path / "rl" / "final").config.hidden == 8


def test_a_causal_lm_critic_drives_the_loop_and_only_its_weights_get_text_gradients():
    from visalign.reflection.text_controller import CausalLMController
    from visalign.text import CausalLMPolicy, char_tokenizer, tiny_causal_lm

    tokenizer = char_tokenizer("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 []/:|\n")
    lm = CausalLMPolicy(tiny_causal_lm(tokenizer, "gpt2", hidden=16, layers=1, heads=2, max_positions=96, seed=0),
                        tokenizer, max_new_tokens=6)
    from visalign.reflection.counting import image_to_slots

    def describe(images):
        return [" ".join(str(int(v > 0.5)) for v in row) for row in image_to_slots(images)]

    torch.manual_seed(0)
    policy = ReflectionPair(CausalLMController(lm, describe), TinyFlowEditor(16, 4, 1.0), SplitConditioner(16))
    algorithm = Reflection(ReflectionConfig(group_size=3, max_correct_roots=None))
    ctx = context(policy)
    algorithm.setup(ctx)
    rollout = algorithm.rollout(ctx, PromptBatch([prompt_for(2)]), torch.Generator().manual_seed(0))
    traj = rollout.extras["trajectories"]
    assert traj.malformed.all()  # a random LM does not write the protocol: detected, counted, penalised
    assert (rollout.extras["advantages"] < 0).all()
    turns = traj.controller_rounds[0].turns
    rescored = policy.controller.token_log_probs(traj.controller_rounds[0].prompts, traj.controller_rounds[0].images, 0,
                                                 turns.tokens, 0.9)
    assert torch.allclose(rescored * turns.mask, turns.log_probs, atol=1e-5)
    loss, _ = algorithm.loss(ctx, rollout)
    policy.zero_grad(set_to_none=True)
    loss.backward()
    touched = {id(p) for p in policy.parameters() if p.grad is not None and p.grad.abs().sum() > 0}
    assert touched and touched <= {id(p) for p in lm.parameters()}


def test_an_editor_blind_to_the_prompt_sees_only_image_and_instruction():
    torch.manual_seed(0)
    model = TinyReflectionModel(TinyReflectionConfig(hidden=8, edit_sees_prompt=False))
    images = slots_to_image(torch.tensor([[1.0, 1, 0, 0, 0, 0]] * 2))
    cond = model.edit_condition([prompt_for(1), prompt_for(5)], images, ["add one dot"] * 2)
    assert torch.equal(cond[0], cond[1])
    render = model.render_condition([prompt_for(1), prompt_for(5)])
    assert not torch.equal(render[0], render[1])  # the first render still follows the prompt
