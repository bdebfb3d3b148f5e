"""SymPy functions that the printers know and SymPy lacks.

They keep the numerically stable forms intact through code generation and
rewrite to elementary expressions for symbolic checks.
"""

from __future__ import annotations

import sympy as sp

__all__ = [
    "NormalMass",
    "PositivePart",
    "betaincinv",
    "expm1",
    "exprel",
    "log1p",
    "log1prel",
    "softplus",
]


class PositivePart(sp.Function):
    """[u]_+ = max(u, 0)."""

    nargs = 1

    @classmethod
    def eval(cls, u: sp.Expr) -> sp.Expr | None:
        if u.is_nonnegative:
            return u
        if u.is_nonpositive:
            return sp.S.Zero
        return None

    def _eval_rewrite_as_Max(self, u: sp.Expr, **kwargs: object) -> sp.Expr:  # noqa: N802
        return sp.Max(u, 0)

    def _latex(self, printer: sp.printing.latex.LatexPrinter, exp: str | None = None) -> str:
        text = r"\left[" + printer._print(self.args[0]) + r"\right]_+"
        return text if exp is None else text + "^{" + exp + "}"


class exprel(sp.Function):  # noqa: N801 (named like scipy.special.exprel)
    """(exp(x) - 1) / x, with exprel(0) = 1."""

    nargs = 1

    @classmethod
    def eval(cls, x: sp.Expr) -> sp.Expr | None:
        return sp.S.One if x.is_zero else None

    def _eval_rewrite_as_exp(self, x: sp.Expr, **kwargs: object) -> sp.Expr:
        return (sp.exp(x) - 1) / x


class log1prel(sp.Function):  # noqa: N801
    """log(1 + x) / x, with log1prel(0) = 1."""

    nargs = 1

    @classmethod
    def eval(cls, x: sp.Expr) -> sp.Expr | None:
        return sp.S.One if x.is_zero else None

    def _eval_rewrite_as_log(self, x: sp.Expr, **kwargs: object) -> sp.Expr:
        return sp.log(1 + x) / x


class betaincinv(sp.Function):  # noqa: N801
    """Inverse in x of the regularized incomplete beta function I_x(a, b)."""

    nargs = 3


class expm1(sp.Function):  # noqa: N801
    """exp(x) - 1, kept unevaluated (SymPy's own folds exp(log(a) + b))."""

    nargs = 1

    def _eval_rewrite_as_exp(self, x: sp.Expr, **kwargs: object) -> sp.Expr:
        return sp.exp(x) - 1

    def _latex(self, printer: sp.printing.latex.LatexPrinter, exp: str | None = None) -> str:
        return r"\operatorname{expm1}\left(" + printer._print(self.args[0]) + r"\right)"


class log1p(sp.Function):  # noqa: N801
    """log(1 + x), kept unevaluated."""

    nargs = 1

    def _eval_rewrite_as_log(self, x: sp.Expr, **kwargs: object) -> sp.Expr:
        return sp.log(1 + x)

    def _latex(self, printer: sp.printing.latex.LatexPrinter, exp: str | None = None) -> str:
        return r"\operatorname{log1p}\left(" + printer._print(self.args[0]) + r"\right)"


class softplus(sp.Function):  # noqa: N801
    """log(1 + exp(x)), printed in an overflow-free form."""

    nargs = 1

    def _eval_rewrite_as_log(self, x: sp.Expr, **kwargs: object) -> sp.Expr:
        return sp.log(1 + sp.exp(x))

    def _latex(self, printer: sp.printing.latex.LatexPrinter, exp: str | None = None) -> str:
        return r"\operatorname{softplus}\left(" + printer._print(self.args[0]) + r"\right)"


class NormalMass(sp.Function):
    """Phi(hi) - Phi(lo), the standard normal mass of [lo, hi].

    Printed as a difference of upper tails when lo > 0, so that neither
    tail is lost to 1 - Phi rounding.
    """

    nargs = 2

    def _eval_rewrite_as_erf(self, lo: sp.Expr, hi: sp.Expr, **kwargs: object) -> sp.Expr:
        return (sp.erf(hi / sp.sqrt(2)) - sp.erf(lo / sp.sqrt(2))) / 2

    def _latex(self, printer: sp.printing.latex.LatexPrinter, exp: str | None = None) -> str:
        lo, hi = (printer._print(a) for a in self.args)
        text = rf"\left[\Phi\right]_{{{lo}}}^{{{hi}}}"
        return text if exp is None else rf"\left({text}\right)^{{{exp}}}"
