"""Token losses: aggregation, KL estimators, PPO clipping, distillation KLs and the hybrid normalisation."""
import math

import pytest
import torch

from visalign.text.losses import (
    aggregate,
    distillation_loss,
    forward_kl,
    hybrid_loss,
    kl_penalty,
    ppo_clip_loss,
    reverse_kl,
)

VALUES = torch.tensor([[1.0, 2.0, 3.0], [4.0, 9.0, 9.0]])
MASK = torch.tensor([[1, 1, 1], [1, 0, 0]])


def test_aggregation_modes():
    assert math.isclose(float(aggregate(VALUES, MASK, "token")), 10 / 4)
    assert math.isclose(float(aggregate(VALUES, MASK, "sequence")), (2 + 4) / 2)
    assert math.isclose(float(aggregate(VALUES, MASK, "constant")), 10 / 6, rel_tol=1e-6)
    assert math.isclose(float(aggregate(VALUES, MASK, "constant", max_len=5)), 1.0, rel_tol=1e-6)
    with pytest.raises(ValueError, match="aggregation"):
        aggregate(VALUES, MASK, "nope")


def test_kl_estimators_pointwise_and_in_expectation():
    logp, ref = torch.tensor(math.log(0.5)), torch.tensor(math.log(0.25))
    assert math.isclose(float(kl_penalty(logp, ref, "k1")), math.log(2), rel_tol=1e-6)
    assert math.isclose(float(kl_penalty(logp, ref, "k3")), 0.5 + math.log(2) - 1, rel_tol=1e-6)
    p = torch.tensor([0.5, 0.3, 0.2])
    q = torch.tensor([0.2, 0.2, 0.6])
    true_kl = float((p * (p / q).log()).sum())
    for est in ("k1", "k3"):
        expectation = float((p * kl_penalty(p.log(), q.log(), est)).sum())
        assert math.isclose(expectation, true_kl, rel_tol=1e-5)


def test_ppo_clip_values_and_gradients():
    old = torch.zeros(1, 4)
    logp = torch.tensor([[0.0, math.log(1.5), math.log(1.5), math.log(0.5)]], requires_grad=True)
    adv = torch.tensor([[1.0, 1.0, -1.0, -1.0]])
    loss, metrics = ppo_clip_loss(logp, old, adv, torch.ones(1, 4), clip_eps=0.2)
    # per-token: -1 ; -min(1.5, 1.2) ; -min(-1.5, -1.2) ; -min(-0.5, -0.8)
    assert math.isclose(float(loss.detach()), (-1 - 1.2 + 1.5 + 0.8) / 4, rel_tol=1e-6)
    loss.backward()
    # clipped tokens (index 1: A>0 ratio>1+eps; index 3: A<0 ratio<1-eps) get no gradient
    g = logp.grad[0]
    assert g[1] == 0 and g[3] == 0 and math.isclose(float(g[0]), -0.25) and math.isclose(float(g[2]), 1.5 / 4, rel_tol=1e-6)
    assert math.isclose(metrics["clip_frac"], 0.5)


def test_ppo_sequence_advantages_and_kl_term():
    logp = torch.zeros(2, 2)
    ref = torch.full((2, 2), math.log(0.5))
    loss, m = ppo_clip_loss(logp, logp, torch.tensor([1.0, -1.0]), torch.ones(2, 2), ref_logp=ref, kl_coef=0.1, kl_estimator="k1")
    # surrogate averages to 0, k1 = logp - ref = log 2
    assert math.isclose(float(loss), 0.1 * math.log(2), rel_tol=1e-6)
    assert math.isclose(m["kl"], math.log(2), rel_tol=1e-6)
    with pytest.raises(ValueError, match="ref_logp"):
        ppo_clip_loss(logp, logp, torch.ones(2), torch.ones(2, 2), kl_coef=0.1)


def test_reverse_and_forward_kl_closed_form_bernoulli():
    p, q = 0.3, 0.8
    s = torch.tensor([[math.log(p), math.log(1 - p)]])
    t = torch.tensor([[math.log(q), math.log(1 - q)]])
    kl_pq = p * math.log(p / q) + (1 - p) * math.log((1 - p) / (1 - q))
    kl_qp = q * math.log(q / p) + (1 - q) * math.log((1 - q) / (1 - p))
    assert math.isclose(float(reverse_kl(s, t)), kl_pq, rel_tol=1e-6)
    assert math.isclose(float(forward_kl(s, t)), kl_qp, rel_tol=1e-6)


def test_distillation_loss_zero_at_teacher_and_gradient_direction():
    teacher = torch.tensor([[[2.0, 0.0, -1.0]]])
    loss, _ = distillation_loss(teacher.clone(), teacher, torch.ones(1, 1), "reverse")
    assert abs(float(loss)) < 1e-7
    student = torch.zeros(1, 1, 3, requires_grad=True)
    for kind in ("reverse", "forward"):
        loss, metrics = distillation_loss(student, teacher, torch.ones(1, 1), kind)
        (g,) = torch.autograd.grad(loss, student)
        # descending the gradient moves the student's logits towards the teacher's preferred token
        assert g[0, 0, 0] < 0 and g[0, 0, 2] > 0 and metrics[f"{kind}_kl"] > 0
    # forward-KL gradient w.r.t. logits is p_s - p_t
    loss, _ = distillation_loss(student, teacher, torch.ones(1, 1), "forward")
    (g,) = torch.autograd.grad(loss, student)
    assert torch.allclose(g[0, 0], torch.softmax(student[0, 0], -1) - torch.softmax(teacher[0, 0], -1), atol=1e-6)
    with pytest.raises(ValueError, match="vocabulary"):
        distillation_loss(torch.zeros(1, 1, 4), teacher, torch.ones(1, 1))


def test_hybrid_loss_equalises_gradient_norms():
    w = torch.zeros(2, requires_grad=True)
    a = torch.tensor([3.0, 0.0])  # ||grad L_R|| = 3
    c = torch.tensor([0.0, 12.0])  # ||grad L_D|| = 12
    loss, m = hybrid_loss(w @ a, w @ c, [w], distill_weight=1.0)
    assert math.isclose(m["grad_norm_ratio"], 0.25, rel_tol=1e-6)
    (g,) = torch.autograd.grad(loss, w)
    assert torch.allclose(g, torch.tensor([3.0, 3.0]))
