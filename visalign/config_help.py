"""Every config field with its type, default and help text, by section (``visalign config-help``,
``visalign train CONFIG --help-config``)."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any, Sequence

from .core.config import ConfigError, describe_config, load_yaml

Section = tuple[str, list[tuple[str, str, str, str]]]


def _algorithms():
    from .core.algorithm import ALGORITHMS

    return ALGORITHMS


def _generators():
    from .core.generator import GENERATORS

    return GENERATORS


def _component(kind: str, name: str) -> Section:
    registry = _algorithms() if kind == "algorithm" else _generators()
    cls = registry.get(name)
    rows = describe_config(cls.config_class) if cls.config_class is not None else []
    return f"{kind}: {name} ({cls.__name__})", rows


def _run_sections() -> list[Section]:
    from .run import RunConfig
    from .trainer.config import TrainerConfig

    top = [row for row in describe_config(RunConfig) if not row[0].startswith("trainer.")]
    return [("run config (top-level sections)", top), ("trainer (TrainerConfig)", describe_config(TrainerConfig))]


def _generator_name(section: dict[str, Any]) -> str | None:
    """The registered generator a ``generator:`` section builds (``name``, or the type in a checkpoint's JSON)."""
    if "name" in section:
        return str(section["name"])
    checkpoint = section.get("checkpoint")
    meta = Path(str(checkpoint)) / "generator.json" if checkpoint else None
    if meta is not None and meta.is_file():
        return json.loads(meta.read_text()).get("type")
    return None


def _from_run_file(path: Path) -> list[Section]:
    data = load_yaml(path)
    sections = [("trainer (TrainerConfig)", _run_sections()[1][1])]
    algorithm = data.get("algorithm", {"name": "rwr"})
    name = algorithm if isinstance(algorithm, str) else algorithm.get("name")
    if name:
        sections.append(_component("algorithm", str(name)))
    generator = _generator_name(data.get("generator", {"name": "toy_one_step"}) or {})
    if generator and not data.get("policy"):
        sections.append(_component("generator", generator))
    return sections


def config_sections(spec: str | None = None) -> list[Section]:
    """Sections for ``spec``: none (run config, trainer, every algorithm and generator), ``trainer``, ``run``,
    ``algorithm`` / ``generator`` (all of that kind), a registered algorithm or generator name, or a YAML run config
    (its trainer, algorithm and generator sections)."""
    algorithms, generators = _algorithms(), _generators()
    if spec is None:
        return [*_run_sections(), *(_component("algorithm", n) for n in algorithms.names()),
                *(_component("generator", n) for n in generators.names())]
    if spec in ("run", "trainer"):
        runs = _run_sections()
        return runs if spec == "run" else runs[1:]
    if spec in ("algorithm", "algorithms"):
        return [_component("algorithm", n) for n in algorithms.names()]
    if spec in ("generator", "generators"):
        return [_component("generator", n) for n in generators.names()]
    if spec.endswith((".yaml", ".yml")) or Path(spec).is_file():
        return _from_run_file(Path(spec))
    kind, _, name = spec.rpartition(".")
    found = [_component(k, name) for k, reg in (("algorithm", algorithms), ("generator", generators))
             if kind in ("", k) and name in reg.names()]
    if not found:
        raise ConfigError(f"no config section {spec!r}; use run, trainer, algorithm, generator, a YAML run config, or "
                          f"one of the algorithms ({', '.join(algorithms.names())}) or generators ({', '.join(generators.names())})")
    return found


def format_sections(sections: Sequence[Section], width: int = 100) -> str:
    """``key: type = default`` lines, each followed by its indented help text."""
    lines = []
    for title, rows in sections:
        lines.append(f"[{title}]")
        if not rows:
            lines.append("  (no options)")
        for key, type_name, default, help_text in rows:
            lines.append(f"  {key}: {type_name} = {default}")
            lines += textwrap.wrap(help_text or "(no help text)", width, initial_indent=" " * 6, subsequent_indent=" " * 6)
        lines.append("")
    return "\n".join(lines)


__all__ = ["config_sections", "format_sections"]
