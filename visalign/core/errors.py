"""Errors caused by what a user supplied (a config, a file, a flag), as opposed to bugs.

The CLI prints an :class:`InputError` as ``error: …`` and exits with status 2; any other exception keeps its traceback."""
from __future__ import annotations


class InputError(ValueError):
    """A user-supplied input (config key or value, file, flag, task) is bad; the message names it."""


class UnknownNameError(InputError, KeyError):
    """A name looked up in a registry is not registered (also a ``KeyError`` for callers that catch that)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class CheckpointError(InputError):
    """A checkpoint or saved model folder is missing, partial or corrupt; the message names the file."""
