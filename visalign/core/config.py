"""Dataclass configs built from YAML and ``key.path=value`` CLI overrides, with errors that name the key."""
from __future__ import annotations

import dataclasses
import types
import typing
from pathlib import Path
from typing import Any, Literal, Sequence, TypeVar, get_args, get_origin, get_type_hints

import yaml

from .errors import InputError

T = TypeVar("T")


class ConfigError(InputError):
    """A config key is unknown, missing or has a bad value."""


def load_yaml(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"config file not found: {path}")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: top level must be a mapping, got {type(data).__name__}")
    return data


def apply_overrides(data: dict[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """Apply ``a.b.c=value`` strings (values parsed as YAML) to a nested dict, returning a new dict."""
    import copy

    data = copy.deepcopy(data)
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"override {item!r} is not of the form key.path=value")
        node = data
        parts = key.split(".")
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"override {item!r}: {part!r} is not a section")
            node = child
        try:
            node[parts[-1]] = yaml.safe_load(raw)
        except yaml.YAMLError as exc:
            raise ConfigError(f"override {item!r}: the value is not valid YAML ({exc})") from exc
    return data


def _coerce(value: Any, annotation: Any, key: str) -> Any:
    origin = get_origin(annotation)
    if annotation is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        options = get_args(annotation)
        if value is None and type(None) in options:
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return _coerce(value, option, key)
            except ConfigError as exc:
                errors.append(str(exc))
        raise ConfigError(f"{key}: {value!r} matches none of {annotation}")
    if origin is Literal:
        if value not in get_args(annotation):
            raise ConfigError(f"{key}: {value!r} is not one of {list(get_args(annotation))}")
        return value
    if dataclasses.is_dataclass(annotation):
        if isinstance(value, annotation):
            return value
        if not isinstance(value, dict):
            raise ConfigError(f"{key}: expected a mapping, got {value!r}")
        return from_dict(annotation, value, prefix=key)
    if origin in (list, tuple, Sequence) or annotation in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{key}: expected a list, got {value!r}")
        args = get_args(annotation)
        inner = args[0] if args else Any
        items = [_coerce(v, inner, f"{key}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if origin is tuple or annotation is tuple else items
    if origin is dict or annotation is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{key}: expected a mapping, got {value!r}")
        return dict(value)
    if annotation is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{key}: expected true/false, got {value!r}")
    if annotation is int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                return int(value)
            raise ConfigError(f"{key}: expected an integer, got {value!r}")
        return value
    if annotation is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            if isinstance(value, str):
                try:
                    return float(value)
                except ValueError:
                    pass
            raise ConfigError(f"{key}: expected a number, got {value!r}")
        return float(value)
    if annotation is str:
        if not isinstance(value, str):
            raise ConfigError(f"{key}: expected a string, got {value!r}")
        return value
    return value


def option(default: Any = dataclasses.MISSING, help: str = "", *, factory: Any = dataclasses.MISSING) -> Any:
    """A dataclass field with help text (shown by ``visalign train --help-config``); ``factory`` for mutable defaults."""
    if not help:
        raise ValueError("option() needs help text")
    if factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=factory, metadata={"help": help})
    return dataclasses.field(default=default, metadata={"help": help})


def describe_config(cls: type, prefix: str = "") -> list[tuple[str, str, str, str]]:
    """``(key, type, default, help)`` for every field of dataclass ``cls``; nested dataclass fields are expanded."""
    hints = get_type_hints(cls)
    rows = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        key = f"{prefix}{f.name}"
        annotation = hints[f.name]
        if dataclasses.is_dataclass(annotation):
            rows += describe_config(annotation, prefix=f"{key}.")
            continue
        if f.default is not dataclasses.MISSING:
            default = repr(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            default = repr(f.default_factory())
        else:
            default = "(required)"
        rows.append((key, type_label(annotation), default, f.metadata.get("help", "")))
    return rows


def type_label(annotation: Any) -> str:
    """A readable type: ``int``, ``float | None``, ``Literal['a', 'b']``, ``tuple[float, float]``."""
    if get_args(annotation) or not isinstance(annotation, type):
        return str(annotation).replace("typing.", "").replace("NoneType", "None")
    return annotation.__name__


def from_dict(cls: type[T], data: dict[str, Any] | None, prefix: str = "") -> T:
    """Instantiate dataclass ``cls`` from a mapping; unknown keys and ill-typed values raise ``ConfigError``.

    Init-only keys (``InitVar``, e.g. a renamed key whose ``__post_init__`` says what it became) are passed through."""
    data = dict(data or {})
    hints = get_type_hints(cls)
    init_only = {name for name, f in cls.__dataclass_fields__.items()
                 if isinstance(f.type, dataclasses.InitVar) or str(f.type).startswith(("InitVar", "dataclasses.InitVar"))}
    names = {f.name for f in dataclasses.fields(cls) if f.init} | init_only
    unknown = sorted(set(data) - names)
    where = f"{prefix}." if prefix else ""
    if unknown:
        raise ConfigError(f"unknown config key(s) {', '.join(where + k for k in unknown)}; valid keys: {', '.join(sorted(names))}")
    kwargs = {name: value if name in init_only else _coerce(value, hints[name], where + name) for name, value in data.items()}
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise ConfigError(f"{prefix or cls.__name__}: {exc}") from exc
    except ValueError as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(f"{prefix or cls.__name__}: {exc}") from exc


def to_dict(config: Any) -> dict[str, Any]:
    return dataclasses.asdict(config)


def check(condition: bool, message: str) -> None:
    """Config validation helper for ``__post_init__``: raise ``ConfigError(message)`` unless ``condition``."""
    if not condition:
        raise ConfigError(message)
