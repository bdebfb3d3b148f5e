"""tsallis.discrete: finite maps against mpmath, Chen 2021's identities and properties.

Tolerances: float64 results are compared at 1e-13 (a few ulps of O(1)
probabilities); float32 at 1e-6 (8 ulps of 1), with inputs rounded to
float32 before the oracle sees them.
"""

from __future__ import annotations

import discrete_oracle as oracle
import mpmath as mp
import numpy as np
import pytest
import scipy.special
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tsallis import discrete as D
from tsallis.derivations import discrete as symbolic

FIG1 = np.array([0.4, 1.4, -0.8])
ALPHAS = (1.0, 1.01, 1.3, 1.5, 2.0, 2.7, 3.0, 5.0)
EXAMPLES = [pytest.param(60, id="fast"), pytest.param(500, id="full", marks=pytest.mark.slow)]


def as_float(values: list) -> np.ndarray:
    return np.array([float(x) for x in values])


# --- symbolic checks (item 2) ---


@pytest.mark.parametrize("count, patterns", [(3, 6), (4, 14)])
def test_eq9_ev_softmax_jacobian_on_every_support(count, patterns):
    assert symbolic.check_ev_softmax_jacobian(count) == patterns


@pytest.mark.parametrize("count, pairs", [(3, 18), (4, 56)])
def test_eq12_nll_gradient_limit(count, pairs):
    assert symbolic.check_nll_gradient_limit(count) == pairs


@pytest.mark.parametrize("count, features", [(3, 2), (4, 3), (5, 1)])
def test_lemma_3_2(count, features):
    symbolic.check_lemma_3_2(count, features)


@pytest.mark.parametrize("count, patterns", [(3, 7), (4, 15)])
def test_finite_prop3_reduces_to_eq14(count, patterns):
    assert symbolic.check_finite_prop3(count) == patterns


def test_symbolic_checks_can_fail(monkeypatch):
    """Fed a wrong map (exp(2v) normalized), the eq 9 checker raises."""
    import sympy as sp

    def doubled(v, support):
        total = sum(sp.exp(2 * v[j]) for j in support)
        return sp.Matrix([sp.exp(2 * v[i]) / total if i in support else 0 for i in range(len(v))])

    monkeypatch.setattr(symbolic, "_restricted_softmax", doubled)
    with pytest.raises(AssertionError, match="eq 9"):
        symbolic.check_ev_softmax_jacobian(3)


def test_finish_edge_bound():
    """_finish_bound's edge factor above 4/3 (core.discrete): s's error is h^a B(y / h),
    B checked symbolically against the finish at each clamp branch, and |B| <= 1 at 40
    digits (its value at v = 0, attained)."""
    assert symbolic.check_finish_edge_bound() == 1.0


def test_finish_edge_checks_can_fail(monkeypatch):
    """A wrong finish rate fails the symbolic identity; a factor above 1 fails the bound."""
    import sympy as sp

    rate = symbolic.finish_rate
    monkeypatch.setattr(symbolic, "finish_rate", lambda: rate() + sp.Rational(1, 10))
    with pytest.raises(AssertionError):
        symbolic.finish_edge_factors()
    monkeypatch.setattr(symbolic, "finish_rate", rate)
    factors = symbolic.finish_edge_factors()
    monkeypatch.setattr(
        symbolic, "finish_edge_factors", lambda: (factors[0] * sp.Rational(101, 100), factors[1])
    )
    with pytest.raises(AssertionError, match="finish edge factor"):
        symbolic.check_finish_edge_bound()


# --- Chen 2021 Fig 1 ---


def test_fig1_example():
    # The paper prints softmax ~ (0.25, 0.67, 0.07); the second entry is 0.6763,
    # which rounds to 0.68: the printed digits are matched to within one unit.
    np.testing.assert_allclose(D.softmax(FIG1), [0.25, 0.67, 0.07], rtol=0, atol=0.01)
    np.testing.assert_allclose(D.softmax(FIG1), [0.24878865, 0.67627765, 0.0749337], atol=1e-8)
    assert np.round(D.sparsemax(FIG1), 2).tolist() == [0.0, 1.0, 0.0]
    ev = D.ev_softmax(FIG1)
    assert np.round(ev, 2).tolist() == [0.27, 0.73, 0.0]
    assert ev[2] == 0.0  # an exact zero, not a small number
    np.testing.assert_allclose(ev[:2], scipy.special.softmax(FIG1[:2]), rtol=1e-15)


# --- values against mpmath ---


def _rows(dtype, count=12, size=9, scale=3.0, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(count, size)) * scale).astype(dtype)


@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-13), (np.float32, 1e-6)])
def test_softmax_sparsemax_against_mpmath(dtype, tol):
    rows = _rows(dtype)
    assert D.softmax(rows).dtype == dtype
    expected = np.array([as_float(oracle.softmax(r)) for r in rows])
    np.testing.assert_allclose(D.softmax(rows), expected, rtol=0, atol=tol)
    np.testing.assert_allclose(D.softmax(rows), scipy.special.softmax(rows, axis=-1), atol=tol)
    expected = np.array([as_float(oracle.entmax(r, 2.0)) for r in rows])
    np.testing.assert_allclose(D.sparsemax(rows), expected, rtol=0, atol=tol)


@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-13), (np.float32, 1e-6)])
def test_entmax_against_mpmath(alpha, dtype, tol):
    rows = _rows(dtype, seed=int(alpha * 100))
    expected = np.array([as_float(oracle.entmax(r, alpha)) for r in rows])
    got = D.entmax(rows, alpha)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, expected, rtol=0, atol=tol)
    np.testing.assert_allclose(got.sum(-1), 1, atol=tol)


@pytest.mark.parametrize("alpha", [0.3, 0.7, 0.999])
@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-13), (np.float32, 1e-6)])
def test_entmax_below_one_against_mpmath(alpha, dtype, tol):
    """Below alpha = 1 (dense, heavier tails than softmax; the Torch op's range) the
    NumPy face runs the same core: within 1e-13 (float64) and 1e-6 (float32) of the
    oracle, with every entry positive."""
    rows = _rows(dtype, seed=int(alpha * 1000))
    expected = np.array([as_float(oracle.entmax(r, alpha)) for r in rows])
    got = D.entmax(rows, alpha)
    assert got.dtype == dtype and (got > 0).all()
    np.testing.assert_allclose(got, expected, rtol=0, atol=tol)


def test_generated_entmax_from_base_against_mpmath():
    """p = [base]_+^(1/(alpha-1)): relative-exact down to tiny bases, 0 off the support
    (measured: at most 2.6e-14 relative; the tiniest p, 1.8e-73, has |log p| = 167)."""
    from tsallis.core._generated import discrete as gen

    bases = np.array([1e-300, 1.5e-22, 1e-7, 0.3, 1.0, 0.0, -1e-300, -0.5, -np.inf])
    for alpha in (1.3, 2.5, 5.0, 10.0):
        got = gen.entmax_from_base(bases, alpha)
        with mp.workdps(40):
            exact = [float(mp.mpf(b) ** (1 / (mp.mpf(alpha) - 1))) if b > 0 else 0.0 for b in bases]
        exact = np.array(exact)
        # the rounded exponent 1/(alpha - 1) moves p by |log p| eps relative
        scale = 1 + np.abs(np.log(np.where(exact > 0, exact, 1.0)))
        assert np.all(np.abs(got - exact) <= 4 * np.finfo(np.float64).eps * scale * exact), alpha
        assert np.all(got[bases <= 0] == 0)


def test_entmax_alpha_one_is_softmax_not_uniform():
    assert np.array_equal(D.entmax(FIG1, 1.0), D.softmax(FIG1))


def test_entmax_matches_entmax_package():
    entmax = pytest.importorskip("entmax")
    torch = pytest.importorskip("torch")
    rows = _rows(np.float64, seed=3)
    x = torch.from_numpy(rows)
    np.testing.assert_allclose(D.sparsemax(rows), entmax.sparsemax(x).numpy(), atol=1e-14)
    np.testing.assert_allclose(D.entmax(rows, 1.5), entmax.entmax15(x).numpy(), atol=1e-14)


@pytest.mark.parametrize("eps", [0.0, 1e-6, 0.5])
@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-13), (np.float32, 1e-6)])
def test_ev_softmax_against_mpmath(eps, dtype, tol):
    rows = _rows(dtype, seed=7)
    valid = np.random.default_rng(8).random(rows.shape) < 0.7
    for mask in (None, valid):
        got = D.ev_softmax(rows, mask=mask, eps=eps)
        expected = np.array(
            [
                as_float(oracle.ev_softmax(r, eps, None if mask is None else m))
                for r, m in zip(rows, valid, strict=True)
            ]
        )
        np.testing.assert_allclose(got, expected, rtol=0, atol=tol)
        if eps > 0:
            log_expected = np.log(np.where(expected > 0, expected, 1))
            log_got = D.log_ev_softmax(rows, mask=mask, eps=eps)
            finite = expected > 0
            # log p of size up to ~20: tolerance relative to max(1, |log p|)
            scale = np.maximum(1, np.abs(log_expected))
            assert np.all(np.abs(log_got - log_expected)[finite] <= tol * 4 * scale[finite])
            assert np.all(np.isneginf(log_got[~finite]))


# --- Jacobians: against central differences of the mpmath oracles ---


def _fd_jacobian(function, v, h=1e-12):
    import mpmath as mp

    with mp.workdps(60):
        columns = []
        for j in range(len(v)):
            up = [mp.mpf(float(x)) for x in v]
            down = list(up)
            up[j] += h
            down[j] -= h
            columns.append(
                [
                    (a - b) / (2 * mp.mpf(h))
                    for a, b in zip(function(up), function(down), strict=True)
                ]
            )
        return np.array([[float(columns[j][i]) for j in range(len(v))] for i in range(len(v))])


@pytest.mark.parametrize(
    "name, jacobian, reference",
    [
        ("softmax", D.softmax_jacobian, oracle.softmax),
        ("sparsemax", D.sparsemax_jacobian, lambda v: oracle.entmax(v, 2.0)),
        ("entmax15", lambda v: D.entmax_jacobian(v, 1.5), lambda v: oracle.entmax(v, 1.5)),
        ("entmax1.3", lambda v: D.entmax_jacobian(v, 1.3), lambda v: oracle.entmax(v, 1.3)),
        ("entmax2.7", lambda v: D.entmax_jacobian(v, 2.7), lambda v: oracle.entmax(v, 2.7)),
        ("entmax0.6", lambda v: D.entmax_jacobian(v, 0.6), lambda v: oracle.entmax(v, 0.6)),
        ("ev_softmax", D.ev_softmax_jacobian, oracle.ev_softmax),
    ],
)
def test_jacobians_against_mpmath_differences(name, jacobian, reference):
    v = np.array([0.4, 1.4, -0.8, 0.9, 1.1])

    expected = _fd_jacobian(reference, v)
    np.testing.assert_allclose(jacobian(v), expected, rtol=0, atol=1e-12, err_msg=name)


def test_jacobian_shapes_and_axis():
    rows = _rows(np.float64, count=4, size=5)
    jac = D.softmax_jacobian(rows.T, axis=0)
    assert jac.shape == (4, 5, 5)
    np.testing.assert_allclose(jac, D.softmax_jacobian(rows), atol=1e-16)
    empty = D.ev_softmax_jacobian(rows, mask=np.zeros(5, dtype=bool))
    assert np.array_equal(empty, np.zeros((4, 5, 5)))


# --- post-hoc evidential sparsification (eqs 4-6) and Theorem 3.1 ---


def test_evidential_sparsification_against_mpmath():
    rng = np.random.default_rng(11)
    beta = rng.normal(size=(4, 6))
    phi = rng.normal(size=3)
    result = D.evidential_sparsification(phi, beta)
    w, masses, probs = oracle.evidential(phi, beta)
    np.testing.assert_allclose(result.weights, as_float(w), atol=1e-14)
    np.testing.assert_allclose(result.masses, as_float(masses), rtol=1e-13, atol=1e-300)
    np.testing.assert_allclose(result.probs, as_float(probs), atol=1e-14)
    assert ((result.masses != 0) == (as_float(masses) != 0)).all()


def test_evidential_support_survives_underflowing_masses():
    """w_k^- > 745 underflows e^{-w^-}; the support test does not depend on it."""
    beta = np.array([[0.0, 0.0, 0.0], [800.0, -400.0, -400.0]])
    result = D.evidential_sparsification(np.array([1.0]), beta)
    np.testing.assert_array_equal(result.probs, [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(result.probs, D.ev_softmax(beta[0] + beta[1]))


def _non_atomic(v: np.ndarray, margin: float = 1e-6) -> bool:
    return bool(np.min(np.abs(v - v.mean())) > margin * max(1.0, np.abs(v).max()))


@pytest.mark.parametrize("examples", EXAMPLES)
def test_theorem_3_1(examples):
    """For non-atomic scores, ev_softmax(beta^T [1; phi]) equals the post-hoc distribution."""

    @settings(max_examples=examples, deadline=None)
    @given(
        st.integers(1, 4).flatmap(
            lambda j: st.tuples(
                st.lists(st.floats(-5, 5), min_size=j, max_size=j),
                st.integers(2, 8).flatmap(
                    lambda k: st.lists(
                        st.lists(st.floats(-5, 5), min_size=k, max_size=k),
                        min_size=j + 1,
                        max_size=j + 1,
                    )
                ),
            )
        )
    )
    def check(args):
        phi, beta = np.array(args[0]), np.array(args[1])
        v = beta[0] + phi @ beta[1:]
        assume(_non_atomic(v))
        result = D.evidential_sparsification(phi, beta)
        np.testing.assert_allclose(result.probs, D.ev_softmax(v), atol=1e-12)
        np.testing.assert_allclose(result.weights, v - v.mean(), atol=1e-12)  # Lemma 3.2
        assert ((result.masses > 0) == (v > v.mean())).all()  # Lemma 3.3

    check()


# --- Chen 2021 Table 1 and the support condition, under hypothesis ---

vectors = (
    st.integers(2, 12)
    .flatmap(lambda k: st.lists(st.floats(-50, 50, allow_subnormal=False), min_size=k, max_size=k))
    .map(np.array)
)


@pytest.mark.parametrize("examples", EXAMPLES)
def test_support_condition(examples):
    @settings(max_examples=examples, deadline=None)
    @given(vectors)
    def check(v):
        p = D.ev_softmax(v)
        # off the support: below min(mean, max) by at least the smallest normal number
        # (ev_logits: a constant row's maximum stays in under flush-to-zero); normal
        # entries can still have a subnormal mean ([0, 2.2e-308], found by hypothesis)
        tiny = np.finfo(v.dtype).smallest_normal
        assert np.all((p == 0) == (v - min(v.mean(), v.max()) <= -tiny))

    check()


@pytest.mark.parametrize("examples", EXAMPLES)
def test_full_domain(examples):
    """Any finite input gives a distribution: finite, non-negative, summing to 1."""

    @settings(max_examples=examples, deadline=None)
    @given(
        st.integers(1, 12)
        .flatmap(lambda k: st.lists(st.floats(-1e30, 1e30), min_size=k, max_size=k))
        .map(np.array),
        st.sampled_from([0.0, 1e-6]),
    )
    def check(v, eps):
        p = D.ev_softmax(v, eps=eps)
        assert np.all(np.isfinite(p)) and np.all(p >= 0)
        assert abs(p.sum() - 1) < 1e-12
        assert p[np.argmax(v)] > 0  # the maximum is always in the support

    check()


@pytest.mark.parametrize("examples", EXAMPLES)
def test_monotonic(examples):
    @settings(max_examples=examples, deadline=None)
    @given(vectors)
    def check(v):
        p = D.ev_softmax(v)
        order = np.argsort(v, kind="stable")
        assert np.all(np.diff(p[order]) >= 0)

    check()


@pytest.mark.parametrize("examples", EXAMPLES)
def test_translation_invariance(examples):
    @settings(max_examples=examples, deadline=None)
    @given(vectors, st.floats(-100, 100))
    def check(v, shift):
        assume(_non_atomic(v, margin=1e-9))
        np.testing.assert_allclose(D.ev_softmax(v + shift), D.ev_softmax(v), atol=1e-12)

    check()


@pytest.mark.parametrize("examples", EXAMPLES)
def test_permutation_equivariance(examples):
    @settings(max_examples=examples, deadline=None)
    @given(vectors, st.randoms(use_true_random=False))
    def check(v, random):
        order = list(range(len(v)))
        random.shuffle(order)
        permuted, expected = D.ev_softmax(v[order]), D.ev_softmax(v)[order]
        np.testing.assert_array_equal(permuted == 0, expected == 0)  # the support exactly
        np.testing.assert_allclose(permuted, expected, rtol=2e-15, atol=0)  # sum order, K <= 12

    check()


def test_not_idempotent_and_not_scale_invariant():
    """Table 1: ev-softmax has neither property; one counterexample each."""
    once = D.ev_softmax(FIG1)
    assert np.abs(D.ev_softmax(once) - once).max() > 0.2  # (0.56, 0.44, 0) != (0.27, 0.73, 0)
    assert np.abs(D.ev_softmax(2 * FIG1) - once).max() > 0.1
    # sparsemax is idempotent (Table 1), so the test can tell the difference
    np.testing.assert_allclose(D.sparsemax(D.sparsemax(FIG1)), D.sparsemax(FIG1), atol=1e-15)


# --- edge cases and bad input ---


def test_constant_rows_are_uniform_in_float32():
    values = np.random.default_rng(5).normal(size=2000).astype(np.float32)
    rows = np.repeat(values[:, None], 7, axis=1)
    p = D.ev_softmax(rows)
    assert np.all(np.isfinite(p))
    np.testing.assert_array_equal(p, np.full_like(p, np.float32(1 / 7)))


def test_mask_excludes_padding_from_the_mean():
    v = np.array([0.4, 1.4, -0.8])
    padded = np.array([0.4, 1.4, -0.8, -1e18, -1e18])
    mask = np.array([True, True, True, False, False])
    np.testing.assert_array_equal(D.ev_softmax(padded, mask=mask)[:3], D.ev_softmax(v))
    assert np.all(D.ev_softmax(padded, mask=mask)[3:] == 0)
    neg_inf = np.array([0.4, 1.4, -0.8, -np.inf])
    np.testing.assert_array_equal(D.ev_softmax(neg_inf)[:3], D.ev_softmax(v))
    # without a mask the padding drags the mean down: every real entry survives
    assert np.all(D.ev_softmax(padded)[:3] > 0)


def test_all_masked_row_is_documented_zero():
    v = np.zeros((2, 3))
    mask = np.array([[True, False, True], [False, False, False]])
    p = D.ev_softmax(v, mask=mask)
    np.testing.assert_array_equal(p, [[0.5, 0, 0.5], [0, 0, 0]])
    log_p = D.log_ev_softmax(v, mask=mask)
    assert np.all(np.isneginf(log_p[1]))


def test_log_ev_softmax_wide_logits():
    v = np.array([1e4, -1e4, 0.0, 3.0, -2.5e3])
    log_p = D.log_ev_softmax(v, eps=1e-6)
    assert np.all(np.isfinite(log_p))
    np.testing.assert_allclose(log_p[1], -2e4 + np.log(1e-6) - np.log1p(1e-6), rtol=1e-15)


@pytest.mark.parametrize("alpha", [0.5, 1.0, 1.3, 1.5, 2.0, 2.5, 5.0])
def test_minus_inf_entries_get_zero(alpha):
    """-inf entries get probability 0 in the NumPy maps, as documented and as in
    torch_bridge's (they raised ValueError): on float64 rows of 7, 300 and 1000 entries
    (the sort-based forms and Newton's loop), 40% of them -inf, p equals the map of the
    finite entries alone within 1e-15 and torch_bridge.entmax within 1e-15; the Jacobian
    has zero rows and columns there."""
    torch = pytest.importorskip("torch")
    from torch_bridge import entmax as torch_entmax

    rng = np.random.default_rng(17)
    for size, rows in ((7, 5), (300, 40), (1000, 300)):
        v = 2 * rng.standard_normal((rows, size))
        v[rng.random((rows, size)) < 0.4] = -np.inf
        v[:, 0] = 1.0
        p = D.softmax(v) if alpha == 1.0 else D.entmax(v, alpha)
        assert np.all(p[np.isinf(v)] == 0)
        for r in range(0, rows, max(rows // 5, 1)):
            kept = np.isfinite(v[r])
            alone = D.entmax(v[r][kept], alpha)
            assert np.abs(p[r][kept] - alone).max() <= 1e-15
        assert np.abs(p - torch_entmax(torch.from_numpy(v), alpha).numpy()).max() <= 1e-15
    jacobian = D.entmax_jacobian(np.array([0.5, -np.inf, 0.2]), alpha)
    assert np.all(jacobian[1] == 0) and np.all(jacobian[:, 1] == 0)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: D.ev_softmax(FIG1, axis=1), ValueError, "axis"),
        (lambda: D.ev_softmax(FIG1, eps=-1.0), ValueError, "eps"),
        (lambda: D.ev_softmax(FIG1, mask=np.ones(2, dtype=bool)), ValueError, "mask"),
        (lambda: D.ev_softmax(FIG1, mask=np.ones(3)), TypeError, "mask"),
        (lambda: D.ev_softmax(np.array([0.0, np.nan])), ValueError, "NaN"),
        (lambda: D.ev_softmax(np.array([0.0, np.inf])), ValueError, r"\+inf"),
        (lambda: D.ev_softmax(np.zeros(0)), ValueError, "at least one"),
        (lambda: D.ev_softmax(1.0), ValueError, "scalar"),
        (lambda: D.entmax(FIG1, 0.0), ValueError, "alpha must be a finite number > 0"),
        (lambda: D.entmax_jacobian(FIG1, -1.0), ValueError, "alpha"),
        (lambda: D.entmax(FIG1, np.nan), ValueError, "alpha"),
        (lambda: D.sparsemax(np.array([[0.0, 1.0], [-np.inf, -np.inf]])), ValueError, "row"),
        (lambda: D.entmax(np.full(3, -np.inf), 1.3), ValueError, "finite entry"),
        (lambda: D.softmax(np.array([-np.inf])), ValueError, "finite entry"),
        (lambda: D.softmax(np.array(["a"])), TypeError, "real"),
        (lambda: D.evidential_sparsification(np.ones(2), np.ones((2, 3))), ValueError, "phi"),
    ],
)
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_floored_exp2_on_numpy():
    """arrays.exp2_into(floored=True) on NumPy: 2**arg exactly where that is at least
    2**EXP2_LEAST[dtype], that value where it would be smaller (NumPy's exp2 is slow
    wherever a result underflows; the floor is what the Newton loop relies on)."""
    from tsallis.core import arrays

    for dtype, least in ((np.float32, -126.0), (np.float64, -1000.0)):
        assert arrays.EXP2_LEAST[np.dtype(dtype).name] == least
        arg = np.array([3.0, -1.5, least, least - 0.5, -3000.0, -np.inf], dtype=dtype)
        got = arrays.exp2_into(arg, np.empty_like(arg), False, floored=True)
        expected = np.array([8.0, 2**-1.5, 2.0**least, 2.0**least, 2.0**least, 2.0**least])
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, expected.astype(dtype))
        plain = arrays.exp2_into(arg, np.empty_like(arg), False)
        assert plain[-1] == 0 and plain[-2] == 0  # (without the floor: underflow to 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_at_least_into_matches_maximum(dtype):
    """arrays.at_least_into equals np.maximum(x, value) bit for bit: on arrays of many
    blocks and a tail (NumPy's fast path, block by block), small ones, in place,
    non-contiguous views (one call), with NaN (kept), -inf and values at the floor; a
    tensor gets torch.clamp's."""
    from tsallis.core import arrays

    rng = np.random.default_rng(3)
    size = 3 * arrays._AT_LEAST_BLOCK + 17
    for value in (0.0, float(np.finfo(dtype).tiny), -1.0, -126.0):
        x = rng.standard_normal(size).astype(dtype) * 200
        x[::97] = np.nan
        x[5::101] = -np.inf
        x[7::103] = value
        expected = np.maximum(x, dtype(value))
        for shape in ((size,), (1, size)):
            got = arrays.at_least_into(x.reshape(shape), value, np.empty(shape, dtype))
            np.testing.assert_array_equal(got.reshape(-1), expected)
        inplace = x.copy()
        assert arrays.at_least_into(inplace, value, out=inplace) is inplace
        np.testing.assert_array_equal(inplace, expected)
        strided = x[::2]
        np.testing.assert_array_equal(
            arrays.at_least_into(strided, value, np.empty_like(strided)), expected[::2]
        )
        small = x[:10]
        np.testing.assert_array_equal(
            arrays.at_least_into(small, value, np.empty_like(small)), expected[:10]
        )
        import torch

        tensor = torch.from_numpy(x.copy())
        got = arrays.at_least_into(tensor, value, out=tensor)
        np.testing.assert_array_equal(got.numpy(), expected)


@pytest.mark.parametrize("alpha", [1.25, 1.3, 1.7, 1.9])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_entmax_is_exactly_zero_off_the_support(alpha, dtype):
    """The loop floors NumPy's exp2 (arrays.EXP2_LEAST), so s is at least about 1e-38
    off the support inside it; p is still exactly 0 there and exactly positive on it,
    and the slopes the backward takes (s / sum(s)) are exactly 0 where p is, with and
    without the start from the largest entries (the latter evaluates once, its p apart
    from s). Entries within 1e-6 of the support's edge (float64 threshold) are left out."""
    from tsallis.core import discrete as core
    from tsallis.core import tuning

    rng = np.random.default_rng(int(alpha * 100))
    for spread in (0.01, 1.0, 30.0):
        z = (rng.standard_normal((128, 600)) * spread).astype(dtype)  # (the start: 2^16)
        z[0, :3] = z[0].max()
        wide = z.astype(np.float64)
        c = core.entmax_newton(wide, alpha, threshold=True)
        state = 1 + (alpha - 1) * (wide - wide.max(-1, keepdims=True) - c)
        off, on = state < -1e-6, state > 1e-6
        assert on.any() and (off.any() or spread < 1)  # (at 0.01 every entry is on it)
        p = D.entmax(z, alpha)
        assert (p[off] == 0).all() and (p[on] > 0).all(), (spread, p[off].max())
        for pays in (True, False):
            saved = tuning.PARTITION_PAYS
            tuning.PARTITION_PAYS = pays
            try:
                with np.errstate(divide="ignore", under="ignore"):
                    q, slopes, _ = core.entmax_newton(z, alpha, slopes="unit")
            finally:
                tuning.PARTITION_PAYS = saved
            if isinstance(slopes, core.ColumnSlopes):  # (on each row's largest entries)
                dense = np.zeros_like(q)
                np.put_along_axis(dense, slopes.columns, slopes.values, axis=-1)
                slopes = dense
            assert (q[off] == 0).all() and (slopes[q == 0] == 0).all(), (spread, pays)
