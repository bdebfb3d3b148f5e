"""alpha-entmax at the alphas whose powers are roots, as one fixed graph of whole-row passes.

At the alphas of _rational_power (1.25, 9/7, 14/11, 1.3, 4/3, 1.375, 1.4, 10/7) every
power of the state y = 1 + (alpha - 1)(z - max - c) that the map and Halley's step need
is y's square or cube root times whole powers of y, and at alpha = 3/2 they are whole
(p = y^2, s = y), so an evaluation at a shift c is at most a root, a few
multiplications and three row sums, with no data-dependent control flow: Inductor fuses
each evaluation into one pass over each row (on a GPU the whole map into one Triton
kernel). The Torch face compiles ``entmax_rows`` for its hot eager calls
(torch_bridge._fused; at 3/2 it takes the place of the eager paths for those calls:
the sort-based threshold on a GPU, a sort and a dozen launches, and the Newton loop on
large CPU calls, both slower, measured); the
steps (Halley's on log_{2-alpha}(sum p), safeguarded by a bracket) and the start
(Jensen's bound) are the Newton loop's own (tsallis.core.discrete), taken a fixed
number of times; the rows whose last Newton step is not within 2 ulps of the shift are
returned as unsettled, for the caller's loop to finish. At alpha = 2 (sparsemax) the
map searches the support by a fixed number of bracketed Newton steps and takes the
closed-form threshold on the support found (_sparsemax_rows), for the same calls in
place of the same eager paths; rows whose support moved are returned as unsettled.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from tsallis.core import arrays as _xs
from tsallis.core._generated import discrete as _gen
from tsallis.core.discrete import (
    _Chain,
    _converged,
    _deformed_step,
    _halley_step,
    _mean_gap,
    _mean_start,
    _rational_power,
    _state_exponents,
    _upper_shift,
)

__all__ = ["Constants", "constants", "entmax_rows", "rooted"]

Array = Any  # a NumPy array or a Torch tensor


def _chain(alpha: float) -> _Chain | None:
    """s's power of the state as a chain: discrete._rational_power's, or a whole power of
    1 (alpha = 3/2: s = y, p = y^2, and Halley's t = y^0, 1 on the support), which
    _rational_power leaves out (its floor's power must round to 0; _powers masks t)."""
    chain = _rational_power(alpha)
    if chain is None and 1.0 < alpha < 2.0 and _state_exponents(alpha, 2)[1] == 1.0:
        return _Chain(1, 0, 1)
    return chain


def rooted(alpha: float) -> bool:
    """Whether ``entmax_rows`` takes this Python-float alpha (its powers are roots, or
    whole at 3/2; or 2, sparsemax's support search).

    Examples:
        >>> rooted(1.3), rooted(1.5), rooted(2.0), rooted(1.6)
        (True, True, True, False)
    """
    return isinstance(alpha, float) and (alpha == 2.0 or _chain(alpha) is not None)


class Constants(NamedTuple):
    """What entmax_rows computes on the host for an alpha, a row length and a dtype
    (``constants``): a compiled kernel takes them as Python values."""

    chain: Any  # discrete._Chain: s's power as whole + part / root
    floor: float  # the state's lower clamp (see ``constants``)
    upper: float  # the bracket's upper end, -log_{2-alpha}(1/K) (discrete._upper_shift)
    fused_sums: bool = True  # Torch's own row sums under torch.compile (arrays.row_sum)


def constants(alpha: float, size: int, like: Array, fused_sums: bool = True) -> Constants:
    """entmax_rows's host values for ``alpha`` (which ``rooted`` takes), rows of ``size``
    entries and the dtype of the array ``like``; ``fused_sums=False`` leaves the row sums
    opaque to Inductor off the CPU, as the rest of the core's are (arrays.OPAQUE_ROW_SUM).

    The floor is the smallest power of two whose p = y^(1/(alpha - 1)) is a normal
    number. Subnormal products cost: a compiled float32 evaluation at 1.3 of (1024,
    1000) took 1.4 ms with the clamp at 1e-30 against 0.4 at 1e-10 (AMD EPYC). An entry
    clamped there has p below 2^-122, where its exact p is smaller still; outside the
    support p and s are set to 0.

    Examples:
        >>> import numpy as np
        >>> constants(1.3, 1000, np.zeros(0, np.float32)).floor == 2.0**-37
        True
    """
    if not rooted(alpha):
        raise TypeError(
            f"alpha must be a Python float whose powers are roots (or 1.5, or 2), got {alpha!r}"
        )
    if alpha == 2.0:  # (sparsemax's search has no state powers: no chain, no floor)
        return Constants(None, 0.0, _upper_shift(size, alpha), fused_sums)
    tiny = float(_xs.native(like).finfo(like.dtype).smallest_normal)
    floor = 2.0 ** math.ceil(math.log2(tiny) * (alpha - 1))
    return Constants(_chain(alpha), floor, _upper_shift(size, alpha), fused_sums)


def _powers(y: Array, held: Constants) -> tuple[Array, Array, Array]:
    """(p, s, t) = y^k, y^(k-1), y^(k-2), k = 1/(alpha - 1), by the rational chain of s's
    power (_chain): t = y^(whole - 1) r^part, r y's square or cube root
    (arrays.cube_root), then s = t y and p = s y. At 3/2, t = y^0 is 1 on the support
    and 0 at the floor (the clamped entries, whose t must not count in Halley's sum)."""
    whole, part, root = held.chain
    xp = _xs.namespace(y)
    if whole == 1 and not part:
        t = xp.astype(y > held.floor, y.dtype)
        return y * y, y, t
    if part:
        t = xp.sqrt(y) if root == 2 else _xs.cube_root(y)
        t = t * t if part == 2 else t
        wholes = whole - 1
    else:
        t, wholes = y, whole - 2  # (whole >= 2: s's power is at least 1.2)
    for _ in range(wholes):
        t = t * y
    s = t * y
    return s * y, s, t


def _base(gap: Array, c: Array, alpha: float) -> Array:
    """The state y = 1 + (alpha - 1)(z - max - c), unclamped (p = y^(1/(alpha - 1)) where
    it is positive, else 0), for the entries' gaps z - max."""
    return 1 + (alpha - 1) * (gap - c)


def _row_sum(x: Array, held: Constants) -> Array:
    """The row sum, Inductor's own under torch.compile where ``held`` says so."""
    return _xs.row_sum(x, fused=held.fused_sums)


def _sums(
    gap: Array, c: Array, alpha: float, held: Constants
) -> tuple[Array, Array, Array, Array, Array]:
    """(p, s, sum p, sum s, sum t) at the shift c, for the entries' gaps z - max."""
    y = _xs.at_least(_base(gap, c, alpha), held.floor)
    p, s, t = _powers(y, held)
    return p, s, _row_sum(p, held), _row_sum(s, held), _row_sum(t, held)


def entmax_rows(
    z: Array,
    top: Array,
    alpha: float,
    steps: int,
    slopes: bool = True,
    held: Constants | None = None,
) -> tuple[Array, Array | None, Array | None, Array]:
    """alpha-entmax over the last axis by ``steps`` Halley steps and a last evaluation,
    at an alpha that ``rooted`` takes (at 2, sparsemax: ``steps`` steps of its support
    search and the closed form on the support found, _sparsemax_rows).

    Args:
        z: (..., K) float32 scores, finite or -inf, each row with a finite entry.
        top: (..., 1) z's row maxima.
        alpha: a Python float that ``rooted`` takes.
        steps: Halley steps before the last evaluation (3 settle float32 N(0, sigma^2)
            rows of 1000 from sigma = 1e-6 to 100).
        slopes: also return s / sum(s) and sum(s), s = p^(2 - alpha) (the backward's).
        held: ``constants(alpha, K, z)``, when the caller holds them (a compiled
            kernel must: they are host computations).

    Returns:
        (p, s / sum(s) or None, sum(s) or None, unsettled): p renormalized on its
        support (at 2: the closed form, not renormalized); ``unsettled`` (..., 1) marks
        the rows whose Newton step at the last evaluation exceeds 2 ulps of max(|c|, 1)
        (discrete._converged; at 2: whose support moved), whose outputs the caller
        replaces.

    Raises:
        TypeError: if ``rooted`` refuses alpha.

    Examples:
        >>> import numpy as np
        >>> z = np.log(np.array([[1.0, 2.0, 3.0]], dtype=np.float32))
        >>> p, _, _, unsettled = entmax_rows(z, z.max(-1, keepdims=True), 1.3, 3)
        >>> bool(unsettled.any()), round(float(p.sum()), 6)
        (False, 1.0)
    """
    if held is None:
        held = constants(alpha, z.shape[-1], z)
    if alpha == 2.0:
        return _sparsemax_rows(z, top, steps, slopes, held)
    xp = _xs.namespace(z)
    gap = z - top
    # Jensen's bound on the mean, the loop's own start: a lower bound of the shift
    lo = xp.zeros_like(top)
    hi = lo + held.upper
    same = lambda v: v  # noqa: E731 (the per-row values stay in z's namespace)
    c = _mean_start(z, top, lo, hi, alpha, same, _mean_gap(z, top, same, _row_sum(z, held)))
    for _ in range(steps):
        _, _, total, slope, bent = _sums(gap, c, alpha, held)
        step, _, _ = _halley_step(_deformed_step(total, slope, alpha), total, slope, bent, alpha)
        step = xp.astype(step, z.dtype)  # (NumPy's generated step is float64)
        below = total > 1  # (c is left of the shift: the mass decreases in c)
        lo = xp.where(below, c, lo)
        hi = xp.where(below, hi, c)
        moved = c + step
        inside = (moved >= lo) & (moved <= hi)  # (a step of 0 stays)
        c = xp.where(inside, moved, (lo + hi) / 2)
    p, s, total, slope, _ = _sums(gap, c, alpha, held)
    unsettled = ~_converged(c, total, slope, alpha, z)
    live = _base(gap, c, alpha) > 0
    p = xp.where(live, p, 0.0)
    p = p / _row_sum(p, held)
    if not slopes:
        return p, None, None, unsettled
    s = xp.where(live, s, 0.0)
    scale = _row_sum(s, held)
    return p, s / scale, scale, unsettled


# --- alpha = 2 (sparsemax): the support by a few steps, then its closed-form threshold ---

# The power of the mass whose Newton steps the search takes: Newton's step on sum p itself
# (Michelot's step, the closed form on the current support) climbs in as many steps as
# the support shrinks by about half (N(0, sigma^2) rows of 1000, float64: up to 7 steps
# at sigma 0.1 to 0.3); on (sum p)^(1/3), nearly linear in the shift there, up to 4
# (2048 rows at each sigma from 1e-3 to 10; on (sum p)^(1/2): 5; ^(1/4): 4, more often).
# Its step is the Newton loop's own (_deformed_step) at the alpha whose 2 - alpha is
# 1 - 1/3.
_SEARCH_ALPHA = 1.0 + 1.0 / 3.0
# the threshold on the top entry alone (its gap is 0), on the host (a compiled kernel
# reads it as a constant)
_TOP_ALONE = float(_gen.sparsemax_threshold(0.0, 1.0))


def _support_sums(gap: Array, c: Array, held: Constants) -> tuple[Array, Array]:
    """(the size of the support {gap > c}, sum p at c: the sum of gap - c on it)."""
    xp = _xs.namespace(gap)
    live = gap > c
    size = _row_sum(xp.astype(live, gap.dtype), held)
    return size, _row_sum(xp.where(live, gap - c, 0.0), held)


def _closed(c: Array, size: Array, mass: Array, like: Array) -> Array:
    """The closed-form threshold on the support at c: c plus that of the gaps less c,
    whose sum on it is the mass (small terms where c is near tau: float32 p within 3e-8
    of float64's, where the threshold from the sum of the gaps themselves left it
    1.2-2.4e-7 off, measured)."""
    xp = _xs.namespace(c)
    return c + xp.astype(_gen.sparsemax_threshold(mass, size), like.dtype)


def _sparsemax_rows(
    z: Array, top: Array, steps: int, slopes: bool, held: Constants
) -> tuple[Array, Array | None, Array | None, Array]:
    """sparsemax over the last axis as entmax_rows returns it. The support is searched by
    ``steps`` bracketed Newton steps on (sum p)^(1/3) (_SEARCH_ALPHA), from the larger of
    the thresholds on the top entry alone and on the whole row (each the threshold on a
    set of top entries, so below the true one), where a step that leaves the bracket
    falls back to its lower end, at least the closed form on the current support (also
    a threshold on a top set: Michelot's step, which climbs to the true one in finitely
    many steps). Then tau is the closed form on the support at the last shift,
    sparsemax's exact threshold where that support is the true one: a row is
    ``unsettled`` where tau's own support is another (a top set of another size), and
    the caller's exact path replaces it. Measured, float32 N(0, sigma^2) rows (1024,
    1000), sigma from 1e-6 to 100: after 4 steps no row unsettled, after 3 up to 50 (at
    sigma = 0.3); p within 3e-8 of float64 (the sorted map's: 6e-8)."""
    xp = _xs.namespace(z)
    gap = z - top
    size = z.shape[-1]
    # (a row's sum of gaps may be -inf, from -inf entries)
    whole = _gen.sparsemax_threshold(_row_sum(gap, held), float(size))
    lo = _xs.at_least(xp.astype(whole, z.dtype), _TOP_ALONE)
    hi = xp.zeros_like(top)  # (the top entry is in the support: tau < 0)
    c = lo
    for _ in range(steps):
        count, mass = _support_sums(gap, c, held)
        below = mass > 1  # (c is left of tau: the mass decreases in c)
        closed = _closed(c, count, mass, z)
        lo = xp.where(below, xp.maximum(c, closed), xp.maximum(lo, closed))
        hi = xp.where(below, hi, c)
        moved = c + xp.astype(_deformed_step(mass, count, _SEARCH_ALPHA), z.dtype)
        inside = (moved > lo) & (moved < hi)
        c = xp.where(inside, moved, lo)
    count, mass = _support_sums(gap, c, held)
    tau = _closed(c, count, mass, z)
    # (not renormalized, as the sorted map's is not: float32 p within 3e-8 of float64's
    # against 1e-7 renormalized, measured on N(0, sigma^2) rows, sigma 0.1 to 3)
    p = xp.where(gap > tau, gap - tau, 0.0)
    # the support as p > 0 (gap > tau exactly: a difference of unequal floats is not 0),
    # in the dtype: a boolean support kept for two passes was stored a byte at a time by
    # Inductor's C++ (the CPU kernel took 3.3 ms against 0.4, measured)
    s = xp.astype(p > 0, z.dtype)
    size_at_tau = _row_sum(s, held)
    unsettled = size_at_tau != count
    if not slopes:
        return p, None, None, unsettled
    return p, s / size_at_tau, size_at_tau, unsettled
