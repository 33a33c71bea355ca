"""Integrity of saved folders: a ``manifest.json`` with the sha256 of every file, checked on load.

A folder is written complete before its manifest, so a folder without one is partial (or from before manifests);
a file whose hash differs was changed or truncated after it was written. Errors name the file."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

from .errors import CheckpointError

MANIFEST_FILE = "manifest.json"
_CHUNK = 1 << 20


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to a temporary sibling, flush it to disk, then rename it over ``path``."""
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def publish(tmp: Path, path: Path) -> None:
    """Rename the finished folder ``tmp`` to ``path``; a folder already there (another run's) is replaced."""
    if path.exists():
        old = path.with_name(f".replaced_{path.name}")
        shutil.rmtree(old, ignore_errors=True)
        os.replace(path, old)
        os.replace(tmp, path)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, path)


def write_manifest(folder: Path) -> Path:
    """Hash every file under ``folder`` (recursively) into ``folder/manifest.json``; call it after the last file."""
    folder = Path(folder)
    files = {p.relative_to(folder).as_posix(): sha256_file(p) for p in sorted(folder.rglob("*"))
             if p.is_file() and p.name != MANIFEST_FILE and not p.name.startswith(".")}
    path = folder / MANIFEST_FILE
    write_text_atomic(path, json.dumps({"sha256": files}, indent=1))
    return path


def read_json(path: Path, what: str = "file") -> Any:
    """Parse a JSON file; a missing or malformed file is a :class:`CheckpointError` naming it."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{what} {path} is missing")
    try:
        return json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{what} {path} is not valid JSON ({exc}); the file is corrupt") from exc


def verify_folder(folder: Path, required: bool = True, what: str = "checkpoint") -> bool:
    """Check every file listed in ``folder/manifest.json`` exists and has its recorded sha256.

    Without a manifest: an error when ``required`` (the folder is partial), else ``False`` (nothing to check)."""
    folder = Path(folder)
    manifest = folder / MANIFEST_FILE
    if not folder.is_dir():
        raise CheckpointError(f"{what} {folder} does not exist")
    if not manifest.is_file():
        if required:
            raise CheckpointError(f"{what} {folder} is partial: it has no {MANIFEST_FILE} (its write was interrupted, "
                                  "or an older visalign wrote it)")
        return False
    listed = read_json(manifest, f"{what} manifest")
    if not isinstance(listed, dict) or not isinstance(listed.get("sha256"), dict):
        raise CheckpointError(f"{what} manifest {manifest} has no 'sha256' mapping; the file is corrupt")
    for name, want in listed["sha256"].items():
        path = folder / name
        if not path.is_file():
            raise CheckpointError(f"{what} {folder} is partial: {path} is listed in {MANIFEST_FILE} but missing")
        if sha256_file(path) != want:
            raise CheckpointError(f"{path} is corrupt: its sha256 differs from the one recorded in {manifest} "
                                  "(changed or truncated after it was written)")
    return True


def safetensors_error(path: Path, exc: Exception) -> CheckpointError:
    """A :class:`CheckpointError` naming ``path`` for an unreadable safetensors file."""
    return CheckpointError(f"{path} is not a readable safetensors file ({exc}); the file is truncated or corrupt")
