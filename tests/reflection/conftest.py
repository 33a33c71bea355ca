"""Fixtures for the reflection tests: single-threaded torch and tiny models."""
import pytest
import torch


@pytest.fixture(autouse=True)
def single_thread():
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)
