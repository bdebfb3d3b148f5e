"""Every derivation that ``tsallis derive`` renders, and where its output goes."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from tsallis.derivations.alpha_one import derive_gaussian, derive_laplace
from tsallis.derivations.attention import derive_attention
from tsallis.derivations.beta_gaussian import derive_beta_gaussian
from tsallis.derivations.codegen import render_module
from tsallis.derivations.deformed import derive_deformed
from tsallis.derivations.discrete import derive_discrete
from tsallis.derivations.formulas import (
    README,
    render_formula_sheet,
    render_readme_table,
    splice_readme,
)
from tsallis.derivations.location_scale import BUILTIN_G, derive_location_scale
from tsallis.derivations.result import FamilyDerivation, KernelSet
from tsallis.derivations.special_functions import derive_special_functions
from tsallis.derivations.triangular import derive_triangular
from tsallis.derivations.truncated_parabola import derive_truncated_parabola
from tsallis.derivations.truncated_paraboloid import derive_truncated_paraboloid

# the folder that holds the tsallis package: the repository root in a source checkout,
# site-packages in an installed wheel
ROOT = Path(__file__).resolve().parent.parent.parent


def source_checkout() -> Path | None:
    """The repository root when these derivations run from a source checkout (tsallis/
    beside pyproject.toml), else None: an installed wheel, which ``tsallis derive``
    never rewrites."""
    return ROOT if (ROOT / "pyproject.toml").is_file() else None


@dataclass(frozen=True)
class Target:
    """One derivation and the module name its generated code takes."""

    module: str
    source: str
    function: str
    derive: Callable[[], FamilyDerivation | KernelSet]


TARGETS: tuple[Target, ...] = (
    Target("deformed", "derivations/deformed.py", "derive_deformed", derive_deformed),
    Target("gaussian", "derivations/alpha_one.py", "derive_gaussian", derive_gaussian),
    Target("laplace", "derivations/alpha_one.py", "derive_laplace", derive_laplace),
    Target(
        "truncated_parabola",
        "derivations/truncated_parabola.py",
        "derive_truncated_parabola",
        derive_truncated_parabola,
    ),
    Target(
        "truncated_paraboloid",
        "derivations/truncated_paraboloid.py",
        "derive_truncated_paraboloid",
        derive_truncated_paraboloid,
    ),
    Target("triangular", "derivations/triangular.py", "derive_triangular", derive_triangular),
    *(
        Target(
            f"location_scale_{name}",
            "derivations/location_scale.py",
            f'derive_location_scale("{g}", "{name}")',
            partial(derive_location_scale, g, name),
        )
        for name, g in BUILTIN_G.items()
    ),
    Target(
        "beta_gaussian",
        "derivations/beta_gaussian.py",
        "derive_beta_gaussian",
        derive_beta_gaussian,
    ),
    Target(
        "special_functions",
        "derivations/special_functions.py",
        "derive_special_functions",
        derive_special_functions,
    ),
    Target("attention", "derivations/attention.py", "derive_attention", derive_attention),
    Target("discrete", "derivations/discrete.py", "derive_discrete", derive_discrete),
)

OUTPUT_DIRS = {
    "numpy": Path("tsallis/_generated"),
    "torch": Path("torch_bridge/_generated"),
    "xp": Path("tsallis/core/_generated"),  # one module for both (array namespace)
}
FORMULA_SHEET = Path("tsallis/derivations/FORMULAS.md")  # package data, in both layouts


def _backends(result: FamilyDerivation | KernelSet) -> set[str]:
    return {backend for kernel in result.kernels for backend in kernel.backends}


def _printed_once(result: FamilyDerivation | KernelSet) -> FamilyDerivation | KernelSet:
    """A kernel that both faces use is printed once, for the array namespace (xp).

    Kernels of one face only (the NumPy quantiles and cdfs that need SciPy's
    incomplete beta) keep their own printer.
    """
    kernels = tuple(
        dataclasses.replace(
            kernel,
            backends=("xp", *(b for b in kernel.backends if b not in ("numpy", "torch"))),
        )
        if {"numpy", "torch"} <= set(kernel.backends)
        else kernel
        for kernel in result.kernels
    )
    return dataclasses.replace(result, kernels=kernels)


@functools.cache
def derived_once(target: Target) -> FamilyDerivation | KernelSet:
    """target.derive(), computed once per process (a derivation is a pure function of
    this code, and SymPy takes about 25 s for them all): ``tsallis derive --check`` and
    ``--out`` in one process, and the tests that render, share it."""
    return target.derive()


def render_all(names: list[str] | None = None, readme: bool = True) -> dict[Path, str]:
    """Relative path -> text of every generated file (all targets when names is None);
    with ``readme``, in a source checkout, also its README with the formula table."""
    chosen = [t for t in TARGETS if names is None or t.module in names]
    unknown = set(names or ()) - {t.module for t in TARGETS}
    if unknown:
        raise ValueError(
            f"family: unknown {sorted(unknown)}; choose from {[t.module for t in TARGETS]}"
        )
    derived = [(target, _printed_once(derived_once(target))) for target in chosen]
    files: dict[Path, str] = {}
    for backend, folder in OUTPUT_DIRS.items():
        # Every face lists every family; the shared (xp) modules are imported from the core.
        # A face's own module of a family also re-exports the family's shared kernels.
        everything = [(t.module, _backends(result)) for t, result in derived]
        own = [module for module, kinds in everything if backend in kinds]
        shared = [
            module
            for module, kinds in everything
            if "xp" in kinds and backend != "xp" and backend not in kinds
        ]
        init = (
            f'"""Generated {backend} closed forms. Do NOT edit: run `tsallis derive`."""\n\n'
            + "".join(f"from . import {module}\n" for module in own)
            + "".join(f"from tsallis.core._generated import {module}\n" for module in shared)
            + "\n__all__ = ["
            + ", ".join(f'"{module}"' for module in own + shared)
            + "]\n"
        )
        if names is None:
            files[folder / "__init__.py"] = init
        for target, result in derived:
            if backend not in _backends(result):
                continue
            shared_names = [k.name for k in result.kernels if "xp" in k.backends]
            text = render_module(
                result.title,
                target.source,
                target.function,
                result.kernels,
                backend,
                shared=(
                    (f"tsallis.core._generated.{target.module}", shared_names)
                    if backend != "xp" and shared_names
                    else None
                ),
            )
            files[folder / f"{target.module}.py"] = text
    if names is None:
        results = [result for _, result in derived]
        files[FORMULA_SHEET] = render_formula_sheet(results)
        if readme and source_checkout() is not None:  # keep its README's table in sync
            readme = (ROOT / README).read_text(encoding="utf-8")
            files[Path(README)] = splice_readme(readme, render_readme_table(results))
    return files
