"""Symbolic checks: the derived closed forms equal the papers' printed formulas
(typed here only as independent oracles) and reduce to each other."""

from __future__ import annotations

import re

import mpmath as mp
import pytest
import sympy as sp

from tsallis.derivations import symbols as S
from tsallis.derivations.beta_gaussian import derive_beta_gaussian
from tsallis.derivations.location_scale import InvalidScoreError, derive_location_scale, parse_g
from tsallis.derivations.result import FamilyDerivation


def _same_positive(a: sp.Expr, b: sp.Expr) -> bool:
    """a == b for positive expressions, through exp((log a - log b)) == 1."""
    diff = sp.expand(sp.expand_func(sp.expand_log(sp.log(a) - sp.log(b), force=True)))
    return (
        sp.simplify(sp.gammasimp(sp.exp(sp.expand(diff * (S.n + 2))))) == 1
        or sp.simplify(diff) == 0
    )


def test_eq10_truncated_parabola(derived):
    paper = -sp.Rational(1, 2) * (3 / (2 * S.scale)) ** sp.Rational(2, 3)
    assert sp.simplify(derived["truncated_parabola"].threshold - paper) == 0
    # support a = (3 sigma^2 / 2)^(1/3)
    assert (
        sp.simplify(
            derived["truncated_parabola"].support - (3 * S.scale**2 / 2) ** sp.Rational(1, 3)
        )
        == 0
    )


def test_eq11_truncated_paraboloid(derived):
    paper = -(
        (sp.gamma(S.n / 2 + 2) / sp.sqrt((2 * sp.pi) ** S.n * sp.exp(S.logdet)))
        ** (sp.Rational(2) / (2 + S.n))
    )
    assert _same_positive(-paper, -derived["truncated_paraboloid"].threshold)


def test_eq12_triangular(derived):
    assert sp.simplify(derived["triangular"].threshold + 1 / sp.sqrt(S.scale)) == 0
    assert sp.simplify(derived["triangular"].variance - S.scale / 6) == 0


def test_eq11_reduces_to_eq10(derived):
    one_d = derived["truncated_paraboloid"].threshold.subs({S.n: 1, S.logdet: 2 * sp.log(S.scale)})
    assert sp.simplify(one_d - derived["truncated_parabola"].threshold) == 0


def test_location_scale_builtins_reduce(derived):
    sigma_tp = sp.Symbol("sigma_tp", positive=True)
    cubic = derived["location_scale_cubic"]
    # g = t^3/6 is the truncated parabola with sigma_ls^3 = sigma_TP^2
    lam = cubic.threshold.subs(S.scale, sigma_tp ** sp.Rational(2, 3))
    assert sp.simplify(lam - derived["truncated_parabola"].threshold.subs(S.scale, sigma_tp)) == 0
    dens = cubic.density.args[0].subs(S.scale, sigma_tp ** sp.Rational(2, 3))
    tp = derived["truncated_parabola"].density.args[0].subs(S.scale, sigma_tp)
    assert sp.simplify((dens - tp).subs(S.x, S.loc + sp.Rational(1, 3))) == 0
    # g = t^2/2 is the triangular family with b = sigma^2
    quad = derived["location_scale_quadratic"]
    b = sp.Symbol("b", positive=True)
    assert (
        sp.simplify(
            quad.threshold.subs(S.scale, sp.sqrt(b))
            - derived["triangular"].threshold.subs(S.scale, b)
        )
        == 0
    )
    assert (
        sp.simplify(
            quad.variance.subs(S.scale, sp.sqrt(b))
            - derived["triangular"].variance.subs(S.scale, b)
        )
        == 0
    )


def test_beta_gaussian_alpha2_is_paraboloid(derived):
    bg = derived["beta_gaussian"].threshold.subs(S.alpha, 2)
    assert _same_positive(-bg, -derived["truncated_paraboloid"].threshold)


def test_beta_gaussian_spec_normalization(derived):
    """Normalization: (2 pi)^(N/2) det^(1/2) (alpha-1)^k c^(k+N/2) Gamma(k+1)/Gamma(k+1+N/2) = 1."""
    c = -derived["beta_gaussian"].threshold
    k = 1 / (S.alpha - 1)
    spec = (
        (2 * sp.pi) ** (S.n / 2)
        * sp.exp(S.logdet / 2)
        * (S.alpha - 1) ** k
        * c ** (k + S.n / 2)
        * sp.gamma(k + 1)
        / sp.gamma(k + 1 + S.n / 2)
    )
    value = sp.lambdify((S.alpha, S.n, S.logdet), spec, modules="mpmath")
    with mp.workdps(40):
        for alpha, n, logdet in [
            ("1.01", 1, "0"),
            ("4/3", 3, "-20"),
            ("5", 5, "7.5"),
            ("2", 2, "1"),
        ]:
            assert abs(value(mp.mpf(sp.Rational(alpha)), n, mp.mpf(logdet)) - 1) < 1e-35


def test_beta_gaussian_alpha_to_one_is_gaussian(derived):
    """The Tsallis entropy tends to the Gaussian's Shannon entropy as alpha -> 1 (40 digits)."""
    bg = derived["beta_gaussian"]
    for n, logdet in [(1, 0), (3, 2)]:
        entropy = sp.lambdify((S.alpha, S.n, S.logdet), bg.tsallis_entropy, modules="mpmath")
        with mp.workdps(40):
            h = entropy(1 + mp.mpf(10) ** -12, n, logdet)
            shannon = mp.mpf(logdet) / 2 + n * (1 + mp.log(2 * mp.pi)) / 2
            assert abs(h - shannon) < 1e-10


def test_location_scale_numeric_root_precision():
    result = derive_location_scale("cosh(t)", dps=50)
    a = result.support / S.scale
    with mp.workdps(60):
        am = mp.mpf(str(a))
        assert abs(am * mp.sinh(am) - mp.cosh(am) + 1 - mp.mpf(1) / 2) < mp.mpf("1e-48")
    assert "mpmath root, 50 digits" in result.notes[0]


def test_location_scale_exact_root_quartic():
    result = derive_location_scale("t**4/12")
    assert sp.simplify(result.support / S.scale - 2 ** sp.Rational(1, 4)) == 0
    assert "exact" in result.notes[0]


@pytest.mark.parametrize(
    ("g", "message"),
    [
        ("-t**2", "not convex"),
        ("t", "no solution"),
        ("sqrt(t)", "not C^1"),
        ("Abs(t - 1)", "not continuously differentiable"),
        ("t**3 + y", "unknown name 'y'"),
        ("t**(", "cannot parse"),
    ],
)
def test_location_scale_rejects_bad_g(g, message):
    with pytest.raises(InvalidScoreError, match=re.escape(message)):
        parse_g(g) if message != "no solution" else derive_location_scale(g)


def test_derivation_objects_carry_symbols_and_equations(derived):
    for name, result in derived.items():
        assert result.kernels, name
        if isinstance(result, FamilyDerivation):  # a KernelSet (attention) solves no int p = 1
            assert isinstance(result.normalization, sp.Eq), name
        for kernel in result.kernels:
            assert kernel.expr.free_symbols <= set(kernel.args), (name, kernel.name)
    assert S.alpha.is_positive and S.scale.is_positive and S.n.is_integer


def test_beta_gaussian_derivation_is_repeatable():
    a, b = derive_beta_gaussian(), derive_beta_gaussian()
    assert [k.expr for k in a.kernels] == [k.expr for k in b.kernels]
