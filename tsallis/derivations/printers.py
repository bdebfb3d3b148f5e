"""Code printers for the NumPy, Torch and array-namespace (xp) backends.

One small printer walks the SymPy tree and looks every node up in a typed
dispatch table (the sympy2jax pattern); user entries override the defaults.
Anything not in the table raises ``UnprintableError``. This is deliberate:
SymPy 1.14's own TorchPrinter emits code that does not run.

``Piecewise`` becomes nested ``where``. A branch guarded by ``u > 0`` sees u
replaced by ``where(u > 0, u, 1)`` (the double-where pattern), so log/pow of
a negative u in the unused branch cannot put NaN into values or gradients.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import sympy as sp

from tsallis.derivations.primitives import (
    LogGammaRatio,
    NormalMass,
    PositivePart,
    betaincinv,
    edge_exp,
    expm1,
    exprel,
    log1p,
    log1prel,
    log1prel_slope,
    softplus,
)


class UnprintableError(TypeError):
    """Raised for a SymPy node the backend has no translation for."""


class Sanitized(sp.Function):
    """Sanitized(e, b) = e where the guard e > b holds, else b + 1 (which does)."""

    nargs = 2


class Fallback(sp.Function):
    """Fallback(e, safe, c) = safe where the earlier branch's condition c holds, else e.

    c is an argument (the very condition of the Piecewise) so that CSE computes it
    once for both; NaN fails c, so NaN in e reaches the result.
    """

    nargs = 3


Rule = Callable[["BackendPrinter", sp.Basic], str]


def _call(name: str) -> Rule:
    def rule(printer: BackendPrinter, expr: sp.Basic) -> str:
        return f"{name}({', '.join(printer.print(a) for a in expr.args)})"

    return rule


@dataclass(frozen=True)
class Backend:
    """What a generated module of one backend looks like."""

    name: str
    imports: tuple[str, ...]
    where: str
    functions: Mapping[type, Rule]
    arg_prologue: str | None = None  # "{targets} = f({args})" run on entry
    inf: str = "math.inf"
    sqrt: str = "torch.sqrt"
    # name prefix -> import line, added to a module whose code uses that name
    optional_imports: Mapping[str, str] = field(default_factory=dict)


def _normal_mass(name: str, erfcx: str | None) -> Rule:
    """NormalMass(lo, hi[, at_lo, at_hi]): the edge densities (and the erfcx that turns
    them into tails) are passed where the backend uses them, else dropped."""

    def rule(printer: BackendPrinter, expr: sp.Basic) -> str:
        args = expr.args if erfcx else expr.args[:2]
        extra = [erfcx] if erfcx and len(args) == 4 else []
        return f"{name}({', '.join([*(printer.print(a) for a in args), *extra])})"

    return rule


def _log(name: str, lgamma: str) -> Rule:
    """log, with log(gamma(z)) printed as lgamma(z): no overflow of gamma."""

    def rule(printer: BackendPrinter, expr: sp.Basic) -> str:
        (arg,) = expr.args
        if isinstance(arg, sp.gamma):
            return f"{lgamma}({printer.print(arg.args[0])})"
        return f"{name}({printer.print(arg)})"

    return rule


def _torch_gamma(printer: BackendPrinter, expr: sp.Basic) -> str:
    (arg,) = expr.args
    if not arg.is_positive:
        raise UnprintableError(f"torch: gamma({arg}) needs a provably positive argument")
    return f"torch.exp(torch.lgamma({printer.print(arg)}))"


def _betainc(module: str) -> Rule:
    def rule(printer: BackendPrinter, expr: sp.Basic) -> str:
        a, b, x1, x2 = (printer.print(v) for v in expr.args)
        if expr.args[2] == 0:
            return f"{module}.betainc({a}, {b}, {x2})"
        return f"({module}.betainc({a}, {b}, {x2}) - {module}.betainc({a}, {b}, {x1}))"

    return rule


def _heaviside(where: str) -> Rule:
    def rule(printer: BackendPrinter, expr: sp.Basic) -> str:
        x = printer.print(expr.args[0])
        half = printer.print(expr.args[1]) if len(expr.args) > 1 else "0.5"
        return f"{where}({x} > 0, 1.0, {where}({x} < 0, 0.0, {half}))"

    return rule


def _max_min(binary: str, clamp: str | None) -> Rule:
    def rule(printer: BackendPrinter, expr: sp.Basic) -> str:
        numbers = [a for a in expr.args if a.is_number]
        others = [printer.print(a) for a in expr.args if not a.is_number]
        if clamp is not None and len(numbers) == 1 and len(others) == 1:
            return f"torch.clamp({others[0]}, {clamp}={printer.print(numbers[0])})"
        parts = others + [printer.print(n) for n in numbers]
        out = parts[0]
        for part in parts[1:]:
            out = f"{binary}({out}, {part})"
        return out

    return rule


def _fallback(where: str) -> Rule:
    def rule(printer: BackendPrinter, expr: sp.Basic) -> str:
        e, safe, cond = (printer.print(a) for a in expr.args)
        return f"{where}({cond}, {safe}, {e})"

    return rule


def _sanitized(where: str) -> Rule:
    def rule(printer: BackendPrinter, expr: sp.Basic) -> str:
        e, bound = expr.args
        text = printer.print(e)
        return f"{where}({text} > {printer.print(bound)}, {text}, {printer.print(bound + 1)})"

    return rule


_ELEMENTARY = (
    sp.sin,
    sp.cos,
    sp.tan,
    sp.asin,
    sp.acos,
    sp.atan,
    sp.sinh,
    sp.cosh,
    sp.tanh,
    sp.asinh,
    sp.acosh,
    sp.atanh,
)
_NUMPY_NAMES = {
    sp.asin: "arcsin",
    sp.acos: "arccos",
    sp.atan: "arctan",
    sp.asinh: "arcsinh",
    sp.acosh: "arccosh",
    sp.atanh: "arctanh",
}


NUMPY = Backend(
    name="numpy",
    imports=(
        "import numpy as np",
        "import scipy.special as _sp",
        "from tsallis.core import special as _special",
    ),
    where="np.where",
    inf="np.inf",
    sqrt="np.sqrt",
    arg_prologue="{targets} = _special.as_arrays({args})",
    functions={
        sp.exp: _call("np.exp"),
        sp.log: _log("np.log", "_sp.gammaln"),
        sp.Abs: _call("np.abs"),
        sp.sign: _call("np.sign"),
        sp.erf: _call("_sp.erf"),
        sp.erfc: _call("_sp.erfc"),
        sp.erfinv: _call("_sp.erfinv"),
        sp.erfcinv: _call("_sp.erfcinv"),
        sp.loggamma: _call("_sp.gammaln"),
        sp.gamma: _call("_sp.gamma"),
        expm1: _call("np.expm1"),
        log1p: _call("np.log1p"),
        exprel: _call("_sp.exprel"),
        log1prel: _call("_special.log1prel"),
        softplus: lambda p, e: f"np.logaddexp(0.0, {p.print(e.args[0])})",
        betaincinv: _call("_special.betaincinv"),
        sp.betainc_regularized: _betainc("_sp"),
        sp.Heaviside: _heaviside("np.where"),
        sp.Max: _max_min("np.maximum", None),
        sp.Min: _max_min("np.minimum", None),
        PositivePart: lambda p, e: f"np.maximum({p.print(e.args[0])}, 0.0)",
        NormalMass: _normal_mass("_special.normal_mass", None),
        edge_exp: _call("np.exp"),
        LogGammaRatio: _call("_special.lgamma_ratio"),
        **{f: _call("np." + _NUMPY_NAMES.get(f, f.__name__)) for f in _ELEMENTARY},
        Sanitized: _sanitized("np.where"),
        Fallback: _fallback("np.where"),
    },
)

TORCH = Backend(
    name="torch",
    imports=("import math", "", "import torch", "", "from torch_bridge import _special"),
    where="torch.where",
    arg_prologue="{targets} = _special.promote({args})",
    functions={
        sp.exp: _call("torch.exp"),
        sp.log: _log("torch.log", "torch.lgamma"),
        sp.Abs: _call("torch.abs"),
        sp.sign: _call("torch.sign"),
        sp.erf: _call("torch.erf"),
        sp.erfc: _call("torch.erfc"),
        sp.erfinv: _call("torch.erfinv"),
        sp.loggamma: _call("torch.lgamma"),
        sp.gamma: _torch_gamma,
        expm1: _call("torch.expm1"),
        log1p: _call("torch.log1p"),
        exprel: _call("_special.exprel"),
        log1prel: _call("_special.log1prel"),
        softplus: _call("torch.nn.functional.softplus"),
        sp.Heaviside: _heaviside("torch.where"),
        sp.Max: _max_min("torch.maximum", "min"),
        sp.Min: _max_min("torch.minimum", "max"),
        PositivePart: lambda p, e: f"torch.clamp({p.print(e.args[0])}, min=0.0)",
        NormalMass: _normal_mass("_special.normal_mass", None),
        edge_exp: _call("torch.exp"),
        LogGammaRatio: _call("_special.lgamma_ratio"),
        **{f: _call("torch." + f.__name__) for f in _ELEMENTARY},
        Sanitized: _sanitized("torch.where"),
        Fallback: _fallback("torch.where"),
    },
)

# One module for both: the array namespace xp of the arguments (NumPy or Torch,
# through array-api-compat), special functions from tsallis.core.arrays.
ARRAY_API = Backend(
    name="xp",
    imports=("import math", "", "from tsallis.core import arrays as _xs"),
    where="xp.where",
    arg_prologue="xp, ({targets}) = _xs.arrays({args})",
    sqrt="xp.sqrt",
    functions={
        sp.exp: _call("xp.exp"),
        sp.log: _log("xp.log", "_xs.lgamma"),
        sp.Abs: _call("xp.abs"),
        sp.sign: _call("xp.sign"),
        sp.erf: _call("_xs.erf"),
        sp.erfc: _call("_xs.erfc"),
        sp.loggamma: _call("_xs.lgamma"),
        expm1: _call("_xs.expm1"),
        log1p: _call("xp.log1p"),
        exprel: _call("_xs.exprel"),
        log1prel: _call("_xs.log1prel"),
        log1prel_slope: _call("_xs.log1prel_slope"),
        softplus: _call("_xs.softplus"),
        sp.Heaviside: _heaviside("xp.where"),
        sp.Max: _max_min("xp.maximum", None),
        sp.Min: _max_min("xp.minimum", None),
        PositivePart: lambda p, e: f"xp.clip({p.print(e.args[0])}, min=0.0)",
        NormalMass: _normal_mass("_xs.normal_mass", "_fits.erfcx_of_t"),
        edge_exp: _call("_xs.edge_exp"),
        LogGammaRatio: _call("_xs.lgamma_ratio"),
        **{f: _call("xp." + f.__name__) for f in _ELEMENTARY},
        Sanitized: _sanitized("xp.where"),
        Fallback: _fallback("xp.where"),
    },
    optional_imports={"_fits.": "from tsallis.core._generated import special_functions as _fits"},
)

BACKENDS: dict[str, Backend] = {"numpy": NUMPY, "torch": TORCH, "xp": ARRAY_API}

_RELATIONS = {
    sp.StrictGreaterThan: ">",
    sp.GreaterThan: ">=",
    sp.StrictLessThan: "<",
    sp.LessThan: "<=",
    sp.Eq: "==",
}


def float_literal(value: sp.Expr) -> str:
    """A deterministic Python literal for a numeric SymPy expression."""
    number = float(sp.N(value, 30))
    if number != number:
        raise UnprintableError(f"{value} evaluates to NaN")
    if number in (float("inf"), float("-inf")):
        raise UnprintableError(f"{value} is not finite; use oo only as a Piecewise value")
    return repr(number)


def _guard(cond: sp.Basic) -> tuple[sp.Expr, sp.Expr] | None:
    """(e, b) for a strict guard that reads e > b with b a number."""
    if isinstance(cond, sp.StrictGreaterThan):
        e, b = cond.lhs, cond.rhs
    elif isinstance(cond, sp.StrictLessThan):
        e, b = cond.rhs, cond.lhs
    else:
        return None
    if e.is_number and b.is_number:
        return None
    if e.is_number:  # b < e read as -b > -e
        e, b = -b, -e
    return (e, b) if b.is_number else None


def _excluded(cond: sp.Basic) -> tuple[sp.Expr, sp.Expr] | None:
    """(e, safe) for a non-strict cond e >= b or e <= b (b a number); safe fails it."""
    if not isinstance(cond, (sp.GreaterThan, sp.LessThan)):
        return None
    e, b = cond.lhs, cond.rhs
    if e.is_number:
        e, b, cond = b, e, cond.reversed
    if not b.is_number or e.is_number:
        return None
    return (e, b - 1) if isinstance(cond, sp.GreaterThan) else (e, b + 1)


def sanitize_piecewise(expr: sp.Expr) -> sp.Expr:
    """Apply the double-where rule to every guarded branch.

    A branch with a strict guard e > b sees e replaced by Sanitized(e, b):
    where(e > b, e, b + 1). SymPy may store u > 0 as -u < 0; the guard is read
    back as u > 0. NaN fails such a guard, so it gives the other branch's value.

    The NaN-propagating form: Piecewise((v, e >= b), (f, True)) (or e <= b) sees
    e in f replaced by Fallback(e, b -+ 1, cond): where(cond, b -+ 1, e). NaN
    fails cond, so f, and the result, get the NaN; the condition is computed once.
    """

    def fix(pw: sp.Piecewise) -> sp.Piecewise:
        pairs = []
        for index, (branch, cond) in enumerate(pw.args):
            guard = _guard(cond)
            if guard is not None:
                e, b = guard
                branch = branch.xreplace({e: Sanitized(e, b)})
            elif cond is sp.true and index == 1:
                excluded = _excluded(pw.args[0][1])
                if excluded is not None:
                    e, safe = excluded
                    branch = branch.subs(e, Fallback(e, safe, pw.args[0][1]))
            pairs.append((branch, cond))
        return sp.Piecewise(*pairs, evaluate=False)

    return expr.replace(lambda e: isinstance(e, sp.Piecewise), fix)


@dataclass
class BackendPrinter:
    """Prints a SymPy expression as backend code, or raises."""

    backend: Backend
    overrides: Mapping[type, Rule] = field(default_factory=dict)

    def rule_for(self, expr: sp.Basic) -> Rule | None:
        for cls in type(expr).__mro__:
            if cls in self.overrides:
                return self.overrides[cls]
            if cls in self.backend.functions:
                return self.backend.functions[cls]
        return None

    def print(self, expr: sp.Basic) -> str:
        if expr is sp.oo:
            return self.backend.inf
        if expr is sp.S.NegativeInfinity:
            return f"-{self.backend.inf}"
        if isinstance(expr, sp.Symbol):
            return expr.name
        if isinstance(expr, sp.Integer):
            return str(int(expr))
        if isinstance(expr, sp.Expr) and expr.is_number and not expr.has(sp.Piecewise):
            return float_literal(expr)
        rule = self.rule_for(expr)
        if rule is not None:
            return rule(self, expr)
        if isinstance(expr, sp.Add):
            return self._add(expr)
        if isinstance(expr, sp.Mul):
            return self._mul(expr)
        if isinstance(expr, sp.Pow):
            return self._pow(expr)
        if isinstance(expr, sp.Piecewise):
            return self._piecewise(expr)
        if type(expr) in _RELATIONS:
            return f"({self.print(expr.lhs)} {_RELATIONS[type(expr)]} {self.print(expr.rhs)})"
        if isinstance(expr, sp.And):
            return "(" + " & ".join(self.print(a) for a in expr.args) + ")"
        if isinstance(expr, sp.Or):
            return "(" + " | ".join(self.print(a) for a in expr.args) + ")"
        raise UnprintableError(
            f"{self.backend.name}: no translation for {type(expr).__name__}: {expr}"
        )

    def _atom(self, expr: sp.Basic) -> str:
        text = self.print(expr)
        if expr.is_number:  # printed as one literal
            return f"({text})" if text.startswith("-") else text
        return f"({text})" if isinstance(expr, (sp.Add, sp.Mul)) else text

    def _add(self, expr: sp.Add) -> str:
        out = ""
        for term in expr.as_ordered_terms():
            text = self.print(term)
            if not out:
                out = text
            elif text.startswith("-"):
                out += f" - {text[1:]}"
            else:
                out += f" + {text}"
        return out

    def _mul(self, expr: sp.Mul) -> str:
        coeff, factors = expr.as_coeff_mul()
        # Fold every numeric factor (2**(2/3), pi, ...) into one correctly rounded literal.
        coeff = sp.Mul(coeff, *[f for f in factors if f.is_number])
        factors = tuple(f for f in factors if not f.is_number)
        numer: list[str] = []
        denom: list[str] = []
        for factor in sorted(factors, key=sp.default_sort_key):
            base, exponent = factor.as_base_exp()
            if exponent.is_number and exponent.is_negative and not factor.is_number:
                denom.append(self._atom(base if exponent == -1 else base ** (-exponent)))
            else:
                numer.append(
                    self._atom(factor) if not isinstance(factor, sp.Pow) else self.print(factor)
                )
        sign = ""
        if coeff.is_negative:
            sign, coeff = "-", -coeff
        if coeff != 1 or not numer:
            numer.insert(0, self._atom(coeff))
        text = "*".join(numer)
        if denom:
            text += "/" + (denom[0] if len(denom) == 1 else "(" + "*".join(denom) + ")")
        return sign + text

    def _pow(self, expr: sp.Pow) -> str:
        base, exponent = expr.args
        if base is sp.E:
            return self.print(sp.exp(exponent, evaluate=False))
        sqrt = self.backend.sqrt
        if exponent == sp.S.Half:
            return f"{sqrt}({self.print(base)})"
        if exponent == -sp.S.Half:
            return f"1/{sqrt}({self.print(base)})"
        if exponent == -1:
            return f"1/{self._atom(base)}"
        if exponent.is_Integer and exponent < 0:
            return f"1/{self._atom(base)}**{int(-exponent)}"

        # ** binds tighter than * and / and is right-associative: parenthesize both
        # sides unless they are a bare symbol or a non-negative literal.
        def operand(e: sp.Expr) -> str:
            text = self.print(e)
            simple = isinstance(e, sp.Symbol) or (e.is_number and not text.startswith("-"))
            return text if simple or isinstance(e, sp.Function) else f"({text})"

        return f"{operand(base)}**{operand(exponent)}"

    def _piecewise(self, expr: sp.Piecewise) -> str:
        *rest, (last, last_cond) = expr.args
        if last_cond is not sp.true:
            raise UnprintableError("Piecewise needs a final True branch")
        out = self.print(last)
        for branch, cond in reversed(rest):
            out = f"{self.backend.where}({self.print(cond)}, {self.print(branch)}, {out})"
        return out
