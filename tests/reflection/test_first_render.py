"""Round-0 isolation of the tiny reflection model: with a separate render head, RL steps through the Trainer leave
first renders bit-identical while they still move the editor; with the shared head they move first renders too.
Also the critique measures of the counting toy (instruction direction, editor probe)."""
import copy

import pytest
import torch

from visalign.core import PromptList
from visalign.core.config import ConfigError
from visalign.reflection import DotCountReward, Reflection, ReflectionConfig, TinyReflectionConfig, TinyReflectionModel, prompt_for
from visalign.reflection.counting import ADD, REMOVE, slots_to_image
from visalign.reflection.critique import binarised, editor_probe, instruction_metrics
from visalign.reflection.rollout import EditRound, Trajectories
from visalign.reflection.sft import train_sft
from visalign.trainer import Trainer, TrainerConfig

PROMPTS = [prompt_for(n) for n in range(1, 6)] * 4


@pytest.fixture(scope="module")
def sft_model():
    torch.manual_seed(0)
    model = TinyReflectionModel(TinyReflectionConfig(hidden=8))
    train_sft(model, 40, batch_size=32, lr=1e-2, seed=0)  # a controller that writes well-formed turns and edits
    return model


def renders(model):
    return model.render(PROMPTS, torch.Generator().manual_seed(123))


def rl_steps(model, out, steps=3):
    algorithm = Reflection(ReflectionConfig(group_size=4, flow_learning_rate=1e-2, eval_best_of=0, max_correct_roots=None))
    cfg = TrainerConfig(steps=steps, prompts_per_step=2, learning_rate=1e-2, log_with=[], progress=False,
                        output_dir=str(out), save_every=0, eval_every=0)
    Trainer(model, algorithm, DotCountReward(), PromptList([prompt_for(n) for n in range(1, 6)]), cfg).train()


@pytest.mark.parametrize("first_render", ["separate", "shared"])
def test_rl_leaves_first_renders_bit_identical_only_with_a_separate_render_head(sft_model, tmp_path, first_render):
    model = copy.deepcopy(sft_model)
    if first_render == "separate":
        model.isolate_first_render()
        assert model.renderer is not model.editor
        owned = {id(p) for p in model.controller.parameters()} | {id(p) for p in model.editor_module().parameters()}
        assert owned.isdisjoint(id(p) for p in model.renderer.parameters())
    before, editor_before = renders(model), copy.deepcopy(model.editor.state_dict())
    assert torch.equal(before, renders(sft_model))  # the copy draws exactly what the SFT flow head drew
    rl_steps(model, tmp_path / "rl")
    assert any(not torch.equal(v, model.editor.state_dict()[k]) for k, v in editor_before.items())  # RL moved the editor
    if first_render == "separate":
        assert torch.equal(renders(model), before)
    else:
        assert not torch.equal(renders(model), before)


def test_a_separate_render_head_is_saved_loaded_and_set_from_a_run_config(sft_model, tmp_path):
    from visalign.run import build_policy

    sft_model.save_pretrained(tmp_path / "shared")
    isolated = build_policy({"type": "tiny_reflection", "path": str(tmp_path / "shared"), "first_render": "separate"})
    assert isolated.config.first_render == "separate"
    with pytest.raises(ValueError, match="already draws first images"):
        isolated.isolate_first_render()
    isolated.save_pretrained(tmp_path / "separate")
    loaded = TinyReflectionModel.from_pretrained(tmp_path / "separate")
    assert loaded.render_flow is not None and torch.equal(renders(loaded), renders(sft_model))
    with pytest.raises(ConfigError, match="takes only first_render"):
        build_policy({"type": "tiny_reflection", "path": str(tmp_path / "shared"), "hidden": 16})
    with pytest.raises(ConfigError, match="has a separate render head"):
        build_policy({"type": "tiny_reflection", "path": str(tmp_path / "separate"), "first_render": "shared"})
    with pytest.raises(ConfigError, match="first_render must be one of"):
        TinyReflectionConfig(first_render="frozen")


def dots(*counts):
    return slots_to_image(torch.stack([(torch.arange(6) < c).float() for c in counts]))


def test_instruction_metrics_count_direction_and_obedience():
    # prompts want 3 dots; images have 2, 4, 2 dots; instructions add (right), add (wrong), remove (wrong);
    # the edits give 3 (obeyed), 3 (defied) and 1 (obeyed)
    prompts = [prompt_for(3)] * 3
    before, after = dots(2, 4, 2), dots(3, 3, 1)
    rows = torch.arange(3)
    traj = Trajectories(prompts, 1, [before, after], torch.zeros(3, 2), torch.ones(3, dtype=torch.long),
                        torch.zeros(3, dtype=torch.bool), torch.zeros(3, dtype=torch.bool), torch.zeros(3), [[]] * 3,
                        edit_rounds=[EditRound(0, rows, prompts, before, [ADD, ADD, REMOVE], None)])
    assert instruction_metrics(traj) == pytest.approx({"instr_right": 1 / 3, "edit_obeys": 2 / 3})


def test_editor_probe_tells_an_instruction_follower_from_a_prompt_follower(monkeypatch):
    model = TinyReflectionModel(TinyReflectionConfig(hidden=8))
    edited = []
    images, prompts = dots(2, 4, 3), [prompt_for(3)] * 3  # the third image is right: not probed

    def prompt_follower(noise, cond):  # ignores the instruction, draws the prompt's 3 dots
        edited.append(noise.shape[0])
        return (torch.arange(6) < 3).float().expand(noise.shape[0], 6)

    monkeypatch.setattr(model.editor, "sample_latents", prompt_follower)
    probe = editor_probe(model, prompts, images)
    assert edited == [4]  # two wrong images, each with both instructions
    assert probe == pytest.approx({"probe_obeys_right": 1.0, "probe_obeys_wrong": 0.0, "probe_defies_wrong": 1.0,
                                   "instruction_effect": 0.0})

    def instruction_follower(noise, cond):  # rows: (2 dots, add), (2, remove), (4, add), (4, remove)
        counts = torch.tensor([2, 2, 4, 4]) + torch.tensor([1, -1, 1, -1])
        return (torch.arange(6)[None] < counts[:, None]).float()

    monkeypatch.setattr(model.editor, "sample_latents", instruction_follower)
    assert editor_probe(model, prompts, images) == pytest.approx(
        {"probe_obeys_right": 1.0, "probe_obeys_wrong": 1.0, "probe_defies_wrong": 0.0, "instruction_effect": 1.0})


def test_binarised_images_keep_counted_dots_and_drop_faint_ones():
    faint = slots_to_image(torch.tensor([[1.0, 0.9, 0.4, 0.6, 0.1, 0.0]]))
    assert torch.equal(binarised(faint), slots_to_image(torch.tensor([[1.0, 1, 0, 1, 0, 0]])))
