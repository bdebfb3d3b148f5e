"""Continuous attention with Gaussian RBFs (Martins 2020 section 3, Def 2, Prop 3, Alg 1).

With f(t) = -(t - mu)^2 / (2 sigma^2), the alpha-entmax density is the
beta-Gaussian p(mu + a u) = (1 - u^2)^k / (a B_k) on |u| < 1, where a is its
half-width, k = 1/(alpha - 1) and B_k = B(1/2, k + 1). Its (2 - alpha)-escort
is proportional to (1 - u^2)^(k - 1). Every integral against an RBF
psi_j = N(t; mu_j, s^2) is then a *window moment*

    G(m, j) = int_{-1}^{1} (1 - u^2)^m u^j phi((u - c) / r) / r du,

with c = (mu_j - mu) / a the RBF centre and r = s / a its width, both in
support units. In terms of G (derived below from Def 2 and eq 17-18):

    rho_j = rho_constant(alpha) G(k, 0) / a,
    J_1j  = a^(alpha-1) cov_constant(alpha) G(k-1, 1)              (theta_1 = mu/sigma^2),
    J_2j  = 2 mu J_1j + a^alpha cov_constant(alpha)
            (G(k-1, 2) - escort_u2(alpha) G(k-1, 0))                (theta_2 = -1/(2 sigma^2)).

For integer k (alpha = 2, 3/2, 4/3, 5/4) G is a closed form in erf and exp,
generated here. Its arguments are the edge distances ep = 1 - c, em = 1 + c
(so 1 - u^2 = (ep - r y)(em + r y) has no cancellation near an edge) and r.
The alpha = 1 case (any D, Alg 1) is a product of Gaussians, and the 2D
sparsemax case reduces to radial moments int_0^1 u^j phi((u - c)/r)/r du.
"""

from __future__ import annotations

import dataclasses

import mpmath as mp
import sympy as sp
import sympy.stats

from tsallis.derivations import symbols as S
from tsallis.derivations.beta_gaussian import derive_beta_gaussian
from tsallis.derivations.lemmas import euler_beta, truncated_normal_moment
from tsallis.derivations.primitives import NormalMass, flushable_edges, with_edge_densities
from tsallis.derivations.result import Kernel, KernelSet

SOURCE = "derivations/attention.py"

ep = sp.Symbol("ep", nonnegative=True)  # 1 - c: distance of the RBF centre to the right edge
em = sp.Symbol("em", nonnegative=True)  # 1 + c: distance to the left edge
r = sp.Symbol("r", positive=True)  # RBF width in support units
c = sp.Symbol("c", real=True)  # RBF centre in support units
omc = sp.Symbol("omc", real=True)  # 1 - c, passed exactly
delta = sp.Symbol("delta", real=True)  # mu_j - mu
s = sp.Symbol("s", positive=True)  # RBF standard deviation
_y = sp.Symbol("y", real=True)

RHO_POWERS = (1, 2, 3, 4)  # k = 1/(alpha - 1) with closed forms
_SAMPLE = {ep: sp.Rational(7, 10), em: sp.Rational(13, 10), r: sp.Rational(2, 5)}


def window_moment(polynomial_in_y: sp.Expr, lo: sp.Expr, hi: sp.Expr) -> sp.Expr:
    """int_lo^hi P(y) phi(y) dy for a polynomial P, as sum of truncated-normal moments."""
    poly = sp.Poly(sp.expand(polynomial_in_y), _y)
    return sp.Add(*(coeff * truncated_normal_moment(n, lo, hi) for (n,), coeff in poly.terms()))


def _collected(expr: sp.Expr, lo: sp.Expr, hi: sp.Expr) -> sp.Expr:
    """Group by NormalMass and the two edge densities (placeholders keep expand fast)."""
    mass, at_lo, at_hi = sp.symbols("_mass _at_lo _at_hi")
    atoms = {NormalMass(lo, hi): mass, sp.exp(-(lo**2) / 2): at_lo, sp.exp(-(hi**2) / 2): at_hi}
    expr = sp.expand(expr.xreplace(atoms))
    collected = sp.collect(expr, [mass, at_lo, at_hi], evaluate=False)
    assert set(collected) <= {mass, at_lo, at_hi}, collected.keys()
    back = {v: k for k, v in atoms.items()}
    return sp.Add(*(coeff * back[key] for key, coeff in collected.items()))


def support_window_moment(m: int, j: int) -> sp.Expr:
    """G(m, j) in (ep, em, r): u = c + r y, so 1 - u^2 = (ep - r y)(em + r y)."""
    u_of_y = (em - ep) / 2 + r * _y
    integrand = (ep - r * _y) ** m * (em + r * _y) ** m * u_of_y**j
    return _collected(window_moment(integrand, -em / r, ep / r), -em / r, ep / r)


def radial_window_moment(j: int) -> sp.Expr:
    """int_0^1 u^j phi((u - c)/r)/r du in (c, omc, r): u = c + r y on [-c/r, (1-c)/r]."""
    integrand = (c + r * _y) ** j
    return _collected(window_moment(integrand, -c / r, omc / r), -c / r, omc / r)


def window_moments(k: int) -> sp.Tuple:
    """(G(k, 0), G(k-1, 1), G(k-1, 2) - E[u^2] G(k-1, 0)): rho and both J moments at once.

    G(k-1, 1) is antisymmetrized under ep <-> em (it is odd in c), so a centred
    RBF gives exactly 0; the escort (1-u^2)^(k-1) has E[u^2] = 1/(2k+1). Each
    entry is grouped by the three atoms (normal mass, two edge densities),
    which the generated code then shares.
    """
    lo, hi = -em / r, ep / r
    swap = {ep: em, em: ep}
    odd = support_window_moment(k - 1, 1)
    mirrored = odd.xreplace(swap).xreplace({NormalMass(-ep / r, em / r): NormalMass(lo, hi)})
    centred = support_window_moment(k - 1, 2) - support_window_moment(k - 1, 0) / (2 * k + 1)
    return sp.Tuple(
        support_window_moment(k, 0),
        _collected((odd - mirrored) / 2, lo, hi),
        _collected(centred, lo, hi),
    )


def _check_against_quadrature(expr: sp.Expr, weight: sp.Expr, point: dict) -> None:
    """Compare a window moment with mpmath quadrature of its definition (30 digits)."""
    u = sp.Symbol("u", real=True)
    centre = point.get(c, (point.get(em, 0) - point.get(ep, 0)) / 2)
    width = point[r]
    lower, upper = (0, 1) if c in point else (-1, 1)
    density = weight * sp.exp(-(((u - centre) / width) ** 2) / 2) / (width * sp.sqrt(2 * sp.pi))
    f = sp.lambdify(u, density.subs(point), "mpmath")
    with mp.workdps(30):
        reference = mp.quad(f, [lower, centre, upper] if lower < centre < upper else [lower, upper])
        value = sp.N(expr.rewrite(sp.erf).subs(point), 30)
        assert abs(value - reference) < mp.mpf(10) ** -25 * (1 + abs(reference)), (expr, value)


def derive_constants() -> dict[str, sp.Expr]:
    """Beta-Gaussian normalizer and escort moments in support units, general alpha.

    int_{-1}^{1} (1 - u^2)^k du = B(1/2, k + 1) (substitute v = u^2); the
    escort (1 - u^2)^(k-1) has E[u^2] = B(3/2, k) / B(1/2, k).
    """
    alpha, k = S.alpha, S.k
    to_alpha = {k: 1 / (alpha - 1)}
    log_b = sp.expand_log(sp.log(sp.gammasimp(euler_beta(sp.S.Half, k + 1))), force=True)
    escort_u2 = sp.expand_func(euler_beta(sp.Rational(3, 2), k) / euler_beta(sp.S.Half, k))
    u = sp.Symbol("u", real=True)
    for kk in RHO_POWERS:  # spot-check the Beta substitution by direct integration
        direct = sp.integrate((1 - u**2) ** kk, (u, -1, 1))
        assert abs(sp.N(direct - sp.exp(log_b.subs(k, kk)), 30)) < 1e-25
    # exp of loggamma sums, so that no Gamma overflows as alpha -> 1.
    log_b = log_b.subs(to_alpha).replace(
        sp.log, lambda e: sp.loggamma(e.args[0]) if isinstance(e, sp.gamma) else sp.log(e)
    )
    return {
        "rho_constant": sp.exp(-log_b),
        "cov_constant": sp.exp((alpha - 2) * log_b),
        "escort_u2": sp.factor(escort_u2.subs(to_alpha)),
    }


def derive_half_width_law() -> tuple[sp.Expr, sp.Expr]:
    """The 1D beta-Gaussian half-width as a power law a = factor(alpha) * scale^power(alpha).

    Taken from the beta-Gaussian derivation; the ops evaluate factor and power once
    per alpha instead of the whole expression (log-gamma terms) on every row. Checked:
    power does not depend on the scale, and the law reproduces the half-width to 30
    digits at sample points.
    """
    family = derive_beta_gaussian()
    half_width = next(k.expr for k in family.kernels if k.name == "half_width_1d")
    power = sp.simplify(S.scale * sp.diff(sp.log(half_width), S.scale))
    factor = half_width.subs(S.scale, 1)
    assert sp.diff(power, S.scale) == 0, power
    for a, s in (
        (sp.Rational(13, 10), sp.Rational(7, 10)),
        (sp.Rational(5, 2), 3),
        (7, sp.Rational(1, 1000)),
    ):
        point = {S.alpha: a, S.scale: s}
        exact = sp.N(half_width.subs(point), 40)
        assert abs(sp.N((factor * S.scale**power).subs(point), 40) - exact) < 1e-30 * exact
    return factor, power


def derive_gaussian_1d() -> dict[str, sp.Expr]:
    """alpha = 1 in 1D: E_p[psi], cov_p(t, psi) and cov_p(t^2, psi) about mu.

    p = N(mu, sigma^2), psi = N(mu + delta, s^2); t = mu + x. The second
    covariance is returned without its 2 mu cov(t, psi) part (as J_2 above).
    """
    x = sp.Symbol("x", real=True)
    sigma = S.scale

    def gauss(z: sp.Expr, mean: sp.Expr, sd: sp.Expr) -> sp.Expr:
        return sp.exp(-((z - mean) ** 2) / (2 * sd**2)) / (sd * sp.sqrt(2 * sp.pi))

    product = gauss(x, 0, sigma) * gauss(x, delta, s)
    v = sp.Symbol("v", positive=True)  # sigma^2 + s^2

    def integral(weight: sp.Expr) -> sp.Expr:
        value = sp.integrate(weight * product, (x, -sp.oo, sp.oo), conds="none")
        return sp.factor(sp.simplify(value.subs(s, sp.sqrt(v - sigma**2)))).subs(v, sigma**2 + s**2)

    rho = integral(1)
    first = sp.factor(sp.simplify(integral(x) / rho))
    second = sp.factor(sp.simplify(integral(x**2 - sigma**2) / rho))
    return {"rho": rho, "first": first * rho, "second": second * rho}


def derive_attention() -> KernelSet:
    """Window moments for integer k, radial moments (2D sparsemax), constants, alpha = 1."""
    kernels: list[Kernel] = []
    window_args = (ep, em, r)
    for m, js in ((0, (0, 1, 2)), (1, (0, 1, 2)), (2, (0, 1, 2)), (3, (0, 1, 2)), (4, (0,))):
        for j in js:
            expr = support_window_moment(m, j)
            u = sp.Symbol("u", real=True)
            _check_against_quadrature(expr, (1 - u**2) ** m * u**j, _SAMPLE)
            kernels.append(
                Kernel(
                    f"window_m{m}_j{j}",
                    window_args,
                    expr,
                    f"G({m}, {j}) = int_-1^1 (1-u^2)^{m} u^{j} phi((u-c)/r)/r du;"
                    " ep = 1 - c, em = 1 + c.",
                )
            )
    for j in (1, 2, 3):
        expr = radial_window_moment(j)
        u = sp.Symbol("u", real=True)
        _check_against_quadrature(
            expr, u**j, {c: sp.Rational(3, 10), omc: sp.Rational(7, 10), r: sp.Rational(1, 3)}
        )
        kernels.append(
            Kernel(
                f"radial_j{j}",
                (c, omc, r),
                expr,
                f"int_0^1 u^{j} phi((u-c)/r)/r du; omc = 1 - c.",
            )
        )
    radial = sp.Tuple(*(radial_window_moment(j) for j in (1, 2, 3)))
    kernels.append(
        Kernel(
            "radial_moments",
            (c, omc, r),
            radial,
            "(int_0^1 u^j phi((u-c)/r)/r du for j = 1, 2, 3); omc = 1 - c.",
        )
    )
    for k in RHO_POWERS:
        moments = window_moments(k)
        u = sp.Symbol("u", real=True)
        weights = ((1 - u**2) ** k, (1 - u**2) ** (k - 1) * u, (1 - u**2) ** (k - 1) * u**2)
        _check_against_quadrature(moments[0], weights[0], _SAMPLE)
        _check_against_quadrature(moments[1], weights[1], _SAMPLE)
        _check_against_quadrature(
            moments[2] + support_window_moment(k - 1, 0) / (2 * k + 1), weights[2], _SAMPLE
        )
        kernels.append(
            Kernel(
                f"window_moments_k{k}",
                window_args,
                moments,
                f"(G({k}, 0), G({k - 1}, 1), G({k - 1}, 2) - G({k - 1}, 0)/{2 * k + 1}):"
                f" rho and J moments for alpha = 1 + 1/{k}.",
            )
        )
    constants = derive_constants()
    docs = {
        "rho_constant": "1 / B(1/2, k+1), k = 1/(alpha-1): the beta-Gaussian in support units.",
        "cov_constant": "B(1/2, k+1)^(alpha-2): the escort norm factor of cov_{p,2-alpha}.",
        "escort_u2": "E[u^2] under the escort (1-u^2)^(k-1) on [-1, 1].",
    }
    kernels += [Kernel(name, (S.alpha,), constants[name], docs[name]) for name in docs]
    factor, power = derive_half_width_law()
    kernels += [
        Kernel("half_width_factor", (S.alpha,), factor, "a / scale^power: the 1D half-width law."),
        Kernel("half_width_power", (S.alpha,), power, "d log a / d log scale (1D half-width)."),
    ]
    gaussian = derive_gaussian_1d()
    gaussian_docs = {
        "rho": "alpha = 1: E_p[psi] = N(delta; 0, scale^2 + s^2), delta = mu_j - mu.",
        "first": "alpha = 1: cov_p(t, psi).",
        "second": "alpha = 1: cov_p((t-mu)^2, psi) (J_2 = 2 mu first + second).",
    }
    kernels += [
        Kernel(f"gaussian_{name}", (delta, S.scale, s), gaussian[name], doc)
        for name, doc in gaussian_docs.items()
    ]
    x = sp.Symbol("x", real=True)
    kernels.append(
        Kernel(
            "rbf_pdf",
            (x, r),
            sp.stats.density(sp.stats.Normal("X", 0, r))(x),
            "phi(x / r) / r: the RBF (a centred normal density of standard deviation r).",
        )
    )
    # One module for NumPy and Torch (the array-namespace printer). Each normal mass also
    # gets the edge densities' exponentials, which the expression holds already.
    # The float32 closed form (window_moments_k*) may flush far-tail edge densities.
    kernels = [
        dataclasses.replace(kernel, expr=with_edge_densities(kernel.expr), backends=("xp",))
        for kernel in kernels
    ]
    kernels = [
        dataclasses.replace(kernel, expr=flushable_edges(kernel.expr))
        if kernel.name.startswith("window_moments_k")
        else kernel
        for kernel in kernels
    ]
    return KernelSet(
        name="attention",
        title="Continuous attention with Gaussian RBFs",
        source="Martins 2020 section 3 (Def 2, eqs 15-18, Alg 1)",
        kernels=tuple(kernels),
    )
