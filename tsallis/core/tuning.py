"""One table of the regime thresholds that both backends share.

Every constant here was chosen by measurement; the comment next to it says
what was measured. Backend-specific node counts and chunk sizes still live
with their algorithm (tsallis.attention, torch_bridge._window, torch_bridge.kernel)
until those algorithms are merged into the core.
"""

from __future__ import annotations

__all__ = ["CLOSED_FORM_K", "GEGENBAUER_MIN", "SMOOTH_EXPONENT", "STIRLING_MIN", "closed_k"]

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
