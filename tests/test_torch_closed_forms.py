"""Generated Torch kernels: equal to NumPy in float64, accurate in float32,
broadcasting, gradcheck, finite gradients on the whole valid domain, devices."""

from __future__ import annotations

import inspect

import mpmath as mp
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch_bridge import closed_forms  # noqa: E402
from tsallis import groundtruth as gt  # noqa: E402
from tsallis._generated import beta_gaussian as numpy_bg  # noqa: E402

ALPHAS = [1.01, 1.25, 4 / 3, 1.5, 2.0, 2.5, 3.0, 5.0]
SIGMAS = [1e-6, 1e-3, 1.0, 1e3]
EPS32 = float(torch.finfo(torch.float32).eps)
F64 = torch.float64

# Argument values per symbol name, spanning the documented range.
VALUES = {
    "alpha": [1.01, 1.5, 3.0, 5.0],
    "scale": [1e-6, 1.0, 1e3],
    "loc": [0.3],
    "n": [1, 3, 5],
    "logdet": [-138.0, 0.0, 20.0],
    "u": [1e-3, 2.0],
    "beta": [0.0, 1.0, 1.5],
    "p": [0.0, 0.3],
    "q": [0.2],
    "v": [-1.0, 0.0, 0.5],
    "sharpness": [10.0, 1e3],
    # attention window moments: edge distances, RBF width/centre in support units
    "ep": [0.3, 1.0, 1.9],
    "em": [1.7, 1.0, 0.1],
    "r": [0.05, 0.2, 0.15],
    "c": [0.3, -0.2, 1.1],
    "omc": [0.7, 1.2, -0.1],
    "delta": [0.0, 0.5, -1.0],
    "s": [1e-3, 0.1, 1.0],
    # discrete maps: support statistics, scores shifted to max 0, eq 10 and eq 6 inputs
    "first": [-0.5, 0.0, -1.0],  # the support's sum and sum of squares: the 3/2
    "second": [0.25, 0.1, 2.0],  # root's radicand takes both signs (4.75, -1, 2.5)
    "size": [1, 2, 5],
    "z": [0.0, -0.3, -2.0],
    "tau": [-1.0, -0.5, -0.1],
    "eps": [1e-6, 0.5],
    "w_plus": [0.0, 0.5, 30.0],
    "w_minus": [0.0, 2.0, 1e-3],
    "others": [0.0, 0.3, 1.0],
    "base": [-0.5, 0.0, 1.5e-22, 0.7],  # alpha-entmax's (alpha - 1)(z - tau)
    "edge": [1e-3, 0.3, 1.0],  # the anchored finish's q (> 0) and an entry's gap (>= 0)
    "gap": [0.0, 0.5, 2.0],
    # a Newton step's row sums of p, s, t and u (positive, t and u may be 0 past the edge)
    "total": [1.0, 0.5, 3.0],
    "slope": [1.0, 2.0, 0.3],
    "bent": [1.0, 5.0, 0.0],
    "fourth": [1.0, 10.0, 0.0],
    # beta-Gaussian log density from its per-distribution terms
    "log_ac": [-3.0, 0.0, 2.0],
    "log_mode": [-5.0, 0.0, 3.0],
    "inv_radius2": [0.5, 1.0, 2.0],
    "k": [100.0, 2.0, 0.25],
    # erfcx's polynomial argument t = 3 / (3 + y) in (0, 1]
    "t": [1e-3, 0.5, 1.0],
}
# Kernels whose documented domain is narrower than the table above.
DOMAIN = {"smoothed_exp_beta": {"beta": [0.0, 0.5]}, "log_exp_beta": {"beta": [0.0, 0.5, 1.0]}}


def _tensor(out):
    """A kernel's result as one tensor (tuple kernels return several values)."""
    return torch.stack(torch.broadcast_tensors(*out)) if isinstance(out, tuple) else out


def _kernels():
    for family in closed_forms.__all__:
        module = getattr(closed_forms, family)
        for name in module.__all__:
            yield family, name, getattr(module, name)


def _points(function, family: str):
    """A few argument tuples; x and d2 are placed inside and outside the support."""
    names = list(inspect.signature(function).parameters)
    values = {**VALUES, **DOMAIN.get(function.__name__, {})}
    base = {k: values[k][i % len(values[k])] for i, k in enumerate(names) if k in values}
    out = []
    for i in range(3):
        args = {k: values[k][(i + j) % len(values[k])] for j, k in enumerate(names) if k in values}
        args = {**base, **args}
        if "x" in names:
            args["x"] = args.get("loc", 0.3) + [0.0, 0.5, 50.0][i] * args.get("scale", 1.0)
        if "d2" in names:
            args["d2"] = [0.0, 0.1, 1e9][i]
        if "e" in names:
            args["e"] = 0.2
        out.append([args[k] for k in names])
    return names, out


@pytest.mark.parametrize(
    ("family", "name", "function"), list(_kernels()), ids=lambda v: v if isinstance(v, str) else ""
)
def test_float64_matches_numpy(family, name, function):
    numpy_function = getattr(
        getattr(__import__("tsallis._generated", fromlist=[family]), family), name
    )
    _, points = _points(function, family)
    for args in points:
        expected = np.asarray(numpy_function(*args), dtype=float)
        got = _tensor(function(*(torch.tensor(a, dtype=F64) for a in args))).numpy()
        # lgamma/expm1 differ by ulps between torch and scipy; log-space sums of terms
        # up to |logdet| = 138 turn that into ~138 * few eps = 2e-13 relative.
        np.testing.assert_allclose(got, expected, rtol=2e-13, atol=0)


def test_float32_accuracy_over_the_grid():
    """float32 against float64: log-space sums of terms up to ~150 (|logdet| = 138 at
    sigma = 1e-6, N = 5) cost ~150 eps32 = 2e-5 relative; logpdf = k log u costs (k+1) x that."""
    bg = closed_forms.beta_gaussian
    f32 = lambda v: torch.tensor(v, dtype=torch.float32)  # noqa: E731
    for alpha in ALPHAS:
        k = 1 / (alpha - 1)
        for sigma in SIGMAS:
            for name in ("threshold_1d", "half_width_1d", "variance_1d", "tsallis_entropy_1d"):
                ref = getattr(numpy_bg, name)(alpha, sigma)
                got = float(getattr(bg, name)(f32(alpha), f32(sigma)))
                assert abs(got / ref - 1) < 4e-5, (name, alpha, sigma)
            for n in (1, 2, 3, 5):
                logdet = 2 * n * np.log(sigma)
                for name in ("threshold", "radius", "cov_scale", "tsallis_entropy"):
                    ref = getattr(numpy_bg, name)(alpha, n, logdet)
                    got = float(getattr(bg, name)(f32(alpha), n, f32(logdet)))
                    assert abs(got / ref - 1) < 4e-5, (name, alpha, sigma, n)
            width = numpy_bg.half_width_1d(alpha, sigma)
            x = np.float32(0.3 + 0.5 * width)
            ref = numpy_bg.logpdf_1d(
                float(x), alpha, float(np.float32(0.3)), float(np.float32(sigma))
            )
            got = float(bg.logpdf_1d(f32(x), f32(alpha), f32(0.3), f32(sigma)))
            assert abs(got - ref) < 1e-5 * (k + 1), (alpha, sigma)
            assert bg.threshold_1d(f32(alpha), f32(sigma)).dtype == torch.float32


def test_broadcasting_over_batch_dimensions():
    bg = closed_forms.beta_gaussian
    x = torch.linspace(-1, 1, 7, dtype=F64).reshape(7, 1, 1)
    alpha = torch.tensor([1.5, 2.0, 3.0], dtype=F64).reshape(1, 3, 1)
    scale = torch.tensor([0.5, 2.0], dtype=F64).reshape(1, 1, 2)
    out = bg.logpdf_1d(x, alpha, 0.0, scale)
    assert out.shape == (7, 3, 2)
    np.testing.assert_allclose(
        out[3, 1, 0].item(), numpy_bg.logpdf_1d(0.0, 2.0, 0.0, 0.5), rtol=1e-15
    )
    big = torch.randn(100_000, dtype=torch.float32)
    values = closed_forms.truncated_parabola.pdf(big, 0.0, 1.0)
    assert values.shape == (100_000,) and torch.isfinite(values).all()
    assert closed_forms.beta_gaussian.pdf_1d(torch.tensor(0.1), 2.0, 0.0, 1.0).shape == ()


def _differentiable(function):
    names = list(inspect.signature(function).parameters)
    return names, [i for i, n in enumerate(names) if n not in ("n",)]


@pytest.mark.parametrize(
    ("family", "name", "function"), list(_kernels()), ids=lambda v: v if isinstance(v, str) else ""
)
def test_gradcheck_inside_the_domain(family, name, function):
    names, diff = _differentiable(function)
    interior = {
        "x": 0.31,
        "loc": 0.3,
        "scale": 0.7,
        "alpha": 1.7,
        "n": 3,
        "logdet": 0.4,
        "d2": 0.2,
        "u": 0.8,
        "beta": 0.7,
        "p": 0.4,
        "q": 0.3,
        "v": 0.3,
        "sharpness": 5.0,
        "e": 0.2,
        "ep": 0.6,
        "em": 1.4,
        "r": 0.2,
        "c": 0.3,
        "omc": 0.7,
        "delta": 0.2,
        "s": 0.3,
        "first": -0.4,
        "second": 0.1,
        "size": 3.0,
        "z": -0.1,
        "tau": -0.4,
        "eps": 0.01,
        "w_plus": 0.3,
        "w_minus": 0.2,
        "others": 0.4,
        "base": 0.6,
        "edge": 0.2,
        "gap": 0.3,
        "total": 1.2,
        "slope": 2.0,
        "bent": 3.0,
        "fourth": 5.0,
        "log_ac": 0.3,
        "log_mode": -1.0,
        "inv_radius2": 1.5,
        "k": 1.4,
        "t": 0.6,
    }
    args = [
        torch.tensor(float(interior[k]), dtype=F64, requires_grad=i in diff)
        for i, k in enumerate(names)
    ]
    assert torch.autograd.gradcheck(lambda *a: function(*a), args, eps=1e-7, atol=1e-8, rtol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_gradients_finite_on_the_whole_valid_domain(dtype):
    """Outside the support, at the edges and at the extremes: no NaN or inf gradients."""
    for family, name, function in _kernels():
        names, points = _points(function, family)
        for args in points:
            tensors = [
                torch.tensor(a, dtype=dtype, requires_grad=(k != "n"))
                for k, a in zip(names, args, strict=True)
            ]
            out = _tensor(function(*tensors))
            finite = torch.isfinite(out)
            if not finite.all():  # -inf logpdf outside the support: gradient must still be finite
                assert name.startswith(("logpdf", "log_exp")) or name == "exp_beta", (
                    family,
                    name,
                    args,
                )
            out.sum().backward() if finite.all() else out.masked_fill(~finite, 0).sum().backward()
            for k, t in zip(names, tensors, strict=True):
                if t.grad is not None:
                    assert torch.isfinite(t.grad).all(), (family, name, k, args)


def test_threshold_gradient_matches_mpmath_finite_differences():
    """d tau / d alpha and d tau / d sigma from autograd vs mpmath differentiation of the
    ground-truth root of int p = 1 (no closed form involved)."""
    alpha0, sigma0 = 1.5, 0.7
    alpha = torch.tensor(alpha0, dtype=F64, requires_grad=True)
    sigma = torch.tensor(sigma0, dtype=F64, requires_grad=True)
    closed_forms.beta_gaussian.threshold_1d(alpha, sigma).backward()
    mp.mp.dps = 30

    def tau(a: mp.mpf, s: mp.mpf) -> mp.mpf:
        family = gt.Family(score=lambda r: -(r**2) / (2 * s**2), alpha=a, scale=s)
        return gt.threshold(family)

    d_alpha = mp.diff(lambda a: tau(a, mp.mpf(sigma0)), mp.mpf(alpha0), h=mp.mpf("1e-8"))
    d_sigma = mp.diff(lambda s: tau(mp.mpf(alpha0), s), mp.mpf(sigma0), h=mp.mpf("1e-8"))
    assert float(alpha.grad) == pytest.approx(float(d_alpha), rel=1e-9)
    assert float(sigma.grad) == pytest.approx(float(d_sigma), rel=1e-9)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_matches_cpu():
    bg = closed_forms.beta_gaussian
    x = torch.linspace(-2, 2, 1001, dtype=F64)
    for device_x in (x.cuda(),):
        got = bg.logpdf_1d(device_x, torch.tensor(1.5, device="cuda", dtype=F64), 0.0, 1.0)
        assert got.device.type == "cuda"
        np.testing.assert_allclose(
            got.cpu().numpy(), bg.logpdf_1d(x, 1.5, 0.0, 1.0).numpy(), rtol=1e-13
        )


def test_attention_window_moments_float32():
    """Torch float32 window moments (closed-form regime r <= 1/5, centre at most one RBF
    width outside the support) against NumPy float64, max-relative over the centre c:
    within the issue-3 float32 bounds, 1e-6 for the rho moments (j = 0) and 1e-5 for J."""
    from tsallis.core._generated import attention as numpy_attention

    for r in (0.2, 0.1, 0.03, 0.01, 1e-3):
        c = np.linspace(-1 - r, 1 + r, 201)
        args32 = [np.asarray(v, dtype=np.float32) for v in (1 - c, 1 + c, np.full_like(c, r))]
        for name in numpy_attention.__all__:
            if not name.startswith("window_m") or name.startswith("window_moments"):
                continue  # single moments only; the tuple kernels run in float64 (torch ops)
            ref = getattr(numpy_attention, name)(*(a.astype(np.float64) for a in args32))
            got = getattr(closed_forms.attention, name)(*map(torch.from_numpy, args32))
            assert got.dtype == torch.float32
            error = np.abs(got.numpy() - ref).max() / np.abs(ref).max()
            assert error < (1e-6 if name.endswith("j0") else 1e-5), (name, r, error)
