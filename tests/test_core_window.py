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

import math

import numpy as np
import pytest

from tsallis.core import arrays as _xs
from tsallis.core import tuning, window

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


@pytest.mark.parametrize("alpha", [1.0001, 1.01, 1.05, 1.2, 1.7, 3.0, 5.0])
@pytest.mark.parametrize("dense", [False, True])
def test_float32_tier_within_float32_bars(alpha, dense):
    """tuning.FLOAT32 (fewer nodes, shallower windows; what float32 results use) against
    FLOAT64: every moment within 1e-6 of its row's largest, the float32 bar for rho
    (J's is 1e-5). Measured worst: 4e-8."""
    for seed in (1, 2, 3):
        ep, em, r = _inputs(seed, rows=60)
        ref = window.window_moments(alpha, ep, em, r, row=ROW, dense=False)
        got = window.window_moments(alpha, ep, em, r, row=ROW, dense=dense, accuracy=tuning.FLOAT32)
        for key in ("rho", "m1", "m2c"):
            assert _row_error(got[key], ref[key]) <= 1e-6, (seed, key)


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
    the largest (both run the backward in float32 from float32-rounded moments; the
    moments themselves may differ by an ulp of float64 summation order)."""
    from torch_bridge import GaussianRBF, continuous_attention

    for cache in (_xs._TABLES, _xs._BY_TYPE, _xs._FAST_TENSOR):  # as in a fresh process
        cache.clear()
    torch._dynamo.reset()
    basis = GaussianRBF(torch.linspace(0, 1, 8), torch.full((8,), 0.1))

    def f(loc, scale):
        return continuous_attention(loc, scale, basis, 2.0, validate=False)

    compiled = torch.compile(f, fullgraph=True)
    loc = torch.linspace(0.1, 0.9, 6)
    for sigma, closed in ((0.1, True), (1e-3, False)):
        scale = torch.full((6,), sigma)
        # The predicate torch.cond reads: each sigma must take the branch named.
        a = window.half_width(2.0, scale.double())
        mu, s = basis.mu.double(), basis.sigma.double()
        assert bool(window.float32_closed_suffices(1, a, loc.double(), mu, s)) is closed
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


@pytest.mark.parametrize(
    ("alpha", "count", "outside", "inside"),
    [(1.25, 1, 1.8, False), (1.5, 16, 1.9, False), (1.25, 4, -1.5, True), (2.0, 8, -1.2, True)],
)
def test_float32_rows_anchored_inside_their_support(alpha, count, outside, inside):
    """float32 rows whose RBFs all sit near or past the support's edge: the float32
    closed form cancels there (a row of one RBF 1.8 widths outside was 8.2e-5 off,
    row-relative, at alpha = 5/4; sixteen 1.9 widths outside 1.1e-5 at 3/2), so such
    calls take the float64 moments; a row with a centre a width or more inside keeps the
    float32 closed form. Either way rho is within 1e-6 of the row's largest against
    float64 from the same float32 inputs (RBFs 0.08 half-widths wide, the nearest centre
    ``outside`` widths past the edge, the others up to 0.5 widths farther; three rows
    0.05 widths apart)."""
    torch = pytest.importorskip("torch")
    from torch_bridge import GaussianRBF, continuous_attention

    scale = torch.full((3,), 1.5, dtype=torch.float64)
    a = window.half_width(alpha, scale)
    width = 0.08 * float(a[0])
    loc = torch.tensor([0.0, 0.05, -0.05], dtype=torch.float64) * width
    far = outside + 0.5 * torch.arange(count, dtype=torch.float64) / max(count - 1, 1)
    mu = float(a[0]) + far * width  # past the right edges (0.05 widths apart)
    s = torch.full((count,), width, dtype=torch.float64)
    inputs = [t.float() for t in (loc, scale, mu, s)]
    k = round(1 / (alpha - 1))
    wide = [t.double() for t in inputs]
    low = continuous_attention(inputs[0], inputs[1], GaussianRBF(inputs[2], inputs[3]), alpha)
    high = continuous_attention(wide[0], wide[1], GaussianRBF(wide[2], wide[3]), alpha)
    rows = (low.double() - high).abs().amax(-1) / high.abs().amax(-1)
    assert float(rows.max()) <= 1e-6
    # the route: the float32 closed form exactly where a centre lies a width inside
    half = window.half_width(alpha, wide[1])
    assert bool(window.float32_closed_suffices(k, half, wide[0], wide[2], wide[3])) is inside


def _mp_moments(alpha: float, c: float, r: float, exact: bool = False) -> list[float]:
    """rho, m1, m2c of one RBF (support units) by mpmath at 50 digits, split at the
    support edges and every RBF width around the centre. m2c with the library's float
    E[u^2] under the escort, or with ``exact`` the exact 1 / (2m + 3): for RBFs much
    wider than the support m2c is O(1/r^2) of G(m, 0), so an ulp of E[u^2] is 6e-15 of
    m2c at r = 3 (alpha = 1.25), and the wide expansion's m2c is the exact one's."""
    import mpmath as mp

    with mp.workdps(50):
        m = 1 / (mp.mpf(alpha) - 1) - 1
        second = 1 / (2 * m + 3) if exact else mp.mpf(window.alpha_constants(alpha)["second"])
        cc, rr = mp.mpf(c), mp.mpf(r)
        cuts = {cc + k * rr for k in range(-16, 17) if -1 < cc + k * rr < 1}
        points = sorted({mp.mpf(-1), mp.mpf(1), *cuts})

        def escort(u):
            return (1 - u * u) ** m * mp.npdf(u, cc, rr)

        parts = (lambda u: 1 - u * u, lambda u: u, lambda u: u * u - second)
        return [float(mp.quad(lambda u, f=f: f(u) * escort(u), points)) for f in parts]


@pytest.mark.parametrize(
    "alpha",
    [
        1.01,
        1.7,
        pytest.param(1.2, marks=pytest.mark.slow),
        pytest.param(3.0, marks=pytest.mark.slow),
    ],
)
def test_interior_rbfs_against_mpmath(alpha):
    """RBFs inside the support within 1e-13 of mpmath, relative to the element's
    |rho| + |m1| + |m2c|, where the Gauss-Hermite regime takes them (at least 8 widths
    inside, m at most half that distance), else within the general-alpha bound 1e-12
    (alpha = 1.01, m = 99: the narrow ones take Gauss-Jacobi windows; measured 4.8e-13
    at c = 0.9, r = 0.01). The first case, alpha = 1.7 with a width-0.053 RBF at the
    centre, was 3e-10 off when a Gauss-Jacobi window joined to both edges (37 widths
    under 64 nodes) computed it."""
    cases = [(-0.0015970945310272988, 0.052931689885586226), (0.5, 0.02), (-0.3, 0.08)]
    cases += [(0.9, 0.01), (-0.97, 1e-3), (0.2, 1e-5)]
    c = np.array([case[0] for case in cases])
    r = np.array([case[1] for case in cases])
    got = window.window_moments(alpha, 1 - c, 1 + c, r, row=1, dense=False)
    for i, (ci, ri) in enumerate(cases):
        truth = _mp_moments(alpha, ci, ri)
        size = sum(abs(v) for v in truth)
        error = max(abs(got[k][i] - t) for k, t in zip(("rho", "m1", "m2c"), truth, strict=True))
        inside = min(1 - ci, 1 + ci) / ri
        hermite = inside >= 8 and (1 / (alpha - 1) - 1) <= inside / 2
        assert error <= (1e-13 if hermite else 1e-12) * size, (ci, ri, error / size)


@pytest.mark.parametrize("dense", [False, True])
@pytest.mark.parametrize(
    ("alpha", "widths"),
    [(2.0, (1.25, 1.5, 1.88, 2.0)), (1.25, (0.75, 1.0, 3.0)), (1.7, (0.75, 2.0))],
)
def test_wide_rbfs_against_mpmath(alpha, widths, dense):
    """RBFs about as wide as the support or wider, one row per width with centres from
    the middle to the wide criterion's reach (at alpha = 2 out to two widths beyond the
    edge, the closed form's near RBFs): every moment within 2e-15 of its row's largest
    (mpmath, exact E[u^2]; measured 9.6e-16 at most).

    At alpha = 2 these widths were the closed form's (r <= 2), whose m2c cancels by
    about r^4: 3.5e-13 of the row before tuning.CLOSED_WIDE_R handed them to the wide
    expansion. Elsewhere the wide expansion takes the RBFs in its reach, with 16 nodes
    (tuning.WIDE_NODES; 12 measured 6.7e-15, 10 1.5e-11)."""
    for r in widths:
        reach = (2 * r * r - 1) / 2  # the wide criterion's farthest centre
        far = 1 + 2 * r if alpha == 2.0 else reach  # the closed form's near ones
        c = np.array([0.0, 0.3, -0.9, 0.5 * reach, -reach, far, -far])
        rr = np.full(c.shape, r)
        got = window.window_moments(alpha, 1 - c, 1 + c, rr, row=c.shape[0], dense=dense)
        truth = np.array([_mp_moments(alpha, ci, r, exact=True) for ci in c]).T
        for key, want in zip(("rho", "m1", "m2c"), truth, strict=True):
            error = np.abs(np.asarray(got[key]) - want).max() / np.abs(want).max()
            assert error <= 2e-15, (r, key, error)


def test_far_rbfs_left_at_zero_only_when_negligible():
    """alpha = 1.2: an RBF 9 widths outside next to one inside is left at 0 (its true
    moments are below 1e-17 of the row's); alone in its row it is computed, by a
    Gauss-Jacobi window (within the general-alpha bound 1e-12 of mpmath, relative;
    measured 4.8e-13)."""
    c = np.array([0.1, 1 + 9 * 0.01])
    r = np.array([0.05, 0.01])
    shared = window.window_moments(1.2, 1 - c, 1 + c, r, row=2, dense=False)
    truth = _mp_moments(1.2, c[1], r[1])
    for key, value in zip(("rho", "m1", "m2c"), truth, strict=True):
        assert shared[key][1] == 0.0 and 0 < abs(value) <= 1e-17 * abs(shared[key][0]), key
    alone = window.window_moments(1.2, 1 - c[1:], 1 + c[1:], r[1:], row=1, dense=False)
    for key, value in zip(("rho", "m1", "m2c"), truth, strict=True):
        assert abs(alone[key][0] - value) <= 1e-12 * abs(value), key


@pytest.mark.parametrize("dim", [1, 3, 4, 6])
def test_mahalanobis2_on_both_backends(dim):
    """|L^-1 d|^2 by forward substitution (dim <= SMALL_SOLVE) or the backends' solvers,
    one factor or one per value, against d^T Sigma^-1 d with an explicit inverse (an
    independent oracle), Sigma with condition number up to 810: within 1e-12 relative."""
    rng = np.random.default_rng(dim)
    root = rng.normal(size=(dim, dim))
    sigma = root @ root.T + 1e-2 * np.eye(dim)
    low = np.linalg.cholesky(sigma)
    diff = rng.normal(size=(5, 4, dim))
    truth = np.einsum("...i,ij,...j->...", diff, np.linalg.inv(sigma), diff)
    many = np.broadcast_to(low, (4, dim, dim))
    for factor in (low, many):
        for got in (
            _xs.mahalanobis2(factor, diff),
            _xs.mahalanobis2(torch.tensor(factor), torch.tensor(diff)).numpy(),
        ):
            assert got.shape == (5, 4)
            np.testing.assert_allclose(got, truth, rtol=1e-12)


@pytest.mark.parametrize("dim", [2, 6])
def test_mahalanobis2_overflow_is_inf_not_nan(dim):
    """A finite diff whose |z|^2 overflows gives inf on both backends, by substitution (2)
    and by the solvers (6), where z_0 = inf made the next entries inf * 0 = NaN (Sigma =
    5e-324 I, factor 2.2e-162, diff 4e146); a NaN in diff stays NaN; a finite
    one still gives its value (1e-160 I at 1e-150: 1e20 per entry)."""
    low = np.eye(dim) * math.sqrt(5e-324)
    for lib in (np, torch):
        factor = lib.asarray(low)
        with np.errstate(all="ignore"):
            huge = _xs.mahalanobis2(factor, lib.asarray(np.full(dim, 4e146)))
            lost = _xs.mahalanobis2(factor, lib.asarray(np.r_[np.nan, np.ones(dim - 1)]))
            fine = _xs.mahalanobis2(
                lib.asarray(np.eye(dim) * 1e-160), lib.asarray(np.full(dim, 1e-150))
            )
        assert float(huge) == math.inf and math.isnan(float(lost)), lib.__name__
        assert abs(float(fine) - dim * 1e20) <= 1e-12 * dim * 1e20, lib.__name__


@pytest.mark.parametrize("alpha", [1.001, 1.0001])
def test_large_escort_exponent_windows_against_mpmath(alpha):
    """alpha -> 1 (escort exponent m = 999, 9999): a narrow RBF near the centre of a wide
    support. The window bound sqrt(2 depth) reached past both edges there, so the window
    spanned the whole support and rho was 4% off at alpha = 1.001; the curvature bound
    sqrt(2 depth / (1 + 2 m r^2)) keeps it tight. rho, J_1 and J_2 - 2 mu J_1 against
    the 24-digit oracle, row-relative: FLOAT64 within 1e-12, FLOAT32 within 1e-7."""
    from attention_oracle import row

    from torch_bridge.attention import _moments_1d

    loc, sigma = 0.7047493773060287, 0.048979155106724626
    mu = [0.6749, 0.70, 0.95, 0.40]
    s = [0.1612, 0.05, 0.02, 0.3]
    truth = [np.array([float(v) for v in part]) for part in row(alpha, loc, sigma, mu, s)]
    args = [torch.tensor(v, dtype=torch.float64) for v in ([loc], [sigma], mu, s)]
    for accuracy, bar in ((tuning.FLOAT64, 1e-12), (tuning.FLOAT32, 1e-7)):
        got = [v.numpy()[0] for v in _moments_1d(alpha, *args, accuracy)]
        expected = (truth[0], truth[1], truth[2] - 2 * loc * truth[1])
        for value, exact in zip(got, expected, strict=True):
            assert np.abs(value - exact).max() <= bar * np.abs(exact).max(), accuracy.window_nodes


def test_expm1_stays_exact_under_torch_compile():
    """Inductor decomposes torch.expm1 into exp(x) - 1 on CPU (8.9e-5 relative error at
    x = 1e-12; compiled attention gradients were 2.7e-11 off eager for RBFs 100 support
    widths wide). The core's expm1, compiled: within 4 float64 ulps of NumPy's, the
    gradient within 4 ulps of exp(x), NaN and the limits kept."""
    torch._dynamo.reset()
    x = np.concatenate([-np.logspace(-15, 1.5, 200), [0.0], np.logspace(-15, 1.5, 200)])
    compiled = torch.compile(_xs.expm1, fullgraph=True)
    for run in (_xs.expm1, compiled):
        t = torch.tensor(x, requires_grad=True)
        y = run(t)
        (grad,) = torch.autograd.grad(y.sum(), t)
        truth = np.expm1(x)
        scale = np.where(truth == 0, 1.0, np.abs(truth))
        assert np.max(np.abs(y.detach().numpy() - truth) / scale) <= 4 * np.finfo(float).eps
        assert np.max(np.abs(grad.numpy() / np.exp(x) - 1)) <= 4 * np.finfo(float).eps
    edges = torch.tensor([float("nan"), float("inf"), float("-inf"), -1e3], dtype=torch.float64)
    got = compiled(edges)
    assert torch.isnan(got[0]) and got[1] == float("inf") and got[2] == -1 and got[3] == -1


def test_erfcx_polynomial_against_mpmath():
    """The generated erfcx (derivations/special_functions.py) in float64: within its
    stated 2e-9 of mpmath's exp(y^2) erfc(y) at 30 digits over y in [0, 1e6], and 0 at
    y = inf (t = 0)."""
    import mpmath as mp

    from tsallis.core._generated import special_functions

    y = np.concatenate([[0.0], np.logspace(-6, 6, 400)])
    got = special_functions.erfcx_of_t(3 / (3 + y))
    with mp.workdps(30):
        truth = np.array([float(mp.erfc(mp.mpf(v)) * mp.exp(mp.mpf(v) ** 2)) for v in y])
    assert np.max(np.abs(got / truth - 1)) <= 2e-9
    assert special_functions.erfcx_of_t(np.array([0.0]))[0] == 0.0


def test_float32_normal_mass_from_edge_densities_under_torch_compile():
    """Compiled, float32 normal_mass given exp(-lo^2/2) and exp(-hi^2/2) forms each tail
    as that exponential times erfcx. Against mpmath, with the exponentials rounded
    once: within 2 float32 eps of the two terms it subtracts (each tail carries about
    1.5 ulp: the exponential's rounding, erfcx's and the product's), over both tails,
    intervals across 0 and infinite ends (plus 4 subnormal steps where the mass is below
    float32's normal range); NaN stays NaN."""
    import mpmath as mp

    from tsallis.core._generated import special_functions

    torch._dynamo.reset()

    def mass(lo, hi):
        at_lo, at_hi = ((-(v.double() ** 2) / 2).exp().float() for v in (lo, hi))
        return _xs.normal_mass(lo, hi, at_lo, at_hi, special_functions.erfcx_of_t)

    compiled = torch.compile(mass, fullgraph=True)
    rng = np.random.default_rng(3)
    lo = rng.uniform(-14, 14, 3000)
    hi = lo + 10.0 ** rng.uniform(-4, 1.5, 3000)
    lo = np.concatenate([lo, [-np.inf, -np.inf, 0.0, 2.0]])
    hi = np.concatenate([hi, [np.inf, 0.0, np.inf, 2.001]])
    lo32, hi32 = (torch.tensor(v, dtype=torch.float32) for v in (lo, hi))
    got = compiled(lo32, hi32).double().numpy()
    eps = float(np.finfo(np.float32).eps)
    tiny = float(np.finfo(np.float32).smallest_subnormal)
    with mp.workdps(30):
        for g, a, b in zip(got, lo32.tolist(), hi32.tolist(), strict=True):
            upper = a > 0  # the two terms the code subtracts
            first, second = (mp.ncdf(-a), mp.ncdf(-b)) if upper else (mp.ncdf(b), mp.ncdf(a))
            bar = 2 * eps * float(first + second) + 4 * tiny  # subnormal results: absolute
            assert abs(g - float(first - second)) <= bar, (a, b, g)
    nan = torch.tensor([float("nan")])
    assert torch.isnan(compiled(nan, nan)).all()


def _compiled_float32_errors(alpha: float, sigma2: float) -> tuple[float, float]:
    """(rho, gradient) errors of compiled float32 attention on rows that take the float32
    closed form, against the float64 op: row-relative rho, and the loc and scale
    gradients of two random weightings relative to their largest."""
    from torch_bridge import GaussianRBF, continuous_attention

    k = tuning.closed_k(alpha)
    sigma = float(np.float32(np.sqrt(sigma2)))
    a = float(window.half_width(alpha, np.array(sigma)))
    gen = torch.Generator().manual_seed(1)
    mu = torch.linspace(-2 * a, 2 * a, 48, dtype=torch.float64).float()
    s = (a * tuning.FLOAT32_CLOSED_MAX_R[k] * torch.rand(48, generator=gen)).clamp(min=1e-4 * a)
    loc = ((torch.rand(256, generator=gen, dtype=torch.float64) - 0.5) * 2 * a).float()
    scale = torch.full((256,), sigma)
    weights = torch.randn(2, 256, 48, generator=gen, dtype=torch.float64)
    assert bool(
        window.float32_closed_suffices(
            k, window.half_width(alpha, scale.double()), loc.double(), mu.double(), s.double()
        )
    )
    results = []
    for dtype in (torch.float32, torch.float64):
        basis = GaussianRBF(mu.to(dtype), s.to(dtype))

        def f(m, sc, basis=basis):
            return continuous_attention(m, sc, basis, alpha, validate=False)

        op = torch.compile(f, fullgraph=True) if dtype == torch.float32 else f
        x, y = loc.to(dtype).requires_grad_(), scale.to(dtype).requires_grad_()
        out = op(x, y)
        grads = [
            g.double()
            for w in weights
            for g in torch.autograd.grad((out * w.to(dtype)).sum(), (x, y), retain_graph=True)
        ]
        results.append((out.detach().double(), grads))
    (out32, grads32), (out64, grads64) = results
    rho = float(((out32 - out64).abs().amax(-1) / out64.abs().amax(-1)).max())
    grad = max(
        float((g - t).abs().max() / t.abs().max()) for g, t in zip(grads32, grads64, strict=True)
    )
    return rho, grad


@pytest.mark.parametrize(
    "alpha",
    [
        2.0,
        pytest.param(1.5, marks=pytest.mark.slow),
        pytest.param(4 / 3, marks=pytest.mark.slow),
        pytest.param(1.25, marks=pytest.mark.slow),
    ],
)
def test_compiled_float32_closed_form_within_float32_bars(alpha):
    """Compiled, the float32 closed form takes its normal masses from erfcx and the edge
    exponentials (not SLEEF's erfc, as in eager mode): rho within 1e-6 and gradients
    within 1e-5 (the float32 bars) of the float64 op, sigma^2 from 1e-8 to 1e2, RBFs up
    to FLOAT32_CLOSED_MAX_R half-widths wide and centres up to a half-width outside.
    (Measured: rho <= 6.4e-7 and gradients <= 2.2e-6, as in eager mode.)"""
    torch._dynamo.reset()
    for sigma2 in (1e-8, 1e-4, 1.0, 1e2):
        rho, grad = _compiled_float32_errors(alpha, sigma2)
        assert rho <= 1e-6 and grad <= 1e-5, (sigma2, rho, grad)


def test_edge_exp_flushes_only_the_far_tail_of_compiled_float32():
    """edge_exp is exp everywhere except compiled float32 below -FLOAT32_EDGE_FLUSH, where
    it is 0 (NaN kept); float64 and eager float32 are torch.exp bit for bit."""
    torch._dynamo.reset()
    x = torch.tensor([0.0, -1.0, -63.9, -64.0, -64.1, -90.0, -1e30, float("nan")])
    compiled = torch.compile(_xs.edge_exp, fullgraph=True)
    got = compiled(x)
    assert torch.equal(got[:4], torch.exp(x[:4]))
    assert torch.equal(got[4:7], torch.zeros(3)) and torch.isnan(got[7])
    assert torch.equal(_xs.edge_exp(x)[:7], torch.exp(x[:7]))  # eager: no flush
    x64 = x.double()
    assert torch.equal(compiled(x64)[:7], torch.exp(x64[:7]))


def test_float32_closed_form_needs_a_bounded_width_spread():
    """Flushing far-tail edge densities is invisible only while (max s / min s)^k <= 1e16
    (tuning.FLOAT32_EDGE_FLUSH): a wider basis takes the float64 path."""
    a, loc = torch.tensor([0.5], dtype=torch.float64), torch.tensor([0.0], dtype=torch.float64)
    mu = torch.tensor([0.0, 0.1], dtype=torch.float64)
    for k in (1, 2, 3, 4):
        ratio = tuning.FLOAT32_WIDTH_RATIO[k]
        narrowest = 0.05 / ratio
        for factor, expected in ((0.99, True), (1.01, False)):
            s = torch.tensor([0.05, narrowest / factor], dtype=torch.float64)
            assert bool(window.float32_closed_suffices(k, a, loc, mu, s)) is expected, (k, factor)
