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


def test_log_beta_times_power_against_mpmath():
    """log_beta(u) u^beta, the Newton step's numerator of the entmax loop, where the loop
    uses it: u = sum p from 1e-3 to 1e3 and near 1 (the converged steps, where (u -
    u^beta) / (1 - beta) cancels), beta = 2 - alpha through 1. Relative to 60-digit
    mpmath (the typed difference loses up to 22 digits to cancellation here) within 8 eps
    max(1, |(beta - 1) log u|) (as log_beta's bound: log u's rounding amplified), in
    float64 and, for NumPy float32 inputs, within 8 float32 eps."""
    from tsallis.core._generated import deformed

    for u in (1e-3, 0.5, 1 - 2**-40, 1 + 2**-45, 1 + 1e-7, 1.25, 1e3):
        for beta in (-1.0, 0.0, 0.5, 0.7, 1.0 - 1e-9, 1.0, 1.5):
            with mp.workdps(60):
                x = mp.mpf(u)
                exact = x * mp.log(x) if beta == 1 else (x - x**beta) / (1 - beta)
            got = float(deformed.log_beta_times_power(np.float64(u), beta))
            bound = 8 * np.finfo(np.float64).eps * max(1.0, abs((beta - 1) * math.log(u)))
            assert abs(got - float(exact)) <= bound * abs(float(exact)), (u, beta)
            u32 = np.float32(u)
            with mp.workdps(60):
                x = mp.mpf(float(u32))
                exact = x * mp.log(x) if beta == 1 else (x - x**beta) / (1 - beta)
            got = float(deformed.log_beta_times_power(np.array([u32]), beta)[0])
            tol = 8 * float(np.finfo(np.float32).eps) * max(1.0, abs((beta - 1) * math.log(u)))
            assert abs(got - float(exact)) <= tol * abs(float(exact)), (u, beta, "float32")


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


# --- alpha close to 1: log-gamma ratios, Gegenbauer rules, continuous attention ---


def test_lgamma_ratio_against_mpmath():
    """log Gamma(x + h) - log Gamma(x): the plain difference lost x eps (2.8e-10 at 1e6)."""
    from torch_bridge._special import lgamma_ratio as torch_ratio
    from tsallis.core.special import lgamma_ratio

    eps = np.finfo(np.float64).eps
    with mp.workdps(40):
        for x in (1e-3, 0.5, 1.0, 9.99, 10.0, 1e3, 1e6, 1e9, 1e13):
            for h in (0.25, 0.5, 1.5, 3.0):
                exact = mp.loggamma(mp.mpf(x) + h) - mp.loggamma(mp.mpf(x))
                bound = 16 * eps * max(1.0, abs(float(exact)))
                assert abs(float(lgamma_ratio(x, h)) - float(exact)) <= bound, (x, h)
                got = torch_ratio(torch.tensor(x, dtype=torch.float64), h)
                assert abs(float(got) - float(exact)) <= bound, (x, h)


@pytest.mark.parametrize("exponent", [3.5, 2000.0, 1e6, 1e9])
def test_symmetric_gauss_jacobi_for_any_exponent(exponent):
    """64 nodes for (1 - x^2)^a integrate x^(2j) exactly (scipy's weights are NaN at 1e6)."""
    from tsallis.core.rules import gauss_jacobi

    x, w = gauss_jacobi(64, exponent, exponent)
    assert np.array_equal(x, -x[::-1]) and np.array_equal(w, w[::-1])
    with mp.workdps(40):
        for j in (0, 1, 2, 5, 10):
            exact = float(mp.beta(j + mp.mpf(1) / 2, exponent + 1))
            assert abs((w * x ** (2 * j)).sum() / exact - 1) <= 4e-15, j


@pytest.mark.parametrize(("a", "b"), [(-0.75, 0.0), (0.0, -0.9), (-0.5, 0.0), (0.0, 0.25)])
def test_one_sided_gauss_jacobi_near_the_singular_end(a, b):
    """64 nodes for (1 - x)^a (1 + x)^b times a Gaussian bump 2.5 of its widths from the
    end that carries the power (a window of continuous attention joined to the support's
    edge): within 1e-14 of mpmath. scipy's roots_jacobi, used before, was 7.7e-12 off
    in the weights next to the ends at a = -0.75, and the integral 1.3e-12 off. The
    rule's recurrence runs in NumPy's long double (at most 7.8e-15 here); where that is
    the float64 itself (Windows, macOS on ARM) it measured 2.4e-14 (a = -0.9): 5e-14."""
    from tsallis.core.rules import gauss_jacobi

    end = 1.0 if a else -1.0  # the end with the power
    centre, width = 0.75 * end, 0.1
    x, w = gauss_jacobi(64, a, b)
    got = float((w * np.exp(-(((x - centre) / width) ** 2) / 2)).sum())
    with mp.workdps(30):
        power = mp.mpf(a or b)

        # t = (distance to that end)^(1 / 4): smooth, and the power's singularity gone
        def integrand(t):
            gap = t**4
            u = end * (1 - gap)
            other = (1 + end * u) ** (mp.mpf(b) if a else mp.mpf(a))  # (1 of the pair is 0)
            return 4 * t**3 * gap**power * other * mp.exp(-(((u - centre) / width) ** 2) / 2)

        top = mp.mpf(2) ** (mp.mpf(1) / 4)
        want = mp.quad(integrand, [0, mp.mpf("0.5") ** (mp.mpf(1) / 4), top])
    bound = 1e-14 if np.finfo(np.longdouble).eps < np.finfo(np.float64).eps else 5e-14
    assert abs(got / float(want) - 1) <= bound, (a, b)


def test_escort_constants_near_alpha_one():
    """1 / B(1/2, k+1) and B(1/2, k+1)^(alpha-2): 1e-15 at k = 1e10 (was 1e-7 at 1e8)."""
    from tsallis.core._generated import attention as generated

    with mp.workdps(40):
        for gap in (1e-2, 1e-6, 1e-10):
            alpha = mp.mpf(1 + gap)
            beta = mp.beta(mp.mpf(1) / 2, 1 / (alpha - 1) + 1)
            assert abs(generated.rho_constant(1 + gap) * beta - 1) <= 4e-15
            assert abs(generated.cov_constant(1 + gap) / float(beta ** (alpha - 2)) - 1) <= 4e-15


_MU = np.linspace(0, 1, 5)
_S = np.array([0.02, 0.1, 0.3, 0.05, 1.0])
# (loc, sigma): inside, RBFs far wider than the support (the shared and wide-RBF rules),
# and loc outside the RBFs.
_CASES = [(0.4, 0.2), (0.5, 1e-4), (1.5, 0.05), (-2.0, 0.5)]


def _torch_jacobian(alpha: float, loc: float, sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """rho and J from the torch op's gradients: J_1 = sigma^2 d rho/d mu and
    J_2 = sigma^3 d rho/d sigma + 2 mu J_1 (theta = [mu / sigma^2, -1 / (2 sigma^2)])."""
    from torch_bridge import GaussianRBF, continuous_attention

    basis = GaussianRBF(torch.tensor(_MU), torch.tensor(_S))

    def rho(loc_t, sigma_t):
        return continuous_attention(loc_t, sigma_t, basis, alpha)

    args = (torch.tensor(loc, dtype=torch.float64), torch.tensor(sigma, dtype=torch.float64))
    d_loc, d_sigma = torch.autograd.functional.jacobian(rho, args)
    j1 = sigma**2 * d_loc.numpy()
    return rho(*args).detach().numpy(), np.stack([j1, sigma**3 * d_sigma.numpy() + 2 * loc * j1])


@pytest.mark.parametrize(
    "gap",
    [
        1e-2,
        pytest.param(1e-3, marks=pytest.mark.slow),
        pytest.param(1e-4, marks=pytest.mark.slow),
        1e-6,
    ],
)
def test_continuous_attention_alpha_close_to_one(gap):
    """rho and J within 1e-10 (row-relative) of 24-digit mpmath at alpha = 1 + gap, NumPy
    and Torch; alpha = 1.0001 gave NaN and 1 + 1e-6 was 3e-10 off. Continuous in alpha:
    the distance to the alpha = 1 (Gaussian) result shrinks like gap."""
    from attention_oracle import row

    from tsallis import attention as numpy_attention

    basis = numpy_attention.GaussianRBF(_MU, _S)
    alpha = 1 + gap
    for loc, sigma in _CASES:
        truth = [np.array([float(v) for v in part]) for part in row(alpha, loc, sigma, _MU, _S)]
        jac_truth = np.stack(truth[1:])
        rho_np = numpy_attention.rho(alpha, loc, sigma, basis)
        jac_np = numpy_attention.jacobian(alpha, loc, sigma, basis)
        rho_t, jac_t = _torch_jacobian(alpha, loc, sigma)
        for got in (rho_np, rho_t):
            assert np.abs(got - truth[0]).max() <= 1e-10 * np.abs(truth[0]).max(), (loc, sigma)
        for got in (jac_np, jac_t):
            error = np.abs(got - jac_truth).max(-1) / np.abs(jac_truth).max(-1)
            assert error.max() <= 1e-10, (loc, sigma, error)
        gaussian = numpy_attention.rho(1.0, loc, sigma, basis)
        assert np.abs(rho_np - gaussian).max() <= 10 * gap * np.abs(gaussian).max()


@pytest.mark.parametrize("alpha", [1.01, 2.5, 3.0, 4.0, 5.0])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_continuous_attention_far_from_the_basis(alpha, dtype):
    """loc far outside RBFs on [0, 1]: finite (often exactly 0) values and gradients."""
    from torch_bridge import GaussianRBF, continuous_attention

    mu = torch.linspace(0, 1, 6, dtype=dtype, requires_grad=True)
    s = torch.full((6,), 0.1, dtype=dtype, requires_grad=True)
    basis = GaussianRBF(torch.nn.Parameter(mu.detach()), torch.nn.Parameter(s.detach()))
    loc = torch.tensor([-1e3, -30.0, -3.0, 3.0, 30.0, 1e3], dtype=dtype, requires_grad=True)
    scale = torch.tensor([0.05, 1.0, 2.0, 1.0, 10.0, 300.0], dtype=dtype, requires_grad=True)
    out = continuous_attention(loc, scale, basis, alpha)
    assert torch.isfinite(out).all() and (out >= 0).all()
    (out * torch.linspace(-1, 1, 6, dtype=dtype)).sum().backward()
    for grad in (loc.grad, scale.grad, basis.mu.grad, basis.sigma.grad):
        assert torch.isfinite(grad).all()


@pytest.mark.parametrize("alpha", [pytest.param(1.01, marks=pytest.mark.slow), 3.0, 5.0])
def test_far_tails_match_mpmath(alpha):
    """float64 rows of size down to 1e-111 (loc outside the RBFs): within 32 ulps times
    |log rho_max| of mpmath (the rounding of the inputs is amplified by the exponent)."""
    from attention_oracle import row

    from torch_bridge import GaussianRBF, continuous_attention

    mu, s = np.linspace(0, 1, 6), np.full(6, 0.1)
    basis = GaussianRBF(torch.tensor(mu), torch.tensor(s))
    eps = np.finfo(np.float64).eps
    for loc, sigma in ((3.0, 1.0), (-3.0, 2.0), (30.0, 10.0)):
        truth = np.array([float(v) for v in row(alpha, loc, sigma, mu, s)[0]])
        got = continuous_attention(
            torch.tensor([loc], dtype=torch.float64),
            torch.tensor([sigma], dtype=torch.float64),
            basis,
            alpha,
        )[0].numpy()
        top = np.abs(truth).max()
        if top == 0:  # the support misses every RBF: exactly 0
            assert (got == 0).all()
            continue
        bound = 32 * eps * max(1.0, abs(np.log(top)))
        assert np.abs(got - truth).max() <= bound * top, (loc, sigma)


# --- found by the fuzz suite ---


@pytest.mark.parametrize("a", [1.5, 2.0, 3.0, 33.0, 101.0, 1001.0])
def test_betaincinv_tails(a):
    """scipy's inverse was NaN (a = 3, q < 1e-200) or 1e-5 off (a = 33, q = 1e-300); the
    ppf of TruncatedParabola and BetaGaussian go through it. Checked in q with 60-digit
    mpmath (relative error in x ~ that in q divided by a in the lower tail)."""
    from tsallis.core.special import betaincinv

    with mp.workdps(60):
        for q in (1e-300, 1e-200, 1e-100, 1e-30, 1e-10, 0.3, 0.5, 0.7, 1 - 1e-12):
            x = float(betaincinv(a, a, q))
            back = mp.betainc(a, a, 0, mp.mpf(x), regularized=True)
            error = float(abs(back / q - 1))
            assert error <= 1e-13 * (a if q < 0.01 else 1), (q, error)
        assert 0 < float(betaincinv(a, a, 5e-324)) < 0.5  # subnormal q: no NaN


@pytest.mark.parametrize("alpha", [1.0001, 1.2, 1.8103, 2.0, 5.263671875, 40.0])
def test_ppf_of_the_median_is_the_location(alpha):
    """scipy 1.17's betaincinv(a, a, 1/2) is up to 1.4e-8 away from 1/2 (a near 1.2,
    alpha = 5.26), so BetaGaussian.ppf(0.5) was -1.4e-8 * scale off the location. The
    median of a symmetric law is the location, exactly in floating point."""
    for loc, scale in ((0.0, 1.0), (3.0, 1e-6)):
        d = tsallis.BetaGaussian(alpha, loc, scale)
        assert float(d.ppf(0.5)) == loc
        # the cdf rounds its argument (x - loc) / half-width + 1 by a few eps, which
        # the density at the median turns into pdf(loc) * half-width * eps
        half_width = float(d.ppf(1.0) - d.ppf(0.0)) / 2
        bar = 4 * np.finfo(float).eps * max(1.0, float(d.pdf(loc)) * half_width)
        assert abs(float(d.cdf(d.ppf(0.5))) - 0.5) <= bar


def test_ppf_and_rvs_never_nan_in_the_tails():
    for family in (tsallis.TruncatedParabola(0.0, 1.0), tsallis.BetaGaussian(1.5, 0.0, 1.0)):
        q = np.array([5e-324, 2.2e-308, 1e-300, 1e-200, 0.5, 1 - 1e-16])
        x = family.ppf(q)
        low, high = family.support()
        assert np.all(np.diff(x) >= 0) and x[0] >= low and x[-1] <= high


def test_scale_range_and_location_scale_at_extreme_scales():
    with pytest.raises(ValueError, match=r"scale must lie in \[1e-150, 1e\+150\].*got 1e-200"):
        tsallis.Gaussian(0.0, 1e-200)
    for scale in (1e-150, 1e-100, 1.0, 1e100, 1e150):
        for g in ("t**3/6", "t**4/12"):
            d = tsallis.LocationScale(g, 0.0, scale)
            x = np.array([0.0, 0.3, -0.9, 5.0]) * scale
            pdf, cdf = d.pdf(x), d.cdf(x)
            standard = tsallis.LocationScale(g, 0.0, 1.0)
            assert np.allclose(pdf * scale, standard.pdf(x / scale), rtol=1e-14, atol=0)
            assert np.allclose(cdf, standard.cdf(x / scale), rtol=1e-14, atol=1e-300)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sorted_thresholds_with_huge_spread(dtype):
    """float32 [0, -3e38, -3e38] made sparsemax sum to 1.5e38 (prefix sums overflowed)."""
    from tsallis import discrete

    big = np.finfo(dtype).max * 0.9
    v = np.array([[0.0, -big, -big], [1.0, 0.5, -big], [big, 0.0, big * 0.999]], dtype=dtype)
    for name, oracle in (("sparsemax", lambda r: discrete.sparsemax(r.astype(np.float64))),):
        out = getattr(discrete, name)(v)
        assert np.allclose(out.sum(-1), 1) and (out >= 0).all()
        assert np.array_equal(out[0], [1, 0, 0]) and np.allclose(out[1], [0.75, 0.25, 0])
        del oracle
    out = discrete.entmax(v, 1.5)
    assert np.allclose(out.sum(-1), 1) and np.array_equal(out[0], [1, 0, 0])


def test_numbers_are_not_strings():
    from tsallis import discrete

    for bad in ("2", b"2", True):
        with pytest.raises(TypeError, match="alpha must be a real number"):
            discrete.entmax([0.0, 1.0], bad)


def test_masked_entries_may_hold_anything():
    """NaN or +inf in a masked entry is ignored (padding); in a valid entry it raises."""
    from torch_bridge import ev_softmax
    from tsallis import discrete

    v = np.array([[1.0, np.nan, 2.0, np.inf]])
    mask = np.array([True, False, True, False])
    expected = [0.0, 0.0, 1.0, 0.0]  # mean of {1, 2} is 1.5: only 2 is kept
    assert np.allclose(discrete.ev_softmax(v, mask=mask), [expected])
    x = torch.tensor(v, requires_grad=True)
    out = ev_softmax(x, mask=torch.tensor(mask))
    assert torch.allclose(out, torch.tensor([expected], dtype=torch.float64))
    out[0, 2].backward()
    assert torch.isfinite(x.grad).all()
    for call in (lambda: discrete.ev_softmax(v), lambda: ev_softmax(torch.tensor(v))):
        with pytest.raises(ValueError, match="NaN"):
            call()


def test_beta_gaussian_alpha_must_be_finite_and_half_log_prob():
    from torch_bridge import BetaGaussian

    with pytest.raises(ValueError, match="alpha"):
        BetaGaussian(float("inf"), 0.0, 1.0)
    d = BetaGaussian(
        torch.tensor(1.5, dtype=torch.float16),
        torch.zeros(2, dtype=torch.float16),
        torch.eye(2, dtype=torch.float16),
    )
    out = d.log_prob(torch.zeros(3, 2, dtype=torch.float16))
    reference = BetaGaussian(1.5, torch.zeros(2), torch.eye(2)).log_prob(torch.zeros(3, 2))
    assert out.dtype == torch.float16 and torch.allclose(out.float(), reference, rtol=1e-3)
