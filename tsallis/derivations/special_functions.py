"""Special functions the array libraries lack, fitted once against mpmath.

The scaled complementary error function erfcx(y) = exp(y^2) erfc(y) for y >= 0.
With the exponential e^(-y^2) known, erfc(y) = e^(-y^2) erfcx(y); the closed forms
of continuous attention hold that exponential already (the RBF density at a support
edge), so an erfc there costs one polynomial instead of a second transcendental.

In t = KAPPA / (KAPPA + y), which maps [0, oo) onto (0, 1], erfcx(y) = t R(t) with R
smooth on [0, 1] (R(0) = 1 / (KAPPA sqrt(pi)), from erfcx(y) ~ 1 / (y sqrt(pi))).
R is the Chebyshev interpolant of degree ERFCX_DEGREE on [0, 1], computed by mpmath
at 30 digits; its largest relative error over y >= 0 is checked here (ERFCX_ERROR).
"""

from __future__ import annotations

import mpmath as mp
import sympy as sp

from tsallis.derivations.result import Kernel, KernelSet

SOURCE = "derivations/special_functions.py"

KAPPA = 3  # the scale of y in t; 3 needs the lowest degree for 1e-9 (1, 2, 3, 4 tried)
ERFCX_DEGREE = 12
ERFCX_ERROR = 2e-9  # relative, over y in [0, oo): a float32 ulp is 6e-8

t = sp.Symbol("t", nonnegative=True)


def _reduced(tt: mp.mpf) -> mp.mpf:
    """R(t) = erfcx(y) / t with y = KAPPA (1/t - 1); R(0) is the limit."""
    if tt == 0:
        return 1 / (KAPPA * mp.sqrt(mp.pi))
    y = KAPPA * (1 / tt - 1)
    return mp.exp(y * y) * mp.erfc(y) / tt


def erfcx_coefficients() -> list[mp.mpf]:
    """R's coefficients, constant term first (Chebyshev interpolation, 30 digits)."""
    with mp.workdps(30):
        highest_first, _ = mp.chebyfit(_reduced, [0, 1], ERFCX_DEGREE + 1, error=True)
    return list(reversed(highest_first))


def _check_erfcx(coefficients: list[mp.mpf]) -> None:
    """Relative error of t R(t) against erfcx at 30 digits, on a grid dense in y."""
    with mp.workdps(30):
        points = [mp.mpf(i) / 400 for i in range(0, 401)]  # t in [0, 1]
        worst = mp.mpf(0)
        for tt in points[1:]:
            fitted = mp.polyval(list(reversed(coefficients)), tt)
            worst = max(worst, abs(fitted / _reduced(tt) - 1))
    assert worst < ERFCX_ERROR, f"erfcx fit: relative error {mp.nstr(worst, 3)}"


def derive_special_functions() -> KernelSet:
    """The erfcx polynomial in t (one module for NumPy and Torch)."""
    coefficients = erfcx_coefficients()
    _check_erfcx(coefficients)
    reduced = sp.horner(sum(sp.Float(c, 30) * t**i for i, c in enumerate(coefficients)))
    return KernelSet(
        name="special_functions",
        title="Special functions fitted against mpmath",
        source="mpmath erfc at 30 digits",
        kernels=(
            Kernel(
                "erfcx_of_t",
                (t,),
                t * reduced,
                f"erfcx(y) = exp(y^2) erfc(y) for y >= 0, given t = {KAPPA} / ({KAPPA} + y):"
                f" relative error below {ERFCX_ERROR:g} (plus the rounding of its dtype).",
                backends=("xp",),
            ),
        ),
    )
