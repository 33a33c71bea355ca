"""Every config field has help text (so new ones cannot skip it), and the CLI prints fields with type, default, help."""
from pathlib import Path

import pytest

from visalign.cli import main
from visalign.config_help import config_sections
from visalign.core.algorithm import ALGORITHMS
from visalign.core.config import describe_config
from visalign.core.generator import GENERATORS
from visalign.run import RunConfig
from visalign.trainer import TrainerConfig

ROOT = Path(__file__).resolve().parents[1]


def _configs():
    yield "run", RunConfig
    yield "trainer", TrainerConfig
    for kind, registry in (("algorithm", ALGORITHMS), ("generator", GENERATORS)):
        for name in registry.names():
            cls = registry.get(name)
            if cls.config_class is not None:
                yield f"{kind} {name}", cls.config_class


@pytest.mark.parametrize("where,config_class", list(_configs()), ids=[w for w, _ in _configs()])
def test_every_config_field_has_help(where, config_class):
    rows = describe_config(config_class)
    assert rows, f"{where}: no fields"
    missing = [key for key, _, _, help_text in rows if not help_text.strip()]
    assert not missing, f"{where}: fields without help text (use visalign.core.config.option): {missing}"


def test_every_registered_algorithm_and_generator_has_a_section():
    titles = [title for title, _ in config_sections()]
    for name in ALGORITHMS.names():
        assert any(t.startswith(f"algorithm: {name} ") for t in titles), name
    for name in GENERATORS.names():
        assert any(t.startswith(f"generator: {name} ") for t in titles), name


def test_train_help_config_prints_the_sections_of_a_run_file(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)  # the config's generator checkpoint path is relative to the repo root
    assert main(["train", "configs/toy_diffusion_nft.yaml", "--help-config"]) == 0
    out = capsys.readouterr().out
    assert "[trainer (TrainerConfig)]" in out and "[algorithm: diffusion_nft (DiffusionNFT)]" in out
    assert "[generator: toy_flow (ToyFlowGenerator)]" in out  # read from the checkpoint's generator.json
    assert "  beta: float = 1.0\n      strength β of the implicit policies" in out
    assert "  mixed_precision: Literal['no', 'bf16', 'fp16'] = 'no'" in out


def test_config_help_command_by_name_and_unknown_name(capsys):
    assert main(["config-help", "tiny_flow", "trainer"]) == 0
    out = capsys.readouterr().out
    assert "[generator: tiny_flow (TinyFlowGenerator)]" in out and "  num_steps: int = 4\n      Euler sampling steps" in out
    assert main(["config-help", "no_such_thing"]) == 2
    assert "no config section 'no_such_thing'" in capsys.readouterr().err
