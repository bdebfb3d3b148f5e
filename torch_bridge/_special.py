"""Elementary helpers that generated Torch code calls (not closed forms).

They play the part scipy.special plays for the NumPy side: argument
promotion, and the relative functions exprel and log1prel, written with the
double-where pattern so that gradients stay finite at 0.
"""

from __future__ import annotations

import math

import torch

from tsallis.core.special import STIRLING_TERMS
from tsallis.core.tuning import STIRLING_MIN

# Below this |x| a Taylor polynomial is used; its truncation error is < 1e-18,
# and autograd of the direct quotient would cancel there.
_SERIES_CUTOFF = 1e-2
_EXPREL_TERMS = [1 / math.factorial(n + 1) for n in range(8)]
_LOG1PREL_TERMS = [(-1) ** n / (n + 1) for n in range(10)]
_SQRT_HALF = math.sqrt(0.5)


def _horner(x: torch.Tensor, coefficients: list[float]) -> torch.Tensor:
    out = coefficients[-1] + 0 * x
    for c in reversed(coefficients[:-1]):
        out = out * x + c
    return out


def promote(*args: object) -> tuple[torch.Tensor, ...]:
    """Turn all arguments into floating tensors on a common dtype and device.

    The first floating tensor argument sets dtype and device (else the first
    tensor's device and the default dtype). Python numbers become tensors.
    Nothing is copied when an argument already matches.
    """
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    floating = [t for t in tensors if t.is_floating_point()]
    if floating:
        dtype = torch.promote_types(floating[0].dtype, torch.float32)
        for t in floating[1:]:
            dtype = torch.promote_types(dtype, t.dtype)
        device = floating[0].device
    else:
        dtype = torch.get_default_dtype()
        device = tensors[0].device if tensors else None
    return tuple(torch.as_tensor(a, dtype=dtype, device=device) for a in args)


def exprel(x: torch.Tensor) -> torch.Tensor:
    """(exp(x) - 1) / x, equal to 1 at x = 0, with finite gradients."""
    small = x.abs() < _SERIES_CUTOFF
    safe = torch.where(small, torch.ones_like(x), x)
    series = _horner(x, _EXPREL_TERMS)
    return torch.where(small, series, torch.expm1(safe) / safe)


def log1prel(x: torch.Tensor) -> torch.Tensor:
    """log(1 + x) / x, equal to 1 at x = 0, with finite gradients (x > -1)."""
    small = x.abs() < _SERIES_CUTOFF
    safe = torch.where(small, torch.ones_like(x), x)
    series = _horner(x, _LOG1PREL_TERMS)
    return torch.where(small, series, torch.log1p(safe) / safe)


def normal_mass(lo: torch.Tensor, hi: torch.Tensor) -> torch.Tensor:
    """Phi(hi) - Phi(lo) for lo <= hi; upper tails when lo > 0 keep it relative-exact.

    Two erfc calls; the selected arguments are finite wherever lo and hi are.
    """
    upper = lo > 0  # both ends in the upper tail: Phi(-lo) - Phi(-hi) instead
    return ndtr(torch.where(upper, -lo, hi)) - ndtr(torch.where(upper, -hi, lo))


def ndtr(x: torch.Tensor) -> torch.Tensor:
    """Phi(x) = erfc(-x / sqrt 2) / 2, relative-exact in the lower tail.

    torch.special.ndtr (torch 2.13) loses the lower tail: it returns
    6.1e-16 at x = -8 (true 6.2e-16) and 0 below about -8.3.
    """
    return torch.special.erfc(x * -_SQRT_HALF) / 2


def lgamma_ratio(x: torch.Tensor, h: torch.Tensor | float) -> torch.Tensor:
    """log Gamma(x + h) - log Gamma(x) for x > 0, x + h > 0, with finite gradients.

    Stirling's series where x and x + h >= 10 (the plain difference loses about
    x * eps there); torch.lgamma below. Same constants as tsallis.core.special.
    """
    x, h = promote(x, h)
    large = (x >= STIRLING_MIN) & (x + h >= STIRLING_MIN)
    xs = torch.where(large, x, STIRLING_MIN)
    hs = torch.where(large, h, 0.0)
    asymptotic = (
        (xs - 0.5) * torch.log1p(hs / xs)
        + hs * torch.log(xs + hs)
        - hs
        + (_stirling_tail(xs + hs) - _stirling_tail(xs))
    )
    direct = torch.lgamma(torch.where(large, 1.0, x + h)) - torch.lgamma(torch.where(large, 1.0, x))
    return torch.where(large, asymptotic, direct)


def _stirling_tail(z: torch.Tensor) -> torch.Tensor:
    return _horner(1 / (z * z), STIRLING_TERMS) / z
