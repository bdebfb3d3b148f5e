"""Fuzzing the public API at its edges (hardening issue, item 6).

Every call either returns a finite result that satisfies the function's
invariants (shape, non-negativity, normalization, support) or raises
ValueError / TypeError; where validity is easy to state, the test also checks
that valid input succeeds and invalid input is refused. Any other exception,
and any NaN, fails the test. Strategies include NaN, +-inf, huge and tiny
magnitudes, subnormals, empty and size-1 shapes, four dtypes, alpha near 1 and
large. ``HYPOTHESIS_PROFILE=slow`` runs many more examples; the outcome counts
are printed at the end of the run (conftest).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

import tsallis
from tsallis import attention as np_attention
from tsallis import discrete
from tsallis.core.validation import SCALE_RANGE

torch = pytest.importorskip("torch")

TALLY: Counter[tuple[str, str]] = Counter()
FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])

EDGE_FLOATS = [0.0, -0.0, 5e-324, 1e-308, 1e-45, 1e-8, 1.0, 65504.0, 3e38, 1e300, 1.7e308]
reals = st.one_of(
    st.floats(-1e3, 1e3),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(EDGE_FLOATS + [-v for v in EDGE_FLOATS] + [math.nan, math.inf, -math.inf]),
)
moderate = st.floats(-50, 50, allow_nan=False)
positive = st.one_of(st.floats(1e-6, 1e3), st.sampled_from([1e-300, 1e300]))
alphas = st.one_of(
    st.sampled_from([1.0, 1 + 1e-6, 1.0001, 1.01, 1.25, 4 / 3, 1.5, 2.0, 3.0, 5.0, 10.0]),
    st.floats(1.0, 10.0),
)
bad_alphas = st.sampled_from([0.5, 0.0, -1.0, math.nan, math.inf, "2", None])
TORCH_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


def attempt(
    name: str,
    call: Callable[[], object],
    check: Callable[[object], None],
    valid: bool | None = None,
) -> object:
    """Run ``call``; ValueError/TypeError count as a clean refusal, else ``check`` the value.

    ``valid`` (when known) says which of the two must happen.
    """
    try:
        value = call()
    except (ValueError, TypeError) as error:
        assert valid is not True, f"{name}: valid input refused: {error}"
        TALLY[(name, "refused (ValueError/TypeError)")] += 1
        return None
    assert valid is not False, f"{name}: invalid input accepted"
    check(value)
    TALLY[(name, "finite result, invariants hold")] += 1
    return value


def _finite(array: object) -> np.ndarray:
    out = np.asarray(array.detach().double() if isinstance(array, torch.Tensor) else array)
    assert not np.isnan(out).any(), "NaN in the result"
    return out


# --- NumPy distributions ---

UNIVARIATE = {
    "TruncatedParabola": lambda loc, scale, alpha: tsallis.TruncatedParabola(loc, scale),
    "Triangular": lambda loc, scale, alpha: tsallis.Triangular(loc, scale),
    "Gaussian": lambda loc, scale, alpha: tsallis.Gaussian(loc, scale),
    "Laplace": lambda loc, scale, alpha: tsallis.Laplace(loc, scale),
    "LocationScale": lambda loc, scale, alpha: tsallis.LocationScale("t**3/6", loc, scale),
    "BetaGaussian": lambda loc, scale, alpha: tsallis.BetaGaussian(alpha, loc, scale),
}


@FUZZ
@given(
    st.sampled_from(sorted(UNIVARIATE)),
    reals,
    st.one_of(positive, positive, reals),
    st.one_of(alphas, bad_alphas),
    st.lists(reals, max_size=6),
    st.lists(st.floats(0, 1), max_size=4),
)
def test_univariate_families(name, loc, scale, alpha, xs, qs):
    def valid_number(v: object) -> bool:
        return isinstance(v, float) and math.isfinite(v)

    low, high = SCALE_RANGE
    valid = valid_number(loc) and valid_number(scale) and low <= scale <= high
    if name == "BetaGaussian":
        valid = valid and valid_number(alpha) and alpha > 1
    family = attempt(
        f"numpy {name}()", lambda: UNIVARIATE[name](loc, scale, alpha), lambda d: None, valid
    )
    if family is None:
        return
    x = np.array([v for v in xs if not math.isnan(v)], dtype=float)
    lo, hi = family.support()

    def density(p: object) -> None:
        p = _finite(p)
        assert p.shape == x.shape and (p >= 0).all()

    attempt(f"numpy {name}.pdf", lambda: family.pdf(x), density, True)

    def log_density(v: object) -> None:
        v = _finite(v)
        assert (v < np.inf).all()

    attempt(f"numpy {name}.logpdf", lambda: family.logpdf(x), log_density, True)

    def cdf_check(c: object) -> None:
        c = _finite(c)
        assert ((c >= 0) & (c <= 1)).all()
        order = np.argsort(x, kind="stable")
        assert (np.diff(c[order]) >= -1e-12).all()

    attempt(f"numpy {name}.cdf", lambda: family.cdf(x), cdf_check, True)

    def ppf_check(v: object) -> None:
        v = _finite(v)
        assert ((v >= lo - 1e-9 * abs(lo)) & (v <= hi + 1e-9 * abs(hi))).all()

    attempt(f"numpy {name}.ppf", lambda: family.ppf(np.array(qs)), ppf_check, True)
    attempt(f"numpy {name}.var", family.var, lambda v: _finite(v) >= 0, True)
    attempt(f"numpy {name}.entropy", family.tsallis_entropy, _finite, True)
    attempt(
        f"numpy {name}.rvs",
        lambda: family.rvs(size=3, random_state=0),
        lambda v: _finite(v).shape == (3,),
        True,
    )


@FUZZ
@given(
    st.sampled_from(["TruncatedParaboloid", "BetaGaussian", "Gaussian"]),
    st.integers(1, 3),
    reals,
    st.floats(-5, 5),
    st.one_of(alphas, bad_alphas),
    st.lists(moderate, min_size=0, max_size=6),
)
def test_multivariate_families(name, dim, diagonal, off, alpha, xs):
    loc = np.zeros(dim)
    with np.errstate(invalid="ignore"):  # inf * 0 makes NaN entries: bad input on purpose
        sigma = np.eye(dim) * diagonal + off * (np.ones((dim, dim)) - np.eye(dim)) / 10
    makers = {
        "TruncatedParaboloid": lambda: tsallis.TruncatedParaboloid(loc, sigma),
        "BetaGaussian": lambda: tsallis.BetaGaussian(alpha, loc, sigma),
        "Gaussian": lambda: tsallis.Gaussian(loc, sigma),
    }
    family = attempt(f"numpy N-D {name}()", makers[name], lambda d: None)
    if family is None:
        return
    points = np.array(xs[: (len(xs) // dim) * dim]).reshape(-1, dim)
    attempt(
        f"numpy N-D {name}.pdf", lambda: family.pdf(points), lambda p: (_finite(p) >= 0).all(), True
    )
    attempt(
        f"numpy N-D {name}.rvs",
        lambda: family.rvs(size=(2, 0), random_state=0),
        lambda v: _finite(v).shape == (2, 0, dim),
        True,
    )
    attempt(f"numpy N-D {name}.entropy", family.tsallis_entropy, _finite, True)


# --- discrete maps, NumPy and Torch ---

rows = st.lists(
    st.one_of(
        st.floats(-1e6, 1e6),
        st.sampled_from([*EDGE_FLOATS, -3e38, -1.7e308, -math.inf, math.nan, math.inf]),
    ),
    min_size=0,
    max_size=7,
)


@FUZZ
@given(
    st.lists(rows, min_size=1, max_size=3),
    st.sampled_from(
        [
            "softmax",
            "sparsemax",
            "entmax",
            "ev_softmax",
            "log_ev_softmax",
            "sparsemax_jacobian",
            "entmax_jacobian",
        ]
    ),
    alphas,
    st.sampled_from([np.float32, np.float64]),
)
def test_numpy_discrete_maps(values, name, alpha, dtype):
    width = max(len(r) for r in values)
    assume(width > 0)
    with np.errstate(over="ignore"):  # 1e300 -> inf in float32, on purpose
        v = np.array([r + [0.0] * (width - len(r)) for r in values], dtype=np.float64).astype(dtype)
    calls = {
        "softmax": lambda: discrete.softmax(v),
        "sparsemax": lambda: discrete.sparsemax(v),
        "entmax": lambda: discrete.entmax(v, alpha),
        "ev_softmax": lambda: discrete.ev_softmax(v, eps=1e-3),
        "log_ev_softmax": lambda: discrete.log_ev_softmax(v),
        "sparsemax_jacobian": lambda: discrete.sparsemax_jacobian(v),
        "entmax_jacobian": lambda: discrete.entmax_jacobian(v, alpha),
    }
    # the maps without a mask take -inf entries (probability 0) but need a finite entry
    # in every row
    needs_finite = name in (
        "softmax",
        "sparsemax",
        "entmax",
        "sparsemax_jacobian",
        "entmax_jacobian",
    )
    empty_row = bool(np.isneginf(v).all(axis=-1).any())
    valid = None
    if np.isnan(v).any() or np.isposinf(v).any() or (needs_finite and empty_row):
        valid = False

    def check(out: object) -> None:
        out = _finite(out)
        if name.endswith("jacobian"):
            assert out.shape == (*v.shape, v.shape[-1])
            return
        if name == "log_ev_softmax":
            assert (out <= 1e-6).all()
            return
        assert (out >= 0).all() and (out[np.isneginf(v)] == 0).all()
        sums = out.sum(-1)
        ok = np.isclose(sums, 1, rtol=0, atol=1e-5 if dtype == np.float32 else 1e-12)
        empty = np.isneginf(v).all(-1)  # ev-softmax: a row with no valid entry is all 0
        assert np.all(ok | (empty & (sums == 0)))

    attempt(f"numpy {name}", calls[name], check, valid)


@FUZZ
@given(
    st.lists(rows, min_size=0, max_size=3),
    st.integers(2, 7),
    st.sampled_from(TORCH_DTYPES),
    st.sampled_from([0.0, 1e-6, 0.5]),
    st.booleans(),
    st.sampled_from(["ev_softmax", "log_ev_softmax", "nll"]),
)
def test_torch_ev_softmax(values, width, dtype, eps, masked, name):
    from torch_bridge import ev_softmax, ev_softmax_nll_loss, log_ev_softmax

    data = [(r + [0.0] * width)[:width] for r in values]
    x = torch.tensor(data, dtype=torch.float64).reshape(len(data), width).to(dtype)
    x.requires_grad_(True)
    mask = (torch.arange(width) % 3 != 1) if masked else None
    counted = x.detach() if mask is None else x.detach()[..., mask]  # masked: ignored
    bad = bool(torch.isnan(counted).any() or (counted == math.inf).any())
    if name == "nll":
        target = torch.zeros(len(data), dtype=torch.long)
        call = lambda: ev_softmax_nll_loss(x, target, eps=eps, reduction="sum")  # noqa: E731
        bad = bad or eps == 0
    elif name == "log_ev_softmax":
        call = lambda: log_ev_softmax(x, mask=mask, eps=eps)  # noqa: E731
    else:
        call = lambda: ev_softmax(x, mask=mask, eps=eps)  # noqa: E731

    def check(out: object) -> None:
        values_ = _finite(out)
        assert out.dtype == dtype
        if name == "ev_softmax":
            sums = values_.sum(-1)
            assert (values_ >= 0).all()
            # rows with a valid entry sum to 1; all-masked (or all -inf) rows are 0
            assert np.all((np.abs(sums - 1) <= 2e-2) | (sums == 0))
        finite = torch.isfinite(out.detach())  # -inf log-probabilities, an inf loss: no seed
        ramp = torch.linspace(-1, 1, out.shape[-1] if out.dim() else 1, dtype=dtype)
        (torch.where(finite, out, 0.0) * ramp).sum().backward()
        assert not torch.isnan(x.grad).any()

    attempt(f"torch {name}", call, check, False if bad else None)


# --- continuous attention ---


@FUZZ
@given(
    st.lists(st.one_of(st.floats(-1e4, 1e4), st.sampled_from([math.nan, math.inf])), max_size=4),
    st.one_of(st.floats(1e-4, 1e2), st.sampled_from([1e-6, 1e3, 0.0, -1.0, math.nan])),
    st.one_of(alphas, bad_alphas),
    st.sampled_from(TORCH_DTYPES),
    st.integers(1, 6),
    st.floats(1e-3, 2.0),
)
def test_torch_continuous_attention_1d(locs, sigma, alpha, dtype, n_basis, width):
    from torch_bridge import GaussianRBF, continuous_attention

    basis = GaussianRBF(
        torch.linspace(0, 1, n_basis, dtype=dtype), torch.full((n_basis,), width, dtype=dtype)
    )
    loc = torch.tensor(locs, dtype=torch.float64).to(dtype).requires_grad_(True)
    scale = torch.full((len(locs),), sigma, dtype=torch.float64).to(dtype).requires_grad_(True)
    valid = (
        isinstance(alpha, float)
        and math.isfinite(alpha)
        and alpha >= 1
        and bool(torch.isfinite(loc).all())
        and bool((torch.isfinite(scale) & (scale > 0)).all())
    )

    def check(out: object) -> None:
        values = _finite(out)
        assert out.shape == (len(locs), n_basis) and (values >= 0).all()
        (out * torch.linspace(-1, 1, n_basis, dtype=dtype)).sum().backward()
        for grad in (loc.grad, scale.grad):
            # float16 / bfloat16: a gradient beyond the dtype's range rounds to inf
            # (d rho / d sigma grows like 1 / sigma^3); never NaN.
            half = dtype in (torch.float16, torch.bfloat16)
            assert grad is None or (
                not torch.isnan(grad).any() if half else torch.isfinite(grad).all()
            )

    attempt(
        "torch continuous_attention 1D",
        lambda: continuous_attention(loc, scale, basis, alpha),
        check,
        valid,
    )


@FUZZ
@given(
    st.lists(st.floats(-3, 3), min_size=0, max_size=6),
    st.floats(1e-4, 10),
    st.floats(-2, 2),
    st.sampled_from([1.0, 2.0, 1.5]),
    st.sampled_from([torch.float32, torch.float64]),
)
def test_torch_continuous_attention_2d(coords, diag, off, alpha, dtype):
    from torch_bridge import GaussianRBF, continuous_attention

    basis = GaussianRBF(
        torch.tensor([[0.0, 0.0], [0.5, 1.0]], dtype=dtype),
        0.1 * torch.eye(2, dtype=dtype).expand(2, 2, 2).clone(),
    )
    loc = torch.tensor(coords[: len(coords) // 2 * 2], dtype=dtype).reshape(-1, 2)
    scale = torch.tensor([[diag, off], [off, diag]], dtype=dtype)
    valid = alpha != 1.5 and diag > abs(off) * (1 + 1e-6)

    def check(out: object) -> None:
        assert out.shape == (loc.shape[0], 2) and (_finite(out) >= 0).all()

    attempt(
        "torch continuous_attention 2D",
        lambda: continuous_attention(loc, scale, basis, alpha, angles=64),
        check,
        valid if abs(diag - abs(off)) > 1e-3 * diag else None,
    )


@FUZZ
@given(st.floats(-1e3, 1e3), st.floats(1e-5, 1e2), st.one_of(alphas, bad_alphas))
def test_numpy_attention_1d(loc, sigma, alpha):
    basis = np_attention.GaussianRBF(np.linspace(0, 1, 4), np.array([0.01, 0.1, 0.5, 1.0]))
    valid = isinstance(alpha, float) and math.isfinite(alpha) and alpha >= 1

    def check(out: object) -> None:
        rho, jac = out
        assert (_finite(rho) >= 0).all() and _finite(jac).shape == (2, 4)

    attempt(
        "numpy attention rho/J 1D",
        lambda: (
            np_attention.rho(alpha, loc, sigma, basis),
            np_attention.jacobian(alpha, loc, sigma, basis),
        ),
        check,
        valid,
    )


@FUZZ
@given(
    st.integers(0, 3),
    st.integers(0, 6),
    st.floats(-50, 50),
    st.sampled_from([1.0, 1.0001, 1.5, 2.0, 3.0]),
    st.sampled_from(["gaussian", "laplace"]),
    st.one_of(st.floats(2e-3, 1.0), st.sampled_from([0.0, -1.0, math.nan])),
)
def test_torch_kernel_attention(batch, m, scale, alpha, kernel, bandwidth):
    from torch_bridge import GaussianRBF, kernel_attention

    basis = GaussianRBF(
        torch.linspace(0, 1, 3, dtype=torch.float64), torch.full((3,), 0.1, dtype=torch.float64)
    )
    generator = torch.Generator().manual_seed(batch * 7 + m)
    gamma = scale * torch.randn(batch, m, dtype=torch.float64, generator=generator)
    gamma.requires_grad_(True)
    inducing = torch.linspace(0, 1, m, dtype=torch.float64)
    valid = None if math.isfinite(bandwidth) and bandwidth > 0 else False

    def check(out: object) -> None:
        values = _finite(out)
        assert out.shape == (batch, 3) and (values >= 0).all()
        out.sum().backward()
        assert torch.isfinite(gamma.grad).all()

    attempt(
        "torch kernel_attention",
        lambda: kernel_attention(gamma, inducing, basis, alpha, kernel, bandwidth),
        check,
        valid,
    )


# --- torch BetaGaussian ---


@FUZZ
@given(
    st.one_of(alphas, bad_alphas),
    st.lists(reals, min_size=0, max_size=3),
    reals,
    st.sampled_from(TORCH_DTYPES),
    st.booleans(),
    st.lists(reals, max_size=3),
)
# sigma beyond sqrt(max): the radius in sigma units overflowed and log_prob(loc) was NaN
@example(4.0, [1e300], 1e300, torch.float64, False, [1e300])
# sigma = 0 in float16: the bounds, rounded to float16, became 0 and 0 passed
@example(1.000001, [0.0], 0.0, torch.float16, False, [])
# Sigma = 5e-324 I (factor 2.2e-162) at 4e146: z_0 overflowed, z_1 = inf * 0 was NaN
@example(1.000001, [0.0, 0.0], 5e-324, torch.float64, True, [3.99583814440447e146])
def test_torch_beta_gaussian(alpha, locs, sigma, dtype, multivariate, values):
    from torch_bridge import BetaGaussian

    if multivariate:
        loc = torch.tensor(locs[: len(locs) // 2 * 2], dtype=torch.float64).reshape(-1, 2).to(dtype)
        scale = (sigma * torch.eye(2, dtype=torch.float64)).to(dtype)
    else:
        loc = torch.tensor(locs, dtype=torch.float64).to(dtype)
        scale = torch.tensor(sigma, dtype=torch.float64).to(dtype)
    valid = (
        isinstance(alpha, float)
        and math.isfinite(alpha)
        and alpha > 1
        and bool(torch.isfinite(loc).all())
        and bool(torch.isfinite(scale).all())
        and float(sigma) > 0
        and bool((scale.diagonal() > 0).all() if multivariate else scale > 0)
    )
    if loc.numel() == 0 and isinstance(alpha, float):
        valid = None  # as torch.distributions: the broadcast (empty) parameters are checked
    info = torch.finfo(dtype)
    if valid and not math.sqrt(info.tiny) <= abs(sigma) <= math.sqrt(info.max):
        valid = None  # e.g. a subnormal Sigma: its Cholesky fails in the dtype (refused)
    d = attempt(
        "torch BetaGaussian()", lambda: BetaGaussian(alpha, loc, scale), lambda d: None, valid
    )
    if d is None:
        return
    x = torch.tensor([v for v in values if not math.isnan(v)], dtype=torch.float64).to(dtype)
    if multivariate:
        x = torch.stack([x, x], -1)[:, None, :] if x.numel() else torch.zeros(0, 1, 2, dtype=dtype)
    else:
        x = x[:, None]
    attempt(
        "torch BetaGaussian.log_prob", lambda: d.log_prob(x), lambda v: _finite(v) < math.inf, None
    )
    attempt(
        "torch BetaGaussian.rsample",
        lambda: d.rsample((2,)),
        lambda v: v.dtype == dtype and (loc.numel() == 0 or not torch.isnan(v).any()),
        None,
    )
    attempt("torch BetaGaussian.entropy", d.entropy, _finite, True)
