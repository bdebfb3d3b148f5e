"""Drift check, determinism, atomic writes, and the printers."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from tsallis.derivations import codegen
from tsallis.derivations.formulas import TABLE_BEGIN, TABLE_END, splice_readme
from tsallis.derivations.primitives import PositivePart, expm1, exprel, log1p, log1prel
from tsallis.derivations.printers import NUMPY, TORCH, BackendPrinter, UnprintableError
from tsallis.derivations.registry import ROOT, render_all
from tsallis.derivations.result import Kernel

x, y = sp.symbols("x y", positive=True)
z = sp.Symbol("z", real=True)


def test_checked_in_code_matches_derivations():
    """The drift test: regenerating in memory gives the checked-in bytes."""
    drift = [
        rel
        for rel, text in render_all().items()
        if codegen.compare_or_update(ROOT / rel, text, update=False)
    ]
    assert drift == []


def test_derive_check_is_deterministic_across_hash_seeds():
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    done = subprocess.run(
        [sys.executable, "-m", "tsallis.cli", "derive", "--check"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def test_compare_or_update_reports_and_writes(tmp_path: Path):
    target = tmp_path / "mod.py"
    assert codegen.compare_or_update(target, "a = 1\n", update=False).startswith("--- a/")
    assert not target.exists()
    codegen.compare_or_update(target, "a = 1\n", update=True)
    assert target.read_text() == "a = 1\n"
    assert codegen.compare_or_update(target, "a = 1\n", update=False) == ""


def test_interrupted_write_leaves_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    target = tmp_path / "mod.py"
    target.write_text("old\n")

    def broken_replace(src: str, dst: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(KeyboardInterrupt):
        codegen.atomic_write(target, "new\n")
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mod.py"]


def _compile(expr: sp.Expr, args: tuple[sp.Symbol, ...], backend: str):
    source = codegen.render_module("t", "test", "test", [Kernel("f", args, expr, "test")], backend)
    namespace: dict[str, object] = {}
    exec(compile(source, "<test>", "exec"), namespace)
    return namespace["f"]


CASES = [
    sp.gamma(x) * sp.erfc(y),
    sp.loggamma(x + 3) - sp.log(sp.gamma(y)),
    sp.Heaviside(z) + sp.Max(z, 0) + sp.Min(z, 1),
    log1p(x) + expm1(y) * exprel(z) + log1prel(z),
    PositivePart(z) ** sp.Rational(3, 2) + sp.sqrt(x) / y**2 - 1 / sp.sqrt(y),
    sp.Piecewise((sp.log(z), z > 0), (-sp.oo, True)),
    sp.erf(z) * sp.exp(-(z**2)) * sp.pi,
    sp.sinh(z) * sp.cosh(x) + sp.tanh(y) + sp.atan(z) + sp.asinh(z) + sp.sin(z) * sp.cos(y),
    x ** (1 / y)
    + sp.Pow(sp.Pow(x, y, evaluate=False), z, evaluate=False)
    + x ** (y - 1)
    + (x + y) ** (-z),
]


@pytest.mark.parametrize("expr", CASES, ids=range(len(CASES)))
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_printed_code_runs_and_matches_sympy(expr, backend):
    torch = pytest.importorskip("torch") if backend == "torch" else None
    if (
        backend == "torch"
        and expr.has(sp.gamma)
        and not all(a.args[0].is_positive for a in expr.atoms(sp.gamma))
    ):
        pytest.skip("gamma of a non-positive argument is refused for torch")
    args = (x, y, z)
    f = _compile(expr, args, backend)
    points = [(0.7, 1.3, -0.4), (2.5, 0.2, 1.7), (1.0, 1.0, 1e-3)]  # 1e-3: the series branch
    for point in points:
        subs = dict(zip(args, point, strict=True))
        reference = (
            complex(expr.rewrite(sp.exp).rewrite(sp.log).rewrite(sp.Max).evalf(30, subs=subs))
            if not expr.has(sp.Piecewise)
            else None
        )
        if backend == "torch":
            value = float(f(*(torch.tensor(v, dtype=torch.float64) for v in point)))
        else:
            value = float(f(*point))
        if reference is None:
            reference = complex(math.log(point[2]) if point[2] > 0 else -math.inf)
        if math.isinf(reference.real):
            assert value == reference.real
        else:
            assert value == pytest.approx(reference.real, rel=1e-13, abs=1e-15)


def test_torch_printer_rejects_what_it_cannot_print():
    printer = BackendPrinter(TORCH)
    with pytest.raises(UnprintableError, match="besselj"):
        printer.print(sp.besselj(0, x))
    with pytest.raises(UnprintableError, match="positive"):
        printer.print(sp.gamma(z))
    with pytest.raises(UnprintableError):
        printer.print(sp.betainc_regularized(1, 2, 0, x))  # no betainc in torch
    numpy_printer = BackendPrinter(NUMPY)
    with pytest.raises(UnprintableError):
        numpy_printer.print(sp.besselj(0, x))


def test_user_overrides_take_precedence():
    printer = BackendPrinter(
        NUMPY, overrides={sp.erf: lambda p, e: f"my_erf({p.print(e.args[0])})"}
    )
    assert printer.print(sp.erf(x)) == "my_erf(x)"


def test_double_where_keeps_gradients_finite():
    torch = pytest.importorskip("torch")
    expr = sp.Piecewise((sp.log(z) + z ** sp.Rational(1, 4), z > 0), (-sp.oo, True))
    f = _compile(expr, (z,), "torch")
    t = torch.tensor([-1.0, 0.0, 0.5], dtype=torch.float64, requires_grad=True)
    out = f(t)
    out.masked_fill(~torch.isfinite(out), 0).sum().backward()
    assert torch.isfinite(t.grad).all()
    assert t.grad[0] == 0 and t.grad[1] == 0


def test_generated_files_have_headers():
    for relative in render_all():
        text = (ROOT / relative).read_text()
        if relative.suffix == ".py" and relative.name != "__init__.py":
            assert text.startswith(
                "# This file was autogenerated by `tsallis derive` from derivations/"
            )
            assert "Do NOT edit" in text
        elif relative.name == "README.md":  # only its formula table is generated
            assert TABLE_BEGIN in text and "do not edit" in TABLE_BEGIN
        else:
            assert "Do NOT edit" in text


def test_numpy_kernels_accept_lists_and_broadcast():
    from tsallis._generated import beta_gaussian

    out = beta_gaussian.pdf_1d([[0.0], [0.5]], [1.5, 2.0, 3.0], 0.0, 1.0)
    assert out.shape == (2, 3)
    assert np.all(out > 0)


def test_special_values_at_zero():
    torch = pytest.importorskip("torch")
    expr = exprel(z) + 2 * log1prel(z) + 4 * sp.Heaviside(z) + 8 * sp.Max(z, 0)
    expected = 1 + 2 + 4 * 0.5 + 0
    assert float(_compile(expr, (z,), "numpy")(0.0)) == expected
    t = torch.zeros((), dtype=torch.float64, requires_grad=True)
    value = _compile(exprel(z) + log1prel(z), (z,), "torch")(t)
    value.backward()
    assert float(value.detach()) == 2.0
    assert float(t.grad) == pytest.approx(
        0.5 - 0.5, abs=1e-15
    )  # exprel'(0) = 1/2, log1prel'(0) = -1/2


def test_readme_table_splice():
    text = f"intro\n{TABLE_BEGIN}\nold\n{TABLE_END}\nrest\n"
    assert splice_readme(text, f"{TABLE_BEGIN}\nnew\n{TABLE_END}") == (
        f"intro\n{TABLE_BEGIN}\nnew\n{TABLE_END}\nrest\n"
    )
    with pytest.raises(ValueError, match="formula-table markers"):
        splice_readme("no markers here", "table")


@pytest.mark.parametrize("name", ["log1prel", "exprel"])
def test_relative_functions_both_forms_against_mpmath(name):
    """tsallis.core.arrays' log1prel and exprel: the quotient form (nothing differentiates
    through x: NumPy, eager tensors without grad) and the series form (autograd) both
    within 2.5 ulps of 40-digit mpmath in float32 and float64, at 0 too (value 1), on
    values from 1e-45 to 1e-2 in size (the series' range) and beyond; the series form's
    gradient is finite at 0 (1/2 for exprel, -1/2 for log1prel)."""
    import mpmath

    torch = pytest.importorskip("torch")
    from tsallis.core import arrays

    function = getattr(arrays, name)
    exact = {"log1prel": mpmath.log1p, "exprel": mpmath.expm1}[name]
    rng = np.random.default_rng(5)
    far = rng.uniform(-0.99, 20.0, 300) if name == "log1prel" else rng.uniform(-30, 30, 300)
    tiny = 10.0 ** rng.uniform(-45, -2, 300) * rng.choice([-1.0, 1.0], 300)
    x = np.concatenate([far, tiny, [0.0]])
    with mpmath.workdps(40):
        for dtype, np_dtype in ((torch.float32, np.float32), (torch.float64, np.float64)):
            values = x.astype(np_dtype).astype(np.float64)
            want = np.array([float(exact(v) / v) if v else 1.0 for v in values])
            ulp = np.spacing(want.astype(np_dtype)).astype(np.float64)
            t = torch.tensor(values, dtype=dtype)
            forms = {
                "numpy": function(values.astype(np_dtype)),
                "tensor": function(t).numpy(),
                "series": function(t.clone().requires_grad_()).detach().numpy(),
            }
            for form, got in forms.items():
                error = float(np.max(np.abs(got.astype(np.float64) - want) / ulp))
                assert error <= 2.5, (name, dtype, form, error)
    zero = torch.zeros((), dtype=torch.float64, requires_grad=True)
    function(zero).backward()
    assert float(zero.grad) == (0.5 if name == "exprel" else -0.5)
