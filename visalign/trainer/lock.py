"""A lock file that keeps two runs from writing into one output folder at the same time."""
from __future__ import annotations

import errno
import json
import os
import socket
from pathlib import Path

from ..core.errors import InputError

LOCK_FILE = ".visalign.lock"


class FolderLockedError(InputError):
    """Another live run holds the output folder's lock."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class RunLock:
    """``folder/.visalign.lock``, created with O_EXCL and holding the owner's pid and host.

    A lock whose process no longer exists on this host (a killed run) is stale and taken over."""

    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / LOCK_FILE
        self.held = False

    def acquire(self) -> None:
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                if not self._remove_if_stale():
                    raise FolderLockedError(self._held_message()) from None
                continue
            with os.fdopen(fd, "w") as f:
                json.dump({"pid": os.getpid(), "host": socket.gethostname()}, f)
            self.held = True
            return
        raise FolderLockedError(self._held_message())

    def release(self) -> None:
        if self.held:
            self.path.unlink(missing_ok=True)
            self.held = False

    def _owner(self) -> dict:
        try:
            owner = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return owner if isinstance(owner, dict) else {}

    def _remove_if_stale(self) -> bool:
        owner = self._owner()
        pid, host = owner.get("pid"), owner.get("host")
        if host not in (None, socket.gethostname()):
            return False
        if isinstance(pid, int) and _alive(pid):
            return False
        try:
            self.path.unlink()
        except OSError as exc:
            if exc.errno != errno.ENOENT:
                raise
        return True

    def _held_message(self) -> str:
        owner = self._owner()
        who = f"process {owner.get('pid')} on {owner.get('host')}" if owner else "another process"
        return (f"output folder {self.path.parent} is in use by {who} (lock file {self.path}); wait for that run to "
                f"end or choose another trainer.output_dir (delete the lock file only if no run is using the folder)")
