"""The g parser: no user text is ever evaluated as Python (hardening issue, item 1).

Hostile strings aim at a canary file. SymPy's string parser (``parse_expr``, and
``eval_expr``, where it calls ``eval``) is patched to fail whenever it is handed
the user's text, so any path that still reached it would fail these tests.
(SymPy parses a few strings of its own, such as unit names; those pass.)
"""

from __future__ import annotations

import ast
import re

import pytest
import sympy as sp
from hypothesis import example, given, settings
from hypothesis import strategies as st

import tsallis
from tsallis import cli
from tsallis.derivations.location_scale import InvalidScoreError, parse_g
from tsallis.derivations.safe_parse import MAX_DEPTH, MAX_DIGITS, MAX_LENGTH, parse_formula

T = sp.Symbol("t", nonnegative=True)

HOSTILE = [
    "__import__('os').system('touch {canary}')",
    "exec(\"open('{canary}', 'w')\")",
    "eval(\"open('{canary}', 'w')\")",
    "open('{canary}', 'w').write('x')",
    "getattr(__builtins__, '__imp' + 'ort__')('os').system('touch {canary}')",
    "(lambda: __import__('os').system('touch {canary}'))()",
    "t.__class__.__mro__[1].__subclasses__()",
    "().__class__.__bases__[0].__subclasses__()",
    "[c for c in ().__class__.__base__.__subclasses__()]",
    "{{'a': open('{canary}', 'w')}}",
    'f\'{{open("{canary}", "w")}}\'',
    "Function('f')(t)",
    "Symbol('x') + t",
    "sympify('t')",
    "S('t')",
    "Integral(t, t)",
    "t.subs(t, 1)",
    "exp.__globals__",
    "globals()",
    "breakpoint()",
    "print(1)",
    "(a := 1) + t",
    "t if t else 1",
    "t and 1",
    "not t",
    "t == t",
    "t < 1",
    "t @ t",
    "t % 2",
    "t // 2",
    "t << 1",
    "~t",
    "1j * t",
    "b'bytes'",
    "'text'",
    "None",
    "True",
    "...",
    "[t]",
    "(t, t)",
    "{t}",
    "*t",
    "t; import os",
    "import os",
    "__builtins__",
    "__import__",
    "log(t, 2)",
    "exp(x=t)",
    "exp(*[t])",
    "exp()",
    "I * t**2",
    "t**2 * I",
    "sqrt(-1) * t",
    "nan",
    "zoo",
    "oo * t",
    "1/0",
    "log(0) + t",
    "1e999 * t",
    "9**9**9",
    "((10**256)**256)**256",
    "t ** 1000",
    "x**2",
    "t**2 + y",
    "(" * 300 + "t" + ")" * 300,
    "+".join(["t"] * (MAX_DEPTH + 5)),
    "t" * (MAX_LENGTH + 1),
    "t**2\x00",
    "",
    "   ",
]


@pytest.fixture
def no_string_eval(monkeypatch):
    """Make SymPy's string parser fail on the user's text; returns the text setter."""
    import sympy.parsing.sympy_parser as parser

    watched: list[str] = []

    def guard(original):
        def wrapper(code, *args, **kwargs):
            if isinstance(code, str) and any(text and text in code for text in watched):
                raise AssertionError(f"user text reached sympy's string parser: {code!r}")
            return original(code, *args, **kwargs)

        return wrapper

    monkeypatch.setattr(parser, "parse_expr", guard(parser.parse_expr))
    monkeypatch.setattr(parser, "eval_expr", guard(parser.eval_expr))
    return watched.append


@pytest.mark.parametrize("template", HOSTILE)
def test_hostile_strings_are_rejected_and_never_run(template, tmp_path, no_string_eval):
    canary = tmp_path / "canary"
    text = template.format(canary=canary) if "{canary}" in template else template
    no_string_eval(text.strip())
    with pytest.raises(ValueError, match=r"^g: "):
        parse_g(text)
    with pytest.raises(ValueError, match=r"^g: "):
        tsallis.LocationScale(text)
    assert not canary.exists()


@pytest.mark.parametrize("template", [*HOSTILE[:6], "t**2*I", "nan", "zoo"])
def test_hostile_strings_exit_2_from_the_cli(template, tmp_path, capsys, no_string_eval):
    canary = tmp_path / "canary"
    text = template.format(canary=canary)
    no_string_eval(text.strip())
    assert cli.main(["derive", "location-scale", f"--g={text}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("derive location-scale: g: ") and err.count("\n") == 1
    assert not canary.exists()


def test_valid_g_still_derives_without_string_eval(no_string_eval):
    """The whole derivation runs with the string evaluator disabled."""
    from tsallis.derivations.location_scale import derive_location_scale

    no_string_eval("t^4/12")
    no_string_eval("t**4/12")
    result = derive_location_scale("t^4/12")
    assert result.notes[0].startswith("a = 2**(1/4)")
    assert (
        abs(float(result.threshold.subs(sp.Symbol("scale", positive=True), 1)) + 2**0.75 / 3)
        < 1e-15
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("t**4/12", T**4 / 12),
        ("t^3/6", T**3 / 6),  # ^ is **, with SymPy's precedence
        ("-t**2", -(T**2)),
        ("exp(t) - t", sp.exp(T) - T),
        ("cosh(t) + pi*t**2/E", sp.cosh(T) + sp.pi * T**2 / sp.E),
        ("abs(t)**3 + Abs(t)", T**3 + T),
        ("sqrt(1 + t**2)", sp.sqrt(1 + T**2)),
        ("2.5*t**2", sp.Float("2.5") * T**2),
        ("  (t**2)/2  ", T**2 / 2),
    ],
)
def test_valid_formulas(text, expected):
    assert sp.simplify(parse_formula(text, {"t": T}, "g") - expected) == 0


def test_messages_name_the_offending_piece():
    with pytest.raises(ValueError, match=r"Attribute 't.real'"):
        parse_formula("t.real", {"t": T}, "g")
    with pytest.raises(ValueError, match=r"unknown name 'x'"):
        parse_formula("x + t", {"t": T}, "g")
    with pytest.raises(ValueError, match=r"calls are limited to .* not Name 'open'"):
        parse_formula("open('f')", {"t": T}, "g")
    with pytest.raises(ValueError, match=r"at most 300 characters"):
        parse_formula("t" * 301, {"t": T}, "g")
    with pytest.raises(TypeError, match="g must be a string"):
        parse_formula(3, {"t": T}, "g")  # type: ignore[arg-type]


def test_location_scale_rejects_non_strings():
    with pytest.raises(TypeError, match="g must be a SymPy string"):
        tsallis.LocationScale(lambda t: t)  # type: ignore[arg-type]
    with pytest.raises(InvalidScoreError, match=r"g\(0\) = .* is not a finite real"):
        parse_g("log(t - 1)")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=MAX_LENGTH + 20))
def test_arbitrary_text_gives_an_expression_or_a_value_error(text):
    """Fuzz: any text either parses to a real expression in t or raises ValueError."""
    import sympy.parsing.sympy_parser as parser

    original = parser.eval_expr
    parser.eval_expr = None  # calling it would raise TypeError, which fails the test
    try:
        try:
            expr = parse_formula(text, {"t": T}, "g")
        except ValueError:
            return
        assert isinstance(expr, sp.Expr) and expr.free_symbols <= {T}
        assert not expr.has(sp.I, sp.nan, sp.zoo, sp.oo)
    finally:
        parser.eval_expr = original  # parse_formula builds numbers directly: no parsing


_LEAVES = st.one_of(
    st.just("t"),
    st.integers(0, 20).map(str),
    st.sampled_from(["0.5", "1.25", "pi", "E"]),
)


def _combine(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    binary = st.tuples(children, st.sampled_from(["+", "-", "*", "/"]), children).map(
        lambda p: f"({p[0]} {p[1]} {p[2]})"
    )
    power = st.tuples(children, st.integers(0, 4)).map(lambda p: f"({p[0]})**{p[1]}")
    call = st.tuples(st.sampled_from(["exp", "cosh", "sqrt", "tanh", "atan"]), children).map(
        lambda p: f"{p[0]}({p[1]})"
    )
    return st.one_of(binary, power, call, children.map(lambda c: f"-({c})"))


def _undefined(value: sp.Basic) -> bool:
    return value.has(sp.zoo, sp.nan, sp.oo, sp.I, sp.AccumBounds) or value.is_real is False


def _has_undefined_part(text: str) -> bool:
    """Whether SymPy evaluates some part of text to zoo, nan, +-oo, an interval (atan(zoo))
    or a non-real number: node by node of its unevaluated parse, and each subexpression
    of the text on its own (SymPy's unevaluated parse still folds equal terms: it made
    -((1 / 0) - (1 / 0)) the integer 0, which hypothesis found)."""
    tree = sp.parse_expr(text, local_dict={"t": T}, evaluate=False)
    if any(_undefined(node.doit()) for node in sp.preorder_traversal(tree)):
        return True
    for node in ast.walk(ast.parse(text, mode="eval").body):
        segment = ast.get_source_segment(text, node)
        if segment is not None and _undefined(sp.sympify(segment, locals={"t": T})):
            return True
    return False


@settings(max_examples=150, deadline=None)
@given(st.recursive(_LEAVES, _combine, max_leaves=8))
@example("(sqrt(-(1)))**2")  # a complex base was refused as "more than 2000 digits"
@example("atan(((1 / 0))**1)")  # SymPy: AccumBounds(-pi/2, pi/2); was accepted
@example("((t / 0))**0")  # SymPy makes the whole 1, but its part t/0 is zoo*t
@example("(exp(exp(7)))**1")  # 10^476: its size overflowed a float, and it was refused
@example("-(((1 / 0) - (1 / 0)))")  # SymPy's unevaluated parse folds it to 0
@example("(exp(exp(8)))**2")  # 10^2589: over the size limit, refused by design
def test_grammar_agrees_with_sympify(text):
    """On the accepted grammar the tree-built expression equals SymPy's own parse; what
    is refused has a part that SymPy finds undefined or not real, or a power whose value
    SymPy puts beyond MAX_DIGITS decimal digits (the documented size limit)."""
    try:
        ours = parse_formula(text, {"t": T}, "g")
    except ValueError as error:  # e.g. 1/0 -> zoo is refused where it occurs
        too_large = re.search(rf"'(.+)' has more than {MAX_DIGITS} digits", str(error))
        if too_large is not None and not _has_undefined_part(text):
            value = sp.sympify(too_large.group(1), locals={"t": T})
            digits = abs(sp.log(sp.Abs(value), 10).evalf(30))
            assert digits > MAX_DIGITS, (text, digits)
            return
        assert _has_undefined_part(text), text
        return
    theirs = sp.sympify(text, locals={"t": T})
    assert ours == theirs or sp.simplify(ours - theirs) == 0


@pytest.mark.parametrize(
    ("text", "piece"),
    [("atan(1/0)", "'1/0'"), ("(1/0)**1", "'1/0'"), ("0**-1", "'0**-1'"), ("t + 0*(1/0)", "'1/0'")],
)
def test_undefined_parts_are_refused_where_they_occur(text, piece):
    """A part that SymPy evaluates to zoo, nan, +-oo or an interval is refused, naming
    that part (atan(1/0) used to be accepted as AccumBounds(-pi/2, pi/2), and (1/0)**1
    refused as having "more than 2000 digits")."""
    with pytest.raises(ValueError, match="is not finite") as error:
        parse_formula(text, {"t": T}, "g")
    assert piece in str(error.value)


def test_digit_limit_counts_numbers_beyond_float_range():
    """A power's digit count comes from log10 of its base, also beyond float range:
    exp(exp(7)) (476 digits) to the 1st and 4th power is accepted, to the 5th (2382
    digits, over MAX_DIGITS = 2000) refused; 0**3 has no digits."""
    assert parse_formula("(exp(exp(7)))**4 + t", {"t": T}, "g") == sp.exp(4 * sp.exp(7)) + T
    assert parse_formula("(exp(exp(7)))**1", {"t": T}, "g") == sp.exp(sp.exp(7))
    assert parse_formula("0**3 + t", {"t": T}, "g") == T
    with pytest.raises(ValueError, match="more than 2000 digits"):
        parse_formula("(exp(exp(7)))**5", {"t": T}, "g")
