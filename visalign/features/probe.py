"""How informative frozen features are: held-out accuracy of a linear probe and of k-nearest neighbours."""
from __future__ import annotations

import torch
import torch.nn.functional as F


def _standardise(train: torch.Tensor, test: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    mean, std = train.mean(0), train.std(0).clamp_min(1e-6)
    return (train - mean) / std, (test - mean) / std


def _check(train_x: torch.Tensor, train_y: torch.Tensor, test_x: torch.Tensor, test_y: torch.Tensor) -> None:
    if train_x.shape[0] != train_y.shape[0] or test_x.shape[0] != test_y.shape[0] or train_x.shape[1:] != test_x.shape[1:]:
        raise ValueError(f"probe shapes disagree: train {tuple(train_x.shape)} / {tuple(train_y.shape)}, "
                         f"test {tuple(test_x.shape)} / {tuple(test_y.shape)}")


def linear_probe_accuracy(train_x: torch.Tensor, train_y: torch.Tensor, test_x: torch.Tensor, test_y: torch.Tensor,
                          weight_decay: float = 1e-3, iters: int = 200) -> float:
    """Multinomial logistic regression on standardised features (full-batch L-BFGS, L2 ``weight_decay``); test accuracy."""
    _check(train_x, train_y, test_x, test_y)
    x, xt = _standardise(train_x.double().flatten(1), test_x.double().flatten(1))
    classes = int(max(train_y.max(), test_y.max())) + 1
    w = torch.zeros(x.shape[1], classes, dtype=torch.float64, requires_grad=True)
    b = torch.zeros(classes, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], max_iter=iters, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = F.cross_entropy(x @ w + b, train_y) + weight_decay * w.pow(2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    with torch.no_grad():
        return float(((xt @ w + b).argmax(1) == test_y).double().mean())


def knn_accuracy(train_x: torch.Tensor, train_y: torch.Tensor, test_x: torch.Tensor, test_y: torch.Tensor, k: int = 10) -> float:
    """Majority vote of the ``k`` nearest training points (cosine similarity of standardised features)."""
    _check(train_x, train_y, test_x, test_y)
    x, xt = _standardise(train_x.double().flatten(1), test_x.double().flatten(1))
    sim = F.normalize(xt, dim=1) @ F.normalize(x, dim=1).T
    votes = train_y[sim.topk(min(k, x.shape[0]), dim=1).indices]
    classes = int(max(train_y.max(), test_y.max())) + 1
    counts = F.one_hot(votes, classes).sum(1)
    return float((counts.argmax(1) == test_y).double().mean())
