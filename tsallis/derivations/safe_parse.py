"""Parse a user's formula into SymPy without ever evaluating it as Python.

``sympy.sympify`` (and ``parse_expr``) call ``eval`` on the text, so a string
such as ``__import__('os').system(...)`` would run. Here the text goes through
Python's ``ast`` parser only, every node is checked against a whitelist, and the
SymPy expression is built from the checked tree node by node. Nothing else
(attributes, subscripts, lambdas, strings, comprehensions, keyword arguments,
names outside the tables) gets past ``parse_formula``; each refusal is a
``ValueError`` that names the offending piece.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping

import sympy as sp

__all__ = ["FUNCTIONS", "MAX_DEPTH", "MAX_DIGITS", "MAX_EXPONENT", "MAX_LENGTH", "parse_formula"]

MAX_LENGTH = 300  # characters
MAX_DEPTH = 60  # nesting of operators and calls
# A numeric exponent m in x**m has |m| <= MAX_EXPONENT, and a power of two numbers
# has at most MAX_DIGITS decimal digits: 9**9**9 would make SymPy build a
# 370-million-digit integer.
MAX_EXPONENT = 256
MAX_DIGITS = 2000

FUNCTIONS: Mapping[str, type[sp.Function] | object] = {
    "exp": sp.exp,
    "log": sp.log,
    "sqrt": sp.sqrt,
    "cbrt": sp.cbrt,
    "sinh": sp.sinh,
    "cosh": sp.cosh,
    "tanh": sp.tanh,
    "asinh": sp.asinh,
    "atan": sp.atan,
    "erf": sp.erf,
    "abs": sp.Abs,
    "Abs": sp.Abs,
}
CONSTANTS: Mapping[str, sp.Expr] = {"pi": sp.pi, "E": sp.E}

_BINARY = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.Pow: lambda a, b: a**b,
}
_UNARY = {ast.USub: lambda a: -a, ast.UAdd: lambda a: a}
_NOT_REAL = (sp.I, sp.nan, sp.zoo, sp.oo, sp.S.NegativeInfinity)
# values no intermediate may take: SymPy would carry them on (atan(1/0) is the interval
# AccumBounds(-pi/2, pi/2), and (1/0)**1 was refused as having "more than 2000 digits")
_NOT_FINITE = (sp.nan, sp.zoo, sp.oo, sp.S.NegativeInfinity)


class _RefusedError(ValueError):
    pass


def _describe(node: ast.AST, text: str) -> str:
    piece = ast.get_source_segment(text, node)
    kind = type(node).__name__
    return f"{kind} {piece!r}" if piece else kind


def parse_formula(
    text: str, variables: Mapping[str, sp.Symbol], name: str = "expression"
) -> sp.Expr:
    """A real SymPy expression from ``text``, built from a whitelisted syntax tree.

    Accepted: numbers, the names in ``variables``, ``pi`` and ``E``, the binary
    operators ``+ - * / **`` (``^`` is read as ``**``), unary ``-`` and ``+``, and
    one-argument calls of the functions in ``FUNCTIONS``.

    Args:
        text: the formula, at most ``MAX_LENGTH`` characters.
        variables: name -> SymPy symbol for the free variables allowed.
        name: how error messages call the formula (e.g. ``"g"``).

    Returns:
        The expression. It never contains I, nan, zoo or oo.

    Raises:
        TypeError: ``text`` is not a string.
        ValueError: the text is too long or too deeply nested, does not parse,
            uses anything outside the whitelist, or is not a real expression.

    Examples:
        >>> t = sp.Symbol("t", nonnegative=True)
        >>> parse_formula("t**4/12 + exp(-t)", {"t": t}, "g")
        t**4/12 + exp(-t)
    """
    if not isinstance(text, str):
        raise TypeError(f"{name} must be a string, got {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise ValueError(f"{name}: at most {MAX_LENGTH} characters, got {len(text)}")
    if "\x00" in text:
        raise ValueError(f"{name}: contains a NUL character")
    # t^3/6 means t**3/6, as in SymPy: replace the token, not the AST node (Python's ^
    # binds looser than /). No accepted syntax gives ^ another meaning.
    text = text.strip().replace("^", "**")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as error:
        message = getattr(error, "msg", None) or type(error).__name__
        raise ValueError(f"{name}: cannot parse {text!r} ({message})") from None
    try:
        expr = _build(tree.body, text, variables)
    except _RefusedError as error:
        raise ValueError(f"{name}: {error}") from None
    except RecursionError:
        raise ValueError(f"{name}: nested too deeply") from None
    if not isinstance(expr, sp.Expr):
        raise ValueError(f"{name}: {text!r} is not an expression")
    if expr.has(*_NOT_REAL) or expr.has(sp.AccumBounds) or expr.is_real is False:
        raise ValueError(f"{name}: {expr} is not a finite real expression")
    return expr


def _build(node: ast.AST, text: str, variables: Mapping[str, sp.Symbol]) -> sp.Expr:
    """SymPy expression of a checked node (depth-first with an explicit depth bound)."""
    stack_depth = _depth(node)
    if stack_depth > MAX_DEPTH:
        raise _RefusedError(f"nested {stack_depth} levels deep; at most {MAX_DEPTH}")
    return _convert(node, text, variables)


def _depth(root: ast.AST) -> int:
    """The depth of the tree, computed without recursion."""
    deepest, todo = 0, [(root, 1)]
    while todo:
        node, level = todo.pop()
        deepest = max(deepest, level)
        todo.extend((child, level + 1) for child in ast.iter_child_nodes(node))
    return deepest


def _magnitude(value: sp.Expr) -> float:
    """|value| as a float: inf when it does not fit; nan when it is undefined or not real."""
    number = sp.N(value, 15)
    if not number.is_real:
        return math.nan
    try:
        return abs(complex(number))
    except (OverflowError, TypeError):
        return math.nan if number.has(sp.nan) else math.inf


def _log10_size(value: sp.Expr) -> float:
    """log10 of |value| (a complex value's modulus) from SymPy's floats, whose exponent
    has no limit: exp(exp(7)), about 10^476, has one, where a float overflowed and its
    power was refused as having more than MAX_DIGITS digits. -inf at 0, inf or nan where
    value is not finite."""
    try:
        number = sp.N(sp.Abs(value), 15)
        if number.has(sp.nan) or not number.is_number:
            return math.nan
        if number.has(sp.oo, sp.zoo):
            return math.inf
        return -math.inf if number == 0 else float(sp.N(sp.log(number, 10), 15))
    except (TypeError, ValueError):
        return math.nan


def _check_power(base: sp.Expr, exponent: sp.Expr, piece: str) -> None:
    """Refuse numeric exponents larger than MAX_EXPONENT and numbers over MAX_DIGITS digits."""
    if not exponent.is_number:
        return
    size = _magnitude(exponent)
    if not size <= MAX_EXPONENT:
        raise _RefusedError(
            f"the exponent in {piece} must be a real number of size at most {MAX_EXPONENT}"
        )
    if base.is_number and size > 0:
        # an intermediate base may be complex, e.g. sqrt(-1) in (sqrt(-1))**2 = -1:
        # its size is its modulus
        scale = _log10_size(base)
        digits = 0.0 if scale == -math.inf else size * abs(scale)  # (nan: refused)
        if digits > MAX_DIGITS:
            raise _RefusedError(f"{piece} has more than {MAX_DIGITS} digits")


def _convert(node: ast.AST, text: str, variables: Mapping[str, sp.Symbol]) -> sp.Expr:
    expr = _convert_node(node, text, variables)
    if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Call)) and (
        expr.has(*_NOT_FINITE) or expr.has(sp.AccumBounds)
    ):
        raise _RefusedError(f"{_describe(node, text)} is not finite (SymPy gives {expr})")
    return expr


def _convert_node(node: ast.AST, text: str, variables: Mapping[str, sp.Symbol]) -> sp.Expr:
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _RefusedError(f"only real numbers are allowed, not {_describe(node, text)}")
        if isinstance(value, float):
            if not math.isfinite(value):
                raise _RefusedError(f"{_describe(node, text)} is not a finite number")
            return sp.Float(repr(value))
        return sp.Integer(value)
    if isinstance(node, ast.Name):
        if node.id in variables:
            return variables[node.id]
        if node.id in CONSTANTS:
            return CONSTANTS[node.id]
        allowed = sorted([*variables, *CONSTANTS])
        raise _RefusedError(f"unknown name {node.id!r}; allowed names are {allowed}")
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_convert(node.operand, text, variables))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left = _convert(node.left, text, variables)
        right = _convert(node.right, text, variables)
        if isinstance(node.op, ast.Pow):
            _check_power(left, right, _describe(node, text))
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            raise _RefusedError(
                f"calls are limited to {sorted(FUNCTIONS)}, not {_describe(node.func, text)}"
            )
        if node.keywords or len(node.args) != 1 or isinstance(node.args[0], ast.Starred):
            raise _RefusedError(
                f"{node.func.id} takes exactly one argument: {_describe(node, text)}"
            )
        return FUNCTIONS[node.func.id](_convert(node.args[0], text, variables))
    raise _RefusedError(f"{_describe(node, text)} is not allowed")
