"""Plug-in rewards load once per file, re-registration replaces, ``reward=`` also sets the eval reward, shipped configs
run from any folder."""
import textwrap

from visalign.cli import main
from visalign.core import REWARDS, build_reward
from visalign.run import build_trainer, load_run_config

PLUGIN = textwrap.dedent("""
    import torch
    from visalign.core import Reward, register_reward

    RUNS = globals().get("RUNS", 0) + 1


    @register_reward("redness_plugin_test")
    class Redness(Reward):
        def __call__(self, samples, prompts, metadata):
            return samples.reshape(samples.shape[0], -1)[:, 0]


    class Unregistered(Reward):
        def __call__(self, samples, prompts, metadata):
            return samples.reshape(samples.shape[0], -1)[:, 0]
""")

TOY = """
generator: {name: toy_one_step}
reward: {name: toy_linear}
eval_reward: vvr
algorithm: {name: rwr, num_samples: 4}
trainer: {steps: 1, prompts_per_step: 2, log_with: [], progress: false, eval_batch_size: 4}
"""


def test_a_plugin_used_as_reward_and_eval_reward_is_loaded_once(tmp_path):
    plugin = tmp_path / "my_rewards.py"
    plugin.write_text(PLUGIN)
    spec = f"{plugin}:Redness"
    config = load_run_config(None, [f"reward={spec}", f"eval_reward={{name: '{spec}'}}", "algorithm.name=rwr",
                                    f"trainer.output_dir={tmp_path / 'run'}", "trainer.log_with=[]"])
    trainer = build_trainer(config)
    assert type(trainer.reward) is type(trainer.eval_reward) is REWARDS.get("redness_plugin_test")
    assert type(trainer.reward).__module__.startswith("visalign_plugin_my_rewards")
    import sys

    assert sys.modules[type(trainer.reward).__module__].RUNS == 1  # the file ran once for both uses
    plugin.write_text(PLUGIN + "\n# edited\n")
    import os

    os.utime(plugin, ns=(1, 10**18))
    assert build_reward(spec).name == "redness_plugin_test"  # an edited file is loaded again and replaces the class


def test_re_running_a_notebook_cell_re_registers_the_class(tmp_path):
    cell = PLUGIN.replace("redness_plugin_test", "redness_notebook_test")
    classes = []
    for _ in range(2):
        namespace = {"__name__": "__main__"}
        exec(cell, namespace)
        classes.append(namespace["Redness"])
    assert classes[0] is not classes[1] and REWARDS.get("redness_notebook_test") is classes[1]


def test_plugin_rewards_without_registration_are_named_after_their_class(tmp_path):
    plugin = tmp_path / "unregistered.py"
    plugin.write_text(PLUGIN.replace("redness_plugin_test", "redness_unregistered_test"))
    assert build_reward(f"{plugin}:Unregistered").name == "Unregistered"


def test_a_reward_override_is_also_the_eval_reward_unless_given(tmp_path):
    cfg = tmp_path / "run.yaml"
    cfg.write_text(TOY)
    assert load_run_config(cfg).eval_reward == "vvr"
    assert load_run_config(cfg, ["reward=toy_quadratic"]).eval_reward is None  # None: the trainer evaluates with the reward
    assert load_run_config(cfg, ["reward=toy_quadratic", "eval_reward=toy_linear"]).eval_reward == "toy_linear"
    trainer = build_trainer(load_run_config(cfg, ["reward=toy_quadratic", f"trainer.output_dir={tmp_path / 'run'}"]))
    assert trainer.eval_reward is trainer.reward


def test_config_paths_are_relative_to_the_config_file(tmp_path, monkeypatch):
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    monkeypatch.chdir(tmp_path)
    config = load_run_config(repo / "configs" / "demo.yaml")
    assert Path(config.generator["checkpoint"]).resolve() == repo / "assets" / "tiny_one_step_vvr2"
    assert Path(config.prompts["path"]).is_file()
    # an override is relative to the working directory, and a path missing next to the file is left as written
    assert load_run_config(repo / "configs" / "demo.yaml", ["generator.checkpoint=mine"]).generator["checkpoint"] == "mine"


def test_demo_runs_from_a_folder_outside_the_repository(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    overrides = ["trainer.steps=1", "trainer.eval_batch_size=2", "trainer.eval_every=0", "algorithm.num_current=4",
                 "algorithm.num_reference=4", "trainer.progress=false"]
    assert main(["demo", "--out", "demo_run", *overrides]) == 0
    assert (tmp_path / "demo_run" / "summary.json").is_file() and (tmp_path / "demo_run" / "final").is_dir()
    assert main(["demo", "--out", "demo_run", *overrides]) == 2  # a second demo into the same folder is refused
