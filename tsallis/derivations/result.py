"""Result objects returned by every derivation."""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp


@dataclass(frozen=True)
class Kernel:
    """One expression to emit as a generated function.

    ``args`` fixes the generated signature; ``backends`` lists the printers
    that must emit it ("numpy", "torch", or "xp": one module for both).
    """

    name: str
    args: tuple[sp.Symbol, ...]
    expr: sp.Expr
    doc: str
    backends: tuple[str, ...] = ("numpy", "torch")


@dataclass(frozen=True)
class FamilyDerivation:
    """The solved closed forms of one family, with the symbols they use.

    ``density`` is p(t) written with the positive part; ``normalization`` is
    the equation that was solved. Quantities a family lacks are ``None``.
    """

    name: str
    title: str
    source: str
    alpha: sp.Expr
    symbols: dict[str, sp.Symbol]
    score: sp.Expr
    density: sp.Expr
    normalization: sp.Eq
    threshold: sp.Expr
    support: sp.Expr
    mean: sp.Expr
    variance: sp.Expr
    tsallis_entropy: sp.Expr
    log_partition: sp.Expr | None = None
    shannon_entropy: sp.Expr | None = None
    cdf: sp.Expr | None = None
    ppf: sp.Expr | None = None
    notes: tuple[str, ...] = ()
    kernels: tuple[Kernel, ...] = field(default=())


@dataclass(frozen=True)
class KernelSet:
    """Generated kernels that are not one family's closed forms (e.g. attention)."""

    name: str
    title: str
    source: str
    kernels: tuple[Kernel, ...]
