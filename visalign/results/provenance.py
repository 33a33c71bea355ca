"""Where a result came from: the git commit of the code and the platform that computed it.

A "deterministic" run here is deterministic for one platform: the same seeds give bit-identical numbers only with
the same CPU kernels, library versions and thread count (torch splits float sums by thread), so the platform is
recorded and compared along with the numbers.
"""
from __future__ import annotations

import importlib.metadata
import platform as _platform
import subprocess
from pathlib import Path
from typing import Any

PACKAGES = ("torch", "numpy", "transformers", "diffusers", "pot", "scipy")
ISA_FLAGS = ("amx_tile", "avx512f", "avx2", "sse4_2")
OUTPUTS = ("README.md", "assets/results", "assets/readme")  # what the mechanism writes; not code, so never "dirty"


def git_commit(root: str | Path) -> tuple[str, bool]:
    """``(HEAD commit, whether tracked code differs from it)``; ``("unknown", False)`` outside a git checkout."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout.strip()

    try:
        commit = git("rev-parse", "HEAD")
        dirty = bool(git("status", "--porcelain", "--untracked-files=no", "--", ".", *(f":!{p}" for p in OUTPUTS)))
    except (OSError, subprocess.CalledProcessError):
        return "unknown", False
    return commit, dirty


def _cpu() -> tuple[str, str]:
    model, flags = _platform.processor() or _platform.machine(), set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                model = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
            if model and flags:
                break
    except OSError:
        pass
    isa = next((f for f in ISA_FLAGS if f in flags), "unknown")
    return model, isa


def platform_fingerprint() -> dict[str, Any]:
    """CPU model, widest vector ISA, torch threads and the versions of the numeric packages."""
    import torch

    model, isa = _cpu()
    fingerprint: dict[str, Any] = {"cpu": model, "isa": isa, "machine": _platform.machine(),
                                   "torch_threads": torch.get_num_threads()}
    for name in PACKAGES:
        try:
            fingerprint[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return fingerprint


def platform_differences(stored: dict[str, Any], fresh: dict[str, Any]) -> list[str]:
    """``key: stored -> fresh`` for every fingerprint key that differs (an empty stored fingerprint differs in none)."""
    if not stored:
        return []
    return [f"{k}: {stored.get(k)} -> {fresh.get(k)}" for k in sorted(set(stored) | set(fresh)) if stored.get(k) != fresh.get(k)]
