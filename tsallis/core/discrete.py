"""Finite sparse maps, written once for NumPy and Torch (the array namespace).

Softmax, alpha-entmax for any alpha > 0 (sparsemax at 2) with its gppr backward and
alpha-gradient, and the ev-softmax logits (Martins et al. 2020, eqs 3 and 14; Chen et
al. 2021, eqs 7, 9 and 10). Every function acts along the last axis of a floating
array and computes in its dtype; the faces (tsallis.discrete, torch_bridge.discrete,
torch_bridge.entmax) validate the arguments, move the axis and choose the working
dtype. The closed forms (deformed logarithm and exponential, gppr weights, dp/dalpha,
the eq 10 shift) come from derivations/ through tsallis.core._generated.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from types import ModuleType
from typing import Any, NamedTuple

import numpy as np
from array_api_compat import device as _device
from array_api_compat import is_torch_array

from tsallis.core import arrays as _xs
from tsallis.core import tuning as T
from tsallis.core._generated import deformed as _deformed
from tsallis.core._generated import discrete as gen
from tsallis.core.branching import Branch

__all__ = [
    "entmax15_sorted",
    "entmax_alpha_gradient",
    "entmax_map",
    "entmax_newton",
    "ev_logits",
    "gppr_jacobian",
    "gppr_weights",
    "normalized",
    "sparsemax_sorted",
]

Array = Any  # a NumPy array or a Torch tensor


class ColumnSlopes(NamedTuple):
    """s / sum(s) of entmax_newton's ``slopes="unit"`` where each row's support lies in
    a few of its columns: ``values`` (..., k) at ``columns`` (..., k), 0 elsewhere."""

    values: Array
    columns: Array


def normalized(logits: Array, log: bool = False) -> Array:
    """softmax (log_softmax) over the last axis; -inf logits get 0 (-inf).

    A row must hold at least one finite logit (the faces set empty rows to 0).

    Examples:
        >>> import numpy as np
        >>> normalized(np.array([0.0, np.log(3.0), -np.inf]))
        array([0.25, 0.75, 0.  ])
    """
    xp = _xs.namespace(logits)
    shifted = logits - xp.max(logits, axis=-1, keepdims=True)
    e = xp.exp(shifted)
    total = xp.sum(e, axis=-1, keepdims=True)
    return shifted - xp.log(total) if log else e / total


# --- sparsemax and 1.5-entmax by sorting (small calls; tuning.SORT_ELEMENTS) ---


def _eager_cpu(z: Array) -> bool:
    """Whether z is a NumPy array, or a CPU tensor outside torch.compile and not wrapped
    by torch.func (host reads and NumPy views allowed)."""
    if not is_torch_array(z):
        return True
    return z.device.type == "cpu" and not _xs._torch_compiling(z) and not _xs.functorch_wrapped(z)


def _numpy_viewable(z: Array) -> bool:
    """Whether z is a float32 / float64 CPU tensor outside torch.compile (NumPy views it)."""
    torch = _xs.native(z)
    return _eager_cpu(z) and z.dtype in (torch.float32, torch.float64)


def _view(z: Array | None) -> Array | None:
    """A CPU tensor's NumPy view (a NumPy array and None stay as they are)."""
    return z.detach().numpy() if is_torch_array(z) else z


def _decreasing(z: Array) -> Array:
    """z sorted in decreasing order along the last axis."""
    if is_torch_array(z):
        torch = _xs.native(z)
        if _numpy_viewable(z) and z.shape[-1] > T.TORCH_SORT_LENGTH:
            # NumPy's sort of a view, as -sort(-z) below: float32 (32, 1000) 52 us against
            # 1039 for Torch's, (1024, 32) 41 against 500 (torch 2.13, NumPy 2.4)
            return torch.from_numpy(-np.sort(-_view(z), axis=-1))
        # Torch's descending sort is contiguous: one kernel
        return torch.sort(z, dim=-1, descending=True, stable=False).values
    # elsewhere -sort(-z), contiguous (NumPy's descending sort is a flipped view);
    # stable=False: the array API default (stable) measured 2.7 times slower in NumPy,
    # and ties do not matter
    return -_xs.namespace(z).sort(-z, axis=-1, stable=False)


@functools.lru_cache(maxsize=8)
def _counting(xp: ModuleType, size: int, dtype: Any, device: Any) -> Array:
    """1..size, shared between calls (an arange is a kernel launch on a GPU; a NumPy
    array here is read-only; ``__wrapped__``: a fresh one). Only eager calls reach it
    (the sorted maps break graphs)."""
    sizes = xp.arange(1, size + 1, dtype=dtype, device=device)
    if isinstance(sizes, np.ndarray):
        sizes.flags.writeable = False
    return sizes


def _prefix_sums(ordered: Array) -> tuple[Array, Array]:
    """The sums of the first 1..K entries of ``ordered`` along the last axis, and 1..K."""
    size = ordered.shape[-1]
    counting = _counting if size <= T.SHARED_COUNTING else _counting.__wrapped__
    # (a tensor's own device: array_api_compat's device() costs about 1 us a call)
    device = ordered.device if is_torch_array(ordered) else _device(ordered)
    sizes = counting(_xs.namespace(ordered), size, ordered.dtype, device)
    # (the library's own cumsum, spelled alike in both: the array-API wrapper adds a
    # namespace lookup per call)
    return _xs.native(ordered).cumsum(ordered, -1), sizes


def _sorted_threshold(ordered: Array, alpha: float, width: int | None = None) -> Array:
    """The threshold tau of sparsemax (alpha = 2: p = [u - tau]_+) or of 1.5-entmax (p =
    [u - tau]_+^2, u = z / 2) from ``ordered``, the u of a row in decreasing order,
    relative to the row maximum, at 3/2 clipped at -2 (tau >= -1: the top entry alone
    has mass 1, so -2 clips only entries off the support, and -inf, whose square would
    meet the prefix sums' -inf in a NaN; sparsemax may take them as they are). The
    per-size thresholds are generated. Given only a row's largest entries: tau of those alone.

    The per-size thresholds come from the prefix sums of u (and of u^2 at 3/2). At 3/2
    they run in float64: the root's radicand first^2 - size (second - 1) cancels (with
    the support's mean and variance in float32 the start of the Newton loop was 8 ulps
    off, and the sort-based map 3.9e-7 off, against 4e-8 for sparsemax, on rows with
    near-ties at the top; the power sums in float32 would lose more).

    ``width`` (one host read): the per-size thresholds of the first ``width`` sizes only,
    then of every size if some row's support may reach past them: tau of the first
    ``width`` entries is the row's wherever the ``width``-th lies at or below it (every
    later entry then has p = 0 at that tau, so the row's mass there is theirs). Measured
    (torch 2.13, CPU, float32, forward + backward of 1.5-entmax, the sort NumPy's, width
    64 / every size): (16, 1000) 441 / 659 us, (32, 1000) 613 / 957.
    """
    size = ordered.shape[-1]
    if width is not None and width < size:
        tau = _prefix_threshold(ordered[..., :width], alpha)
        if not bool(_xs.namespace(tau).any(ordered[..., width - 1 : width] > tau)):
            return tau
    return _prefix_threshold(ordered, alpha)


def _prefix_threshold(ordered: Array, alpha: float) -> Array:
    """_sorted_threshold over every prefix of ``ordered``: the largest per-size threshold,
    each capped at its prefix's smallest entry (at 3/2; sparsemax's need no cap).

    With tau_k the threshold of the first k entries alone (the generated closed form)
    and tau the row's: where tau_k <= u_k (the k-th largest entry), the first k have
    mass 1 at tau_k and the whole row at least that, so tau_k <= tau (the mass falls in
    tau); where tau_k > u_k, u_k <= tau (were u_k above tau, the first k would all lie in
    the support, their mass at tau at most 1, and tau_k, the root on the decreasing side
    of their sum of squares, at most tau: below u_k); and k = |S| gives tau itself. So
    tau = max_k min(tau_k, u_k). For sparsemax tau_k <= tau at every k: the mass of the
    first k at tau_k, sum (u_i - tau_k) = 1, counts entries below tau_k negatively, so
    the row's [u_i - tau_k]_+ sum is at least 1. One reduction, where finding the
    support's size (a comparison and a count) and gathering its threshold took four
    kernels (a GPU launches each).
    """
    xp, lib = _xs.namespace(ordered), _xs.native(ordered)
    if alpha == 2.0:
        sums, sizes = _prefix_sums(ordered)
        return xp.max(gen.sparsemax_threshold(sums, sizes), axis=-1, keepdims=True)
    wide = xp.astype(ordered, xp.float64)
    sums, sizes = _prefix_sums(wide)
    squares = lib.cumsum(wide * wide, -1)
    per_size = gen.entmax15_threshold(sums, squares, sizes)
    capped = lib.minimum(per_size, wide, out=per_size)
    return xp.astype(xp.max(capped, axis=-1, keepdims=True), ordered.dtype)


def sparsemax_sorted(z: Array) -> Array:
    """Euclidean projection onto the simplex, exact (sort-based), over the last axis.

    Examples:
        >>> import numpy as np
        >>> sparsemax_sorted(np.array([0.4, 0.9, -0.8]))
        array([0.25, 0.75, 0.  ])
    """
    return _sorted_map(z, 2.0, False)[0]


def entmax15_sorted(z: Array) -> Array:
    """1.5-entmax, exact (sort-based threshold of z / 2), over the last axis.

    Examples:
        >>> import numpy as np
        >>> entmax15_sorted(np.array([0.0, 0.0]))
        array([0.5, 0.5])
    """
    return _sorted_map(z, 1.5, False)[0]


def _sorted_map(
    z: Array, alpha: float, slopes: bool, top: Array | None = None
) -> tuple[Array, Array | None, Array | None]:
    """sparsemax (alpha = 2: p = [u - tau]_+, u = z - max) or 1.5-entmax (p = [u - tau]_+^2,
    u = (z - max) / 2) over the last axis by the sorted threshold (_sorted_threshold), as
    entmax_map returns it: (p, s / sum(s), sum(s)) with ``slopes`` (s = p^(2 - alpha):
    the support indicator at 2, [u - tau]_+ at 3/2; the top entry is always in the
    support, so sum(s) > 0), else (p, None, None). The slopes cost three passes here and
    spare the backward its recomputation of s from p (entmax_alpha_gradient). ``top``:
    z's row maxima (..., 1), when the caller has them."""
    xp, lib = _xs.namespace(z), _xs.native(z)
    shifted = z - (xp.max(z, axis=-1, keepdims=True) if top is None else top)
    half = alpha == 1.5
    # clips by the library's own clip (spelled alike in both): the array-API maximum
    # turns its scalar into an array first, a few us of Python per call, which is most
    # of a small call's cost beside its kernels (and on a GPU beside their launches)
    # 3/2 clips u at -2 (_sorted_threshold: its squares must not overflow); sparsemax's
    # prefix sums may run to -inf off the support, where no maximum looks (one pass less)
    u = lib.clip(shifted / 2, -2.0, None) if half else shifted
    # on the CPU in eager mode: the first SORTED_PREFIX sizes, unless a support fills them
    width = T.SORTED_PREFIX if _eager_cpu(z) else None
    y = lib.clip(u - _sorted_threshold(_decreasing(u), alpha, width), 0.0, None)
    p = y * y if half else y
    if not slopes:
        return p, None, None
    s = y if half else lib.sign(y)  # (y >= 0: the support indicator in one pass)
    total = _xs.row_sum(s)
    return p, s / total, total


# --- alpha-entmax by a Newton iteration on the threshold (any alpha > 0) ---


def _clamped_form(alpha: float | Array) -> str | None:
    """The form of the Newton loop's state at a Python-float alpha in (1, 2] (see
    _Buffers), or None."""
    if not isinstance(alpha, float) or not 1.0 < alpha <= 2.0:
        return None
    if alpha in (1.5, 2.0):
        return "power"
    return "base" if alpha >= T.BASE_FORM_ALPHA else "offset"


def _shifted(z: Array, top: Array, scale: float | None, out: Array | None = None) -> Array:
    """scale (z - top) (scale None: z - top), into ``out`` or a fresh array."""
    lib = _xs.native(z)
    if scale == 0.5 and is_torch_array(z):
        # z/2 - max/2 in one pass (halving is exact, so one rounding as in (z - max)/2)
        return lib.add(top * -0.5, z, alpha=0.5, out=out)
    shifted = lib.subtract(z, top, out=out)
    if scale is not None and scale != 1.0:
        lib.multiply(shifted, scale, out=shifted)
    return shifted


def _c_order(a: Array) -> bool:
    """Whether a NumPy array or a tensor is laid out in C order."""
    return a.is_contiguous() if is_torch_array(a) else a.flags.c_contiguous


class _Buffers:
    """The Newton loop's (..., K) arrays, formed once and reused by every step (see
    arrays.native).

    At a Python-float alpha in (1, 2] (_clamped_form) the mass is evaluated from the
    state y (in ``x``), clamped at ``floor``, with f = (z - max) - c:
    - "power" (alpha = 2 or 3/2) and "base": y = [1 + (alpha - 1) f]_+ and p =
      y^(1/(alpha - 1)) (for "base", whose logarithm is taken, the floor is the smallest
      normal number: Torch's log2 of 0 took 4.7 ms on a float32 (1024, 1000) array that
      was 90% zeros, against 0.14 ms);
    - "offset" (alpha below tuning.BASE_FORM_ALPHA): y = max((alpha - 1) f, -1) and p =
      (1 + y)^(1/(alpha - 1)) by log1p: y keeps the relative precision of a small (alpha
      - 1) f, which 1 + y rounds to an absolute eps, 1/(alpha - 1) times larger in p.
    ``move(c)`` brings y to c. With ``incremental`` (the eager loop, its per-row values in
    NumPy) it subtracts the step from y in place unless some row's c fell: an entry
    clamped at one c stays clamped at every larger c, so the clamp loses nothing (the
    loop's c rise while g >= 0: Newton's method on the convex, decreasing h from the
    left). In place one array is read and written (float32 (1024, 1000): 0.044 ms here,
    it stays in the L2 caches), where forming y anew reads one and writes another (0.14
    ms); its first move, and a move after a fall, form y at c from z in two passes
    (``scratch``: a C-order array of z's shape to hold it, _prefix_start's). Otherwise
    every move forms y from ``origin``, y at c = 0.

    Other alphas: ``origin`` holds z - max, scaled by alpha - 1 at a Python-float alpha
    but 1, and ``x``, ``p``, ``s`` are _mass's work arrays.
    """

    def __init__(
        self,
        z: Array,
        top: Array,
        alpha: float | Array,
        incremental: bool = False,
        to_work: Callable = lambda c: c,
        form: str | None = None,
        scratch: Array | None = None,
    ) -> None:
        xp, lib = _xs.namespace(z), _xs.native(z)
        self.z, self.top, self.to_work = z, top, to_work
        self.form = form  # _clamped_form(alpha), found once outside the loop: under
        # torch.compile(dynamic=True) the tuning value it reads is a symbolic float,
        # which a while_loop body must not capture
        self.incremental = incremental and self.form is not None
        # off the CPU in eager mode (a GPU, where a call costs its kernel launches): p and
        # s (and Halley's t) as one power of the state y, [p; s; t] = y^[1/(alpha - 1);
        # (2 - alpha)/(alpha - 1); (3 - 2 alpha)/(alpha - 1)] into a (2 or 3, ..., K) buffer,
        # and their row sums as one reduction and one copy to the host: four kernels per
        # step against eight (_stacked_exponents). y's floor is then 0, whose powers are
        # 0 (the exponents are > 0, t's where it is used), and y is formed from y at c = 0
        # at every step (one rounding: moved in place from the Jensen start, seven steps
        # left p up to 4.4e-7 off at alpha = 1.9 in float32, formed anew 3.1e-7, about
        # what one ulp of the float32 shift moves p by on those rows)
        self.stacked = self.incremental and self.form == "base" and not _eager_cpu(z)
        self.incremental = self.incremental and not self.stacked

        device = _device(z)

        def fresh() -> Array:  # C order whatever z's strides: the same sums, bit for bit
            return xp.empty(z.shape, dtype=z.dtype, device=device)

        # a scratch array of z's shape (_prefix_start's) for the state, if in C order
        usable = self.incremental and scratch is not None and _c_order(scratch)
        self.origin = scratch if usable else fresh()
        if self.form is None:
            scale = alpha - 1 if isinstance(alpha, float) and alpha != 1.0 else None
            _shifted(z, top, scale, out=self.origin)
        else:
            self.scale, self.lead = alpha - 1, 0.0 if self.form == "offset" else 1.0
            self.floor = {"offset": -1.0, "power": 0.0}.get(
                self.form, 0.0 if self.stacked else float(xp.finfo(z.dtype).smallest_normal)
            )
            if self.stacked:  # y at c = 0 unclamped (each move clamps): two kernels
                shifted = lib.subtract(z, top, out=self.origin)
                lib.add(self.lead, shifted, alpha=self.scale, out=self.origin)
            elif not self.incremental:  # y at c = 0, from which every step forms y at c
                _xs.at_least_into(self._unclamped(self.origin), self.floor, out=self.origin)
            self.at = None  # the c of y in x (incremental): none yet, the first move forms it
        self.p_in_s = False  # whether _mass left p in s (then s is formed from it)
        self.t_in_p = False  # whether _mass left Halley's t = s / y in p (with p in s)
        self.final = False  # the next evaluation is known to be the last: p apart from s
        self.keep_s = False  # (the finishing loop's lazy first step) p apart from s too
        self.x = self.origin if self.incremental else fresh()
        self.sums = None  # the stacked form's row sums (2 to 4, ..., 1), on z's device
        # (t only where Halley's steps may be taken; up to QUARTIC_ALPHA also u = p^(4 - 3
        # alpha), for the error of a Halley step: entmax_newton's ``predicted``)
        self.quartic = self.stacked and alpha <= QUARTIC_ALPHA
        self.fourth = None  # the last evaluation's sum of u on the host (quartic)
        self.bent_sum = None  # (_rooted_mass) the last evaluation's sum of t
        if self.stacked:
            rows = 4 if self.quartic else 3 if alpha <= 1.5 else 2
            self.powers = xp.empty((rows, *z.shape), dtype=z.dtype, device=device)
            self.p, self.s = self.powers[0], self.powers[1]
        else:
            self.p, self.s = fresh(), fresh()

    def _unclamped(self, out: Array, c: Array | None = None) -> Array:
        """lead + (alpha - 1)((z - max) - c), y at c (per row in the loop's namespace;
        None: 0) before the clamp, into ``out``."""
        lib = _xs.native(out)
        if c is None:
            shifted = _shifted(self.z, self.top, self.scale, out=out)
            return lib.add(shifted, self.lead, out=out)
        offset = self.to_work(self.lead - self.scale * c)  # per row
        if is_torch_array(out):  # offset + (alpha - 1)(z - max): two passes
            shifted = lib.subtract(self.z, self.top, out=out)
            return lib.add(offset, shifted, alpha=self.scale, out=out)
        return lib.add(_shifted(self.z, self.top, self.scale, out=out), offset, out=out)

    def move(self, c: Array) -> None:
        """y at c (per row, (..., 1) in the loop's namespace) into ``x``."""
        lib, y = _xs.native(self.x), self.x
        if not self.incremental:
            lib.subtract(self.origin, self.to_work(self.scale * c), out=y)
            _xs.at_least_into(y, self.floor, out=y)
            return
        if self.at is not None:
            step = c - self.at
            if step.min() >= 0:  # (a NumPy array: one reduction, no temporary mask)
                if step.max() > 0:
                    lib.subtract(y, self.to_work(self.scale * step), out=y)
                    _xs.at_least_into(y, self.floor, out=y)
                self.at = c
                return
        # the first step, or a row's c fell (a rounding overshoot, or bisection): y from z
        self.at = c
        _xs.at_least_into(self._unclamped(y, c), self.floor, out=y)

    def bent_total(self) -> Array:
        """The row sums of Halley's t = s / y at the last evaluation, in z's kind (the
        "base" state), formed in ``p``: from s kept apart (keep_s, the finishing loop's
        lazy first step) by one division, else as (p / y) / y from p in ``s`` (p_in_s).
        Float32 (1024, 1000) N(0, 1) rows at alpha = 1.3, forward + backward, one process
        alternating, two divisions / one: 9.36 / 9.27, 7.37 / 7.19, 8.56 / 8.34 ms."""
        if self.t_in_p and self.bent_sum is not None:  # (_rooted_mass: t is in p)
            return self.bent_sum
        lib, y = _xs.native(self.x), self.x
        if not self.p_in_s:  # s kept apart (keep_s): one division, over p
            return _xs.row_sum(lib.divide(self.s, y, out=self.p))
        t = lib.divide(lib.divide(self.s, y, out=self.p), y, out=self.p)
        return _xs.row_sum(t)

    def finished(self, delta: np.ndarray, alpha: float) -> tuple[Array, Array]:
        """p and s moved from the last evaluation's shift c to c + ``delta`` (per row, in
        the loop's namespace) to first order, in place of an evaluation there: (sum p, sum
        s) per row, in z's kind; then p and s are in ``p`` and ``s`` (normalized).

        The "base" state y at c in ``x`` and Halley's t = s / y in ``p`` (t_in_p: p was
        left in ``s``): with d = delta, s' = t [y - r d]_+ and p' = [y - (alpha - 1) d]_+ s',
        r = 2 - alpha the generated finish_rate (ds/dc = -r t), so p' = 0 wherever s' = 0
        (alpha < 3/2). To first order these are p - d s and s - r d t; their errors are the
        generated finish_error, (2 - alpha)(3 - 2 alpha) / 2, times t d^2 and y^((4 - 3
        alpha) / (alpha - 1)) d^2 to leading order (derivations/discrete.py checks both);
        within _finish_bound every entry's error is at most an absolute eps / 8, those
        set to 0 near the support edge and those that come in included (see there; a test
        checks it at 40 digits). Six passes and two sums, no transcendental.
        """
        lib = _xs.native(self.x)
        y, t, free = self.x, self.p, self.s
        rate = float(gen.finish_rate(alpha))
        lib.subtract(y, self.to_work(rate * delta), out=free)
        _xs.at_least_into(free, 0.0, out=free)  # (+0 where negative: no -0 below)
        s = lib.multiply(t, free, out=t)
        lib.subtract(y, self.to_work(self.scale * delta), out=y)  # (as move does)
        _xs.at_least_into(y, 0.0, out=y)
        p = lib.multiply(y, s, out=free)
        self.p, self.s, self.p_in_s, self.t_in_p, self.at = p, s, False, False, None
        return _xs.row_sum(p), _xs.row_sum(s)

    def normalized(
        self, alpha: float | Array, total: Array, slopes: bool | str, slope_total: Array
    ) -> tuple[Array, Array | None, Array | None]:
        """(p, s or None, scale or None) of the last evaluation, divided by its mass
        ``total``: p and s = p^(2 - alpha) of the normalized map (total, ``slope_total``
        the last evaluation's sum of s before the division, and an alpha array per row, in
        the loop's namespace). ``slopes == "unit"``: s / sum(s) instead, and scale =
        sum(s) per row (see entmax_newton)."""
        lib, to_work = _xs.native(self.x), self.to_work
        unit = slopes == "unit"
        if self.form == "power" and alpha == 1.5:  # s = y / sqrt(total), p = s^2
            s = _renormalized_slopes(self.x, total, alpha, to_work)
            p = lib.multiply(s, s, out=self.p)
            if not unit:
                return p, s, None
            # s / sum(s), sum(s) = sum(y) / sqrt(total) (the slope sum: y's)
            scale = to_work(slope_total * _power(total, alpha - 2))
            return p, lib.divide(s, scale, out=s), scale
        if self.form == "power":  # p = y, s the support indicator
            p = lib.divide(self.x, to_work(total), out=self.x)
            if not unit:
                return p, self.s if slopes else None, None
            return p, lib.divide(self.s, to_work(slope_total), out=self.s), to_work(slope_total)
        if self.stacked:  # the sums (and the scale) sent in one copy, or on the device
            # already; p a fresh array, not a view of the stacked buffer (which a returned
            # p would keep alive)
            if is_torch_array(total):
                power = lib.pow(total, alpha - 2)
                scale = slope_total * power
                sent = (total, slope_total, scale)
                if slopes and not unit:  # s of p / total: s total^(alpha - 2)
                    return lib.divide(self.p, total), lib.multiply(self.s, power), None
            else:
                scale = slope_total * _power(total, alpha - 2)
                sent = to_work(np.stack([total, slope_total, scale]))
            p = lib.divide(self.p, sent[0])
            if not slopes:
                return p, None, None
            if not unit:
                return p, _renormalized_slopes(self.s, total, alpha, to_work), None
            return p, lib.divide(self.s, sent[1], out=self.s), sent[2]
        if self.p_in_s:  # (_mass) s = p / (1 + x), into the p buffer
            p, s = self.s, self.p
            if self.form == "base":
                lib.divide(p, self.x, out=s)  # (the floor's p is 0)
            else:
                _over_one_plus(p, self.x, out=s)
            self.p, self.s = p, s
        p = lib.divide(self.p, to_work(total), out=self.p)
        if not slopes:
            return p, None, None
        if isinstance(alpha, float) and alpha == 1.0:  # s = p, whose sum is 1
            return p, p, (to_work(total * 0 + 1) if unit else None)
        if not unit:
            return p, _renormalized_slopes(self.s, total, alpha, to_work), None
        s = lib.divide(self.s, to_work(slope_total), out=self.s)
        return p, s, to_work(slope_total * _power(total, alpha - 2))


def _over_one_plus(p: Array, x: Array, out: Array) -> Array:
    """p / (1 + x) into ``out`` (not p or x), x >= -1: where 1 + x is 0, so is p (off the
    support), and the divisor is the smallest normal number instead."""
    lib = _xs.native(p)
    tiny = float(_xs.namespace(p).finfo(p.dtype).smallest_normal)
    lib.clip(lib.add(x, 1.0, out=out), tiny, None, out=out)
    return lib.divide(p, out, out=out)


def _over_base(p: Array, base: Array) -> Array:
    """s = p / base (fresh), base = (alpha - 1)(z - tau): where base <= 0, p is 0, and the
    divisor is the smallest subnormal number instead (_refined_above_two). Not the
    smallest normal, as in _over_one_plus: a base below it is exact here, and at a large
    alpha its p is not small (base 1e-310 at alpha = 100: p = 7.7e-4)."""
    lib = _xs.native(p)
    single = "float32" in str(p.dtype)
    tiny = float(np.finfo(np.float32 if single else np.float64).smallest_subnormal)
    return lib.divide(p, lib.clip(base, tiny, None))


def _evaluate(
    c: Array, alpha: float | Array, work: _Buffers, bend: bool, to_work: Callable, to_book: Callable
) -> tuple[Array, Array, Array | None]:
    """_mass at c (per row, in the loop's namespace), the state moved there first: its
    sums (sum p, sum s, sum t or None) in the loop's namespace (``to_book``), the stacked
    form's in one copy; sum s also kept as work.slope_total (normalized)."""
    if work.form is not None:
        work.move(c)
    # (the clamped forms hold their state at c already: c is not sent to z's device)
    sums = _mass(None if work.form is not None else to_work(c), alpha, work, bend)
    if work.stacked:
        booked = to_book(work.sums)
        total, slope, bent = booked[0], booked[1], booked[2] if bend else None
        work.fourth = booked[3] if bend and work.quartic else None
    else:
        total = to_book(sums[0])
        slope = total if sums[1] is sums[0] else to_book(sums[1])  # (alpha = 1: s = p)
        bent = None if sums[2] is None else to_book(sums[2])
    work.slope_total = slope
    return total, slope, bent


# u = p^(4 - 3 alpha), whose row sum gives h''' (entmax_newton's ``predicted``, by the
# generated halley_error), is bounded below 4/3 (its power of the state y, (4 - 3 alpha)
# / (alpha - 1), is then positive); near 4/3 that power nears 0, u nears the support's
# indicator, and h''' jumps as entries leave: the estimate of a Halley step's error was
# up to 1.7 times short at 1.3333 and 1.35 at 1.33, within 6% up to 1.32 (float64 N(0,
# 1) rows of 1000, three seeds, steps from 1e-3 to 3e-2 below the shift)
QUARTIC_ALPHA = 1.32

# The largest alpha at which the eager loop ends on _Buffers.finished (see there and
# _finish_bound): below 3/2, where t = p^(3 - 2 alpha) is at most 1 on the support
# and the finish's p' is 0 wherever its s' is
_FINISH_ALPHA = 1.49


def _finish_bound(eps: float, alpha: float) -> float:
    """The largest last step |d| that _Buffers.finished takes: its errors are then at
    most eps / 8 on every entry.

    p's error is the generated finish_error C times t d^2 to leading order, t <= 1:
    |d| <= sqrt(eps / (8 C (1 + 1/64))), the factor for the next orders (a relative
    O(|d|): at y = 1 and d < 0, where the state rises above 1, they added 1.2e-4 at
    float32's bound at 4/3). So is s's up to 4/3, where its factor u = y^((4 - 3 alpha)
    / (alpha - 1)) is at most 1 too. Above 4/3 u is unbounded at the support edge; there,
    with h = (alpha - 1)|d| and a = (2 - alpha) / (alpha - 1) (s = y^a, 1 < a < 2), s's
    error is h^a B(y / h), where B(v) = (v + 1)^a - v^a - a v^(a - 1) (d < 0: the state
    rises by h, entries come in at v = 0) or (v - 1)_+^a - v^(a - 1) (v - a)_+ (d > 0)
    is at most 1 (its value at v = 0; derived and checked at 40 digits in
    derivations/discrete.py, finish_edge_factors), so |d| <= (eps / 8)^(1 / a) / (alpha
    - 1) too (a test checks the finish's errors within this bound at 40 digits; at 4/3
    the bounds agree to the factor: C = 1/9, h^2 = d^2 / 9). Float32: 3.2e-4 at 1.3,
    1.7e-4 at 1.35, 1.5e-5 at 1.4, 8.8e-7 at 1.45; a longer last step is evaluated
    instead."""
    bound = math.sqrt(eps / (8 * (1 + 1 / 64) * float(gen.finish_error(alpha))))
    if alpha <= 4 / 3:
        return bound
    power = _state_exponents(alpha, 2)[1]  # a, s's power of y
    return min(bound, (eps / 8) ** (1 / power) / (alpha - 1))


def _slow_exp2_band(x: Array, argument: float, log_floor: float) -> bool:
    """Whether Torch's exp2 of the floor's ``argument`` (its exponent times
    ``log_floor``, log2 of the smallest normal number) lands in the band where it is
    slow, from log_floor to twice it: on float32 CPU tensors (torch 2.13, AMD EPYC Zen
    4), exp2 of (1024, 1000) values took 0.16-0.17 ms at arguments above -126 or below
    -252 and at -inf, but 0.32-0.35 ms from -126.5 to -250 (results below the smallest
    normal number), where the clamped entries of the "base" state lie for alpha in
    (4/3, 3/2) (s's power of y in (1, 2)). Setting them to -inf first (one threshold
    pass, 0.06 ms) is cheaper (tuning.EXP2_BAND). Float64 has such a band too (-1022 to
    about -2045: 0.64 against 0.45 ms), but there the pass took 0.25 ms."""
    if not (is_torch_array(x) and x.device.type == "cpu"):
        return False
    return "float32" in str(x.dtype) and 2 * log_floor < argument < log_floor


def _state_exponents(alpha: float, count: int = 3) -> tuple[float, ...]:
    """The powers of the state y = 1 + (alpha - 1) f that give p = y^(1/(alpha - 1)) and
    its powers p^(k - (k - 1) alpha), k = 1..``count``: (k - (k - 1) alpha) / (alpha - 1),
    i.e. p, s = p^(2 - alpha), t = p^(3 - 2 alpha) and u = p^(4 - 3 alpha) (the clamped
    forms' _mass, both ways; each is the previous one's dc-derivative's power)."""
    return tuple((k - (k - 1) * alpha) / (alpha - 1) for k in range(1, count + 1))


@functools.lru_cache(maxsize=16)
def _stacked_exponents(lib: ModuleType, alpha: float, ndim: int, dtype: Any, device: Any) -> Array:
    """_state_exponents of p, s, t and u (u = p^(4 - 3 alpha)) as a (4, 1, ..., 1) array
    of z's kind (_Buffers.stacked), shared between calls (one copy to the device each
    time otherwise)."""
    values = list(_state_exponents(alpha, 4))
    return lib.tensor(values, dtype=dtype, device=device).reshape((4,) + (1,) * ndim)


def _mass(
    c: Array, alpha: float | Array, work: _Buffers, bend: bool = False
) -> tuple[Array, Array, Array | None]:
    """(sum_i p_i, sum_i s_i, sum_i t_i or None) over the last axis, with p =
    exp_{2-alpha}(f) and s = dp/dz = p^(2-alpha) left in work (work.normalized), f = (z -
    max) - c (work.origin holds z - max; finite entries or -inf; at a Python-float alpha
    in (1, 2] work.x already holds the state y at c: _Buffers.move). With ``bend`` (a
    Python-float alpha in (0, 1) or (1, 3/2]) also t = p^(3-2 alpha) = s / (1 + (alpha -
    1) f), for which d^2 p / dc^2 = (2 - alpha) t (the Halley steps of entmax_newton).

    f is formed from the row maximum, as (z - max) - c: c stays small, so it is
    resolved finely (z - (max + c) in one step measured 1.2e-6 off in float32 at alpha
    = 3/2 on 256 x 1000 N(0, 1) scores, against 4.1e-7).

    log p = log1p((alpha - 1) f) / (alpha - 1) below tuning.BASE_FORM_ALPHA: (alpha - 1)
    f keeps its relative precision, where forming 1 + (alpha - 1) f first would lose it
    (at alpha = 1.0001 that cost 1e-12 in float64, 1e-3 in float32); s = p / (1 + (alpha
    - 1) f). alpha = 2 and 3/2 (Python floats) take their polynomials (no
    transcendental), and in eager mode 1.25, 9/7, 4/3 and 1.4, whose powers of y are whole
    or half, take multiplications and a square root, and 14/11, 1.3, 1.375 and 10/7
    (thirds) a cube root (_rooted_mass); alpha = 1 is exp(f).
    Computed into the buffers with ``out=``
    (arrays.native); on a GPU the "base" form's p, s (and t) are one stacked power of y
    (_Buffers.stacked).
    """
    xp, lib = _xs.namespace(work.x), _xs.native(work.x)
    x, p, s = work.x, work.p, work.s
    if work.form == "power" and alpha == 2.0:  # p = y
        lib.sign(x, out=s)  # the support indicator (a bool count converts 8-byte ints)
        return _xs.row_sum(x), _xs.row_sum(s), None
    if work.form == "power":  # p = y^2, y = [1 + f/2]_+: dp/dc = -y, s = y
        count = _xs.row_sum(lib.sign(x, out=s)) if bend else None
        # sum p as y * y into p (free until the map's last division) and Torch's own sum:
        # the squared 2-norm, faster (float32 (1024, 1000): 0.031 ms against 0.065), was
        # 4.0e-6 relatively off on rows of 992 equal small squares and 3 large ones (the
        # sum 3.8e-7), and p on such rows (float32 integer scores) 2.2e-6 off float64
        return _xs.row_sum(lib.multiply(x, x, out=p)), _xs.row_sum(x), count
    shifted = work.origin
    if isinstance(alpha, float) and alpha == 1.0:
        _xs.exp_flushed(lib.subtract(shifted, c, out=x), out=p)
        work.s = p  # s = p
        total = _xs.row_sum(p)
        return total, total, None
    if isinstance(alpha, float) and work.form is None:  # alpha < 1 or > 2
        lib.subtract(shifted, (alpha - 1) * c, out=x)  # (alpha - 1) f
        if alpha > 2:  # s = p / (1 + x) (p^(2-alpha) would be +inf off the support)
            lib.clip(x, -1.0, None, out=x)  # off the support: p = 0
            _xs.exp_flushed(lib.multiply(lib.log1p(x, out=p), 1 / (alpha - 1), out=p), out=p)
            _over_one_plus(p, x, out=s)
            return _xs.row_sum(p), _xs.row_sum(s), None
    if work.stacked:  # [p; s (; t (; u))] = y^[exponents] and their sums, one kernel each
        rows = (4 if work.quartic else 3) if bend else 2
        exponents = _stacked_exponents(lib, alpha, x.ndim, x.dtype, x.device)  # (a tensor)
        powers = lib.pow(x, exponents[:rows], out=work.powers[:rows])
        work.sums = _xs.row_sum(powers)
        return work.sums[0], work.sums[1], work.sums[2] if bend else None
    if isinstance(alpha, float) and work.form == "base" and not _xs._torch_compiling(x):
        chain = _rational_power(alpha)
        if chain is not None:  # (no transcendental but a square root)
            return _rooted_mass(work, chain, bend)
    if isinstance(alpha, float):
        # log2 s = log2(1 + x) (2 - alpha) / (alpha - 1), p = s (1 + x): exp2 and one
        # fused pass (arrays.EXP_FLUSH: about 4 times cheaper than exp); x = y, or for
        # "base" 1 + x = y (its floor, the clamped entries, to -inf: p = s = 0)
        p_power, exponent, t_power = _state_exponents(alpha)  # s = (1 + x)^exponent
        if work.form == "base":
            log_base, unit = _xs.log2_into(x, out=s), 1.0
            # the floor's s must be 0: exp2 of log2(floor) exponent rounds to 0 once that
            # is a bit below the smallest subnormal; otherwise the floor goes to -inf
            log_floor = math.log2(work.floor)
            argument = log_floor * exponent  # the floor's, in the exp2 below
            rounds = argument <= log_floor + math.log2(float(lib.finfo(x.dtype).eps)) - 1
            if not rounds or (T.EXP2_BAND and _slow_exp2_band(x, argument, log_floor)):
                _xs.replace_at_most(log_base, log_floor, -math.inf)
        else:
            log_base, unit = lib.log1p(x, out=s), math.log(2)
        flush = _may_underflow(alpha, x.dtype)
        # NumPy: s (and t) at least about 1e-38 (float32) where they would underflow
        # (arrays.EXP2_LEAST: NumPy's exp2 is slow there); p = s (1 + x) is 0 at the
        # floor all the same, and s is formed again from p below (p over s)
        floored = not flush
        bent = None
        # Halley's t on a tensor's in-place "base" state: s / y once s is formed, one
        # division (entmax_newton's ``finishing``). Not on NumPy arrays: their s is
        # floored where it would underflow, so s / y would not be 0 at the clamp, and
        # with (p / y) / y instead (_Buffers.bent_total) the finishing loop lost there
        # (tsallis.discrete.entmax, (1024, 1000) N(0, 1) rows at 1.3, one process
        # alternating: float32 13.1 -> 15.0 ms, float64 28.4 -> 33.7; 1.25 and 4/3 even)
        divided = bend and work.incremental and work.form == "base" and not flush
        divided = divided and is_torch_array(x)
        if bend and not divided:  # t = (1 + x)^((3 - 2 alpha) / (alpha - 1)), 0 off the support
            lib.multiply(log_base, t_power / unit, out=p)
            bent = _xs.row_sum(_xs.exp2_into(p, out=p, flush=flush, floored=floored))
        if flush:  # p from its own exponent, both flushed
            lib.multiply(log_base, p_power / unit, out=p)
            _xs.exp2_into(p, out=p, flush=True)
        lib.multiply(log_base, exponent / unit, out=s)
        _xs.exp2_into(s, out=s, flush=flush, floored=floored)
        slope = _xs.row_sum(s)
        if divided:  # (into p: left there while p goes over s)
            bent = _xs.row_sum(lib.divide(s, x, out=p))
        # in place, p = s (1 + x) over s: a step touches two arrays, not three (measured
        # (100000, 64) at alpha = 1.3: 78-81 ms, 92-96 with p apart), unless the step is
        # known to be the last: then p apart saves normalized a pass (s = p / (1 + x)),
        # or s is wanted apart (keep_s: one division for Halley's t, _Buffers.bent_total);
        # NumPy's s, floored, is always formed from p (exact zeros off the support)
        last = (work.final or work.keep_s) and is_torch_array(x)
        work.p_in_s = work.incremental and not flush and not last
        work.t_in_p = divided and work.p_in_s
        if work.p_in_s:
            p = s
        if not flush:
            (lib.multiply(s, x, out=p) if work.form == "base" else _xs.add_product(s, x, out=p))
        return _xs.row_sum(p), slope, bent
    # one alpha per row (an array): the generated kernels, smooth through alpha = 1
    # (log_exp_beta is for alpha >= 1 at -inf: -inf entries are set apart)
    lib.subtract(shifted, c, out=x)  # f
    finite = x > -math.inf
    f = xp.where(finite, x, 0.0)
    log_p = _deformed.log_exp_beta(f, 2 - alpha)
    p = xp.exp(xp.where(finite, log_p, -math.inf))
    # s = p^(2 - alpha) = p / (1 + (alpha - 1) f), a division where the power took three
    # selections and a pow (float32 (1024, 1000), alphas from 2.1 to 3 per row: an
    # evaluation 17 -> 13 ms); 1 + (alpha - 1) f keeps its relative precision (it is not
    # raised to a power here), and where it is 0 or below, p is 0 (_over_base)
    work.p, work.s = p, _over_base(p, 1 + (alpha - 1) * f)
    return _xs.row_sum(p), _xs.row_sum(work.s), None


class _Chain(NamedTuple):
    """s's power of the state y, (2 - alpha) / (alpha - 1) = whole + part / root (root 2
    or 3, part < root): _rational_power, _rooted_mass."""

    whole: int
    part: int
    root: int


# The state's powers are "rational" (_rational_power) where 2 or 3 times s's power is
# within this many of its ulps of an integer (1 / (alpha - 1) of the float alpha = 1.25
# is 4 exactly, of the float nearest 4 / 3 it is 3 (1 + 2.2e-16), of the float 1.3 it is
# 10 / 3 (1 - 1.3e-16)); the map of the rational alpha differs from that of the float
# nearest it by about |log p| 1e-16 relatively
_RATIONAL_ULPS = 8


@functools.lru_cache(maxsize=64)
def _rational_power(alpha: float) -> _Chain | None:
    """s = p^(2 - alpha)'s power of the state, (2 - alpha) / (alpha - 1) = 1 / (alpha -
    1) - 1, as whole + part / root with root 2 or 3 (to _RATIONAL_ULPS), where it is at
    least 1.2, for alpha from tuning.BASE_FORM_ALPHA (the "base" form): halves and
    wholes at alpha = 1.25 (3), 9/7 (5/2), 4/3 (2) and 1.4 (3/2), thirds at 14/11 (8/3),
    1.3 (7/3), 1.375 (5/3) and 10/7 (4/3); else None. From 1.2 up the floor's power
    (the smallest normal number, the clamped entries) rounds to 0 in float32 and
    float64, as s and p must there."""
    if not T.BASE_FORM_ALPHA <= alpha < 2.0:
        return None
    power = _state_exponents(alpha, 2)[1]
    if power < 1.2:
        return None
    for root in (2, 3):
        n = round(root * power)
        if abs(root * power - n) <= _RATIONAL_ULPS * math.ulp(n):
            return _Chain(n // root, n % root, root)
    return None


def _rooted_mass(work: _Buffers, chain: _Chain, bend: bool) -> tuple[Array, Array, Array | None]:
    """_mass of the "base" state y (work.x) at an alpha whose powers of y are whole,
    half or thirds (_rational_power's chain): s = y^whole r^part, r the square or cube
    root of y (arrays.cbrt_into), and p = s y by multiplications and at most one root,
    where the general form takes a log2 and an exp2. Float32 (1024, 1000) on an AMD EPYC
    (Zen 4), one call: Torch's multiplication 0.07 ms, its square root 0.22, NumPy's
    cube root 0.31-0.41, against NumPy's log2 0.24-0.33, Torch's exp2 0.16 and the
    general form's multiplication and division around them. Zen 4 showed no slowdown
    where products underflow (the clamped entries): a multiplication took 0.068 ms on
    normal values and 0.083 on the floor.

    Halley's t = s / y: formed on the way to s where its power is at least 1.2 too (its
    floor rounds to 0; alpha = 1.25, 9/7, 14/11 and 1.3), its row sum kept
    (work.bent_sum, for _Buffers.bent_total) whether or not ``bend`` asks for it; else,
    with ``bend``, by a division. Left in ``p`` (t_in_p) with p in ``s`` where the loop
    moves its state in place (p_in_s, as _mass's general form does).
    """
    whole, part, root = chain
    lib, y, t, s = _xs.native(work.x), work.x, work.p, work.s
    work.bent_sum = None
    chained = whole - 1 + part / root >= 1.2  # (then whole >= 2)
    into = t if chained else s  # y^(whole - 1 + part / root) or s itself
    factors = whole - (1 if chained else 0)  # of y, after the root's part
    if part:
        (lib.sqrt(y, out=into) if root == 2 else _xs.cbrt_into(y, out=into))
        if part == 2:  # (thirds: r^2)
            lib.multiply(into, into, out=into)
    else:
        lib.multiply(y, y, out=into)
        factors -= 2
    for _ in range(factors):
        lib.multiply(into, y, out=into)
    if chained:
        work.bent_sum = _xs.row_sum(t)
        lib.multiply(t, y, out=s)
    elif bend:
        work.bent_sum = _xs.row_sum(lib.divide(s, y, out=t))  # (the floor's s is 0)
    slope = _xs.row_sum(s)
    last = work.final and is_torch_array(y)
    work.p_in_s = work.incremental and not last
    work.t_in_p = work.p_in_s and work.bent_sum is not None
    p = lib.multiply(s, y, out=s if work.p_in_s else t)
    return _xs.row_sum(p), slope, work.bent_sum if bend else None


def _compactable(z: Array, alpha: float | Array, on_host: bool) -> bool:
    """Whether the eager loop may finish its last rows apart: a Python-float alpha (above
    2 those rows are refined in their own call, the others in the caller's), more than
    one row, and at least tuning.COMPACT_ELEMENTS values."""
    if not (on_host and isinstance(alpha, float) and z.ndim >= 2):
        return False
    if not _eager_cpu(z):  # a GPU: the copies and the second call's launches cost more
        return False
    rows = math.prod(z.shape[:-1])
    return rows > 1 and rows * z.shape[-1] >= T.COMPACT_ELEMENTS


def _left_apart(left: int, rows: int, size: int, above_two: bool) -> bool:
    """Whether the eager loops finish the ``left`` of ``rows`` rows (of ``size`` entries)
    apart: at most tuning.STRAGGLERS of them, or ``above_two`` (evaluations in float64,
    by a power per entry) done rows worth at least tuning.DONE_ELEMENTS values (each its
    entries and tuning.ROW_ELEMENTS for its bookkeeping)."""
    if left <= T.STRAGGLERS * rows:
        return True
    # (at most half of them left: each call apart then holds at most half its caller's
    # rows, so all of them together hold at most as many as the first)
    heavy = (rows - left) * (size + T.ROW_ELEMENTS) >= T.DONE_ELEMENTS
    return above_two and 2 * left <= rows and heavy


def _flat_index(mask: Array) -> Array:
    """The places of the True rows of a (R, 1) boolean mask, 1-D (NumPy or Torch)."""
    if isinstance(mask, np.ndarray):
        return np.flatnonzero(mask[:, 0])
    return _xs.native(mask).nonzero(mask[:, 0]).reshape(-1)


def _take_rows(a: Array, index: Array) -> Array:
    """The rows ``index`` (1-D integers: NumPy, or for a tensor a tensor) of a 2-D array,
    a copy."""
    if is_torch_array(a):
        return a.index_select(0, _xs.native(a).as_tensor(index, device=a.device))
    return np.take(a, index, axis=0)


def _rows_of(a: Any, index: Array, rows: int) -> Any:
    """_take_rows of a 2-D array of ``rows`` rows (or (rows, 1)); a Python float, None or
    an array broadcast along the rows (one row: a (1, 1) alpha) as it is."""
    if a is None or isinstance(a, float) or a.ndim == 0 or a.shape[0] != rows:
        return a
    return _take_rows(a, index)


def _put_rows(target: Array, index: Array, values: Array) -> None:
    """target[index] = values along the first axis, in place (as _take_rows)."""
    if is_torch_array(target):
        torch = _xs.native(target)
        target.index_copy_(0, torch.as_tensor(index, device=target.device), values)
    else:
        target[index] = values


def _prefix_width(z: Array, alpha: float | Array, on_host: bool) -> int | None:
    """How many of each row's largest entries the eager loop starts from (_prefix_start
    at alpha = 2 and 3/2, _prefix_map at other alphas), or None (see
    tuning.PREFIX_WIDTH; None also where the CPU's partition costs more than the start
    saves, arrays.partition_pays). entmax_newton also gates it by the rows' spread
    (_prefix_spread_gated)."""
    if not (on_host and isinstance(alpha, float) and T.PREFIX_ALPHA <= alpha <= 2.0):
        return None
    if not _eager_cpu(z):  # a GPU: its partition, gather and scatters cost more launches
        return None  # than the evaluations of the whole rows they save cost kernel time
    size = z.shape[-1]
    if size < T.PREFIX_MIN_LENGTH.get(alpha, T.PREFIX_MIN_LENGTH_OTHERS):
        return None
    width = min(T.PREFIX_WIDTH.get(alpha, size), size // T.PREFIX_SHARE)
    closed = alpha in T.PREFIX_WIDTH  # no loop of its own: worth it on any call
    if width < 8 or not (closed or math.prod(z.shape) >= T.COMPACT_ELEMENTS):
        return None
    # _prefix_map's columns take the low bits of each entry's gap: keep 4 of the mantissa
    # (the bound for held rows then within 1/16 of the gap; float32 rows to 2^19 entries,
    # a vocabulary of 50257 keeps 7)
    mantissa = -math.log2(float(_xs.native(z).finfo(z.dtype).eps))
    if not closed and _xs.index_bits(size) > mantissa - 4:
        return None
    # last: the first call that gets here measures the partition (tuning.PARTITION_RATIO)
    return width if _xs.partition_pays() else None


def _prefix_start(gap: Array, alpha: float, width: int, to_book: Callable) -> tuple[Array, Array]:
    """(c, held) at alpha = 2 or 3/2: the shift c (relative to the row maximum, in the
    loop's namespace) of each row's ``width`` largest entries alone, from their sorted
    threshold (_sorted_threshold), and the rows whose support they hold; ``gap`` is max
    - z (>= 0: the entries' order as integers, _xs.smallest), a scratch array: it is
    reordered in place.

    c is a lower bound of the row's shift (the mass of a subset is at most the whole's at
    every c, so the subset reaches 1 first), and the shift itself where the subset's
    smallest entry is clamped at c: every other entry is then clamped too, so the row's
    mass at c is the subset's. Those rows are ``held`` (with a margin of 4 eps on the
    base: clamped in the dtype as well); the full loop takes them as done after its
    first evaluation, which it needs for p anyway.
    """
    xp = _xs.namespace(gap)
    scale = alpha - 1
    # 1 + (alpha - 1)(z - max - c) = u - tau, u = (alpha - 1)(z - max)
    ordered = xp.maximum(_xs.smallest(gap, width, scratch=True) * -scale, -2.0)
    c = to_book(xp.maximum((_sorted_threshold(ordered, alpha) + 1.0) / scale, 0.0))
    smallest = to_book(ordered[..., -1:]) / scale
    return c, _held(smallest, c, scale, gap)


def _held(smallest: Array, c: Array, scale: float, like: Array) -> Array:
    """Whether an entry at ``smallest`` (z - max, per row) is clamped at the shift c with
    a margin of 4 eps (of ``like``'s dtype) on the base 1 + (alpha - 1)(smallest - c)."""
    eps = float(_xs.native(like).finfo(like.dtype).eps)
    return 1 + scale * (smallest - c) <= -4 * eps


def _subset_shift(
    subset: Array, bound: Array, alpha: float, steps: int | None, to_book: Callable
) -> tuple[Array, Array, _Buffers | None]:
    """(c, held, work) at other alphas: the shift c (relative to the row maximum, in the
    loop's namespace) of ``subset`` (z - max of each row's largest entries, _prefix_map)
    alone, by entmax_newton's threshold mode, the rows whose support the subset holds:
    those where z - max = -``bound``, which every entry outside it is at most, is clamped
    at c (as in _prefix_start; c is the last step of the loop, below sqrt(eps), which
    _prefix_map's evaluation at c confirms), and for a 2-D subset the loop's buffers,
    whose state that evaluation moves on from (else None)."""
    top = _xs.namespace(subset).zeros_like(subset[..., :1])
    mode = "state" if subset.ndim == 2 else True
    c = entmax_newton(subset, alpha, steps, True, top=top, threshold=mode)
    c, work = c if mode == "state" else (c, None)
    return c, _held(-to_book(bound), c, alpha - 1, subset), work


def _converged(c: Array, total: Array, slope_total: Array, alpha: float, like: Array) -> Array:
    """Whether one more Newton step from an evaluation at c (its sums of p and s, per
    row) would move c by at most 2 ulps of max(|c|, 1) (half the loop's bracket
    tolerance): the check of the subset loop's last step, which it takes as close enough
    below sqrt(eps) (entmax_newton's threshold mode). Near alpha = 2 a row whose support
    is about to gain an entry can take a step of that size and still be far off
    (float32, alpha = 1.9, N(0, 0.5^2) rows of 1000: a step of 1.4e-4 left c 6.6e-6
    short and p 3.5e-6 off); those rows are finished by the loop over the whole row.
    Measured on float32 N(0, sigma^2) rows of (1024, 1000), sigma from 1e-3 to 10: no
    row failed at alpha = 1.3 to 1.5, up to 3 did at 1.7 to 1.99, and p was then within
    3.7e-7 of float64 (with 4 ulps, 8.1e-7)."""
    xp = _xs.namespace(c)
    eps = float(_xs.native(like).finfo(like.dtype).eps)
    step = _deformed_step(total, slope_total, alpha)
    return xp.abs(step) <= 2 * eps * _xs.at_least(xp.abs(c), 1.0)


def _halley_step(
    step: Array, total: Array, slope: Array, bent: Array, alpha: float | Array
) -> tuple[Array, Array, Array]:
    """(Halley's step, bend, where it was taken) from Newton's ``step`` N on h(c) =
    log_{2-alpha}(sum p), per row: N / (1 - N bend), bend = -h''/(2h') (generated from
    the row sums p, s > 0 and t); where 1 - N bend <= 0 (or sum s = 0), Newton's. (Formed
    from N: a dozen operations on the per-row values, where h, q and the step's own terms
    took 29, each a few us of host time per step on a GPU's host.)"""
    xp = _xs.namespace(step)
    positive = slope > 0
    bend = gen.halley_bend(total, xp.where(positive, slope, 1.0), bent, alpha)
    denominator = 1 - step * bend
    fine = (denominator > 0) & positive
    return xp.where(fine, step / xp.where(fine, denominator, 1.0), step), bend, fine


def _deformed_step(
    total: Array, slope: Array, alpha: float | Array, safe: Array | None = None
) -> Array:
    """Newton's step on h(c) = log_{2-alpha}(sum p) at a shift c with sum p = ``total``
    and sum s = ``slope`` (per row): h / (-h') = h (sum p)^(2 - alpha) / sum s, the
    numerator generated (smooth through alpha = 1; sum p > 0 in the bracket), a slope
    sum of 0 taken as 1 (``safe``: that slope, when the caller has it)."""
    if safe is None:
        safe = _xs.namespace(slope).where(slope > 0, slope, 1.0)
    return _deformed.log_beta_times_power(total, 2 - alpha) / safe


def _prefix_map(
    z: Array,
    top: Array,
    alpha: float,
    width: int,
    steps: int | None,
    slopes: bool | str,
    bracket: tuple[Array, Array],
    bookkeeping: tuple[Callable, Callable],
    loop: Callable | None,
) -> Array | tuple:
    """entmax_newton's result (p, or with ``slopes`` (p, s) or (p, s / sum(s), sum(s)))
    at a Python-float alpha other than 2 and 3/2, from each row's ``width`` largest
    entries: their columns (_xs.smallest_columns, on max - z) and values, the shift c of
    those alone (_subset_shift), then, for the rows they hold (every row of N(0, 1)
    scores of 1000 at alpha = 1.3, with a quarter of the row), p and s evaluated and
    normalized on them alone at c (the row's mass and slope sum at c are theirs) and p
    scattered into zeros. With ``slopes="unit"`` and every row held, s / sum(s) stays on
    the columns (ColumnSlopes: entmax_alpha_gradient works there); otherwise s is
    scattered too. The other rows are finished by entmax_newton from c (a lower bound of
    their shift), apart. This replaces an evaluation of the whole rows (ten passes over
    them) by a scatter. Measured against that (torch 2.13, float32 (1024, 1000), alpha =
    1.3, one process, interleaved): entmax_map 4.9-5.0 against 5.3 ms, the Torch
    forward 5.4-5.5 against 6.0, the forward and backward unchanged (7.6-7.7: the
    backward's gather and scatter cost what the forward saved; scattering s in the
    forward instead took the same time and 120 MB more at (65536, 1000)); NumPy 15.7
    against 24.3 ms (float32) and 33.6 against 43.0 (float64).
    """
    to_book, to_work = bookkeeping
    lo, hi = bracket
    # max - z, made into the partition's keys in place and dropped (not kept through the loop)
    columns, bound = _xs.smallest_columns(_xs.native(z).subtract(top, z), width)
    # z - max of the columns: the values the loop over the whole rows would form
    subset = _xs.take_columns(z, columns) - top
    c, held, work = _subset_shift(subset, bound, alpha, steps, to_book)
    held, c = held & (c <= hi), _xs.namespace(c).minimum(c, hi)
    if not bool(held.any()):  # every row from c
        return entmax_newton(z, alpha, steps, True, slopes, top, loop, (c, lo, hi))
    if work is None:
        zeros = _xs.namespace(subset).zeros_like(subset[..., :1])
        incremental = isinstance(c, np.ndarray)
        work = _Buffers(subset, zeros, alpha, incremental, to_work, _clamped_form(alpha))
    work.final = True  # one evaluation: p apart from s
    total = _evaluate(c, alpha, work, False, to_work, to_book)[0]
    slope_total = work.slope_total
    held = held & _converged(c, total, slope_total, alpha, z)
    if z.ndim != 2 and not bool(held.all()):  # one row (1-D z), not held: the loop from c
        return entmax_newton(z, alpha, steps, True, slopes, top, loop, (c, lo, hi))
    p, s, scale = work.normalized(alpha, total, slopes, slope_total)
    size = z.shape[-1]
    p = _xs.scattered(p, columns, size)
    rows = _flat_index(~held) if z.ndim == 2 else []
    if slopes == "unit" and not len(rows):  # s / sum(s) kept on the columns
        return p, ColumnSlopes(s, columns), scale
    s = None if s is None else _xs.scattered(s, columns, size)
    if len(rows):  # the rows the largest entries do not hold
        state = tuple(_take_rows(v, rows) for v in (c, lo, hi))
        part = entmax_newton(
            _take_rows(z, rows), alpha, steps, True, slopes, _take_rows(top, rows), loop, state
        )
        part = part if isinstance(part, tuple) else (part,)
        for target, values in zip((p, s, scale), part, strict=False):
            _put_rows(target, rows, values)
    if slopes == "unit":
        return p, s, scale
    return (p, s) if slopes else p


def _may_underflow(alpha: float, dtype: Any) -> bool:
    """Whether p = (1 + x)^(1 / (alpha - 1)) may fall below e^-EXP_FLUSH (arrays).

    For 1 < alpha < 2 a nonzero 1 + x (x >= -1 in the dtype) is at least eps / 2, so p
    is at least (eps / 2)^(1 / (alpha - 1)), and s = p^(2 - alpha) >= p; below 1 the
    base is unbounded. Only then is the flush (two more passes) needed.
    """
    if alpha < 1:
        return True
    name = "float32" if "float32" in str(dtype) else "float64"
    bits = -math.log(float(np.finfo(name).eps) / 2)
    return bits / (alpha - 1) > _xs.constant("EXP_FLUSH")[name]


def _mean_start(
    z: Array,
    top: Array,
    lo: Array,
    hi: Array,
    alpha: float | Array,
    to_book: Callable,
    gap: Array | None = None,
) -> Array:
    """The Newton loop's first shift: hi + mean(z - max) clipped to [lo, hi] where alpha
    <= 2, else lo (per row, in the loop's namespace, as ``top``, the row maxima; hi =
    -log_{2-alpha}(1/K), lo = 0).

    For alpha <= 2, phi(v) = exp_{2-alpha}(v) is convex (its clamp [.]_+ too), so by
    Jensen's inequality the mass sum_i phi(u_i - c) over the K entries u = z - max is at
    least K phi(mean(u) - c), which is 1 at c = mean(u) - log_{2-alpha}(1/K): a lower
    bound of the shift, from which Newton's iterates still rise (where rounding puts it
    above the shift, as for |z| far above the spread of a float32 row, the loop mends it
    from the right). For one row sum. A row with a -inf entry has mean -inf: lo.
    Measured (torch 2.13, float32, forward + backward of 2^20 values, one process,
    alternating, without / with): (1024, 1000) alpha = 0.5 12.0 / 8.0 ms, 1.0001 9.1 /
    7.2; (8192, 128) alpha = 1.2 14.1 / 12.0; elsewhere within 1.3% (alpha = 0.9, 1.2,
    1.5, 1.7, 2, with and without the start from the largest entries). At alpha = 1.3
    on the largest quarter of N(0, 1) rows of 1000 the mass at the start was at most 5.7
    (median 3.4) against 60 (20) at lo, but the steps stayed four.
    """
    xp = _xs.namespace(lo)
    # (the rounded mean may exceed the maximum, on constant rows: hi bounds it)
    if gap is None:
        gap = _mean_gap(z, top, to_book)
    jensen = xp.minimum(xp.maximum(lo, hi - gap), hi)
    if isinstance(alpha, float):
        return jensen if alpha <= 2 else lo
    return xp.where(alpha <= 2, jensen, lo)


def _mean_gap(z: Array, top: Array, to_book: Callable, total: Array | None = None) -> Array:
    """max - mean per row (..., 1), in the loop's namespace as ``top``, the row maxima:
    +inf on a row with a -inf entry, and where the row sum overflows (finite entries
    near the dtype's largest of both signs summed to NaN, and the shift to NaN
    everywhere; of one sign to +-inf): +inf, whose start is the bracket's end ``lo``.
    ``total``: z's row sum, when the caller formed it (rooted's, in top's namespace)."""
    xp = _xs.namespace(top)
    total = to_book(_xs.row_sum(z)) if total is None else total
    return xp.where(xp.isfinite(total), top - total / z.shape[-1], xp.inf)


def _sorted_start_applies(z: Array, alpha: float | Array, on_host: bool) -> bool:
    """Whether entmax_newton starts from _top_jensen_shift: a Python-float alpha in (1, 2)
    on a tensor off the CPU, in eager mode (a sort is one kernel there, where each step of
    the loop costs a copy to the host and its bookkeeping)."""
    if not (on_host and isinstance(alpha, float) and 1.0 < alpha < 2.0 and is_torch_array(z)):
        return False
    return not _eager_cpu(z) and not _xs._torch_compiling(z)


@functools.lru_cache(maxsize=16)
def _jensen_terms(lib: ModuleType, size: int, alpha: float, dtype: Any, device: Any) -> Array:
    """(2, size): -log_{2-alpha}(1/k) and 1/k for k = 1..size (_jensen_bound), shared
    between calls; the generated log_beta in float64, then the dtype (a tensor on
    ``device``, or for ``lib`` NumPy a read-only array)."""
    k = np.arange(1, size + 1, dtype=np.float64)
    terms = np.stack([-_deformed.log_beta(1 / k, 2 - alpha), 1 / k])
    if lib is np:  # (shared: read-only)
        terms = terms.astype(dtype)
        terms.flags.writeable = False
        return terms
    return lib.tensor(terms, dtype=dtype, device=device)


def _top_jensen_shift(z: Array, top: Array, alpha: float) -> Array:
    """A lower bound of the shift c (relative to the row maximum ``top``), per row on z's
    device: the largest over k of mean_k - log_{2-alpha}(1/k), mean_k the mean of the k
    largest entries of u = z - max.

    phi(v) = exp_{2-alpha}(v) is convex for alpha <= 2 (its clamp too), so the mass at c
    is at least that of the k largest entries, at least k phi(mean_k - c) (Jensen), which
    is 1 at that c: each k gives a lower bound (_mean_start's is k = K). The k where the
    mean of the largest entries stays high give the closest. Float32 N(0, 1) rows of
    (1024, 1000), the GPU's loop forced on the CPU: 3 evaluations against 5 from
    _mean_start's at alpha = 1.3, 5 against 7 at 1.7, 4 against 7 at 1.9 (the mass at
    the start 0.47 against 37 times too large, median, at 1.3); on an H200, forward and
    backward, 3.30-3.37 -> 2.81-2.85 ms at 1.3 and 2.69-3.84 -> 2.41-3.21 at 1.7 (these
    five kernels took 0.14-0.2 ms of host time there, an evaluation with its copies
    0.11-0.2 ms and a step's bookkeeping 0.13-0.3). Five kernels: the shift, sort, cumsum,
    one fused multiply-add and the maximum; -inf entries give -inf means, which the
    maximum passes over (k = 1 gives 0).
    """
    lib = _xs.native(z)
    return _jensen_bound(lib.sort(lib.subtract(top, z), dim=-1).values, alpha)


def _grouped_start_applies(z: Array, alpha: float | Array, on_host: bool) -> bool:
    """Whether entmax_newton's first shift also takes _grouped_shift: a Python-float alpha
    in [tuning.GROUPED_ALPHA, 2] on rows of at least tuning.GROUPED_MIN_LENGTH entries,
    on the host in eager mode (NumPy or a CPU tensor: a GPU takes _top_jensen_shift, a
    sort being one kernel there); for a tensor, whose evaluations Torch's threads make
    cheaper against the bound, not at 3/2 nor from tuning.BASE_FORM_ALPHA to
    tuning.GROUPED_TENSOR_ALPHA (see there)."""
    if not (on_host and isinstance(alpha, float) and T.GROUPED_ALPHA <= alpha <= 2.0):
        return False
    if not _eager_cpu(z) or z.ndim < 1 or z.shape[-1] < T.GROUPED_MIN_LENGTH:
        return False
    if is_torch_array(z):
        return alpha != 1.5 and not T.BASE_FORM_ALPHA <= alpha < T.GROUPED_TENSOR_ALPHA
    return True


def _grouped_maxima(z: Array, width: int | None = None) -> Array:
    """Per row, the maxima of disjoint groups of its columns, at most
    tuning.GROUPED_WIDTH of them (z's kind): the row's two halves compared entrywise,
    then the result's halves, until at most that many are left (a column left over at an
    odd length is dropped). For K = 1000: 62 groups of 16 columns i, i + 62, i + 124,
    ...; less than one pass over z in all, where a maximum over blocks of adjacent
    columns took five times as long (torch.amax over (1024, 125, 8))."""
    lib = _xs.native(z)
    maxima, width = z, T.GROUPED_WIDTH if width is None else width
    while maxima.shape[-1] > width:
        half = maxima.shape[-1] // 2
        maxima = lib.maximum(maxima[..., :half], maxima[..., half : 2 * half])
    return maxima


def _grouped_shift(z: Array, top: Array, alpha: float, to_book: Callable) -> Array:
    """A lower bound of the shift c (relative to the row maximum ``top``, z's kind), in
    the loop's namespace (``to_book``): _jensen_bound on the maxima of the columns'
    groups (_grouped_maxima).

    The group maxima are a subset of the row, whose mass at every c is at most the
    row's, so any bound for them bounds the row's shift from below. A row's largest
    entries mostly lie in different groups, so the means of the largest maxima come
    close to those of the largest entries (which _top_jensen_shift takes on a GPU,
    where the sort of the whole rows is one kernel; NumPy's sort of (1024, 1000) took
    3.7-5 ms). On float32 (1024, 1000) N(0, sigma^2) rows, sigma = 0.5 / 1 / 3, the
    loop without the prefix start took these evaluations of the whole rows (weighted by
    the rows evaluated) from _mean_start's bound alone and with this one: alpha = 1.35
    5 / 5 / 4.1 -> 4 / 4 / 4, 1.7 7 / 6 / 5 -> 4 / 4 / 4, 1.9 8 / 6 / 4.1 -> 4 / 4 / 3,
    2 7 / 5.1 / 3.1 -> 2.1 / 2.1 / 1.1. The bound cost 0.4-0.6 ms there (its sort 0.15).
    """
    gaps = _xs.native(z).subtract(top, _grouped_maxima(z))  # (a fresh array: sorted in place)
    # a CPU tensor: NumPy's sort of its view, Torch's prefix sums (float32 (1024, 125):
    # Torch's sort took 2.3 ms, NumPy's 0.15; NumPy's cumsum 0.45, Torch's 0.06)
    (gaps.detach().numpy() if is_torch_array(gaps) else gaps).sort(axis=-1)
    return to_book(_jensen_bound(gaps, alpha))


def _maxima_step_applies(z: Array, alpha: float | Array, on_host: bool, spread: Array) -> bool:
    """Whether entmax_newton's first shift also takes _maxima_step_shift: a CPU tensor in
    eager mode, 2-D, of at least tuning.COMPACT_ELEMENTS values and rows of at least
    twice tuning.MAXIMA_STEP_WIDTH, at a Python-float alpha from tuning.BASE_FORM_ALPHA
    to tuning.GROUPED_TENSOR_ALPHA (where the groups' Jensen bound is not taken) whose
    evaluation takes a root or a transcendental (not 1.25 nor 4/3: whole powers, an
    evaluation there costs less than this step), and rows whose median spread (alpha -
    1)(max - mean) (``spread``: max - mean per row) is within tuning.MAXIMA_STEP_SPREAD:
    narrower rows take as many evaluations from it, and wider ones are narrowed after
    the first step (_narrowed), which a start above the shift in one row would forbid."""
    if not (T.MAXIMA_STEP and on_host and isinstance(alpha, float)):
        return False
    if not (is_torch_array(z) and _eager_cpu(z) and z.ndim == 2):
        return False
    if not T.BASE_FORM_ALPHA <= alpha < T.GROUPED_TENSOR_ALPHA:
        return False
    chain = _rational_power(alpha)
    if chain is not None and chain.part == 0:
        return False
    rows, size = z.shape
    if size < 2 * T.MAXIMA_STEP_WIDTH or rows * size < T.COMPACT_ELEMENTS:
        return False
    low, high = T.MAXIMA_STEP_SPREAD
    return low <= (alpha - 1) * _median(spread) <= high


def _median(values: np.ndarray) -> float:
    """The middle value (the lower of two) of per-row NumPy values: by one partition, where
    np.median's Python layers took 0.12-0.16 ms inside the op (0.02 alone), a partition
    0.02 (float32 (1024, 1000), alpha = 1.3)."""
    values = np.ravel(values)
    middle = (values.size - 1) // 2
    return float(np.partition(values, middle)[middle])


def _prefix_spread_gated(z: Array, alpha: float | Array) -> bool:
    """Whether the prefix start (_prefix_width) is also gated by the rows' median spread
    (alpha - 1)(max - mean), tuning.PREFIX_ROOTED_SPREAD: a CPU tensor at a Python-float
    alpha from tuning.BASE_FORM_ALPHA to tuning.GROUPED_TENSOR_ALPHA, where the loop's
    own start is the mean start or the maxima step (_maxima_step_applies)."""
    if not (isinstance(alpha, float) and is_torch_array(z) and _eager_cpu(z)):
        return False
    return T.BASE_FORM_ALPHA <= alpha < T.GROUPED_TENSOR_ALPHA


def _maxima_step_shift(
    z: Array, top: Array, booked_top: Array, alpha: float, to_book: Callable, to_work: Callable
) -> Array:
    """A first shift near each row's (relative to its maximum ``top``, in the loop's
    namespace): one Halley step on the mass of the maxima of tuning.MAXIMA_STEP_WIDTH
    groups of the row's columns (_grouped_maxima) from their own _mean_start, by the
    loop's own evaluation (_evaluate) and steps (``booked_top``: ``top`` in the loop's
    namespace).

    The maxima are a subset of the row, so the shift of their mass (where it is 1) is at
    most the row's; a row's largest entries, which hold its support, mostly lie in
    different groups, so it comes close: on float32 N(0, 1) rows of 1000 at alpha = 1.3,
    0.02 below the row's shift (median; 0.12 at most), where _mean_start's is 1.34 below.
    Halley's step from their mean start lands near it (0.03 median, 0.09-0.14 at most);
    it can overshoot (by up to 0.02 on N(0, 2^2) rows, where the maxima hold the whole
    support: hence the spread's upper bound in _maxima_step_applies). From there the
    loop's Halley step lands within the finish's reach (_finish_bound: 3.2e-4 at 1.3;
    Halley's error was about 0.04 e^3 from e below), so its second evaluation of the
    whole rows is its last (then _Buffers.finished), where from the mean start it took
    three. Cost: float32 (1024, 1000), 0.1 ms for the maxima and 0.3 for the step in
    isolation, 0.35-0.7 ms inside the op (measured: tuning.MAXIMA_STEP).
    """
    maxima = _grouped_maxima(z, T.MAXIMA_STEP_WIDTH)
    lo = np.zeros_like(booked_top)
    hi = lo + _upper_shift(maxima.shape[-1], alpha)
    c = _mean_start(maxima, booked_top, lo, hi, alpha, to_book)
    work = _Buffers(maxima, top, alpha, True, to_work, _clamped_form(alpha))
    total, slope, bent = _evaluate(c, alpha, work, True, to_work, to_book)
    step = _deformed_step(total, slope, alpha)
    if bent is not None:
        step = _halley_step(step, total, slope, bent, alpha)[0]
    return c + step


def _upper_shift(size: int, alpha: float) -> float:
    """-log_{2-alpha}(1/size), the shift (relative to the maximum) at which every entry
    of a row of ``size`` has at most 1/size: the eager loop's bracket's upper end (cached:
    the generated log_beta on one value took 20 to 80 us)."""
    if (size, alpha) not in _UPPER_SHIFTS:
        if len(_UPPER_SHIFTS) >= 4096:  # (a schedule of alphas: bounded)
            _UPPER_SHIFTS.clear()
        _UPPER_SHIFTS[size, alpha] = -float(_deformed.log_beta(np.float64(1 / size), 2 - alpha))
    return _UPPER_SHIFTS[size, alpha]


def _jensen_bound(gaps: Array, alpha: float) -> Array:
    """max over k of mean_k - log_{2-alpha}(1/k), per row (..., 1), mean_k the mean of the
    k largest of some entries of a row relative to its maximum, from ``gaps``: the row
    maximum less those entries, in increasing order (mean_k is minus the mean of the
    first k gaps; _top_jensen_shift, _grouped_shift). -inf entries (+inf gaps) give -inf
    means, which the maximum passes over (k = 1 gives the first entry)."""
    lib = _xs.native(gaps)
    device = gaps.device if is_torch_array(gaps) else None
    terms = _jensen_terms(lib, gaps.shape[-1], alpha, gaps.dtype, device)
    if is_torch_array(gaps):  # (one fused multiply-add: a kernel on a GPU)
        bounds = lib.addcmul(terms[0], lib.cumsum(gaps, dim=-1), terms[1], value=-1)
        return lib.amax(bounds, dim=-1, keepdim=True)
    bounds = np.cumsum(gaps, axis=-1)
    bounds *= -terms[1]
    bounds += terms[0]
    return bounds.max(axis=-1, keepdims=True)


def _power(total: Array, exponent: float | Array) -> Array:
    xp = _xs.namespace(total)
    return xp.exp(exponent * xp.log(total))


# the upper end of the eager loop's bracket for a row length and a Python-float alpha
# (_upper_shift)
_UPPER_SHIFTS: dict[tuple[int, float], float] = {}


class _Narrowed(NamedTuple):
    """The entries the eager loop keeps after its first step (_narrowed): ``z`` the
    full rows, ``top`` their maxima, ``places`` the kept entries' flat places in z (in
    C order), ``slots`` theirs in the narrow (R, width) arrays, ``shift`` the c (per
    row) at which every other entry is clamped, and ``start`` the loop's first shift
    and bracket (per row), from which rows that fail the check are solved again over the
    whole row."""

    z: Array
    top: Array
    places: np.ndarray
    slots: np.ndarray
    shift: np.ndarray
    start: tuple[Array, Array, Array]


def _narrowing_applies(z: Array, alpha: float | Array, work: _Buffers, steps: int) -> bool:
    """Whether the eager loop narrows its rows after the first step (_narrowed): a
    Python-float alpha in (1, 2) other than 3/2 on the host (NumPy, or a CPU tensor
    outside torch.compile), whose state moves in place ("base" or "offset"), 2-D z of
    rows of at least tuning.NARROW_MIN_LENGTH entries and at least
    tuning.COMPACT_ELEMENTS values, and a step to take after the first."""
    if not (isinstance(alpha, float) and 1.0 < alpha < 2.0 and steps > 1):
        return False
    if not (work.incremental and work.form in ("base", "offset") and z.ndim == 2):
        return False
    if not _eager_cpu(z):  # (a GPU's bookkeeping is in NumPy too, but _narrowed views z)
        return False
    size = z.shape[-1]
    return size >= T.NARROW_MIN_LENGTH and z.shape[0] * size >= T.COMPACT_ELEMENTS


def _narrowed(
    z: Array,
    top: Array,
    work: _Buffers,
    c: np.ndarray,
    new: np.ndarray,
    start: tuple[Array, Array, Array],
) -> tuple[Array, _Narrowed] | None:
    """The entries of each row that can be in the support from the shift ``new`` on (the
    loop's next c, a lower bound of the row's shift), packed to the left of a (R, width)
    array of z's kind padded with -inf (width the most any row keeps), and how to put
    them back (_Narrowed); None where some row keeps more than tuning.NARROW_SHARE of
    its entries, or some row's c fell (then the state at ``c``, y clamped there, does
    not tell which entries come back). ``start``: the loop's first c and bracket.

    Kept are the entries unclamped at c' = max(new - margin, c): those where y - (alpha
    - 1)(c' - c) (y, the state at ``c``, in work.x; alpha - 1 is work.scale) is above
    the clamp's level (0 for "base", -1 for "offset") and y above its floor. Entries
    clamped at c' stay clamped (p = 0) at every larger shift, so on the rows whose shift
    is at least c' the loop over the kept entries gives the same map. The margin is
    2^-12 max(|new|, 1): Newton's iterates rise from the left, and the loop's first step
    on the narrow rows checks that none falls below c' (entmax_newton).
    """
    if bool((new < c).any()):
        return None
    margin = np.maximum(np.abs(new), 1.0) * 2.0**-12
    level = -1.0 if work.form == "offset" else 0.0
    # kept: y above both the level at c' and the floor (clamped at c already); y less
    # that bound in place (the loop forms the narrow rows' state anew), then against 0
    bound = np.maximum(level + work.scale * (new - margin - c), work.floor)
    rows, size = z.shape
    # first on at most 64 rows spread over the batch: a refusal costs little there (a
    # refusal after the whole flatnonzero cost 0.8 ms at float32 (1024, 1000)); before
    # that on every eighth of them, the same refusals sooner (a refusal at float32 (1024,
    # 1000) on N(0, 1) rows at alpha = 1.3: 0.16 ms on the 64 rows, in the loop)
    step = max(rows // 64, 1)
    state = _view(work.x)
    for sample in (slice(None, None, 8 * step), slice(None, None, step)):
        kept = np.count_nonzero(state[sample] > bound[sample].astype(state.dtype), axis=-1)
        if kept.max() > T.NARROW_SHARE * size:
            return None
    y = _xs.native(work.x).subtract(work.x, work.to_work(bound), out=work.x)
    places = np.flatnonzero(_view(y) > 0)
    packed = _packed(z, places, T.NARROW_SHARE)
    if packed is None:
        work.at = None  # (y was changed: the next move forms it from z)
        return None
    narrow, slots = packed
    return narrow, _Narrowed(z, top, places, slots, np.maximum(new - margin, c), start)


def _packed(z: Array, places: np.ndarray, share: float) -> tuple[Array, np.ndarray] | None:
    """The entries of 2-D z at the flat (C-order) ``places``, packed to the left of a (R,
    width) array of z's kind padded with -inf (width the most any row keeps), and their
    flat slots there; None where width exceeds ``share`` of the row (_narrowed,
    _above_two_packed)."""
    rows, size = z.shape
    starts = np.searchsorted(places, np.arange(rows) * size)
    counts = np.diff(starts, append=places.size)
    width = int(counts.max()) if rows else 0
    if rows == 0 or width > share * size:
        return None
    # each kept entry's place in the narrow rows: its row's start there, less its own
    # in places, plus its index in places
    slots = np.repeat(np.arange(rows) * width - starts, counts)
    slots += np.arange(places.size)
    values = _view(z)
    narrow = np.full((rows, width), -np.inf, dtype=values.dtype)
    narrow.reshape(-1)[slots] = np.ascontiguousarray(values).reshape(-1).take(places)
    if is_torch_array(z):
        narrow = _xs.native(z).from_numpy(narrow)
    return narrow, slots


def _widened(narrow: Array, narrowed: _Narrowed) -> Array:
    """Zeros of the full rows' shape with the narrow rows' kept entries in their places
    (z's kind; a tensor in Torch's own memory)."""
    z = narrowed.z
    full = _xs.native(z).zeros(z.shape, dtype=narrow.dtype)
    _view(full).reshape(-1)[narrowed.places] = (
        np.ascontiguousarray(_view(narrow)).reshape(-1).take(narrowed.slots)
    )
    return full


def _above_two_support(
    z: Array, alpha: float | Array, on_host: bool, threshold: bool, start: Any
) -> bool:
    """Whether entmax_newton first packs the entries that can be in the support at all
    (_above_two_packed): a Python-float alpha > 2, or an alpha array above 2 in every
    row, in eager mode on the host (NumPy, or a CPU tensor), rows of at least
    tuning.NARROW_MIN_LENGTH entries and at least tuning.COMPACT_ELEMENTS values in all,
    not in threshold mode nor resumed."""
    if not on_host or threshold or start is not None or z.ndim < 2 or not _eager_cpu(z):
        return False
    size = z.shape[-1]
    if size < T.NARROW_MIN_LENGTH or math.prod(z.shape) < T.COMPACT_ELEMENTS:
        return False
    if isinstance(alpha, float):
        return alpha > 2.0
    # an alpha array (a CPU tensor here, or NumPy) with every row above 2
    return bool(np.all(_view(alpha) > 2.0))


def _above_two_packed(z: Array, top: Array, alpha: float | Array) -> tuple[Array, _Narrowed] | None:
    """For alpha > 2 (a float, or an array of one per row, (R, 1)): the entries of each
    row of 2-D z within 1/(alpha - 1) of its maximum ``top``, packed to the left of a
    (R, width) array of z's kind padded with -inf, and how to put them back (_Narrowed;
    its shift and start unused); None where some row keeps more than
    tuning.ABOVE_TWO_SHARE of its entries.

    The shift c (relative to the maximum) is at least 0, where the top entry alone has
    mass 1, and every entry with z - max <= -1/(alpha - 1) has base 1 + (alpha - 1)(z -
    max - c) <= 0 there and at every larger c: p = 0. So the map of the kept entries is
    the map of the rows. The bound is widened by 8 eps relatively (a superset is safe),
    and an entry at it is kept: where 1/(alpha - 1) is below half an ulp of the maximum
    (rows of 1e30) the bound rounds to the maximum, which must stay (kept by ``>``, such
    a row lost every entry and came out as zeros). Above 2 few entries are that close on
    spread rows (float64 N(0, 1) rows of 1000: about 5 at alpha = 2.5, 1 or 2 at 5),
    while the loop took 13 to 64 evaluations of the whole rows there (a mass with
    unbounded slopes at the support's edge), and the refinement 3 to 59 more.
    """
    values = _view(z)
    eps = float(np.finfo(values.dtype).eps)
    rate = alpha - 1 if isinstance(alpha, float) else np.asarray(_view(alpha), np.float64) - 1
    reach = (1 / rate) * (1 + 8 * eps)
    bound = np.asarray(_view(top), dtype=values.dtype).reshape(-1, 1) - reach
    places = np.flatnonzero(values >= bound)
    packed = _packed(z, places, T.ABOVE_TWO_SHARE)
    if packed is None:
        return None
    narrow, slots = packed
    return narrow, _Narrowed(z, top, places, slots, None, None)


def _row_alphas(alpha: Array, z: Array) -> Array:
    """An alpha array broadcasting to z's rows, as one per row of z flattened to 2-D,
    (R, 1)."""
    return _xs.namespace(alpha).broadcast_to(alpha, (*z.shape[:-1], 1)).reshape(-1, 1)


def _largest(z: Array, width: int) -> tuple[Array, Array]:
    """The ``width`` largest entries of each row of 2-D z, in no order, and their column
    indices ((R, width) each; Torch's topk, NumPy's argpartition). Not
    arrays.smallest_columns of max - z, the prefix start's: its order is the values'
    truncated to their high bits (an entry left out may exceed one kept, where
    _held_rows needs none to), and on the AMD EPYC with NumPy's AVX-512 select it took
    9.0 ms for 8 columns of float64 (1024, 1000), the max - z pass included, against
    1.3 for topk (8.7 against 4.6 for 64)."""
    if is_torch_array(z):
        values, index = _xs.native(z).topk(z, width, dim=-1, sorted=False)
        return values, index
    index = np.argpartition(z, z.shape[-1] - width, axis=-1)[:, -width:]
    return np.take_along_axis(z, index, axis=-1), index


def _above_two_rows(
    z: Array,
    top: Array,
    alpha: float | Array,
    steps: int | None,
    slopes: bool | str,
    loop: Any,
    widths: tuple[int, ...] | None = None,
) -> Array | tuple:
    """entmax_newton at alpha > 2 (a float, or one per row, (R, 1)) on 2-D z with row
    maxima ``top``, over fewer entries than the rows hold.

    First over each row's ``widths[0]`` largest entries (default
    tuning.ABOVE_TWO_LARGEST): where the smallest of them gets p = 0, so does every entry
    left out (none is larger), and the map of those entries is the row's; the other rows
    (more in the support, or ties at its edge: a constant row) are solved likewise over
    the next width's, and then as below. Otherwise over the entries within
    1/(alpha - 1) of the maximum (_above_two_packed), or the whole rows where some row
    keeps more than tuning.ABOVE_TWO_SHARE of its entries. Above 2 the support is small
    (N(0, 1) rows of 1000: 1 to 5 entries from alpha = 2.5), while the loop took 13 to 64
    evaluations of every row it holds (a mass with unbounded slopes at the support's
    edge) and its refinement 3 to 61 more. p and s are put back among zeros."""
    size = z.shape[-1]

    def solved(v: Array) -> tuple:  # (v: z's rows narrowed; the maxima are z's)
        out = entmax_newton(v, alpha, steps, True, slopes, top, loop, few_entries=False)
        return out if isinstance(out, tuple) else (out,)

    def put_back(parts: tuple, spread: Callable) -> tuple:  # (a "unit" scale stays (R, 1))
        return tuple(
            part if part is None or (slopes == "unit" and i == 2) else spread(part)
            for i, part in enumerate(parts)
        )

    widths = T.ABOVE_TWO_LARGEST if widths is None else widths
    width = widths[0] if widths else size
    if 4 * width <= size:
        values, index = _largest(z, width)
        parts = solved(values)
        full = put_back(parts, lambda part: _xs.scattered(part, index, size))
        held = _held_rows(values, parts[0])
        if not held.all():
            rows = np.flatnonzero(~held)
            alpha_rest = alpha if isinstance(alpha, float) else _take_rows(alpha, rows)
            rest = _above_two_rows(
                _take_rows(z, rows), _take_rows(top, rows), alpha_rest, steps, slopes, loop,
                widths[1:],
            )  # fmt: skip
            rest = rest if isinstance(rest, tuple) else (rest,)
            for target, values_rest in zip(full, rest, strict=True):
                if target is not None:
                    _put_rows(target, rows, values_rest)
        return full if slopes else full[0]
    packed = _above_two_packed(z, top, alpha)
    if packed is None:
        parts = solved(z)
    else:
        narrow, where = packed
        parts = put_back(solved(narrow), lambda part: _widened(part, where))
    return parts if slopes else parts[0]


def _held_rows(values: Array, p: Array) -> np.ndarray:
    """Whether each row's smallest entry of ``values`` (2-D) gets p = 0 (1-D, NumPy)."""
    smallest = _xs.namespace(values).argmin(values, axis=-1, keepdims=True)
    return _view(_xs.take_columns(p, smallest) == 0).reshape(-1)


def _on_above_two_support(
    z: Array,
    alpha: float | Array,
    steps: int | None,
    slopes: bool | str,
    top: Array | None,
    loop: Any,
) -> Array | tuple:
    """entmax_newton at alpha > 2 (a float, or an array above 2 in every row) on rows
    narrowed to the entries that can be in the support (_above_two_rows). z of any rank
    (its rows flattened to 2-D, an alpha array's with them)."""
    size = z.shape[-1]
    flat = z.reshape(-1, size)
    if top is None:
        top = _xs.namespace(flat).max(flat, axis=-1, keepdims=True)
    flat_top = top.reshape(-1, 1)
    if not isinstance(alpha, float):
        alpha = _row_alphas(alpha, z)
    out = _above_two_rows(flat, flat_top, alpha, steps, slopes, loop)
    parts = out if isinstance(out, tuple) else (out,)
    shaped = tuple(
        None if part is None
        else part.reshape((*z.shape[:-1], 1)) if slopes == "unit" and index == 2
        else part.reshape(z.shape)
        for index, part in enumerate(parts)
    )  # fmt: skip
    return shaped if isinstance(out, tuple) else shaped[0]


def entmax_newton(
    z: Array,
    alpha: float | Array,
    steps: int | None = None,
    on_host: bool = True,
    slopes: bool | str = False,
    top: Array | None = None,
    loop: Callable | None = None,
    start: tuple[Array, Array, Array] | None = None,
    threshold: bool = False,
    few_entries: bool = True,
) -> Array | tuple:
    """alpha-entmax over the last axis for any alpha > 0, exact to the dtype.

    z holds finite entries or -inf (probability 0) and at least one finite entry
    per row; alpha is a Python float or an array broadcasting to z's rows (..., 1).
    p_i = exp_{2-alpha}(z_i - c) with the shift c (the threshold tau = (alpha-1)(c-1)
    in the (alpha-1) z - tau form) solving sum_i p_i = 1, by Newton's method on
    g(c) = sum_i p_i - 1, safeguarded by bisection on the bracket [max z, max z +
    (1 - K^(1-alpha)) / (alpha - 1)] (at its ends the top entry alone has mass 1,
    or every entry at most 1/K). For alpha <= 2 g is convex and decreasing, so the
    iterates would rise monotonically from the left end (for alpha = 2 this is
    Michelot's algorithm); Newton on log_{2-alpha}(sum p) instead takes fewer steps. In
    eager mode on the CPU at a Python-float alpha in [tuning.PREFIX_ALPHA, 2] on long
    rows it starts from the shift of each row's largest entries alone (_prefix_start),
    which is exact where they hold the support. Where the per-row values live in NumPy
    (NumPy arrays, tensors in eager mode) a Python-float alpha in (1, 2] moves its state
    from step to step in place (_Buffers; on a GPU from 1.25 it is formed anew at each
    step as one stacked power, fewer kernels); on a GPU an alpha in (1, 2) starts from a
    bound found on the sorted rows (_top_jensen_shift), which saves evaluations; on the
    host, without the prefix start, most alphas from 1.2 to 2 start from a bound on the
    maxima of groups of columns (_grouped_shift), and CPU tensors from 1.25 to below 1.36
    on rows of middling spread from one Halley step on such maxima (_maxima_step_shift).
    Above 2 bisection steps in where Newton would leave the bracket; in eager mode on
    the host, on long rows, the loop first solves each row's few largest entries alone,
    then the entries within 1/(alpha - 1) of the row maximum of the rows whose support
    those did not hold, where few are (_above_two_rows; ``few_entries=False`` skips
    this, for rows already narrowed). See the loop for when it stops. Finally p is
    renormalized.

    ``top``: z's row maxima (..., 1), when the caller has them (one pass less).
    ``on_host`` lets the loop stop once every row has converged (one host read per
    step); otherwise it takes ``steps`` (default 64) steps, a fixed graph for
    torch.compile, or, given ``loop`` (a ``while_loop(cond, body, carried)`` such as
    Torch's, supplied by the Torch face), at most that many, stopping on the device
    once every row has converged. ``slopes``: also return s = p^(2-alpha) (alpha = 2: the support
    indicator), which the backward needs (entmax_alpha_gradient), without a power;
    ``slopes="unit"``: (p, s / sum(s), sum(s) per row) instead, in the pass that would
    scale s (the backward is then softmax's fused one; entmax_alpha_gradient), where
    s / sum(s) may come as ColumnSlopes (on each row's largest entries, _prefix_map).
    In eager mode on the CPU at a Python-float alpha <= 2 on large calls (tuning.COMPACT_ELEMENTS),
    once at most a fraction tuning.STRAGGLERS of the rows is left, those rows are copied
    out and finished by a call of their own, which ``start`` (c and its bracket, per
    row) resumes. There too, at a Python-float alpha in (1, 2) whose state moves in place,
    after the first step the loop goes on over the entries that can still be in the
    support where no row keeps more than tuning.NARROW_SHARE of its entries (_narrowed),
    and p and s are put back into zeros. On a CPU tensor at a Python-float alpha from
    tuning.BASE_FORM_ALPHA to _FINISH_ALPHA (below 3/2) the loop takes Halley's steps and
    ends on a first-order finish instead of its last evaluation where the last step is
    short enough (_Buffers.finished, _finish_bound). ``threshold``: return the
    shift c (per row, relative to the row maximum, in the loop's namespace: NumPy for a
    CPU tensor) instead of p;
    ``threshold="state"`` (2-D z): (c, the loop's _Buffers), whose state a caller's
    evaluation at c moves on from in place (_prefix_map: no fresh buffers, and y not
    formed anew from z; float32 (1024, 1000) at alpha = 1.3, forward + backward, one
    process alternating with the earlier code: 5.90 / 5.82, 6.03 / 5.87, 6.46 / 6.17 ms).
    Callers pass float64 for alpha > 2: there dp/dz = p^(2-alpha) is unbounded at the support edge,
    and float32 arithmetic was 2e-5 (alpha = 3) to 2e-2 (alpha = 5) off; the loop stops
    at a residual of sqrt(eps) there and _refined_above_two finishes on a double-double
    threshold (the loop's own bases near the edge are rounded to an absolute eps).

    Examples:
        >>> import numpy as np
        >>> entmax_newton(np.array([0.0, np.log(3.0)]), 1.0)
        array([0.25, 0.75])
    """
    if _compactable(z, alpha, on_host) and z.ndim != 2:  # rows taken apart on a 2-D view
        size = z.shape[-1]
        flat = entmax_newton(
            z.reshape(-1, size), alpha, steps, on_host, slopes,
            None if top is None else top.reshape(-1, 1), loop, start, threshold, few_entries,
        )  # fmt: skip
        if threshold:
            return flat.reshape((*z.shape[:-1], 1))
        if not slopes:
            return flat.reshape(z.shape)

        def unflattened(v: Array) -> Array:  # (s / sum(s) may be ColumnSlopes: both parts)
            if isinstance(v, ColumnSlopes):
                return ColumnSlopes(*(unflattened(part) for part in v))
            return None if v is None else v.reshape((*z.shape[:-1], v.shape[-1]))

        return tuple(unflattened(v) for v in flat)
    if few_entries and _above_two_support(z, alpha, on_host, threshold, start):
        return _on_above_two_support(z, alpha, steps, slopes, top, loop)
    size = z.shape[-1]
    eps = float(_xs.native(z).finfo(z.dtype).eps)
    if top is None:
        top = _xs.namespace(z).max(z, axis=-1, keepdims=True)
    # The per-row scalars (the bracket, c, the steps: dozens of operations per step on
    # (..., 1) arrays) are kept in NumPy when z is a CPU tensor and the loop may read
    # the host: a Torch operation costs about 3 us there, a NumPy one about 1 us.
    book, to_book, to_work = _bookkeeping(z, on_host)
    xp = book
    if not isinstance(alpha, float):
        alpha_work, alpha = alpha, to_book(alpha)
    else:
        alpha_work = alpha
    # on a GPU in eager mode (a float alpha in (1, 2)): the start from the sorted rows,
    # relative to the row maximum, is the one copy to the host before the loop
    sorted_start = _sorted_start_applies(z, alpha, on_host) and start is None and not threshold
    if sorted_start:
        booked_start = to_book(_top_jensen_shift(z, top, alpha))
        lo = xp.zeros_like(booked_start)
    else:
        booked_top = to_book(top)  # (one copy to the host on a GPU, for lo and the start)
        lo = xp.zeros_like(booked_top)  # c is relative to the row maximum (see _mass)
    # c = -log_{2-alpha}(1/K): every entry has at most 1/K there
    if isinstance(alpha, float) and xp is np:  # one value for every row (50 us less)
        hi = lo + _upper_shift(size, alpha)  # (eager only: xp is NumPy there)
    else:
        hi = lo - _deformed.log_beta(xp.full_like(lo, 1 / size), 2 - alpha)
    held, gap = None, None  # (the start from the largest entries: rows it holds, max - z)
    spread = None  # max - mean per row, where it is formed before the start
    if start is not None:  # rows finished apart (see the loop)
        c, lo, hi = start
    else:
        c = lo
        width = None if threshold else _prefix_width(z, alpha, on_host)
        if width is not None and _prefix_spread_gated(z, alpha):
            spread = _mean_gap(z, booked_top, to_book)
            low, high = T.PREFIX_ROOTED_SPREAD
            low = low if size < T.PREFIX_ROOTED_LONG else 0.0
            middle = (alpha - 1) * _median(spread)  # (+inf where most rows hold -inf:
            if math.isfinite(middle) and not low <= middle <= high:  # the prefix stays)
                width = None
        if width is not None:
            # max - z: the start's partition orders it as integers, in place (no copy of
            # z); at alpha = 2 and 3/2 the loop then forms its state in that buffer
            if alpha not in T.PREFIX_WIDTH:
                bookkeeping = (to_book, to_work)
                return _prefix_map(z, top, alpha, width, steps, slopes, (lo, hi), bookkeeping, loop)
            gap = _xs.native(z).subtract(top, z)
            # lo stays the bracket's end: a start rounded above c is mended from the right
            c, held = _prefix_start(gap, alpha, width, to_book)
            held, c = held & (c <= hi), xp.minimum(c, hi)
    if sorted_start:  # (a rounded bound may exceed hi, on constant rows: hi bounds it)
        c = xp.minimum(xp.maximum(lo, booked_start), hi)
    elif start is None and held is None:
        spread = _mean_gap(z, booked_top, to_book) if spread is None else spread
        c = _mean_start(z, booked_top, lo, hi, alpha, to_book, spread)
        if _grouped_start_applies(z, alpha, on_host):  # (the host: no partition, no sort)
            c = xp.minimum(xp.maximum(c, _grouped_shift(z, top, alpha, to_book)), hi)
        elif _maxima_step_applies(z, alpha, on_host, spread):  # (a CPU tensor)
            near = _maxima_step_shift(z, top, booked_top, alpha, to_book, to_work)
            c = xp.minimum(xp.maximum(c, near), hi)
    rising = alpha <= 2  # a Python bool for a float alpha: the step below takes one form
    hi = xp.maximum(hi, lo)
    # in place from step to step where the per-row values are NumPy's (_Buffers)
    form = _clamped_form(alpha_work)
    work = _Buffers(z, top, alpha_work, isinstance(lo, np.ndarray), to_work, form, gap)
    at_c = False
    # Halley's method for the first HALLEY_STEPS steps, where Newton's model of h is
    # poorest (the support is still shrinking): for N(0, 1) scores it saved one of
    # five evaluations at alpha = 1.3 and 1.5 (t is one more pass; above 3/2 it is
    # unbounded at the support edge, so Newton alone)
    halley = isinstance(alpha, float) and alpha != 1.0 and alpha <= 1.5
    # ... except on the in-place state ("power" and "base"): a Halley step may overshoot,
    # and then y is formed anew; measured (float32 (1024, 1000)): 3.7 -> 4.3 ms at 3/2,
    # 6.8 -> 6.9 at 1.3, but 10.4 -> 9.4 at 1.2 ("offset"). Also tried on "base" at every
    # step, t = s / y (a division, not a power) and from _grouped_shift: 3 evaluations of
    # the whole rows instead of 5 at 1.3 on N(0, 1) rows, but 5.5-6.0 ms against 5.4-5.5
    # (float32 (1024, 1000), AMD EPYC, one process alternating): the first step overshot
    # on 4-40% of the rows (y formed anew), and the in-place state's rounding (an ulp of
    # y is 1/(alpha - 1) ulps of c) left 8-16% of the rows 1-4 ulps short, whose finish
    # (a first-order step on those rows) took 0.3-0.5 ms; the bound took 0.4
    # ... but a CPU tensor's "base" state up to _FINISH_ALPHA ("finishing") takes them at
    # every step, t = s / y by one division (_mass; from the first step only where the
    # rows are not narrowed after it, Newton's step being the narrowing's bound), and
    # once each row is done or its step is predicted to land within the tolerance, a
    # first-order finish replaces the last evaluation where every step is within
    # _finish_bound (_Buffers.finished); otherwise the loop evaluates there. Float32
    # N(0, 1) rows of 1000 at 1.3 took 3 evaluations of the whole rows instead of 5; what
    # lost before (above) was the grouped bound, rows finished apart and the in-place
    # rounding at a last evaluation, none of which the finish has (measured: tuning).
    # From 4/3 to 3/2 the finish's bound shrinks (_finish_bound), but Halley's steps
    # still save evaluations where the rows are not narrowed: float32 (1024, 1000),
    # forward + backward, one process alternating, up to 4/3 / up to 1.49 (and the
    # groups' start no longer at 1.35, tuning.GROUPED_TENSOR_ALPHA): N(0, 1) rows at
    # 1.35 10.78 / 8.94 ms (5 -> 4 evaluations of the whole rows); N(0, 0.3^2) at 1.34
    # 8.91 / 8.05, 1.35 8.75 / 8.36, 1.38 8.50 / 8.35, 1.45 9.21 / 8.61; float64 N(0,
    # 0.3^2) 1.35 38.37 / 30.50 (docs/measurements.md: "Other alphas")
    finishing = work.incremental and form == "base" and not threshold and is_torch_array(z)
    finishing = finishing and isinstance(alpha, float) and alpha <= _FINISH_ALPHA
    finishing = finishing and not _may_underflow(alpha, z.dtype)
    halley = halley and (not work.incremental or form == "offset" or finishing)
    # On a GPU below 3/2 (the stacked form, t bounded): Halley's step at every evaluation,
    # and once each row is done or its next step is predicted below the stall tolerance,
    # the last evaluation stays on the device (see ``predicted`` in advance)
    foresee = (work.stacked and not threshold and halley and alpha < 1.5) or finishing
    predicted = [None]  # advance's rows whose step lands within the tolerance (foresee)

    # in tolerances (4 ulps of max(|c|, 1)): a step stalls below ``stall`` of one, and in
    # threshold mode one from the left is close enough to return below ``close_enough``
    stall, close_enough = 0.25, math.sqrt(eps) / 8 / eps

    def tolerance_at(c: Array) -> Array:
        """The stopping tolerance at c, per row: 4 ulps of max(|c|, 1)."""
        size_c = xp.abs(c)
        return 4 * eps * xp.where(size_c > 1.0, size_c, 1.0)

    def foreseen(
        done: Array, c: Array, new: Array, taken: Array, bend: Array, fine: Array,
        tolerance: Array, total: Array, slope: Array, bent: Array, fourth: Array | None,
    ) -> None:  # fmt: skip
        """predicted[0]: the rows done, or whose step lands within the tolerance."""
        # Newton's error after a step is about |h''/(2h')| step^2 = |bend| step^2 (either
        # side of the shift), with the curvature at c (for alpha < 3/2, t bounded, it
        # changes little over a step this small): within the stall tolerance, the step
        # lands where the loop would stop, so the next evaluation is the last and need
        # not be read on the host (the step taken is Halley's, whose error is smaller
        # still)
        inside = new == c + taken  # (not a bisection)
        small = xp.abs(bend) * (taken * taken) <= stall * tolerance
        if fourth is not None:  # (QUARTIC_ALPHA) Halley's own error estimate, a leading
            # term: within half the tolerance; this ends one evaluation earlier than
            # Newton's bound, which a Halley step beats by far
            error = gen.halley_error(total, slope, bent, fourth, alpha)
            predicted_error = xp.abs(error) * xp.abs(taken) ** 3
            small = small | (fine & (predicted_error <= stall * tolerance / 2))
        predicted[0] = done | (inside & small)

    def advance(
        c: Array, lo: Array, hi: Array, work: _Buffers, bend: bool
    ) -> tuple[Array, Array, Array, Array, Array]:
        """One step from c: (the next c, the bracket, which rows are done, sum p at c)."""
        if foresee:  # (a while_loop's body may not mutate it: eager only)
            predicted[0] = None
        total, slope, bent = _evaluate(c, alpha_work, work, bend, to_work, to_book)
        g = total - 1
        rising_mass = g > 0
        lo, hi = xp.where(rising_mass, c, lo), xp.where(rising_mass, hi, c)
        positive = slope > 0
        safe_slope = xp.where(positive, slope, 1.0)
        # alpha <= 2: Newton on h(c) = log_{2-alpha}(sum p), linear in c for softmax and
        # (on a fixed support) for sparsemax, so near-exact steps in between (measured
        # 3-10 steps against 7-15 for Newton on g). Above 2: Newton on g. (At alpha = 2,
        # h = g; as a Python float it skips the deformed logarithm's operations.)
        two = isinstance(alpha, float) and alpha == 2.0
        newton = c + g / safe_slope if two or rising is not True else None  # (on g)
        if two or rising is False:  # (above 2 no deformed step: its log of a mass that
            new = newton  # rounded to 0 at a trial shift would be discarded)
        else:
            # Newton's, N = -h / h' (an alpha per row: the rows above 2 discard it)
            step = _deformed_step(total, slope, alpha, safe_slope)
            if bent is not None:
                step, bend, fine = _halley_step(step, total, slope, bent, alpha)
            deformed = c + step
            taken = step  # (the step, for ``predicted`` below)
            if isinstance(rising, bool):
                new = deformed if rising else newton
            else:
                new = xp.where(rising, deformed, newton)
        new = xp.where((new >= lo) & (new <= hi), new, (lo + hi) / 2)
        if rising is True and xp is np and c.size:
            # no row can stop (the first steps, typically): every step rises by more than
            # the tests below look at and than the bracket's tolerance (then g > 0 and hi
            # - lo >= the step in every row), and every residual is above 4 eps; 5
            # operations on the per-row values, not 25
            tested = max(close_enough if threshold else stall, 1.0)
            widest = 4 * eps * max(float(np.abs(c).max()), 1.0)  # the largest tolerance
            if (new - c).min() > tested * widest and g.min() > 4 * eps:
                done = np.zeros(g.shape, dtype=bool)
                # ... but each row's step may still land within the tolerance: then the
                # next evaluation is the last (``predicted``; without this test here, a
                # loop whose second evaluation was 4e-5 from the shift on every row took
                # a third where the finish would do: float32 N(0, 0.5^2) rows at 1.3 from
                # _maxima_step_shift)
                if foresee and bent is not None:
                    tolerance = tolerance_at(c)
                    terms = (taken, bend, fine, tolerance, total, safe_slope, bent, work.fourth)
                    foreseen(done, c, new, *terms)
                return new, lo, hi, done, total
        # Stop on the residual or the bracket; alpha <= 2 also once the step is below
        # one ulp of c, or would fall while g >= 0. Above 2 the slope is unbounded at
        # the support edge, so a small step says nothing, and the residual cannot fall
        # below the rounding of the bases near the edge (N(0, 1) rows took all 64 steps
        # at alpha = 3): there the loop stops at a residual of sqrt(eps) and
        # _refined_above_two finishes on an exact base.
        tolerance = tolerance_at(c)
        settled = (xp.abs(g) <= 4 * eps) | (hi - lo <= tolerance)
        if rising is False:
            settled = settled | (xp.abs(g) <= math.sqrt(eps))
        elif rising is not True:
            settled = settled | ((xp.abs(g) <= math.sqrt(eps)) & ~rising)
        if rising is False:
            done = settled
        else:
            # a step within one ulp of c: 4 ulps (the bracket's width) left c 4.6e-7 short
            # at alpha = 1.99 in float32 (a slope sum s of about 6 made that a mass 2.7e-6
            # off), and p 1.2e-6 off; measured no slower at alpha = 2, 1.5, 1.3, 1.2, 1.01
            stalled = (xp.abs(new - c) <= stall * tolerance) | ((g >= 0) & (new <= c))
            done = settled | (stalled if rising is True else rising & stalled)
            if foresee and bent is not None:
                fourth = work.fourth
                foreseen(
                    done, c, new, taken, bend, fine, tolerance, total, safe_slope, bent, fourth
                )
            if threshold and rising is True:
                # a step from the left below sqrt(eps): the next would be about C step^2
                # (C = 0.3 on N(0, 1) rows at alpha = 1.3), below one ulp; the caller's
                # evaluation confirms it (one evaluation fewer here)
                close = (g >= 0) & (xp.abs(new - c) <= close_enough * tolerance)
                return xp.where(done & ~close, c, new), lo, hi, done | close, total
        return xp.where(done, c, new), lo, hi, done, total

    limit = 64 if steps is None else steps
    separate = None  # (rows, their (p, s)) when the last rows were finished apart
    narrowed, fallen = None, None  # (_narrowed) the rows' kept entries, rows to solve again
    finish = None  # (finishing) the last step, taken by _Buffers.finished
    on_device = False  # the last evaluation's sums left on z's device (foresee)
    if loop is not None and not on_host:
        # torch.compile: the Halley steps unrolled, then a while loop on the device that
        # stops once every row is done (64 unrolled steps made Inductor emit 1.7 MB of
        # C++ for a per-row alpha, on which GCC 12 failed with an internal error)
        for _ in range(T.HALLEY_STEPS if halley else 0):
            c, lo, hi, _, _ = advance(c, lo, hi, work, True)
        done = xp.zeros(c.shape, dtype=xp.bool, device=_device(c))
        count = xp.zeros((), dtype=xp.int64, device=_device(c))

        def more(count: Array, c: Array, lo: Array, hi: Array, done: Array) -> Array:
            return (count < limit) & ~xp.all(done)

        def step(count: Array, c: Array, lo: Array, hi: Array, done: Array) -> tuple:
            c, lo, hi, done, _ = advance(c, lo, hi, _Buffers(z, top, alpha_work, form=form), False)
            return count + 1, c, lo, hi, done

        _, c, lo, hi, _ = loop(more, step, (count, c, lo + 0, hi + 0, done))
        # a fresh work object: Dynamo lost the attribute changes that _mass makes (work.s
        # = p at alpha = 1 and for an alpha array) to the one made before the loop, and s
        # came out as the uninitialized buffer (NaN gradients)
        work = _Buffers(z, top, alpha_work, form=form)
    else:
        apart = _compactable(z, alpha, on_host)
        work.final = held is not None and bool(held.all())  # (then one evaluation)
        # after the first step, the entries that can still be in the support (_narrowed)
        narrow = not threshold and start is None and _narrowing_applies(z, alpha, work, limit)
        first = (c, lo, hi)
        for index in range(limit):
            # (finishing, where the rows may be narrowed after this step: Newton's step,
            # which rises from the left; Halley's only if they are not)
            lazy = finishing and narrow and index == 0
            bend = halley and (index < T.HALLEY_STEPS or foresee) and not lazy
            work.keep_s = lazy
            new, lo, hi, done, total = advance(c, lo, hi, work, bend)
            work.keep_s = False
            if held is not None:  # (_prefix_start) those rows are at their shift
                done, new, held = done | held, xp.where(held, c, new), None
            if narrowed is not None and index == 1:
                # rows whose next step falls below the narrowing's shift (a rounding
                # overshoot of the first step): solved again over the whole row below
                fallen = new < narrowed.shift
            if on_host and bool(xp.all(done)):
                at_c = True
                break
            if predicted[0] is not None and bool(xp.all(predicted[0])):
                if finishing and work.t_in_p:
                    shift = new - c
                    small = float(np.abs(shift).max()) <= _finish_bound(eps, alpha)
                    finish = shift if small else None
                c, on_device = new, True
                break
            if apart and index + 1 < limit:
                rows = _flat_index(~done)
                if _left_apart(rows.shape[0], done.shape[0], z.shape[-1], alpha > 2):
                    # the rows left, finished by a call of their own: each step would
                    # otherwise evaluate every row again (the done ones at their c)
                    state = tuple(_take_rows(v, rows) for v in (new, lo, hi))
                    finished = entmax_newton(
                        _take_rows(z, rows), alpha, limit - index - 1, on_host, slopes or True,
                        _take_rows(top, rows), loop, state, bool(threshold),
                    )  # fmt: skip
                    separate = rows, finished
                    at_c = True
                    break
            if narrow and index == 0:
                found = _narrowed(z, top, work, c, new, first)
                if found is not None:  # the loop goes on over the kept entries alone
                    z, narrowed = found
                    work = _Buffers(z, top, alpha_work, True, to_work, form)
                    # by Newton's steps, which rise from the left (the fall check above)
                    finishing = halley = foresee = False
                elif lazy and work.at is not None:
                    # Halley's step from c after all, where it stays in the bracket (at
                    # None: _narrowed moved the state)
                    bent, slope = to_book(work.bent_total()), work.slope_total
                    step = _deformed_step(total, slope, alpha)  # (Newton's, as advance's)
                    step = _halley_step(step, total, slope, bent, alpha)[0]
                    halley_new = c + step
                    inside = (halley_new >= lo) & (halley_new <= hi) & ~done
                    new = xp.where(inside, halley_new, new)
            c = new
    if threshold:  # (alpha <= 2: the eager loop's last c, or its last step below sqrt(eps))
        c = new
        if separate is not None:
            c = xp.asarray(c, copy=True)
            _put_rows(c, *separate)
        return (c, work) if threshold == "state" else c
    unit = slopes == "unit"
    above = _above_two(alpha)  # None, or which rows (a Python bool for a float alpha)
    if above is True:  # the refined map replaces the loop's
        apart_rows = None  # (rows finished apart: refined there, settled here)
        if separate is not None:
            apart_rows = xp.zeros(c.shape, dtype=bool)
            apart_rows[separate[0]] = True
        p, s = _refined_above_two(
            z, top, (c, lo, hi), alpha, alpha_work, (xp, to_book, to_work), on_host,
            apart_rows, loop,
        )  # fmt: skip
        parts = _unit_slopes(p, s) if unit else (p, s) if slopes else (p,)
        if separate is not None:
            rows, finished = separate
            for target, values in zip(parts, finished, strict=False):
                _put_rows(target, rows, values)
        return parts if unit or slopes else parts[0]
    if finish is not None:  # p and s moved to c to first order
        total, slope_total = work.finished(finish, alpha)
        total, work.slope_total = to_book(total), to_book(slope_total)
    elif on_device and work.stacked:  # the state moved to c, p, s (and their sums) formed there
        work.move(c)
        _mass(None, alpha_work, work, False)
        total, work.slope_total = work.sums[0], work.sums[1]
    elif not at_c or on_device:
        total = _evaluate(c, alpha_work, work, False, to_work, to_book)[0]
    p, s, scale = work.normalized(alpha, total, slopes, work.slope_total)
    if separate is not None:  # the rows finished apart
        rows, parts = separate
        _put_rows(p, rows, parts[0])
        if s is not None and s is not p:  # (alpha = 1: s is p)
            _put_rows(s, rows, parts[1])
        if scale is not None:
            _put_rows(scale, rows, parts[2])
    if narrowed is not None:  # back to the whole rows
        p = _widened(p, narrowed)
        s = None if s is None else _widened(s, narrowed)
        if fallen is not None and bool(fallen.any()):
            rows = _flat_index(fallen)
            state = tuple(_take_rows(v, rows) for v in narrowed.start)
            z_rows, top_rows = _take_rows(narrowed.z, rows), _take_rows(narrowed.top, rows)
            part = entmax_newton(z_rows, alpha, limit, on_host, slopes, top_rows, loop, state)
            part = part if isinstance(part, tuple) else (part,)
            for target, values in zip((p, s, scale), part, strict=False):
                _put_rows(target, rows, values)
    if above is not None and above is not False:  # one alpha per row, some above 2
        fine = _refined_above_two(
            z, top, (c, lo, hi), alpha, alpha_work, (xp, to_book, to_work), on_host,
            while_loop=loop,
        )  # fmt: skip
        fine = _unit_slopes(*fine) if unit else fine
        rows = above if xp is not np else _xs.native(z).from_numpy(above).to(z.device)
        where = _xs.namespace(z).where
        p = where(rows, fine[0], p)
        s = None if s is None else where(rows, fine[1], s)
        scale = None if scale is None else where(rows, fine[2], scale)
    return (p, s, scale) if unit else (p, s) if slopes else p


def _unit_slopes(p: Array, s: Array) -> tuple[Array, Array, Array]:
    """(p, s / sum(s), sum(s)) over the last axis (a row of zeros: s stays 0, scale 1)."""
    xp = _xs.namespace(s)
    total = xp.sum(s, axis=-1, keepdims=True)
    total = xp.where(total > 0, total, 1.0)
    return p, s / total, total


def _renormalized_slopes(s: Array, total: Array, alpha: float | Array, to_work: Callable) -> Array:
    """s = p^(2-alpha) of p / total, from the s of p: s times total^(alpha-2), in place."""
    return _xs.native(s).multiply(s, to_work(_power(total, alpha - 2)), out=s)


def _above_two(alpha: float | Array) -> bool | Array | None:
    """alpha > 2: a Python bool for a float alpha, else the rows (None if no row is)."""
    if isinstance(alpha, float):
        return alpha > 2
    above = alpha > 2
    if isinstance(above, np.ndarray) and not above.any():  # a host array: checked here
        return None
    return above


def _refined_above_two(
    z: Array,
    top: Array,
    loop: tuple[Array, Array, Array],
    alpha: float | Array,
    alpha_work: float | Array,
    book: tuple,
    on_host: bool,
    settled: Array | None = None,
    while_loop: Callable | None = None,
) -> tuple[Array, Array]:
    """(p, s) for alpha > 2: the loop's shift c = loop[0], refined on a double-double
    threshold by Newton's method safeguarded by bisection. Rows ``settled`` ((R, 1), in
    the loop's namespace; finished apart by the caller) are taken as done: their values
    are the caller's to replace.

    Above 2, s = dp/dz = p^(2-alpha) is unbounded at the support edge, so the loop's
    base 1 + (alpha - 1) f, rounded to an absolute eps, moved an entry with base 1e-7
    by 4e-12 at alpha = 5 (float64), and at alpha = 10 an entry 2 ulps inside the
    support (p = 0.02) was left out. Here the threshold tau = top + c - 1/(alpha - 1)
    is split exactly into tau_hi + d (Knuth's two-sum) and each base is formed as
    (alpha - 1)((z - tau_hi) - d), relative-exact: z - tau_hi is exact near the edge
    (Sterbenz) and every later rounding is relative. d is then found in the loop's
    bracket (loop[1:], widened by the roundings of the loop's base): Newton on
    sum p = 1 where it stays inside, bisection elsewhere (the mass is neither
    convex nor concave here: it is concave on a fixed support, but an entry enters
    with infinite slope). Stops once |sum p - 1| <= 4 eps or the bracket is a few
    ulps of d wide (at most 64 steps; without ``on_host`` all 64, or, given
    ``while_loop`` (entmax_newton's ``loop``), on the device until every row is done). Rows at
    alpha <= 2 of an alpha array get values here that the caller discards. In eager mode
    on the CPU its last rows go on apart, as the loop's do (_left_apart).
    """
    xp, to_book, to_work = book
    c, lo, hi = loop
    lib, work_xp = _xs.native(z), _xs.namespace(z)
    eps = float(work_xp.finfo(z.dtype).eps)
    top = to_book(top)
    inverse = 1 / (alpha - 1 if isinstance(alpha, float) else xp.where(alpha > 2, alpha - 1, 1.0))
    # base = 1 + (alpha - 1)(z - top - c) = (alpha - 1)(z - tau), tau = top + c - 1/(alpha - 1)
    edge = c - inverse
    tau_hi = top + edge
    back = tau_hi - top
    d = (top - (tau_hi - back)) + (edge - back)
    margin = 8 * eps * (xp.abs(top) + xp.abs(c) + inverse)
    low, high = d + (lo - c) - margin, d + (hi - c) + margin
    rate, power = alpha_work - 1, alpha_work
    if not isinstance(alpha_work, float):
        # rows at alpha <= 2 keep the loop's map (counted done below): alpha = 2's rate
        # and power stand in, where at their own alpha below 1 the bases' power
        # overflowed (float32 rows at 0.977: inf sums, NumPy's "invalid value" warning)
        above = alpha_work > 2
        rate, power = work_xp.where(above, rate, 1.0), work_xp.where(above, alpha_work, 2.0)
    shifted = lib.subtract(z, to_work(tau_hi))  # z - tau_hi, fresh: z is the caller's
    base = work_xp.empty_like(z)

    def bases_at(d: Array, of_rows: Array, by: Array, into: Array | None = None) -> Array:
        """(alpha - 1)((z - tau_hi) - d) of the rows ``of_rows`` (their z - tau_hi) at
        rate ``by``, into ``into`` (else a fresh array)."""
        if into is None:
            return (of_rows - to_work(d)) * by
        return lib.multiply(lib.subtract(of_rows, to_work(d), out=into), by, out=into)

    def evaluate(
        d: Array, fresh: bool = False, rows: tuple | None = None
    ) -> tuple[Array, Array, Array, Array]:
        # (``fresh``: no buffer written, as a while_loop's body must; ``rows``: the
        # (shifted, base, rate, power) of some rows, _solved's, else all)
        of_rows, into, by, to = (shifted, base, rate, power) if rows is None else rows
        bases = bases_at(d, of_rows, by, None if fresh else into)
        p = work_xp.astype(gen.entmax_from_base(bases, to), z.dtype, copy=False)
        # s = p / base, as the loop's s = p / (1 + x) (_over_one_plus), not a second power
        # (gppr_weights; float64 (1024, 1000) at alpha = 5, one evaluation: 8 ms -> 1.5)
        s = _over_base(p, bases)
        return p, s, to_book(_xs.row_sum(p)), to_book(_xs.row_sum(s))

    def advance(
        d: Array,
        low: Array,
        high: Array,
        total: Array,
        slope: Array,
        kept: tuple = (alpha, settled),
    ) -> tuple:
        """(the next d, its bracket, which rows are done) from an evaluation at d (``kept``:
        the rows' alpha and ``settled``, _solved's)."""
        alpha_rows, settled_rows = kept
        g = total - 1
        more = g > 0  # tau too small: the root lies above d
        low, high = xp.where(more, d, low), xp.where(more, high, d)
        size_d = xp.maximum(xp.abs(low), xp.abs(high))
        done = (xp.abs(g) <= 4 * eps) | (high - low <= 4 * eps * size_d)
        if not isinstance(alpha_rows, float):  # (rows at alpha <= 2 keep the loop's map)
            done = done | (alpha_rows <= 2)
        if settled_rows is not None:
            done = done | settled_rows
        newton = d + g / xp.where(slope > 0, slope, 1.0)
        inside = (newton > low) & (newton < high)
        return xp.where(done, d, xp.where(inside, newton, (low + high) / 2)), low, high, done

    # rows left apart once at most tuning.STRAGGLERS of them are left (eager, on the CPU,
    # 2-D): every step evaluated every row, and on tall batches the slowest row set the
    # count (float64 (100000, 64) N(0, 1) rows at alpha = 5: 61 evaluations of all rows)
    apart = on_host and _eager_cpu(z) and z.ndim == 2 and z.shape[0] > 1
    apart = apart and math.prod(z.shape) >= T.COMPACT_ELEMENTS

    def solved(state: tuple, steps: int) -> tuple:
        """(p, s, sum p, d, low) of the rows in ``state`` = (d, low, high, (shifted, base,
        rate, power), (alpha, settled)): p and s at the last d, where every row is done
        or ``steps`` are taken; the last rows left apart by a call of their own."""
        d, low, high, rows, kept = state
        for index in range(steps):
            p, s, total, slope = evaluate(d, rows=rows)
            new, low, high, done = advance(d, low, high, total, slope, kept)
            if bool(xp.all(done)):
                return p, s, total, d, low
            d = new  # (a done row keeps its d: its p and s above are at it)
            if not (apart and index + 1 < steps):
                continue
            left = _flat_index(~done)
            if _left_apart(left.shape[0], done.shape[0], z.shape[-1], True):
                count = done.shape[0]
                of_rows, _, by, to = rows  # (the rows' own buffer for their bases, not a copy)
                of_rows, by, to = (_rows_of(v, left, count) for v in (of_rows, by, to))
                state = tuple(_rows_of(v, left, count) for v in (d, low, high))
                state += ((of_rows, work_xp.empty_like(of_rows), by, to),)
                state += (tuple(_rows_of(v, left, count) for v in kept),)
                rest = solved(state, steps - index - 1)
                for target, values in zip((p, s, total, d, low), rest, strict=True):
                    _put_rows(target, left, values)
                return p, s, total, d, low
        p, s, total, _ = evaluate(d, rows=rows)
        return p, s, total, d, low

    # Up to 64 steps: rows whose root sits next to an entry's edge (a p of 0.09 from a
    # base of 1e-10 at alpha = 10) close on it by bisection, and 16 steps left p 5e-3 off
    # at 10, 0.2 at 30 (float64 (64, 1000) N(0, 1) rows, without host reads)
    at_d = False
    if while_loop is not None and not on_host:  # torch.compile: stops on the device

        def unfinished(count: Array, d: Array, low: Array, high: Array, done: Array) -> Array:
            return (count < 64) & ~xp.all(done)

        def step(count: Array, d: Array, low: Array, high: Array, done: Array) -> tuple:
            total, slope = evaluate(d, fresh=True)[2:]
            return count + 1, *advance(d, low, high, total, slope)

        count = xp.zeros((), dtype=xp.int64, device=_device(d))
        done = xp.zeros(d.shape, dtype=xp.bool, device=_device(d))
        carried = (count, d + 0, low + 0, high + 0, done)
        _, d, low, high, _ = while_loop(unfinished, step, carried)
    elif on_host:
        p, s, total, d, low = solved(
            (d, low, high, (shifted, base, rate, power), (alpha, settled)), 64
        )
        at_d = True
    else:
        for _ in range(64):
            p, s, total, slope = evaluate(d)
            d, low, high, _ = advance(d, low, high, total, slope)
    if not at_d:
        p, s, total, _ = evaluate(d)
    # a last d above every base leaves no support: the bracket closed on a shift that the
    # bases cannot resolve (constant rows of 7.0 at alpha = 30: each base 1.9e-53 at the
    # shift, whose threshold 7 + 0.034 needs 180 bits); those rows are evaluated at the
    # bracket's low end instead, whose mass exceeds 1 (p = 1/K exactly there, as at the
    # shift: equal bases)
    empty = total <= 0
    if not on_host or bool(xp.any(empty)):
        p, s, total, _ = evaluate(xp.where(empty, low, d))
    total = xp.where(total > 0, total, 1.0)
    p = lib.divide(p, to_work(total), out=p)
    s = _renormalized_slopes(s, total, alpha, to_work)
    if on_host:  # eager: one host read picks the rows to anchor
        # rows with a base within rate eps (|tau| + 1) of 0, a relative eps of the
        # double-double's resolution (about rate eps^2 |tau|), are finished anchored
        bases = bases_at(d, shifted, rate)
        resolution = to_work(eps * (xp.abs(tau_hi) + 1.0)) * rate
        near = to_book(work_xp.any(work_xp.abs(bases) < resolution, axis=-1, keepdims=True))
        if not isinstance(alpha, float):
            near = near & (alpha > 2)
        if settled is not None:
            near = near & ~settled
        if bool(xp.any(near)):
            _anchor_rows(z, p, s, alpha_work, near)
    elif while_loop is not None:  # torch.compile: every row (no host read picks them)
        # (rows at alpha <= 2 of an alpha array, whose values the caller discards, are
        # done from the start: their map is no start for one above 2, whose steps then
        # found no root and ran all 128; at 3 in place of their own alpha, which may be 1)
        if isinstance(alpha_work, float):
            p, s = _anchored_above_two(z, p, alpha_work, while_loop)
        else:
            above = alpha_work > 2
            safe = work_xp.where(above, alpha_work, 3.0)
            p, s = _anchored_above_two(z, p, safe, while_loop, ~above)
    return p, s


def _anchor_rows(z: Array, p: Array, s: Array, alpha: float | Array, near: Array) -> None:
    """p and s of the rows ``near`` ((..., 1), the loop's namespace) replaced in place by
    _anchored_above_two's (on 2-D views of z, p and s; alpha a float or per row)."""
    size = z.shape[-1]
    flat = [v.reshape(-1, size) for v in (z, p, s)]
    if not isinstance(alpha, float):
        alpha = _xs.namespace(z).broadcast_to(alpha, (*z.shape[:-1], 1)).reshape(-1, 1)
    index = _flat_index(near.reshape(-1, 1))
    rows = flat[0].shape[0]
    z_rows, p_rows = (_rows_of(v, index, rows) for v in flat[:2])
    anchored = _anchored_above_two(z_rows, p_rows, _rows_of(alpha, index, rows))
    for target, values in zip(flat[1:], anchored, strict=True):
        _put_rows(target, index, values)


def _anchored_above_two(
    z: Array,
    p: Array,
    alpha: float | Array,
    while_loop: Callable | None = None,
    settled: Array | None = None,
) -> tuple[Array, Array]:
    """(p, s = p^(2 - alpha)) of 2-D rows at alpha > 2 whose support edge a double-double
    threshold cannot resolve, from their map ``p`` there: the threshold written through
    q, the p of the support's smallest entry z_k (the generated entmax_anchored_base:
    each base is q^(alpha - 1) plus the entry's gap (alpha - 1)(z - z_k), relative-exact),
    q found by Newton's method safeguarded by bisection.

    Above 2, an entry at the edge can hold a large p from a base far below any threshold's
    rounding: at alpha = 100, two entries of an N(0, 1) row 0.0046 apart have p = 0.9921
    and 0.0079, the second from a base of 1e-208, where the double-double's base was
    1e-46 and its p 0.34. In q the problem is well conditioned: the mass F(q) = m q +
    sum over the entries above z_k of p(q) - 1 (m entries tie at z_k, whose p is q itself)
    rises with slope m + sum (q / p)^(alpha - 2) (entmax_anchored_slope), between m and
    the support's size, and is convex, so Newton's steps converge from either side.

    The double-double's smallest support entry is z_k but for at most one distinct value
    on either side (distinct floats give bases at least rate ulp(z) apart, far above its
    resolution): the entries at a value v are in the support exactly where the entries
    above v have a mass below 1 at the threshold where v's base is 0. Eager mode reads
    the host once per step to stop; given ``while_loop`` (torch.compile, every row) the
    steps stop on the device. Rows ``settled`` ((R, 1), z's kind) take no step.
    """
    xp = _xs.namespace(z)
    eps = float(_xs.native(z).finfo(z.dtype).eps)
    inf = float("inf")
    rate = alpha - 1
    edge = xp.min(xp.where(p > 0, z, inf), axis=-1, keepdims=True)
    below = xp.max(xp.where(z < edge, z, -inf), axis=-1, keepdims=True)
    above = xp.min(xp.where(z > edge, z, inf), axis=-1, keepdims=True)

    def gaps_to(v: Array) -> Array:
        """(alpha - 1)(z - v) per entry: the bases where v's is 0."""
        return (z - v) * rate

    def holds(v: Array) -> Array:
        """Whether the entries at v (per row) are in the support (False where v is not
        finite: no such entry)."""
        finite = xp.isfinite(v)
        bases = gaps_to(xp.where(finite, v, edge))
        mass = xp.sum(gen.entmax_from_base(bases, alpha), axis=-1, keepdims=True)
        return finite & (mass < 1)

    least = xp.where(holds(below), below, xp.where(holds(edge), edge, above))
    gaps = gaps_to(least)
    ties = z == least
    count = xp.sum(xp.astype(ties, z.dtype), axis=-1, keepdims=True)
    upper = gaps > 0
    gaps = xp.where(upper, gaps, 0.0)

    def above_edge(q: Array) -> Array:
        """p of the entries above z_k at q (0 elsewhere)."""
        base = gen.entmax_anchored_base(q, gaps, alpha)
        return xp.where(upper, gen.entmax_from_base(base, alpha), 0.0)

    def step(q: Array, lo: Array, hi: Array, done: Array) -> tuple[Array, ...]:
        """Newton's step on the mass in q, safeguarded by bisection (done rows stay)."""
        others = above_edge(q)
        g = count * q + xp.sum(others, axis=-1, keepdims=True) - 1
        slope = count + xp.sum(gen.entmax_anchored_slope(q, others, alpha), axis=-1, keepdims=True)
        lo, hi = xp.where(g < 0, q, lo), xp.where(g > 0, q, hi)
        newton = q - g / slope
        new = xp.where((newton >= lo) & (newton <= hi), newton, (lo + hi) / 2)
        done = done | (xp.abs(g) <= 4 * eps) | (hi - lo <= 4 * eps * hi) | (new == q)
        return xp.where(done, q, new), lo, hi, done

    lo, hi = xp.zeros_like(count), 1 / count
    start = xp.max(xp.where(ties, p, 0.0), axis=-1, keepdims=True)
    q = xp.where((start > 0) & (start <= hi), start, hi / 2)  # (a lone entry: q = 1)
    done = xp.zeros(q.shape, dtype=xp.bool, device=_device(q))
    state = (q, lo, hi, done if settled is None else done | settled)
    if while_loop is not None:  # torch.compile: stops on the device (at most 128 steps)

        def unfinished(steps: Array, *state: Array) -> Array:
            return (steps < 128) & ~xp.all(state[-1])

        def body(steps: Array, *state: Array) -> tuple[Array, ...]:
            return steps + 1, *step(*state)

        steps = xp.zeros((), dtype=xp.int64, device=_device(q))
        q = while_loop(unfinished, body, (steps, *(v + 0 for v in state[:3]), state[3]))[1]
    else:
        for _ in range(128):
            state = step(*state)
            if bool(xp.all(state[3])):
                break
        q = state[0]
    p = xp.where(ties, q, above_edge(q))
    p = p / xp.sum(p, axis=-1, keepdims=True)
    # s = p^(2 - alpha) can exceed the dtype here (p = 5e-4 at alpha = 100: 1e320), where
    # dL/dz is finite (the limit of s (g - <s, g> / sum s) as that s grows, with g
    # centered there: -sum of the others' s g); s is capped at largest / (8 K), which
    # gives that limit to a relative (the others' sum s) / cap, and keeps sum s and each
    # s / sum s (the backward's unit slopes, at least 1 / (8 largest): normal) finite
    cap = float(_xs.native(z).finfo(z.dtype).max) / (8 * z.shape[-1])
    s = gppr_weights(p, alpha)  # (overflows are capped below; entmax_map keeps NumPy quiet)
    return p, xp.where(s > cap, cap, s)


def _quietly(function: Callable, p: Array, *args: Any) -> Array:
    """function(p, *args), with NumPy's floating-point warnings off for a NumPy ``p``
    (overflow, division by 0, invalid: of a generated form's discarded branch), for the
    backward (the forward runs quiet in entmax_map); Torch warns of none, and np.errstate
    does not trace under torch.compile."""
    if not isinstance(p, np.ndarray):
        return function(p, *args)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        return function(p, *args)


def _bookkeeping(z: Array, on_host: bool) -> tuple[ModuleType, Callable, Callable]:
    """(namespace for per-row scalars, array -> that namespace, back to z's kind).

    Eager Torch keeps the per-row scalars (the shift, its bracket, the flags) in NumPy:
    on the CPU as views, on a GPU as copies (one device-to-host copy of each row sum,
    which the step's host read waits for anyway, and one copy of the shift back), where
    Torch's own per-row updates were dozens of kernel launches per step.
    """
    if on_host and is_torch_array(z):
        torch = _xs.native(z)
        dtype = {torch.float32: np.float32, torch.float64: np.float64}.get(z.dtype)
        if dtype is None:  # the work arrays must not be promoted
            dtype = torch.empty(0, dtype=z.dtype).numpy().dtype
        device = z.device
        if device.type in _BOOKKEEPING_VIEWS:

            def to_work(t: np.ndarray) -> Array:
                return torch.from_numpy(np.ascontiguousarray(t, dtype=dtype))

            # NumPy itself, not its array-API wrapper (a few us less per operation)
            return np, lambda t: t.numpy(), to_work

        def to_device(t: np.ndarray) -> Array:
            return torch.from_numpy(np.array(t, dtype=dtype)).to(device, non_blocking=True)

        # (.copy(): a CUDA tensor's .cpu() is a copy already; a CPU tensor sent this way
        # by the test that empties _BOOKKEEPING_VIEWS must not be viewed either)
        return np, lambda t: t.cpu().numpy().copy(), to_device
    return _xs.namespace(z), lambda t: t, lambda t: t


_BOOKKEEPING_VIEWS = ("cpu",)  # devices whose tensors NumPy views (a test empties it)


def _viewable_small(z: Array, limit: int) -> bool:
    """Whether z is a CPU tensor that NumPy views, of at most ``limit`` values in at most
    tuning.NUMPY_VIEW_ROWS rows (entmax_map then runs on the views: an operation on a
    few hundred values costs NumPy about 1 us, Torch 3 to 5)."""
    if not is_torch_array(z):
        return False
    elements = math.prod(z.shape)
    rows = elements // max(z.shape[-1], 1)
    return elements <= limit and rows <= T.NUMPY_VIEW_ROWS and _numpy_viewable(z)


def _on_views(z: Array, top: Array | None, compute: Callable) -> tuple:
    """compute(view of z, view of top or None) -> (p, s or None, scale or None) in NumPy,
    as tensors: p copied into Torch's own memory (the caller returns it, and a tensor
    over NumPy's memory cannot be resized or moved to shared memory), s (ColumnSlopes
    too) and scale viewed. NumPy's floating-point warnings are off (log1p(-1) = -inf
    off the support, underflows, gaps max - z beyond the dtype's largest, which are
    +inf: p = 0 there), as Torch's operations give none."""
    torch = _xs.native(z)

    def tensor(v: np.ndarray | ColumnSlopes | None) -> Array | ColumnSlopes | None:
        if isinstance(v, ColumnSlopes):
            return ColumnSlopes(*(tensor(part) for part in v))
        return None if v is None else torch.from_numpy(np.asarray(v))

    with np.errstate(all="ignore"):
        p, s, scale = compute(_view(z), _view(top))
    return torch.from_numpy(p).clone(), tensor(s), tensor(scale)


def _short_rows(z: Array, alpha: float) -> bool:
    """Whether z is a tensor whose rows take the sorted map at any size: from
    tuning.SORT_ROW_LENGTHS[alpha][0] to [1] entries (where the Newton loop's per-row
    bookkeeping, on every row at every step, costs more than the sort of short rows)."""
    lengths = T.SORT_ROW_LENGTHS.get(alpha)
    return is_torch_array(z) and lengths is not None and lengths[0] <= z.shape[-1] <= lengths[1]


def _alpha_groups(z: Array, alpha: float | Array, on_host: bool) -> list | None:
    """[(alpha value, its rows as 1-D integers in NumPy, or None for every row)] over z's
    rows flattened to 2-D, where ``alpha`` is an array holding at most
    tuning.ALPHA_GROUPS distinct values (off the CPU ALPHA_GROUPS_OFF_CPU; one host read
    of alpha), in eager mode; with more values on both sides of 2, on the host, two
    groups, [(the alphas of the rows at most 2 (n, 1), their rows), (those above 2, their
    rows)]; else None (a Python float, torch.compile, or more values on one side: the
    array's own loop).

    Examples:
        >>> import numpy as np
        >>> _alpha_groups(np.zeros((3, 4)), np.array([[1.5], [2.0], [1.5]]), True)
        [(1.5, array([0, 2])), (2.0, array([1]))]
    """
    if isinstance(alpha, float) or not on_host or _xs._torch_compiling(z) or z.ndim < 1:
        return None
    rows = math.prod(z.shape[:-1])
    values = alpha.detach().cpu().numpy() if is_torch_array(alpha) else np.asarray(alpha)
    values = np.broadcast_to(values, (*z.shape[:-1], 1)).reshape(rows)
    distinct = np.unique(values)
    limit = T.ALPHA_GROUPS if _eager_cpu(z) else T.ALPHA_GROUPS_OFF_CPU
    if not distinct.size or not np.isfinite(distinct).all():  # (no rows: the array's loop)
        return None
    if distinct.size > limit:
        # many values on both sides of 2 (on the host): the rows above 2 apart, whose
        # loop packs the entries near each row's maximum (_above_two_support), where
        # together every step evaluated every row until the rows above 2 were done
        above = values > 2
        if not (_eager_cpu(z) and above.any() and not above.all()):
            return None
        flat = _row_alphas(alpha, z)
        sides = (np.flatnonzero(~above), np.flatnonzero(above))
        return [(_take_rows(flat, rows), rows) for rows in sides]
    if distinct.size == 1:
        return [(float(distinct[0]), None)]
    return [(float(v), np.flatnonzero(values == v)) for v in distinct]


def _grouped_map(
    z: Array, groups: list, top: Array | None, compute: Callable
) -> tuple[Array, Array | None, Array | None]:
    """entmax_map's (p, s / sum(s) or None, sum(s) or None) over z, each group's rows
    by ``compute(rows of z, their top, alpha value)``; with several groups a ColumnSlopes
    s is scattered into the whole rows (the groups' column counts differ), with one the
    call's own result is returned (ColumnSlopes too)."""
    if len(groups) == 1:  # (one value: every row, as that float's call returns them)
        return compute(z, top, groups[0][0])
    size = z.shape[-1]
    flat = z.reshape(-1, size)
    flat_top = None if top is None else top.reshape(-1, 1)
    parts = []
    for value, rows in groups:
        top_rows = None if flat_top is None else _take_rows(flat_top, rows)
        p, s, scale = compute(_take_rows(flat, rows), top_rows, value)
        if isinstance(s, ColumnSlopes):
            s = _xs.scattered(s.values, s.columns, size)
        parts.append((rows, p, s, scale))
    outs = []
    for index in range(3):
        first = parts[0][1 + index]
        if first is None:
            outs.append(None)
            continue
        shape = (flat.shape[0], first.shape[-1])
        out = _xs.namespace(first).empty(shape, dtype=first.dtype, device=_device(first))
        for rows, *values in parts:
            _put_rows(out, rows, values[index])
        outs.append(out)
    return tuple(None if v is None else v.reshape((*z.shape[:-1], v.shape[-1])) for v in outs)


def entmax_map(
    z: Array,
    alpha: float | Array,
    steps: int | None = None,
    on_host: bool = True,
    top: Array | None = None,
    loop: Callable | None = None,
    slopes: bool = True,
) -> tuple[Array, Array | None, Array | None]:
    """alpha-entmax over the last axis, with what the backward needs: (p, s / sum(s),
    sum(s) per row) for s = p^(2-alpha) (entmax_newton's ``slopes="unit"``; s / sum(s)
    may be a ColumnSlopes, for entmax_alpha_gradient), or (p, None, None) (also without
    ``slopes``: a forward alone).

    alpha = 2 and 3/2 (Python floats) on at most tuning.SORT_ELEMENTS[alpha] values (a
    NumPy array: tuning.NUMPY_SORT_ELEMENTS), or on a device other than the CPU, take
    their sort-based closed forms in eager mode (fewer,
    larger operations: a B = 1 call costs what a few array operations cost, where each
    Newton step costs dozens; under torch.compile their dtype handling breaks the
    graph; _sorted_map); everything else runs entmax_newton. Small CPU tensors take
    either on NumPy views of themselves (tuning.NUMPY_VIEW_ELEMENTS for the sorted maps,
    tuning.NUMPY_NEWTON_ELEMENTS for the loop at a Python-float alpha), where an operation
    on a few hundred values costs about 1 us against Torch's 3 to 5. Arguments as for
    entmax_newton.

    In eager mode NumPy's floating-point warnings are off: the loop keeps its per-row
    values in NumPy (and views CPU tensors), where overflows and logs of 0 are expected
    (gaps max - z beyond the dtype's largest are +inf, p = 0 there; a trial mass that
    rounds to 0 above 2 has a log the loop discards), and Torch's operations give none.
    """
    if on_host and not _xs._torch_compiling(z):  # (np.errstate does not trace)
        with np.errstate(all="ignore"):
            return _entmax_map(z, alpha, steps, on_host, top, loop, slopes)
    return _entmax_map(z, alpha, steps, on_host, top, loop, slopes)


def _entmax_map(
    z: Array,
    alpha: float | Array,
    steps: int | None,
    on_host: bool,
    top: Array | None,
    loop: Callable | None,
    slopes: bool,
) -> tuple[Array, Array | None, Array | None]:
    """entmax_map's body (NumPy's warnings as the caller set them)."""
    elements = math.prod(z.shape)
    # off the CPU (a GPU) at any size: the Newton loop's host read per step and its
    # dozens of small kernels per step cost more there than a sort (measured on an H100,
    # float32 (1024, 1000), forward + backward: sparsemax 3.5 ms by Newton)
    closed = isinstance(alpha, float) and alpha in T.SORT_ELEMENTS
    off_cpu = is_torch_array(z) and z.device.type != "cpu"
    limit = T.SORT_ELEMENTS.get(alpha) if is_torch_array(z) else T.NUMPY_SORT_ELEMENTS
    sort = closed and (off_cpu or elements <= limit or _short_rows(z, alpha))
    if sort and not _xs._torch_compiling(z):  # (under torch.compile: a graph break)
        if _viewable_small(z, T.NUMPY_VIEW_ELEMENTS):
            return _on_views(z, top, lambda v, top: _sorted_map(v, alpha, slopes, top))
        return _sorted_map(z, alpha, slopes, top)

    groups = _alpha_groups(z, alpha, on_host)
    if groups is not None:  # few alphas (each a Python float) or the two sides of 2
        return _grouped_map(
            z, groups, top, lambda v, t, a: entmax_map(v, a, steps, on_host, t, loop, slopes)
        )

    def newton(v: Array, top: Array | None, loop: Callable | None = None) -> tuple:
        if not slopes:
            return entmax_newton(v, alpha, steps, on_host, top=top, loop=loop), None, None
        return entmax_newton(v, alpha, steps, on_host, slopes="unit", top=top, loop=loop)

    if isinstance(alpha, float) and on_host and _viewable_small(z, T.NUMPY_NEWTON_ELEMENTS):
        return _on_views(z, top, newton)
    return newton(z, top, loop)


def entmax_alpha_gradient(
    p: Array,
    grad: Array,
    alpha: float | Array,
    with_alpha: bool = True,
    s: Array | None = None,
    scale: Array | None = None,
) -> tuple[Array, Array | None]:
    """The gppr backward of alpha-entmax: (dL/dz, dL/dalpha per row (..., 1) or None).

    dL/dz = s (g - <s, g> / sum s) with s = p^(2-alpha) (0 off the support);
    dp_i/dalpha = a_i - s_i sum(a) / sum(s), a = dp/dalpha at a fixed threshold
    (generated, derivations/discrete.py: entmax_alpha_partial), so dL/dalpha =
    <g, a> - <g, s> sum(a) / sum(s). A row with no support (all masked) gets 0.
    ``s`` may be passed in (entmax_newton(slopes=True)); with ``scale`` (per row) it is
    s / sum(s) and scale = sum(s) (entmax_map): then dL/dz = scale u (g - <u, g>), u = s /
    sum(s), is softmax's backward at output u, one fused pass in Torch (float32 (1024,
    1000): 0.27 ms, against 0.63 for the four passes of the form above). As ColumnSlopes
    (entmax_map) s / sum(s) holds the row's support: the backward reads g at its columns
    and scatters dL/dz into zeros.
    """
    xp = _xs.namespace(p)
    lib = _xs.native(p)
    if isinstance(s, ColumnSlopes):  # on the columns, dL/dz then scattered
        on_columns = _xs.take_columns(grad, s.columns)
        dz = _xs.softmax_backward(on_columns, s.values)
        lib.multiply(dz, scale, out=dz)
        dz = _xs.scattered(dz, s.columns, p.shape[-1])
        if not with_alpha:
            return dz, None
        # dL/dalpha on the columns too: they hold the support, where p, s and a live
        # (a quarter of the row at alpha = 1.3: the partial's thirty-odd passes on it)
        gs = scale * xp.sum(on_columns * s.values, axis=-1, keepdims=True)
        a = _alpha_partial_on_support(_xs.take_columns(p, s.columns), alpha)
        g_a = xp.sum(on_columns * a, axis=-1, keepdims=True)
        return dz, g_a - gs * xp.sum(a, axis=-1, keepdims=True) / scale
    if s is None:  # (a caller without the forward's s)
        s = gppr_weights(p, alpha)
    if not isinstance(alpha, float) or alpha > 2:
        grad = _centered_at_largest(grad, s)
    if scale is not None:
        dz = _xs.softmax_backward(grad, s)
        lib.multiply(dz, scale, out=dz)
        if not with_alpha:
            return dz, None
        gs, total = scale * xp.sum(grad * s, axis=-1, keepdims=True), scale
    else:
        total = xp.sum(s, axis=-1, keepdims=True)
        total = xp.where(total > 0, total, 1.0)
        # s g - s <s, g> / sum s: the one fresh (..., K) array is s g, whose sum is <s, g>
        # (array_api_compat's vecdot: 4x slower), then one pass in place (float32 (1024,
        # 1000): 0.51 ms against 0.67 for s (g - <s, g> / sum s))
        dz = lib.multiply(grad, s)
        gs = xp.sum(dz, axis=-1, keepdims=True)
        dz = _xs.subtract_product(dz, s, gs / total)
        if not with_alpha:
            return dz, None
    a = _alpha_partial_on_support(p, alpha)
    g_a = xp.sum(grad * a, axis=-1, keepdims=True)
    return dz, g_a - gs * xp.sum(a, axis=-1, keepdims=True) / total


def entmax_tangent(p: Array, dz: Array, alpha: float | Array, dalpha: Array | None = None) -> Array:
    """The forward-mode derivative of alpha-entmax over the last axis: J dz + (dp/dalpha)
    dalpha. J = Diag(s) - s s^T / sum(s) is symmetric, so J dz is the backward's form at
    dz (entmax_alpha_gradient); dp/dalpha = a - s sum(a) / sum(s), a the generated dp/dalpha
    at a fixed threshold (derivations/discrete.py).

    Args:
        p: entmax(z, alpha), (..., K).
        dz: the scores' tangent, (..., K).
        alpha: a float, or an array (..., 1) (one per row).
        dalpha: alpha's tangent (..., 1), or None.

    Returns:
        p's tangent, (..., K).

    Examples:
        >>> import numpy as np
        >>> entmax_tangent(np.array([0.25, 0.75]), np.array([1.0, 0.0]), 1.0)
        array([ 0.1875, -0.1875])
    """
    tangent = entmax_alpha_gradient(p, dz, alpha, False)[0]
    if dalpha is None:
        return tangent
    xp = _xs.namespace(p)
    s = gppr_weights(p, alpha)
    a = _alpha_partial_on_support(p, alpha)
    total = xp.sum(s, axis=-1, keepdims=True)
    total = xp.where(total > 0, total, 1.0)
    return tangent + dalpha * (a - s * xp.sum(a, axis=-1, keepdims=True) / total)


def _centered_at_largest(grad: Array, s: Array) -> Array:
    """grad less its value at each row's largest slope s (a fresh array). The gppr
    backward is the same for grad shifted per row (dL/dz sums to 0), but above alpha = 2
    one slope s = p^(2 - alpha), of a p near 0, can outweigh the others by 1e8: then <s,
    g> / sum(s) rounds to that entry's g, and its dL/dz = s (g - <s, g> / sum(s)), a
    difference of the others' small share, lost those digits (float64 N(0, 1) rows at
    alpha = 10: 5e-9 off 50-digit mpmath, where the row's largest |dL/dz| was 0.95).
    Shifted, that entry's g is 0 and <s, g> is the others' share alone, relative-exact.
    """
    index = _xs.namespace(s).argmax(s, axis=-1, keepdims=True)
    return grad - _xs.take_columns(grad, index)


def _alpha_partial_on_support(p: Array, alpha: float | Array) -> Array:
    """The generated dp/dalpha at a fixed threshold (entmax_alpha_partial), 0 off the
    support, evaluated on the support's entries alone in eager mode on the CPU: its
    series and branches (a dozen selections) cost Torch's CPU where about 1.5 ms each on
    a million entries of a random support, so the whole rows took 40-70 ms at (1024,
    1000), where a support holds a tenth to a third of them."""
    xp = _xs.namespace(p)
    if not (is_torch_array(p) and _eager_cpu(p)):
        return xp.astype(_alpha_partial(p, alpha), p.dtype, copy=False)
    on = p > 0
    values = p[on]
    if not isinstance(alpha, float):  # one per row: its entries' own
        alpha = xp.broadcast_to(alpha, p.shape)[on]
    a = xp.zeros_like(p)
    a[on] = xp.astype(_alpha_partial(values, alpha), p.dtype, copy=False)
    return a


def _alpha_partial(p: Array, alpha: float | Array) -> Array:
    """The generated dp/dalpha at a fixed threshold, plus s / (alpha - 1)^2 where alpha >
    2 (entmax_alpha_partial_above_two: the alpha-gradient is the same, and there s can
    overflow); alpha a float or an array broadcasting to p (NumPy: the forms' discarded
    branches overflow or divide by 0 silently, _quietly)."""
    if isinstance(alpha, float):
        kernel = gen.entmax_alpha_partial_above_two if alpha > 2 else gen.entmax_alpha_partial
        return _quietly(kernel, p, alpha)
    above = _quietly(gen.entmax_alpha_partial_above_two, p, alpha)
    return _xs.namespace(p).where(alpha > 2, above, _quietly(gen.entmax_alpha_partial, p, alpha))


def entropy_rows(p: Array, alpha: float | Array) -> Array:
    """H_alpha(p) over the last axis (Martins 2020 eq 6): the generated
    tsallis_entropy_term, summed. Where nothing differentiates p (a NumPy array, or a
    tensor in eager mode on the CPU that neither autograd tracks nor torch.func wraps:
    _eager_cpu) at a Python-float
    alpha, and at most half of p's entries are positive, on those entries alone (the
    term is exactly 0 at p = 0): float32 (1024, 1000) entmax rows took 5.0-6.7 ms over
    the whole rows and 1.4 (alpha = 2, support 0.4%), 1.9 (1.5, 1.8%) and 4.2 ms (1.3,
    11%) on the support, the same sums (a Fenchel-Young loss's forward).

    Args:
        p: probabilities (..., K), >= 0.
        alpha: a real > 0, or an array broadcasting to p with size 1 on the last axis.

    Returns:
        H_alpha(p), shape (...).

    Examples:
        >>> import numpy as np
        >>> float(entropy_rows(np.array([0.5, 0.5, 0.0]), 2.0))
        0.25
    """
    xp = _xs.namespace(p)
    if isinstance(alpha, float) and _eager_cpu(p) and _xs._undifferentiated(p):
        on = p > 0
        count = int(xp.sum(xp.astype(on, xp.int64)))
        if p.ndim and 2 * count <= math.prod(p.shape):
            terms = xp.zeros_like(p)
            terms[on] = _deformed.tsallis_entropy_term(p[on], alpha)
            return xp.sum(terms, axis=-1)
    return xp.sum(_deformed.tsallis_entropy_term(p, alpha), axis=-1)


def gppr_weights(p: Array, alpha: float) -> Array:
    """s = p^(2 - alpha) on the support, 0 off it: J = Diag(s) - s s^T / sum s."""
    xp = _xs.namespace(p)
    return xp.astype(gen.entmax_gppr_weight(p, alpha), p.dtype)


def gppr_jacobian(weights: Array) -> Array:
    """Diag(s) - s s^T / sum(s) over the last axis, (..., K, K); a row with s = 0 gives 0.

    Examples:
        >>> import numpy as np
        >>> gppr_jacobian(np.array([1.0, 1.0]))
        array([[ 0.5, -0.5],
               [-0.5,  0.5]])
    """
    xp = _xs.namespace(weights)
    total = xp.sum(weights, axis=-1, keepdims=True)[..., None]
    total = xp.where(total > 0, total, 1.0)  # an all-masked row has no support: J = 0
    outer = weights[..., :, None] * weights[..., None, :]
    eye = xp.eye(weights.shape[-1], dtype=weights.dtype, device=_device(weights))
    return weights[..., :, None] * eye - outer / total


# --- ev-softmax logits (Chen et al. 2021, eqs 7 and 10) ---


_SHIFTS: dict[float, float] = {}


def offsupport_shift(eps: float) -> float:
    """The generated eq 10 shift log(eps) - log(1 + eps) as a Python float (-inf at 0).

    Evaluated once per eps (the Torch face has torch.compile take the result as
    a constant: torch_bridge._compile).
    """
    if eps not in _SHIFTS:
        with np.errstate(divide="ignore"):
            _SHIFTS[eps] = float(gen.ev_softmax_offsupport_shift(np.float64(eps)))
    return _SHIFTS[eps]


def _support_logits(
    xp: ModuleType, x: Array, threshold: Array, top: Array, shift: float, minus_tiny: float
) -> Array:
    """Logits: x on the support {x - threshold > -tiny}, x + shift off it, up to a row constant.

    Torch: relative to the threshold, d = x - threshold kept or shifted in place
    (``threshold_``, then adding min(d, 0) when the shift is finite); ``where``
    with a comparison measured 5 to 6 times slower than the softmax itself on
    CPU (float32 1024 x 1024, torch 2.13). NumPy: relative to the row maximum,
    which is the same for every order of the entries (the threshold's mean
    is not: it moves by an ulp with the summation order).
    """
    d = x - threshold
    if is_torch_array(x):
        if shift == -math.inf:
            return xp.threshold_(d, minus_tiny, shift)
        below = xp.clip(d, max=0.0)  # kept: d + 0; off the support: shift + d
        return xp.threshold_(d, minus_tiny, shift).add_(below)
    y = x - top
    return xp.where(d > minus_tiny, y, y + shift)


def _row_statistics(
    xp: ModuleType, x: Array, valid: Array | None, scaled: bool, axis: int
) -> tuple[Array, Array, Array | None]:
    """Mean and max over the valid entries, and the valid counts (None without a mask).

    ``scaled`` divides before summing, so that rows of huge values cannot overflow.
    """
    if valid is None:
        count, values = None, x
        divisor: Any = x.shape[axis]
        top = xp.max(x, axis=axis, keepdims=True)
    else:
        count = xp.sum(xp.astype(valid, x.dtype), axis=axis, keepdims=True)
        values = xp.where(valid, x, 0.0)
        divisor = xp.clip(count, min=1.0)
        top = xp.max(xp.where(valid, x, -math.inf), axis=axis, keepdims=True)
    if scaled:
        mean = xp.sum(values / divisor, axis=axis, keepdims=True)
    else:
        mean = xp.sum(values, axis=axis, keepdims=True) / divisor
    return mean, top, count


def ev_logits(
    x: Array,
    valid: Array | None,
    eps: float,
    *,
    axis: int = -1,
    branch: Branch | None = None,
    check: bool = True,
) -> tuple[Array, Array | None]:
    """Logits y with softmax(y) = ev_softmax_train,eps(x) along ``axis`` (eq 10).

    The support is {k : x_k - min(mean, max) > -tiny} over the valid entries
    (tiny: the dtype's smallest normal number, so that the maximum of a
    constant row stays in the support under flush-to-zero); off it the logits
    are shifted by log(eps) - log(1 + eps) (-inf for eps = 0, eq 7).

    Parameters:
        x: floating scores, K entries along ``axis``.
        valid: None, or a boolean array of x's shape: the entries that count
            (the others get -inf logits and take no part in the mean).
        eps: the eq 10 eps >= 0.
        axis: the axis of the K entries.
        branch: None to choose the robust path on the host (one read), or a
            ``tsallis.core.branching.Branch`` (torch.cond under torch.compile).
            The robust path runs when some row's spread max - mean is not
            finite (NaN, +-inf, or a sum that overflows).
        check: raise on NaN or +inf in a valid entry (on the robust path; needs
            host reads, so the Torch face turns it off under torch.compile).

    Returns:
        (y, empty): y of x's shape; empty (x's shape, 1 at ``axis``) marks the
        rows without a valid entry (their logits are 0: the caller overwrites
        them). empty is None
        where no row can be empty: no mask, and the host chose the fast path (a
        masked fill of the output measured as slow as the softmax itself on CPU).

    Raises:
        ValueError: with ``check``, NaN or +inf in a valid entry.

    Examples:
        >>> import numpy as np
        >>> y, _ = ev_logits(np.array([0.4, 1.4, -0.8]), None, 0.0)
        >>> normalized(y).round(3)
        array([0.269, 0.731, 0.   ])
    """
    xp = _xs.namespace(x)
    shift = offsupport_shift(float(eps))
    minus_tiny = -float(xp.finfo(x.dtype).smallest_normal)
    mean, top, count = _row_statistics(xp, x, valid, scaled=False, axis=axis)
    # the largest spread, one 0-dim reduction (an empty batch has none: 0)
    nothing = any(n == 0 for n in x.shape)
    spread = xp.zeros((), dtype=x.dtype) if nothing else xp.max(top - mean)

    def fast(x: Array, mean: Array, top: Array, *masked: Array) -> tuple[Array, Array]:
        threshold = xp.minimum(mean, top)
        if masked:  # rows without valid entries: any finite threshold
            threshold = xp.where(masked[1] > 0, threshold, 0.0)
        y = _support_logits(xp, x, threshold, top, shift, minus_tiny)
        empty = masked[1] == 0 if masked else top == -math.inf  # (False: top is finite)
        return _masked_logits(xp, y, *masked), empty

    def robust(x: Array, mean: Array, top: Array, *masked: Array) -> tuple[Array, Array]:
        valid = masked[0] if masked else None
        return _robust_logits(xp, x, valid, shift, minus_tiny, check, axis)

    operands = (x, mean, top) if valid is None else (x, mean, top, valid, count)
    if branch is not None:
        return branch(xp.isfinite(spread), fast, robust, operands)
    if not math.isfinite(float(spread)):  # the host read (xp.isfinite and xp.all cost more)
        return robust(*operands)
    y, empty = fast(*operands)
    return y, None if valid is None else empty  # no mask, fast path: no row can be empty


def _masked_logits(xp: ModuleType, y: Array, *masked: Array) -> Array:
    """-inf on invalid entries, 0 on rows with no valid entry."""
    if not masked:
        return y
    valid, count = masked
    y = xp.where(valid, y, -math.inf)
    return xp.where(count > 0, y, 0.0)


def _robust_logits(
    xp: ModuleType,
    x: Array,
    valid: Array | None,
    shift: float,
    minus_tiny: float,
    check: bool,
    axis: int,
) -> tuple[Array, Array]:
    """ev_logits for rows with NaN, infinities or a spread beyond the dtype's range.

    NaN and +inf in a valid entry raise (with ``check``); -inf entries count as
    masked. The mean is summed after dividing (no overflow). The support test
    uses d = x - threshold, whose sign is right even when it overflows; the
    logits are x - max (never +inf), shifted off the support.
    """
    counted = x if valid is None else xp.where(valid, x, 0.0)  # masked: ignored
    if check and bool(xp.any(xp.isnan(counted))):
        raise ValueError("x must not contain NaN (outside the mask)")
    if check and bool(xp.any(counted == math.inf)):
        raise ValueError("x must not contain +inf (outside the mask)")
    finite = x > -math.inf
    valid = finite if valid is None else valid & finite
    mean, top, count = _row_statistics(xp, x, valid, scaled=True, axis=axis)
    empty = count == 0
    threshold = xp.where(empty, 0.0, xp.minimum(mean, top))
    keep = (x - threshold) > minus_tiny
    shifted = xp.where(valid, x, 0.0) - xp.where(empty, 0.0, top)
    y = xp.where(keep, shifted, shifted + shift)
    return _masked_logits(xp, y, valid, count), empty
