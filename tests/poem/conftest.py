"""PoEM tests run on one thread: their models are tiny, and on shared cores a second thread only adds contention."""
import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
