"""Numerics at the edges of the valid input (hardening issue, item 2).

Each case once returned NaN; each now has a finite, correct answer, checked
against an independent value (a limit typed here, or mpmath).
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

import tsallis

torch = pytest.importorskip("torch")

BETAS = [-2.0, -0.5, 0.0, 0.3, 0.5, 0.999, 1.0, 1.001, 1.5, 3.0]


def _limit_at_zero(beta: float) -> float:
    """lim_{u -> 0+} (u^(1-beta) - 1) / (1 - beta): typed here as the oracle."""
    return -1 / (1 - beta) if beta < 1 else -math.inf


def test_log_beta_at_zero_numpy():
    got = tsallis.log_beta(0.0, BETAS)
    assert np.array_equal(got, [_limit_at_zero(b) for b in BETAS])
    # continuous from the right: u = 1e-300 is within 1e-12 of the limit where finite
    near = tsallis.log_beta(1e-300, [b for b in BETAS if b < 0.9])
    limit = [_limit_at_zero(b) for b in BETAS if b < 0.9]
    assert np.allclose(near, limit, rtol=1e-12, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_log_beta_at_zero_torch_values_and_gradients(dtype):
    from torch_bridge import closed_forms

    u = torch.zeros(len(BETAS), dtype=dtype, requires_grad=True)
    beta = torch.tensor(BETAS, dtype=dtype, requires_grad=True)
    value = closed_forms.deformed.log_beta(u, beta)
    expected = -1 / (1 - beta.detach())  # in the dtype: 0.999 is not exact in float32
    expected = torch.where(beta.detach() < 1, expected, -math.inf)
    assert torch.equal(value, expected)
    value.backward(torch.ones_like(value))
    # d/dbeta of the limit: -1/(1 - beta)^2 below 1, 0 where the value is -inf; d/du := 0
    b = beta.detach().double()  # the dtype's beta, e.g. 0.999 rounded to float32
    grad_beta = torch.where(b < 1, -1 / (1 - b) ** 2, 0.0).to(dtype)
    assert torch.allclose(beta.grad, grad_beta, rtol=1e-6, atol=0)
    assert torch.equal(u.grad, torch.zeros_like(u))


def test_log_beta_positive_u_unchanged_against_mpmath():
    """The u > 0 branch is the smooth form log(u) exprel((1 - beta) log u).

    It forms u^(1-beta) as exp((1 - beta) log u), so the rounding of log u is
    amplified by |(1 - beta) log u| (460 at u = 1e-200, beta = 2): the bound is
    4 eps max(1, |(1 - beta) log u|) relative to 30-digit mpmath.
    """
    eps = np.finfo(np.float64).eps
    for u in (1e-200, 1e-8, 0.3, 1.0, 7.5, 1e100):
        for beta in (-1.0, 0.5, 1.0, 1 + 1e-9, 2.0):
            with mp.workdps(30):
                exact = mp.log(u) if beta == 1 else (mp.mpf(u) ** (1 - beta) - 1) / (1 - beta)
            got = float(tsallis.log_beta(u, beta))
            bound = 4 * eps * max(1.0, abs((1 - beta) * math.log(u)))
            assert abs(got - float(exact)) <= bound * abs(float(exact)) + 1e-300, (u, beta)


# --- ev-softmax with finite logits whose differences overflow ---


def _ev_oracle(row: list[float], eps: float) -> tuple[list[float], list[float]]:
    """(p, log p) of eq 10 at 40 digits: p_k proportional to (1{x_k >= mean} + eps) e^{x_k}."""
    with mp.workdps(40):
        x = [mp.mpf(v) for v in row]
        mean = sum(x) / len(x)
        top = max(x)
        weights = [(1 if v >= min(mean, top) else 0) + mp.mpf(eps) for v in x]
        logs = [mp.log(w) + v - top if w > 0 else -mp.inf for w, v in zip(weights, x, strict=True)]
        total = mp.log(sum(mp.exp(v) for v in logs))
        return [float(mp.exp(v - total)) for v in logs], [float(v - total) for v in logs]


EXTREME_ROWS = [
    [3.0, -3.0, 0.0, 1.0],
    [3.0, -3.0, -3.0],
    [3.0, 3.0, -3.0],
    [-3.0, -3.0, 0.0],
    [1.0, -1.0, 0.5, -0.5, 1.0],
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("eps", [0.0, 1e-3])
def test_ev_softmax_extreme_finite_logits(dtype, eps):
    from torch_bridge import ev_softmax, ev_softmax_nll_loss, log_ev_softmax

    big = torch.finfo(dtype).max * 0.9  # 3e38 in float32 / bfloat16, 1.6e308 in float64
    for pattern in EXTREME_ROWS:
        x = (torch.tensor(pattern, dtype=torch.float64) * (big / 3)).to(dtype)
        x.requires_grad_(True)
        p = ev_softmax(x[None], eps=eps)[0]
        expected_p, expected_log = _ev_oracle(x.detach().double().tolist(), eps)
        assert torch.isfinite(p).all()
        tol = {torch.float32: 1e-6, torch.float64: 1e-14, torch.bfloat16: 1e-2}[dtype]
        assert torch.allclose(
            p.double(), torch.tensor(expected_p, dtype=torch.float64), rtol=0, atol=tol
        )
        (p * torch.arange(len(pattern), dtype=dtype)).sum().backward()
        assert torch.isfinite(x.grad).all()
        if eps > 0:
            x.grad = None
            log_p = log_ev_softmax(x[None], eps=eps)[0]
            assert not torch.isnan(log_p).any()
            limit = -torch.finfo(dtype).max  # below the dtype's range: -inf, as log_softmax
            for got, want in zip(log_p.double().tolist(), expected_log, strict=True):
                if want < limit:
                    assert got == -math.inf
                else:
                    assert abs(got - want) <= tol * max(1.0, abs(want)), (got, want)
            log_p.clamp(min=-1e30).sum().backward()
            assert torch.isfinite(x.grad).all()
            top = int(torch.argmax(x.detach()))
            loss = ev_softmax_nll_loss(x[None], torch.tensor([top]), eps=eps)
            assert torch.isfinite(loss) and abs(loss.item() + expected_log[top]) <= tol


def test_ev_softmax_nll_loss_rejects_bad_targets():
    from torch_bridge import ev_softmax_nll_loss

    logits = torch.randn(2, 3)
    with pytest.raises(ValueError, match=r"target must lie in \[0, 3\).*got 5"):
        ev_softmax_nll_loss(logits, torch.tensor([0, 5]))
    with pytest.raises(ValueError, match=r"got -2"):
        ev_softmax_nll_loss(logits, torch.tensor([0, -2]))
    with pytest.raises(TypeError, match="integer class indices"):
        ev_softmax_nll_loss(logits, torch.tensor([0.0, 1.0]))
    with pytest.raises(TypeError, match="target must be a tensor"):
        ev_softmax_nll_loss(logits, [0, 1])
    with pytest.raises(ValueError, match=r"target must have shape \(2,\)"):
        ev_softmax_nll_loss(logits, torch.tensor([0, 1, 2]))
    # ignore_index entries may hold any value
    loss = ev_softmax_nll_loss(logits, torch.tensor([0, -100]), reduction="none")
    assert loss.shape == (2,) and loss[1] == 0
