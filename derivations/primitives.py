"""SymPy functions that the printers know and SymPy lacks.

They keep the numerically stable forms intact through code generation and
rewrite to elementary expressions for symbolic checks.
"""

from __future__ import annotations

import sympy as sp

__all__ = [
    "LogGammaRatio",
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


class LogGammaRatio(sp.Function):
    """log Gamma(x + h) - log Gamma(x), printed as a stable helper.

    The difference of two log-gammas loses about x * eps when x is large (alpha
    close to 1 gives x = 1/(alpha - 1)); the helper uses Stirling's series there.
    """

    nargs = 2

    def _eval_rewrite_as_loggamma(self, x: sp.Expr, h: sp.Expr, **kwargs: object) -> sp.Expr:
        return sp.loggamma(x + h) - sp.loggamma(x)

    def _latex(self, printer: sp.printing.latex.LatexPrinter, exp: str | None = None) -> str:
        x, h = (printer._print(a) for a in self.args)
        text = rf"\log\frac{{\Gamma({x} + {h})}}{{\Gamma({x})}}"
        return text if exp is None else rf"\left({text}\right)^{{{exp}}}"


def combine_loggamma_ratios(expr: sp.Expr) -> sp.Expr:
    """Rewrite c log Gamma(A) - c log Gamma(B) as c LogGammaRatio(min, |A - B|) in every sum.

    Applied when A - B does not depend on every symbol of A (the large argument
    cancels, as in Gamma(k + 3/2) / Gamma(k + 1)); log(gamma(z)) counts as
    log Gamma(z). Only sums holding such a pair are rebuilt (xreplace), so that
    SymPy re-evaluates nothing else. An exact identity.
    """

    def split(term: sp.Expr) -> tuple[sp.Expr, sp.Expr] | None:
        coeff, rest = term.as_independent(sp.loggamma, sp.gamma, as_Add=False)
        if isinstance(rest, sp.loggamma):
            return coeff, rest.args[0]
        if isinstance(rest, sp.log) and isinstance(rest.args[0], sp.gamma):
            return coeff, rest.args[0].args[0]
        return None

    def pair(add: sp.Add) -> sp.Expr | None:
        terms = list(add.args)
        for i, first in enumerate(terms):
            pa = split(first)
            for j in range(i + 1, len(terms)) if pa else ():
                pb = split(terms[j])
                if pb is None or sp.simplify(pa[0] + pb[0]) != 0:
                    continue
                diff = sp.simplify(pa[1] - pb[1])  # A - B
                if diff == 0 or diff.free_symbols >= pa[1].free_symbols:
                    continue
                if diff.is_nonnegative:
                    new = pa[0] * LogGammaRatio(pb[1], diff)
                elif (-diff).is_nonnegative:
                    new = -pa[0] * LogGammaRatio(pa[1], -diff)
                else:
                    continue
                rest = [t for k, t in enumerate(terms) if k not in (i, j)]
                combined = sp.Add(*rest, new)
                again = pair(combined) if isinstance(combined, sp.Add) else None
                return combined if again is None else again
        return None

    mapping = {}
    for node in sp.preorder_traversal(expr):
        if isinstance(node, sp.Add) and node not in mapping:
            new = pair(node)
            if new is not None:
                mapping[node] = new
    return expr.xreplace(mapping) if mapping else expr
