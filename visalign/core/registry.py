"""Name -> class registries for rewards, algorithms and generators."""
from __future__ import annotations

from typing import Any, Callable, Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """A named collection of classes; ``build(name, **kwargs)`` instantiates one."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, type[T]] = {}

    def register(self, name: str) -> Callable[[type[T]], type[T]]:
        def decorator(cls: type[T]) -> type[T]:
            if name in self._entries and self._entries[name] is not cls:
                raise ValueError(f"{self.kind} {name!r} is already registered to {self._entries[name].__qualname__}")
            self._entries[name] = cls
            if not getattr(cls, "name", None) or cls.__dict__.get("name") is None:
                cls.name = name  # type: ignore[attr-defined]
            return cls

        return decorator

    def get(self, name: str) -> type[T]:
        if name not in self._entries:
            known = ", ".join(sorted(self._entries)) or "(none)"
            raise KeyError(f"unknown {self.kind} {name!r}; known: {known}")
        return self._entries[name]

    def build(self, name: str, **kwargs: Any) -> T:
        return self.get(name)(**kwargs)

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries
