"""Name -> class registries for rewards, algorithms, generators, prompt sources and feature spaces.

Core declares the registries and knows nothing about what fills them: the package root adds a loader for its
built-ins (:func:`add_builtin_loader`), and third-party packages register through the entry-point group a registry
names. Both are loaded the first time a name is not found.
"""
from __future__ import annotations

from typing import Any, Callable, Generic, TypeVar

T = TypeVar("T")

_BUILTIN_LOADERS: list[Callable[[], None]] = []
_BUILTINS_LOADED = False


def add_builtin_loader(loader: Callable[[], None]) -> None:
    """Register a function that imports built-in modules (whose decorators fill the registries)."""
    _BUILTIN_LOADERS.append(loader)


def load_builtins() -> None:
    """Run every built-in loader once per process."""
    global _BUILTINS_LOADED
    if _BUILTINS_LOADED:
        return
    _BUILTINS_LOADED = True
    for loader in _BUILTIN_LOADERS:
        loader()


class Registry(Generic[T]):
    """A named collection of classes; ``build(name, **kwargs)`` instantiates one.

    ``entry_point_group`` (e.g. ``visalign.rewards``) lets installed packages add entries: each entry point there
    names a class, registered under the entry point's name on first lookup."""

    def __init__(self, kind: str, entry_point_group: str | None = None) -> None:
        self.kind = kind
        self.entry_point_group = entry_point_group
        self._entries: dict[str, type[T]] = {}

    def register(self, name: str, replace: bool = False) -> Callable[[type[T]], type[T]]:
        """Class decorator. A second class under a taken name is an error unless ``replace`` (or it is the same
        class, or a class of the same module and qualified name: a plug-in file executed again)."""

        def decorator(cls: type[T]) -> type[T]:
            old = self._entries.get(name)
            same = old is cls or (old is not None and (old.__module__, old.__qualname__) == (cls.__module__, cls.__qualname__))
            if old is not None and not same and not replace:
                raise ValueError(f"{self.kind} {name!r} is already registered to {old.__qualname__}")
            self._entries[name] = cls
            if cls.__dict__.get("name") in (None, ""):
                cls.name = name  # type: ignore[attr-defined]
            return cls

        return decorator

    def _load_plugins(self) -> None:
        """Built-ins (once), then the entry points of this registry's group that are not registered yet (looked up
        again on every miss, so a package installed while the process runs is found)."""
        load_builtins()
        if self.entry_point_group is None:
            return
        from importlib.metadata import entry_points

        for ep in entry_points(group=self.entry_point_group):
            if ep.name not in self._entries:
                self._entries[ep.name] = ep.load()

    def get(self, name: str) -> type[T]:
        if name not in self._entries:
            self._load_plugins()
        if name not in self._entries:
            known = ", ".join(self.names()) or "(none)"
            raise KeyError(f"unknown {self.kind} {name!r}; known: {known}")
        return self._entries[name]

    def build(self, name: str, **kwargs: Any) -> T:
        return self.get(name)(**kwargs)

    def names(self) -> list[str]:
        self._load_plugins()
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        if name not in self._entries:
            self._load_plugins()
        return name in self._entries
