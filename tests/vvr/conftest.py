"""Shared fixtures for the VVR tests."""
from __future__ import annotations

import pytest

from visalign.vvr.benchmark import generate_split


@pytest.fixture(scope="session")
def bench_subset():
    """A fixed-seed subset of VVRBench: 300 tasks spread over all types and levels (every 33rd task)."""
    from visalign.vvr.benchmark import split_task

    return [split_task("bench", i) for i in range(0, 9900, 33)]


@pytest.fixture(scope="session")
def bench20():
    return generate_split("bench", 20)
