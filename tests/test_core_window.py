"""tsallis.core.window: one implementation for NumPy and Torch, dense and sparse alike.

The 1D window moments and the 2D radial moments are written once against an
array namespace. These tests pin what that promises: NumPy arrays and Torch
tensors give the same numbers; the dense form (every branch on every element,
what accelerators and torch.compile run) gives the numbers of the sparse form
(each branch on its own elements, eager CPU); and the Torch op runs on meta
tensors (no host read) with validate=False. Accuracy against mpmath is
tested through the public ops (test_attention, test_torch_attention).
"""

from __future__ import annotations

import numpy as np
import pytest

from tsallis.core import window

torch = pytest.importorskip("torch")

ALPHAS = [1.01, 1.2, 1.25, 4 / 3, 1.5, 2.0, 3.0, 5.0]
ROW = 12


def _inputs(seed: int = 0, rows: int = 40) -> tuple[np.ndarray, ...]:
    """Edge distances and widths over every regime: narrow and wide RBFs (r from
    1e-4 to 10), centres inside, at the edges and up to 20 widths outside."""
    rng = np.random.default_rng(seed)
    r = 10.0 ** rng.uniform(-4, 1, (rows, ROW))
    c = rng.uniform(-1, 1, (rows, ROW)) * (1 + 20 * r * rng.uniform(0, 1, (rows, ROW)) ** 3)
    c[:, 0] = 0.0  # a centred RBF in every row (its m1 must be exactly 0)
    return (1 - c).ravel(), (1 + c).ravel(), r.ravel()


def _row_error(got: np.ndarray, ref: np.ndarray) -> float:
    got, ref = got.reshape(-1, ROW), ref.reshape(-1, ROW)
    scale = np.abs(ref).max(-1, keepdims=True)
    return float((np.abs(got - ref) / np.where(scale > 0, scale, 1)).max())


@pytest.mark.parametrize("alpha", ALPHAS)
def test_numpy_and_torch_run_the_same_code(alpha):
    """Same inputs as NumPy arrays and as Torch tensors: equal to rounding (the two
    libraries' exp/erfc differ by an ulp), 1e-14 row-relative."""
    ep, em, r = _inputs()
    numpy_out = window.window_moments(alpha, ep, em, r, row=ROW, dense=False)
    torch_out = window.window_moments(
        alpha, *map(torch.from_numpy, (ep, em, r)), row=ROW, dense=False
    )
    for key in ("rho", "m1", "m2c"):
        assert isinstance(numpy_out[key], np.ndarray)
        assert torch_out[key].dtype == torch.float64
        assert _row_error(torch_out[key].numpy(), numpy_out[key]) <= 1e-14, key
    centred = ep.reshape(-1, ROW)[:, 0] == em.reshape(-1, ROW)[:, 0]
    assert centred.all() and (numpy_out["m1"].reshape(-1, ROW)[:, 0] == 0).all()


@pytest.mark.parametrize("alpha", ALPHAS)
def test_dense_form_matches_sparse_form(alpha):
    """dense=True (no host reads: GPU, torch.compile) against dense=False (eager CPU).
    They differ only where the sparse form takes the 32-node shared rule for rows
    of wide RBFs (measured as accurate as 64 nodes): 1e-13 row-relative."""
    ep, em, r = map(torch.from_numpy, _inputs(seed=1))
    sparse = window.window_moments(alpha, ep, em, r, row=ROW, dense=False)
    dense = window.window_moments(alpha, ep, em, r, row=ROW, dense=True)
    for key in ("rho", "m1", "m2c"):
        assert torch.isfinite(dense[key]).all()
        assert _row_error(dense[key].numpy(), sparse[key].numpy()) <= 1e-13, key


def test_radial_moments_dense_and_numpy():
    """2D radial moments: NumPy, Torch sparse and Torch dense agree (1e-14)."""
    rng = np.random.default_rng(2)
    r = 10.0 ** rng.uniform(-3, 1, 300)
    c = rng.uniform(-3, 4, 300)
    args = (c, 1 - c, r)
    ref = window.radial_moments(*args, dense=False)
    for dense in (False, True):
        got = window.radial_moments(*map(torch.from_numpy, args), dense=dense)
        for key in ("p1", "p2", "p3"):
            scale = np.abs(ref[key]).max()
            assert np.abs(got[key].numpy() - ref[key]).max() <= 1e-14 * scale, (dense, key)


@pytest.mark.parametrize("alpha", [1.0, 1.2, 2.0, 1.5, 5.0])
def test_torch_op_runs_on_meta_tensors(alpha):
    """With validate=False the 1D op's forward and backward need no host read: they
    run on meta tensors (shapes only), every parameter trainable."""
    from torch_bridge import GaussianRBF, continuous_attention

    basis = GaussianRBF(torch.linspace(0, 1, 8), torch.full((8,), 0.05)).to("meta")
    basis.mu.requires_grad_(True)
    basis.sigma.requires_grad_(True)
    loc = torch.empty(16, device="meta", requires_grad=True)
    scale = torch.empty(16, device="meta", requires_grad=True)
    out = continuous_attention(loc, scale, basis, alpha, validate=False)
    assert out.shape == (16, 8) and out.device.type == "meta"
    out.sum().backward()
    assert loc.grad.shape == (16,) and scale.grad.shape == (16,)
    assert basis.mu.grad.shape == (8,) and basis.sigma.grad.shape == (8,)


def test_compile_first_float32_takes_both_branches():
    """torch.compile(fullgraph=True) before any eager call (empty table cache: the
    tables are built at trace time), float32, alpha = 2. One compiled graph takes
    torch.cond's closed-form branch (every RBF narrow) and its general branch
    (sigma = 1e-3: RBFs 9 half-widths wide, past FLOAT32_CLOSED_MAX_R) and matches
    eager on both: rho within 1e-6 of the row's largest (a few float32 ulps: the same
    float32 closed form, or the same float64 moments rounded); gradients within 1e-5 of
    the largest (the compiled general branch runs its backward in float32 from
    float32-rounded moments, eager in float64)."""
    from torch_bridge import GaussianRBF, continuous_attention

    window._TABLES.clear()
    torch._dynamo.reset()
    basis = GaussianRBF(torch.linspace(0, 1, 8), torch.full((8,), 0.1))

    def f(loc, scale):
        return continuous_attention(loc, scale, basis, 2.0, validate=False)

    compiled = torch.compile(f, fullgraph=True)
    loc = torch.linspace(0.1, 0.9, 6)
    for sigma, closed in ((0.1, True), (1e-3, False)):
        scale = torch.full((6,), sigma)
        # The predicate torch.cond reads: each sigma must take the branch named.
        a = window.half_width(2.0, scale.double())[:, None]
        ep, em, r = window.support_units(a, basis.mu.double() - loc.double()[:, None], a)
        r = basis.sigma / a.float()
        assert bool(window.float32_closed_suffices(1, ep.float(), em.float(), r)) is closed
        results = []
        for op in (compiled, f):
            x, y = loc.clone().requires_grad_(), scale.clone().requires_grad_()
            out = op(x, y)
            grads = torch.autograd.grad((out * torch.arange(8.0)).sum(), (x, y))
            results.append((out.detach(), *grads))
        (out_c, *grads_c), (out_e, *grads_e) = results
        rows = (out_c - out_e).abs().amax(-1) / out_e.abs().amax(-1)
        assert float(rows.max()) <= 1e-6, sigma
        for got, want in zip(grads_c, grads_e, strict=True):
            assert float((got - want).abs().max()) <= 1e-5 * float(want.abs().max()), sigma
