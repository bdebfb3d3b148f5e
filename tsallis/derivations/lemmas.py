"""Integrals shared by several derivations, each derived once by SymPy.

The N-dimensional families are spherically symmetric after whitening
t = mu + L z (Sigma = L L^T), so their integrals reduce to radial ones:
int_{R^N} h(|z|^2/2) dz = |S^{N-1}| int_0^oo h(r^2/2) r^(N-1) dr.
"""

from __future__ import annotations

from functools import cache

import sympy as sp

from tsallis.derivations.primitives import NormalMass, betaincinv

_A = sp.Symbol("a", positive=True)
_B = sp.Symbol("b", positive=True)
_U = sp.Symbol("u", positive=True)
_R = sp.Symbol("r", positive=True)
_X = sp.Symbol("x", real=True)


@cache
def _euler_beta_generic() -> sp.Expr:
    """int_0^1 u^(a-1) (1-u)^(b-1) du for symbolic a, b > 0."""
    value = sp.integrate(_U ** (_A - 1) * (1 - _U) ** (_B - 1), (_U, 0, 1), conds="none")
    return sp.gammasimp(sp.hyperexpand(value))


def euler_beta(a: sp.Expr, b: sp.Expr) -> sp.Expr:
    """The Euler Beta integral B(a, b) as a Gamma ratio."""
    return _euler_beta_generic().subs({_A: a, _B: b}, simultaneous=True)


@cache
def _gaussian_radial_generic() -> sp.Expr:
    return sp.integrate(sp.exp(-(_R**2) / 2) * _R ** (_A - 1), (_R, 0, sp.oo), conds="none")


def gaussian_radial_moment(a: sp.Expr) -> sp.Expr:
    """int_0^oo exp(-r^2/2) r^(a-1) dr."""
    return _gaussian_radial_generic().subs(_A, a)


@cache
def sphere_area(n: sp.Symbol) -> sp.Expr:
    """|S^{n-1}|, from int_{R^n} exp(-|z|^2/2) dz = (int_R exp(-x^2/2) dx)^n."""
    line = sp.integrate(sp.exp(-(_X**2) / 2), (_X, -sp.oo, sp.oo))
    return sp.gammasimp(line**n / gaussian_radial_moment(n))


def radial_power_integral(c: sp.Symbol, k: sp.Expr, a: sp.Expr) -> sp.Expr:
    """int_0^sqrt(2c) r^(a-1) (c - r^2/2)^k dr, by the substitution r^2 = 2 c u.

    The substituted integrand is matched to C u^(p-1) (1-u)^(q-1) and closed
    with the Euler Beta lemma.
    """
    r_of_u = sp.sqrt(2 * c * _U)
    one_minus_u = sp.Symbol("v", positive=True)  # stands for 1 - u, kept unexpanded
    assert sp.expand(c - r_of_u**2 / 2 - c * (1 - _U)) == 0
    integrand = r_of_u ** (a - 1) * (c * one_minus_u) ** k * sp.diff(r_of_u, _U)
    integrand = sp.expand_power_base(sp.powdenest(integrand, force=True), force=True)
    p_, q_, const = sp.Wild("p"), sp.Wild("q"), sp.Wild("C", exclude=[_U, one_minus_u])
    match = integrand.match(const * _U**p_ * one_minus_u**q_)
    if match is None:
        raise ValueError(f"radial integrand not of Beta type: {integrand}")
    return sp.powsimp(match[const] * euler_beta(match[p_] + 1, match[q_] + 1), force=True)


def radial_mass(n: sp.Symbol, logdet: sp.Symbol, radial: sp.Expr) -> sp.Expr:
    """Mass in R^n of a density whose radial profile integrates to ``radial``."""
    return sphere_area(n) * sp.exp(logdet / 2) * radial


def tidy_log(expr: sp.Expr, *atoms: sp.Expr) -> sp.Expr:
    """Expand logs, turn log(gamma(z)) into loggamma(z), collect on ``atoms``.

    Collecting log terms symbolically removes the large cancelling pieces
    (for example k log k against log k) before any floating point is involved.
    """
    expr = sp.expand(sp.expand_log(expr, force=True))
    expr = expr.replace(
        lambda e: isinstance(e, sp.log) and isinstance(e.args[0], sp.gamma),
        lambda e: sp.loggamma(e.args[0].args[0]),
    )
    return sp.collect(expr, list(atoms), func=sp.factor)


def symmetric_beta_cdf(
    density: sp.Expr, x: sp.Symbol, loc: sp.Symbol, half_width: sp.Expr, k: sp.Expr
) -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    """cdf and ppf of a density proportional to (w^2 - (x-loc)^2)^k on |x-loc| < w.

    Substituting x = loc - w + 2 w s turns p(x) dx into C s^k (1-s)^k ds, so
    the cdf is C B(k+1, k+1) I_s(k+1, k+1). Returns (cdf, ppf, C B(k+1, k+1));
    the last must equal the total mass, 1, which callers check.
    """
    s = sp.Symbol("s", positive=True)
    x_of_s = loc - half_width + 2 * half_width * s
    profile = density.subs(x, x_of_s) * sp.diff(x_of_s, s) / (s * (1 - s)) ** k
    profile = sp.powsimp(sp.expand_power_base(sp.factor(profile), force=True), force=True)
    constant = sp.simplify(profile)
    if constant.has(s):
        raise ValueError(f"density is not a symmetric Beta profile: {constant}")
    v = (x - loc + half_width) / (2 * half_width)
    cdf = sp.Piecewise((0, v <= 0), (sp.betainc_regularized(k + 1, k + 1, 0, v), v < 1), (1, True))
    q = sp.Symbol("q", positive=True)
    ppf = loc - half_width + 2 * half_width * betaincinv(k + 1, k + 1, q)
    return cdf, ppf, constant * euler_beta(k + 1, k + 1)


def assert_unit(value: sp.Expr, samples: list[dict[sp.Symbol, str]]) -> None:
    """Check numerically, at 30 digits, that ``value`` is 1 at each sample.

    Sample values are strings read as exact rationals.
    """
    for sample in samples:
        exact = {symbol: sp.Rational(text) for symbol, text in sample.items()}
        number = sp.N(value.subs(exact), 30)
        if abs(number - 1) > sp.Float("1e-25"):
            raise AssertionError(f"expected 1, got {number} at {sample}")


_LO = sp.Symbol("lo", real=True)
_HI = sp.Symbol("hi", real=True)
_Y = sp.Symbol("y", real=True)


@cache
def _normal_antiderivative(n: int) -> sp.Expr:
    """F_n with F_n' = y^n phi(y): SymPy integrates n = 0, 1; parts give the rest.

    Integration by parts, F_n = (n-1) F_{n-2} - y^(n-1) phi(y), is checked by
    differentiating (SymPy's own integrate is slow beyond n = 4).
    """
    y = _Y
    density = sp.exp(-(y**2) / 2) / sp.sqrt(2 * sp.pi)
    if n < 2:
        value = sp.integrate(y**n * density, y)
    else:
        value = (n - 1) * _normal_antiderivative(n - 2) - y ** (n - 1) * density
    assert sp.simplify(sp.diff(value, y) - y**n * density) == 0
    return sp.expand(value)


@cache
def _truncated_normal_moment_generic(n: int) -> sp.Expr:
    antiderivative = _normal_antiderivative(n)
    erf_y = sp.erf(sp.sqrt(2) * _Y / 2)
    weight = antiderivative.coeff(erf_y)  # a number: 0 (odd n) or (n-1)!!/2
    rest = sp.expand(antiderivative - weight * erf_y)
    assert weight.is_number and not rest.has(sp.erf), antiderivative
    # erf(hi/sqrt2) - erf(lo/sqrt2) = 2 (Phi(hi) - Phi(lo))
    return sp.expand(rest.subs(_Y, _HI) - rest.subs(_Y, _LO)) + 2 * weight * NormalMass(_LO, _HI)


def truncated_normal_moment(n: int, lo: sp.Expr, hi: sp.Expr) -> sp.Expr:
    """int_lo^hi y^n phi(y) dy, with phi the standard normal density.

    Integrated by SymPy; the erf difference becomes ``NormalMass(lo, hi)``.
    """
    return _truncated_normal_moment_generic(n).subs({_LO: lo, _HI: hi}, simultaneous=True)
