import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _readme_commands() -> list[str]:
    return re.findall(r"```bash\n(.+?)\n```", (ROOT / "README.md").read_text())


def test_ci_runs_the_readme_test_command():
    commands = _readme_commands()
    test_cmd = next(c for c in commands if "pytest" in c)
    assert test_cmd in (ROOT / ".ci" / "run").read_text()


def test_readme_installs_pinned_torch_before_the_package():
    for cmd in _readme_commands():
        if "pip install" in cmd:
            first, rest = cmd.split("pip install", 2)[1:]
            assert first.strip().startswith("torch==2.13.0")
            assert "torch==2.13.0" in rest


def test_readme_vvr_snippet_runs():
    block = re.search(r"```python\n(from visalign.vvr import .+?)```", (ROOT / "README.md").read_text(), re.S).group(1)
    namespace: dict = {}
    exec(compile(block, "README.md", "exec"), namespace)
    assert namespace["verify"](namespace["image"], namespace["task"]).all_satisfied


def test_vvr_exports_are_functions_not_modules():
    import types

    import visalign.vvr as vvr

    for name in vvr.__all__:
        assert not isinstance(getattr(vvr, name), types.ModuleType), name


def test_readme_python_example_trains_and_saves(tmp_path, monkeypatch):
    block = re.search(r"```python\n(import torch\n.+?)```", (ROOT / "README.md").read_text(), re.S).group(1)
    monkeypatch.chdir(tmp_path)
    block = block.replace('"assets/', f'"{ROOT}/assets/').replace('@register_reward("redness")', '@register_reward("readme_redness")')
    namespace: dict = {}
    exec(compile(block, "README.md", "exec"), namespace)
    assert (tmp_path / "runs/redness/final/model.safetensors").is_file()
    assert (tmp_path / "runs/redness/reward_curve.png").is_file()
