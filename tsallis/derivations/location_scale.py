"""Location-scale continuous sparsemax families (Martins 2020 eq 13).

f(t) = -(1/sigma) g'(|t-mu|/sigma) with g convex and C^1 on [0, oo).
p = [-lambda + f]_+ has support |t - mu| < sigma a, where int p = 1 reduces
to a g'(a) - g(a) + g(0) = 1/2 (independent of sigma), and lambda = -g'(a)/sigma.
a is solved exactly when SymPy can, else by an mpmath root at ``dps`` digits.
"""

from __future__ import annotations

import mpmath
import sympy as sp

from tsallis.derivations import symbols as S
from tsallis.derivations.primitives import PositivePart
from tsallis.derivations.result import FamilyDerivation, Kernel
from tsallis.derivations.safe_parse import parse_formula
from tsallis.derivations.sparsemax_1d import common_kernels, edge_tail_cdf

T = sp.Symbol("t", nonnegative=True)
A = sp.Symbol("a", positive=True)
BUILTIN_G = {"cubic": "t**3/6", "quadratic": "t**2/2"}
_GRID = [sp.Rational(i, 8) for i in range(0, 161)]  # convexity probe on [0, 20]


class InvalidScoreError(ValueError):
    """g cannot define a location-scale sparsemax family."""


def parse_g(g: str | sp.Expr) -> sp.Expr:
    """Parse g(t) and check that it is real, C^1 and convex on [0, oo).

    A string goes through ``derivations.safe_parse`` (a whitelisted syntax
    tree, never ``eval``); a SymPy expression is taken as it is.
    """
    if isinstance(g, str):
        try:
            expr = parse_formula(g, {"t": T}, "g")
        except ValueError as error:
            raise InvalidScoreError(str(error)) from None
    elif isinstance(g, sp.Expr):
        expr = g.subs({s: T for s in g.free_symbols if s.name == "t"})
    else:
        raise TypeError(f"g must be a string or a SymPy expression, got {type(g).__name__}")
    extra = expr.free_symbols - {T}
    if extra:
        raise InvalidScoreError(f"g: must depend on t only, got symbols {sorted(map(str, extra))}")
    for point in _GRID[::8]:
        value = sp.N(expr.subs(T, point), 20)
        if not (value.is_real and value.is_finite):
            raise InvalidScoreError(f"g: g({point}) = {sp.N(value, 6)} is not a finite real number")
    first = sp.diff(expr, T)
    if first.has(
        sp.Derivative, sp.Subs, sp.sign, sp.Heaviside, sp.DiracDelta, sp.Abs, sp.Piecewise
    ):
        raise InvalidScoreError(f"g: {expr} is not continuously differentiable on [0, oo)")
    at_zero = sp.limit(first, T, 0, "+")
    if not at_zero.is_finite:
        raise InvalidScoreError(f"g: g'(0) = {at_zero} is not finite, so g is not C^1 at 0")
    second = sp.diff(first, T)
    if second.is_nonnegative is not True:
        values = [sp.N(second.subs(T, v), 20) for v in _GRID[1:]]
        if not all(val.is_real and val.is_finite for val in values):
            raise InvalidScoreError(f"g: g'' is not finite and real on (0, 20]: {expr}")
        bad = [(v, val) for v, val in zip(_GRID[1:], values, strict=True) if val < -1e-12]
        if bad:
            where = f" (g''({bad[0][0]}) = {sp.N(bad[0][1], 6)})"
            raise InvalidScoreError(f"g: {expr} is not convex on [0, oo){where}")
    return expr


def solve_half_width(g: sp.Expr, dps: int = 50) -> tuple[sp.Expr, bool]:
    """a with a g'(a) - g(a) + g(0) = 1/2: (value, exact?).

    h(a) = a g'(a) - g(a) + g(0) is nondecreasing (h' = a g'' >= 0) with h(0) = 0,
    so a root exists iff h exceeds 1/2 somewhere; it is bracketed by doubling.
    """
    gp = sp.diff(g, T)
    h = (T * gp - g + g.subs(T, 0)).subs(T, A)
    try:
        roots = [r for r in sp.solve(sp.Eq(h, sp.Rational(1, 2)), A) if r.is_positive]
    except NotImplementedError:
        roots = []
    if len(roots) == 1:
        return sp.nsimplify(roots[0]) if roots[0].is_Float else roots[0], True
    h_num = sp.lambdify(A, h - sp.Rational(1, 2), modules="mpmath")
    with mpmath.workdps(dps + 10):
        high = mpmath.mpf(1)
        while h_num(high) < 0:
            high *= 2
            if high > 1e12:
                raise InvalidScoreError(f"g: a g'(a) - g(a) + g(0) = 1/2 has no solution for {g}")
        # h is nondecreasing and h(low) < 0 <= h(high): bisection always converges
        # (secant-type solvers failed on steep h such as cosh(t)**50).
        low = high / 2 if high > 1 else mpmath.mpf(0)
        for _ in range(int((dps + 10) * 3.33) + int(mpmath.log(high + 1, 2)) + 2):
            mid = (low + high) / 2
            if not mpmath.isfinite(h_num(mid)):
                raise InvalidScoreError(f"g: a g'(a) - g(a) + g(0) is not finite at a = {mid}")
            low, high = (mid, high) if h_num(mid) < 0 else (low, mid)
        root = (low + high) / 2
        return sp.Float(mpmath.nstr(root, dps), dps), False


def derive_location_scale(
    g: str | sp.Expr, name: str = "custom", dps: int = 50
) -> FamilyDerivation:
    """Closed forms for g; for the built-ins name is ``cubic`` or ``quadratic``."""
    g_expr = parse_g(g)
    a, exact = solve_half_width(g_expr, dps)
    gp = sp.diff(g_expr, T)
    sigma = S.scale
    # Normalization in the standardized distance u = |t - mu| / sigma.
    mass = sp.simplify(2 * sp.integrate(gp.subs(T, A) - gp, (T, 0, A)))
    normalization = sp.Eq(mass, 1)
    lam = -gp.subs(T, a) / sigma
    half_width = sigma * a
    inside = gp.subs(T, a) - gp  # sigma * p, as a function of u
    variance = sp.simplify(sigma**2 * 2 * sp.integrate(T**2 * inside, (T, 0, a)))
    int_p2 = sp.simplify(2 * sp.integrate(sp.expand(inside**2), (T, 0, a)) / sigma)
    entropy = sp.simplify((1 - int_p2) / 2)

    distance = sp.Abs(S.x - S.loc) / sigma
    density = (gp.subs(T, a) - gp.subs(T, distance)) / sigma
    pdf = sp.Piecewise((density, density > 0), (0, True))
    logpdf = sp.Piecewise((sp.log(density), density > 0), (-sp.oo, True))
    # Mass within standardized distance e of a support edge, expanded in e.
    e = sp.Symbol("e", nonnegative=True)
    tail = sp.expand(sp.integrate((gp.subs(T, a) - gp.subs(T, a - T)), (T, 0, e)))
    cdf = edge_tail_cdf(tail, e, half_width, unit=sigma)
    args = (S.x, S.loc, sigma)
    kernels = (
        *common_kernels(lam, "lambda = -g'(a)/sigma.", half_width, variance, entropy, pdf, logpdf),
        Kernel("cdf", args, cdf, "cdf (tails expanded in the distance to the edge).", ("numpy",)),
        Kernel(
            "tail_mass", (e,), tail, "Mass within standardized distance e of an edge.", ("numpy",)
        ),
    )
    return FamilyDerivation(
        name=f"location_scale_{name}",
        title=f"Location-scale family, g(t) = {sp.sstr(g_expr)}",
        source="Martins 2020 eq (13)",
        alpha=sp.Integer(2),
        symbols={"x": S.x, "loc": S.loc, "scale": sigma, "a": A, "t": T},
        score=-gp.subs(T, distance) / sigma,
        density=PositivePart(density),
        normalization=normalization,
        threshold=lam,
        support=half_width,
        mean=S.loc,
        variance=variance,
        tsallis_entropy=entropy,
        cdf=cdf,
        notes=(
            f"a = {sp.sstr(a)} ({'exact' if exact else f'mpmath root, {dps} digits'}).",
            "ppf: numeric inversion of the cdf (tails via tail_mass).",
        ),
        kernels=kernels,
    )
