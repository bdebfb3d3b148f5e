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
    "edge_exp",
    "expm1",
    "exprel",
    "log1p",
    "log1prel",
    "log1prel_slope",
    "softplus",
    "with_edge_densities",
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

    def fdiff(self, argindex: int = 1) -> sp.Expr:
        return log1prel_slope(self.args[0])


class log1prel_slope(sp.Function):  # noqa: N801
    """d/dx log1prel(x) = (x / (1 + x) - log(1 + x)) / x^2, with value -1/2 at x = 0."""

    nargs = 1

    @classmethod
    def eval(cls, x: sp.Expr) -> sp.Expr | None:
        return sp.Rational(-1, 2) if x.is_zero else None

    def _eval_rewrite_as_log(self, x: sp.Expr, **kwargs: object) -> sp.Expr:
        return (x / (1 + x) - sp.log(1 + x)) / x**2


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
    tail is lost to 1 - Phi rounding. Two more arguments, exp(-lo^2/2) and
    exp(-hi^2/2) (see ``with_edge_densities``), let the printed call share the
    exponentials an expression already holds: each tail is then that exponential
    times erfcx (tsallis.core.arrays.normal_mass).
    """

    nargs = (2, 4)

    def _eval_rewrite_as_erf(
        self, lo: sp.Expr, hi: sp.Expr, *_: sp.Expr, **kwargs: object
    ) -> sp.Expr:
        return (sp.erf(hi / sp.sqrt(2)) - sp.erf(lo / sp.sqrt(2))) / 2

    def _latex(self, printer: sp.printing.latex.LatexPrinter, exp: str | None = None) -> str:
        lo, hi = (printer._print(a) for a in self.args[:2])
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


class edge_exp(sp.Function):  # noqa: N801
    """exp(x) for an edge density exp(-z^2/2) of a window closed form.

    A float32 evaluation under torch.compile may flush it to 0 far in the tail
    (tsallis.core.arrays.edge_exp); it is exp(x) everywhere else, and in every check.
    """

    nargs = 1

    def _eval_rewrite_as_exp(self, x: sp.Expr, **kwargs: object) -> sp.Expr:
        return sp.exp(x)

    def _eval_evalf(self, prec: int) -> sp.Expr:
        return sp.exp(self.args[0])._eval_evalf(prec)

    def _latex(self, printer: sp.printing.latex.LatexPrinter, exp: str | None = None) -> str:
        return printer._print(sp.exp(self.args[0]) if exp is None else sp.exp(self.args[0]) ** exp)


def flushable_edges(expr: sp.Expr) -> sp.Expr:
    """expr with its edge densities exp(-z^2/2) (inside NormalMass too) as edge_exp."""
    edges = {e for mass in expr.atoms(NormalMass) for e in mass.args[2:] if isinstance(e, sp.exp)}
    return expr.xreplace({e: edge_exp(e.args[0]) for e in edges})


def with_edge_densities(expr: sp.Expr) -> sp.Expr:
    """expr with each NormalMass(lo, hi) also given exp(-lo^2/2) and exp(-hi^2/2), where
    expr holds both exponentials already (elsewhere they would be extra work)."""
    held = expr.atoms(sp.exp)

    def shares(e: sp.Basic) -> bool:
        edges = {sp.exp(-(a**2) / 2) for a in e.args}
        return isinstance(e, NormalMass) and len(e.args) == 2 and edges <= held

    return expr.replace(
        shares, lambda e: NormalMass(*e.args, *(sp.exp(-(a**2) / 2) for a in e.args))
    )
