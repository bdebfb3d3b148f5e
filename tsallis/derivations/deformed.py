"""beta-logarithm, beta-exponential (Martins 2020 eq 4) and the Tsallis entropy term (eq 6).

Each is defined from the paper, rewritten into a form that is smooth
through beta = 1, and the rewrite is checked symbolically against the
definition.
"""

from __future__ import annotations

from collections.abc import Callable

import sympy as sp

from tsallis.derivations import symbols as S
from tsallis.derivations.primitives import exprel, log1prel, softplus
from tsallis.derivations.result import FamilyDerivation, Kernel


def log_beta_definition(u: sp.Expr, beta: sp.Expr) -> sp.Expr:
    """(u^(1-beta) - 1) / (1 - beta)."""
    return (u ** (1 - beta) - 1) / (1 - beta)


def exp_beta_definition(u: sp.Expr, beta: sp.Expr) -> sp.Expr:
    """(1 + (1-beta) u)^(1/(1-beta)) where the base is positive."""
    return (1 + (1 - beta) * u) ** (1 / (1 - beta))


def verify_z_scaling(log_index: Callable[[sp.Expr], sp.Expr] = lambda alpha: alpha) -> bool:
    """Moreno 2022 Lemma 5.3: (1/Z) exp_{2-a}(Z^(a-1) f) = exp_{2-a}(f - log_a Z), Z > 0.

    Checked where the bases are positive: the right base equals Z^(1-a) times
    the left one (so the supports agree), and the powers then match.
    """
    alpha, f = sp.Symbol("alpha", positive=True), sp.Symbol("f", real=True)
    z = sp.Symbol("Z", positive=True)
    log_alpha_z = log_beta_definition(z, log_index(alpha))  # log_alpha, as in the lemma
    left_base = (
        1 + (alpha - 1) * z ** (alpha - 1) * f
    )  # exp_{2-alpha}: 1 + (1 - beta) u, beta = 2 - alpha
    right_base = 1 + (alpha - 1) * (f - log_alpha_z)
    if sp.simplify(right_base - z ** (1 - alpha) * left_base) != 0:
        return False
    power = 1 / (alpha - 1)
    left = left_base**power / z
    right = (z ** (1 - alpha)) ** power * left_base**power
    return sp.simplify(sp.powsimp(left - right, force=True)) == 0


def log_beta_at_zero() -> tuple[sp.Expr, sp.Expr]:
    """lim_{u -> 0+} log_beta(u): (value for beta < 1, value for beta > 1), from eq 4.

    beta = 1 gives log 0 = -oo, the same as beta > 1.
    """
    u, beta = S.u, S.beta
    d = sp.Symbol("d", positive=True)
    below = sp.limit(log_beta_definition(u, 1 - d), u, 0, "+").subs(d, 1 - beta)
    above = sp.limit(log_beta_definition(u, 1 + d), u, 0, "+")
    if sp.simplify(below + 1 / (1 - beta)) != 0 or above != -sp.oo:
        raise AssertionError(f"log_beta at u = 0: unexpected limits {below}, {above}")
    return below, above


def entropy_edge_slope() -> sp.Expr:
    """lim_{p -> 0+} d/dp of the entropy term -p log_{2-alpha}(p) / alpha (eq 6) for
    alpha > 1, from the definition of log_beta (eq 4): 1 / (alpha (alpha - 1)); checked
    to be +oo for alpha < 1 and at alpha = 1 (Shannon's -log p - 1)."""
    p = sp.Symbol("p", positive=True)
    d = sp.Symbol("d", positive=True)

    def slope(alpha: sp.Expr) -> sp.Expr:
        term = -p * log_beta_definition(p, 2 - alpha) / alpha
        return sp.limit(sp.diff(term, p), p, 0, "+")

    above = sp.simplify(slope(1 + d).subs(d, S.alpha - 1))
    below = slope(1 - d)
    shannon = sp.limit(sp.diff(-p * sp.log(p), p), p, 0, "+")
    if below != sp.oo or shannon != sp.oo:
        raise AssertionError(f"entropy slope at p = 0 below 1: {below}, {shannon}, not +oo")
    return above


def derive_deformed() -> FamilyDerivation:
    """Stable forms, checked against eq 4.

    log_beta = log(u) exprel((1-beta) log u); exp_beta = exp(u log1prel((1-beta) u)).
    """
    u, beta, p, alpha = S.u, S.beta, S.p, S.alpha
    log_b = sp.log(u) * exprel((1 - beta) * sp.log(u))
    at_zero = log_beta_at_zero()
    base = 1 + (1 - beta) * u
    exp_inside = sp.exp(u * log1prel((1 - beta) * u))
    if not verify_z_scaling():
        raise AssertionError("Lemma 5.3 (Z-scaling) failed to verify")
    # log_beta(u) u^beta = (u - u^beta) / (1 - beta): the numerator of the Newton step on
    # log_{2-alpha}(sum p) (core.discrete.entmax_newton), beta = 2 - alpha, u = sum p
    newton_numerator = u * sp.log(u) * exprel((beta - 1) * sp.log(u))
    checks = [
        (log_b.rewrite(sp.exp), log_beta_definition(u, beta)),
        (newton_numerator.rewrite(sp.exp), log_beta_definition(u, beta) * u**beta),
        (sp.log(exp_inside.rewrite(sp.log)), sp.log(exp_beta_definition(u, beta))),
    ]
    for stable, definition in checks:
        difference = sp.simplify(sp.expand_log(stable - definition, force=True))
        if difference != 0:
            raise AssertionError(f"stable form differs from the definition by {difference}")
    # Outside the base's positive range: 0 for beta < 1 ([.]_+), the pole +oo for beta > 1.
    exp_b = sp.Piecewise((exp_inside, base > 0), (0, beta < 1), (sp.oo, True))
    # Moreno 2022 sec 5.3.1: [v]_+ replaced by softplus(s v) / s (sharpness s > 0), which
    # tends to [v]_+ as s -> oo with bias at most log(2)/s.
    sharpness = sp.Symbol("sharpness", positive=True)
    v = sp.Symbol("v", real=True)
    smooth_positive = softplus(sharpness * v) / sharpness
    smooth_exp_b = (smooth_positive.subs(v, base)) ** (1 / (1 - beta))
    bias = sp.limit(softplus(sharpness * v).rewrite(sp.log) / sharpness - v, v, sp.oo)
    if (
        bias != 0
        or sp.simplify(smooth_positive.rewrite(sp.log).subs(v, 0) - sp.log(2) / sharpness) != 0
    ):
        raise AssertionError("softplus smoothing: expected zero bias at +oo and log(2)/s at 0")
    # log exp_beta(u) for beta <= 1: u log1prel((1-beta) u) on the support, -oo outside.
    log_exp_b = sp.Piecewise((u * log1prel((1 - beta) * u), base > 0), (-sp.oo, True))
    # -p log_{2-alpha}(p) / alpha, with 0 log 0 = 0. At p = 0 the value is 0 and, for
    # alpha > 1, p times the term's one-sided slope there (entropy_edge_slope), so that
    # Torch's gradient at p = 0 is that slope (a Fenchel-Young loss's gradient in a
    # target with zeros); for alpha <= 1 the slope is +oo and the branch 0 (gradient 0).
    term = sp.Piecewise(
        (-p * log_b.subs({u: p, beta: 2 - alpha}) / alpha, p > 0),
        (entropy_edge_slope() * p, alpha > 1),
        (0, True),
    )
    # u = 0: the limits (log u exprel(...) would be -inf * 0 = NaN there). In Torch the
    # gradient there is d/dbeta of the limit, and 0 with respect to u (the one-sided
    # derivative u^-beta is +inf for beta > 0; 0 keeps every gradient free of NaN).
    u0 = sp.Symbol("u", nonnegative=True)  # u = 0 included (S.u is positive)
    log_b_total = sp.Piecewise(
        (log_b.subs(u, u0), u0 > 0), (at_zero[0], beta < 1), (at_zero[1], True)
    )
    kernels = (
        Kernel(
            "log_beta",
            (u0, beta),
            log_b_total,
            "beta-logarithm (eq 4), smooth through beta = 1; its limit at u = 0.",
        ),
        Kernel(
            "log_beta_times_power",
            (u, beta),
            newton_numerator,
            "log_beta(u) u^beta for u > 0, smooth through beta = 1 (a Newton step's numerator).",
        ),
        Kernel("exp_beta", (u, beta), exp_b, "beta-exponential (eq 4), smooth through beta = 1."),
        Kernel(
            "tsallis_entropy_term",
            (p, alpha),
            term,
            "-p log_{2-alpha}(p) / alpha; summed it is H_alpha (eq 6). At p = 0: 0, with the"
            " one-sided slope there as its gradient for alpha > 1 (+oo below: 0).",
        ),
        Kernel(
            "log_exp_beta",
            (u, beta),
            log_exp_b,
            "log exp_beta(u) for beta <= 1 (-inf outside the support), for log-space integrals.",
        ),
        Kernel(
            "softplus_positive",
            (v, sharpness),
            smooth_positive,
            "softplus(s v) / s, the smoothed [v]_+ (Moreno 2022 sec 5.3.1).",
        ),
        Kernel(
            "smoothed_exp_beta",
            (u, beta, sharpness),
            smooth_exp_b,
            "exp_beta with [.]_+ smoothed by softplus (beta < 1).",
        ),
    )
    return FamilyDerivation(
        name="deformed",
        title="Deformed logarithm and exponential",
        source="Martins 2020 eqs (4), (6)",
        alpha=alpha,
        symbols={"u": u, "beta": beta, "p": p, "alpha": alpha},
        score=sp.S.Zero,
        density=sp.S.Zero,
        normalization=sp.Eq(log_b.rewrite(sp.exp), log_beta_definition(u, beta)),
        threshold=sp.S.Zero,
        support=sp.S.Zero,
        mean=sp.S.Zero,
        variance=sp.S.Zero,
        tsallis_entropy=sp.S.Zero,
        kernels=kernels,
    )
