"""One table of the regime thresholds that both backends share.

Every constant here was chosen by measurement; the comment next to it says
what was measured. Backend-specific node counts and chunk sizes still live
with their algorithm (tsallis.attention, torch_bridge._window, torch_bridge.kernel)
until those algorithms are merged into the core.
"""

from __future__ import annotations

__all__ = [
    "CLOSED_FORM_K",
    "FLOAT32_ANCHOR_OUT",
    "FLOAT32_CLOSED_MAX_R",
    "GEGENBAUER_MIN",
    "SMOOTH_EXPONENT",
    "STIRLING_MIN",
    "closed_k",
]

# An integrand that vanishes like |t - e|^k at an end e of its interval, with
# k >= SMOOTH_EXPONENT, is integrated by plain Gauss-Legendre: that end costs the
# n-point rule O(n^(-2k-2)), far below rounding. Below it the rule carries the
# power (Gauss-Jacobi). Above it Gauss-Jacobi is also unusable: scipy's weights
# for (1 -+ x)^k overflow for k above about 1000, i.e. alpha - 1 below 1e-3.
SMOOTH_EXPONENT = 32.0

# Symmetric Gauss-Jacobi (Gegenbauer) rules above this exponent come from
# Golub-Welsch (tsallis.core.rules): scipy's weights are NaN for a = 1e6
# (accurate up to 1e5, measured).
GEGENBAUER_MIN = 1000.0

# log Gamma(x + h) - log Gamma(x) by Stirling's series (tsallis.core.special) from
# x >= STIRLING_MIN: eight terms leave < 2e-18 there; below it, log-gamma values.
STIRLING_MIN = 10.0

# alpha with a generated 1D closed form for the attention window moments,
# keyed to k = 1/(alpha - 1).
CLOSED_FORM_K = {2.0: 1, 1.5: 2, 4 / 3: 3, 1.25: 4}


def closed_k(alpha: float) -> int | None:
    """k = 1/(alpha - 1) for the alpha values with a generated 1D closed form, else None."""
    for value, k in CLOSED_FORM_K.items():
        if abs(alpha - value) < 1e-12:
            return k
    return None


# float32 window moments straight from the closed form, for RBFs at most this
# wide (r = RBF width / support half-width): measured within 7e-7 of the float64
# moments, relative to the row's largest (centres up to 3 half-widths outside,
# 2000 rows of 64 random widths in [1e-4, r]): k = 1 6.6e-7 at r <= 2, k = 2
# 4.7e-7 at 0.5, k = 3 3.5e-7 and k = 4 3.8e-7 at 0.2 (k = 4 at 0.5: 8.7e-6).
FLOAT32_CLOSED_MAX_R = {1: 2.0, 2: 0.5, 3: 0.2, 4: 0.2}
# ... and only when every row has an RBF centre at most this many RBF widths
# outside the support, so that the row's largest moment is one the closed form
# gets to float32 precision (a row whose RBFs are all far away takes float64).
FLOAT32_ANCHOR_OUT = 2.0
