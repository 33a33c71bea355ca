"""``visalign poem``: calibrate, fit, print coverage and ĉ, save a composed checkpoint that loads back."""
import json

import pytest
import torch

from visalign.cli import main
from visalign.core import load_generator
from visalign.generators import TinyFlowConfig, TinyFlowGenerator
from visalign.poem import ComposedCausalLMPolicy, ComposedFlowGenerator
from visalign.text import ADDITION_CHARS, CausalLMPolicy, char_tokenizer, tiny_causal_lm

PLUGIN = '''
from visalign import Reward

class HalfBrightHalfRed(Reward):
    def __call__(self, samples, prompts, metadata):
        x = (samples.clamp(-1, 1) + 1) / 2
        return 0.5 * x.flatten(1).mean(1) + 0.5 * (x[:, 0] - 0.5 * (x[:, 1] + x[:, 2])).flatten(1).mean(1)
'''


@pytest.fixture(scope="module")
def flow_folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("poem_flow_ckpts")
    folders = []
    for seed, name in enumerate(["ref", "bright", "red", "wide"]):
        torch.manual_seed(seed)
        gen = TinyFlowGenerator(TinyFlowConfig(image_size=8, patch_size=4, layers=1, heads=1, head_dim=8, text_hidden=16,
                                               text_layers=1, text_heads=1, vocab_buckets=64, max_length=8, num_steps=2))
        folders.append(str(gen.save_pretrained(root / name)))
    return folders


def test_flow_checkpoints_with_basis_rewards_and_a_plugin_reward(flow_folders, tmp_path, capsys):
    plugin = tmp_path / "my_reward.py"
    plugin.write_text(PLUGIN)
    out = tmp_path / "composed"
    code = main(["poem", "--reference", flow_folders[0], "--bases", *flow_folders[1:3], "--reward", f"{plugin}:HalfBrightHalfRed",
                 "--basis-rewards", "brightness", "mean_redness", "--calibration", "32", "--group-size", "4", "--out", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "coverage" in printed and "bright=+0.5000" in printed and "red=+0.5000" in printed
    fit = json.loads((out / "poem_fit.json").read_text())
    assert fit["coverage"] == pytest.approx(1.0, abs=1e-6) and fit["coef"] == pytest.approx([0.5, 0.5], abs=1e-5)
    composed = load_generator(out)
    assert isinstance(composed, ComposedFlowGenerator) and composed.sample(n=2).shape == (2, 3, 8, 8)


def test_flow_log_ratio_fit_per_step(flow_folders, tmp_path, capsys):
    out = tmp_path / "per_step"
    code = main(["poem", "--reference", flow_folders[0], "--bases", *flow_folders[1:], "--reward",
                 "[{name: brightness, weight: 0.5}, {name: contrast, weight: 0.5}]", "--beta", "0.1", "--per-step",
                 "--calibration", "16", "--out", str(out)])
    assert code == 0 and "c_hat(t=" in capsys.readouterr().out
    composed = load_generator(out)
    assert composed.coef_table.shape == (2, 3) and composed.config.times == sorted(composed.config.times)


def test_text_folders_with_log_ratios(tmp_path, capsys):
    tok = char_tokenizer(ADDITION_CHARS)
    folders = []
    for seed in range(3):
        policy = CausalLMPolicy(tiny_causal_lm(tok, "gpt2", hidden=16, layers=1, heads=2, max_positions=16, seed=seed), tok,
                                max_new_tokens=3)
        folders.append(str(policy.save_pretrained(tmp_path / f"lm{seed}")))
    out = tmp_path / "composed_lm"
    code = main(["poem", "--reference", folders[0], "--bases", *folders[1:], "--reward", "{name: text_char_fraction, chars: '02468'}",
                 "--beta", "0.1", "--prompts", "text_addition", "--calibration", "16", "--level", "sequence", "--out", str(out)])
    assert code == 0 and "log_ratios" in capsys.readouterr().out
    loaded = ComposedCausalLMPolicy.from_pretrained(out)
    assert loaded.level == "sequence" and len(loaded.sample(["1+2="], num_samples=2)) == 2


def test_clear_errors(flow_folders, tmp_path, capsys):
    base = ["poem", "--reference", flow_folders[0], "--bases", flow_folders[1], "--reward", "brightness", "--out", str(tmp_path / "o")]
    assert main(base) == 2 and "needs beta" in capsys.readouterr().err
    assert main(base + ["--basis-rewards", "brightness", "contrast"]) == 2 and "2 basis rewards for 1 bases" in capsys.readouterr().err
    assert main(["poem", "--reference", str(tmp_path), "--bases", flow_folders[1], "--reward", "brightness",
                 "--out", str(tmp_path / "o")]) == 2
    assert "neither a generator checkpoint" in capsys.readouterr().err
