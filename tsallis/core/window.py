"""1D window moments G(m, j) and 2D radial moments, written once for NumPy and Torch.

The numerical heart of continuous attention (see derivations/attention.py
for G): the generated closed form where it is well conditioned, a wide-RBF
expansion, the RBF's own Gauss-Hermite rule well inside the support, one
Gauss-Jacobi rule shared by a row, or a Gauss-Jacobi window of the element's
own (an RBF far outside whose moments are negligible in its row stays 0).
Every function takes arrays of one namespace ``xp`` (NumPy
or Torch, through array-api-compat) and runs unchanged on both; thresholds
and node counts come from tsallis.core.tuning.

Inputs are flat float64 arrays ep = 1 - c, em = 1 + c (edge distances of the
RBF centre c, support units) and r (RBF width, support units). Outputs are

    rho = G(m + 1, 0),  m1 = G(m, 1),  m2c = G(m, 2) - second * G(m, 0),

for the escort exponent m = k - 1 = 1/(alpha - 1) - 1 and second = E[u^2]
under the escort. With ``dense`` every branch runs on every element (inputs
outside its mask replaced by harmless values) and ``where`` picks: no host
read, no data-dependent shape (torch.compile, accelerators). Otherwise each
branch runs on its own elements only (one host read per branch).

A regime that no element needs is skipped: in the sparse form by a host read
per regime (``host_branch``); in the dense form only where the closed form
already gave every element, through the ``branch`` hook: never on accelerators
in eager mode and on meta tensors (``full_branch``, no host read), and with
``torch.cond`` under torch.compile (given by the Torch face), which decides on
the device and runs only the branch taken.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from array_api_compat import is_numpy_array

from tsallis.core import arrays as _xs
from tsallis.core import tuning as T
from tsallis.core._generated import attention as gen
from tsallis.core.branching import Branch, full_branch, host_branch
from tsallis.core.rules import gauss_jacobi, hermite_normal, legendre_unit, window_rule

__all__ = [
    "alpha_constants",
    "attention_moments",
    "closed_moments",
    "float32_closed_suffices",
    "half_width",
    "prepare_tables",
    "radial_moments",
    "support_units",
    "window_moments",
]

Array = Any
Moments = dict[str, Array]
# Node tables (tsallis.core.arrays.constant_tables): compile after one eager call for an
# alpha outside the closed forms.
_cached = _xs.constant_tables


def _window_tables(m: float, n: int) -> tuple[np.ndarray, ...]:
    """Gauss-Jacobi rules for the four (left, right) edge configurations.

    Index 2 * left + right. Rows of xi, 1 + xi, 1 - xi and the weights of
    (1 - xi)^(m R) (1 + xi)^(m L); symmetric rules made exactly mirror-symmetric,
    so an odd moment of a centred RBF sums to exactly 0.
    """
    rows: list[list[np.ndarray]] = [[], [], [], []]
    for left in (False, True):
        for right in (False, True):
            xi, w = window_rule(n, m, left, right)
            xi, w = np.array(xi, dtype=np.float64), np.array(w, dtype=np.float64)
            if left == right:
                xi, w = (xi - xi[::-1]) / 2, (w + w[::-1]) / 2
            one_plus = 1 + xi
            one_minus = one_plus[::-1] if left == right else 1 - xi
            for row, value in zip(rows, (xi, one_plus, one_minus, w), strict=True):
                row.append(value)
    return tuple(np.stack(row) for row in rows)


def _shared_tables(m: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    xi, w = gauss_jacobi(n, m, m)
    xi, w = np.array(xi, dtype=np.float64), np.array(w, dtype=np.float64)
    return (xi - xi[::-1]) / 2, (w + w[::-1]) / 2  # exactly mirror-symmetric


def _mirror_sum(xp: Any, values: Array) -> Array:
    """Sum over the last axis adding node i to node n-1-i first."""
    n = values.shape[-1]
    return xp.sum(values[..., : n // 2] + xp.flip(values, axis=-1)[..., : n // 2], axis=-1)


def _level_window(
    ep: Array, em: Array, r: Array, m: float, depth: float, steps: tuple[int, int]
) -> tuple[Array, Array]:
    """[lo, hi] in y = (u - c)/r where log[(1 - u^2)^m phi(y)] is within depth of its peak.

    g(y) = m log((ep - r y)(em + r y)) - y^2/2 is concave with g'' <= -(1 + 2 m r^2), so
    the level set lies within sqrt(2 depth / (1 + 2 m r^2)) of the peak (the Newton
    starts use that bound from SMOOTH_EXPONENT on). The peak solves the cubic
    (c - u)(1 - u^2) = 2 m r^2 u (safeguarded Newton in a bracket); each end comes from
    Newton started outside the level set, where concavity keeps the iterates outside (the
    window is never too narrow).
    """
    xp = _xs.namespace(r)
    edge_lo, edge_hi = -em / r, ep / r
    if m == 0:
        peak = xp.clip(xp.zeros_like(r), min=edge_lo, max=edge_hi)
        reach = xp.sqrt(peak * peak + 2 * depth)
        return xp.maximum(edge_lo, -reach), xp.minimum(edge_hi, reach)
    c = (em - ep) / 2
    b = 1 + 2 * m * r * r
    lo_u, hi_u = -xp.ones_like(c), xp.ones_like(c)
    u = xp.clip(c / b, min=-1.0, max=1.0)
    for _ in range(steps[0]):
        h = (c - u) * (1 - u * u) - 2 * m * r * r * u  # decreasing through the root
        above = h > 0
        lo_u, hi_u = xp.where(above, u, lo_u), xp.where(above, hi_u, u)
        dh = (3 * u - 2 * c) * u - b
        step = u - h / xp.where(dh < 0, dh, -xp.ones_like(dh))
        inside = (dh < 0) & (step >= lo_u) & (step <= hi_u)
        u = xp.where(inside, step, (lo_u + hi_u) / 2)
    peak = (u - c) / r

    def g(y: Array) -> Array:
        inner = xp.clip((ep - r * y) * (em + r * y), min=1e-300)
        return m * xp.log(inner) - y * y / 2

    def slope(y: Array) -> Array:
        return m * r * (1 / (em + r * y) - 1 / (ep - r * y)) - y

    level = g(peak) - depth
    # -g'' >= b = 1 + 2 m r^2 on the whole support (1/(1-u)^2 + 1/(1+u)^2 >= 2), so the
    # level set lies within sqrt(2 depth / b) of the peak; one local width 1/sqrt(b) more
    # covers the peak's own error. (The bound sqrt(2 depth) alone reached past the edges
    # for a large m, e.g. alpha = 1.001, and the window then spanned the whole support.)
    # Below SMOOTH_EXPONENT a window that reaches an edge joins it (Gauss-Jacobi carries
    # the power there), so the older start, sqrt(2 depth) + 1, stays.
    large = m >= T.SMOOTH_EXPONENT
    reach = xp.sqrt(2 * depth / b) + 1 / xp.sqrt(b) if large else math.sqrt(2 * depth) + 1
    ends = []
    for sign, edge in ((-1.0, edge_lo), (1.0, edge_hi)):
        start = peak + sign * reach
        past = start * sign >= edge * sign
        # Past the edge: start just inside it where g is already below the level (the
        # escort vanishes there); otherwise the window keeps the edge.
        near = peak + 0.99 * (edge - peak)
        from_near = past & (g(near) < level) & large
        y = xp.where(past, near, start)
        for _ in range(steps[1]):
            d = slope(y)
            d = xp.where(d * sign < 0, d, -sign * xp.ones_like(d))
            y = y - (g(y) - level) / d
        ends.append(xp.where(past & ~from_near, edge, y))
    return xp.maximum(ends[0], edge_lo), xp.minimum(ends[1], edge_hi)


def _peak_window(ep: Array, em: Array, r: Array, m: float, accuracy: T.Accuracy) -> Moments:
    """The window for exponents max(m, 0) and m + 1 (their union), with joined edges.

    gap_lo, gap_hi are 1 + u and 1 - u at the window ends (0 at a joined edge).
    """
    xp = _xs.namespace(r)
    depth, steps = accuracy.window_exp, (accuracy.peak_steps, accuracy.level_steps)
    lo_a, hi_a = _level_window(ep, em, r, max(m, 0.0), depth, steps)
    lo_b, hi_b = _level_window(ep, em, r, m + 1, depth, steps)
    lo, hi = xp.minimum(lo_a, lo_b), xp.maximum(hi_a, hi_b)
    margin = T.EDGE_PULL * (hi - lo)
    # m >= SMOOTH_EXPONENT: no edge is joined; the escort vanishes to order m there.
    joins = m < T.SMOOTH_EXPONENT
    left = (lo + em / r <= margin) & joins
    right = (ep / r - hi <= margin) & joins
    lo = xp.where(left, -em / r, lo)
    hi = xp.where(right, ep / r, hi)
    zero = xp.zeros_like(r)
    return {
        "left": left,
        "right": right,
        "half": (hi - lo) / 2,
        "mid": (hi + lo) / 2,
        "gap_lo": xp.where(left, zero, em + r * lo),
        "gap_hi": xp.where(right, zero, ep - r * hi),
    }


def _wide_tables(m: float, n: int, second: float) -> tuple[np.ndarray, ...]:
    """The wide expansion's node constants (_wide_moments), each (n/2,): -u^2/4 and u/2
    at the negative nodes u of the n-node symmetric Gauss-Jacobi rule (each stands for
    itself and its mirror), and the weights of 4 e against rho and m2c and of 2 o
    against m1."""
    xi, _, _, w = _window_tables(m, n)
    half = xi.shape[-1] // 2
    u, w = xi[3, :half], w[3, :half]
    return -(u * u) / 4, u / 2, 4 * w * (1 - u * u), 4 * w * (u * u - second), 2 * w * u


def _wide_moments(c: Array, r: Array, m: float, second: float, mass: float) -> Moments:
    """Window moments for a wide RBF (|u (u - 2c)| / (2 r^2) <= 1 on the support, or
    up to tuning.CLOSED_WIDE_REACH where it refines the closed form).

    phi((u - c)/r) = phi(c/r) e^(p + q), p = -u^2/(2 r^2), q = u c / r^2. The
    escort integrates u and u^2 - second to exactly 0, so only e^(p+q) - 1
    counts; over mirrored nodes its even part is e^(p+q) + e^(p-q) - 2 = 4 e, e = h
    (a + h s^2) with h = e^(p/2), a = sinh(p/2), s = sinh(q/2), and its odd part is 2 o,
    o = h^2 sinh(q): no cancellation of the O(1/r^2) moments, four transcendental
    functions per node pair (sinh and exp: exact to an ulp under torch.compile, whose
    CPU code forms expm1 as exp - 1). mass = int (1 - u^2)^(m+1).
    """
    xp = _xs.namespace(r)
    n = T.WIDE_NODES  # (every tier: as accurate as the float64 windows' 64 nodes)
    key = ("wide", m, n, second)
    quarter_u2, half_u, to_rho, to_m2c, to_odd = _cached(key, r, lambda: _wide_tables(m, n, second))
    inverse = 1 / (r * r)
    half_p = quarter_u2 * inverse[:, None]  # p / 2
    half_q = half_u * (c * inverse)[:, None]  # q / 2
    h, even = xp.exp(half_p), xp.sinh(half_q)
    # in place from here: the same bits, with 6 (N, n/2) arrays instead of 13 (at 19008
    # elements 1.69 against 3.80 ms with glibc's default heap, 0.76 against 0.80 kept)
    even *= even  # s^2
    even *= h
    even += xp.sinh(half_p)
    even *= h  # e = h (a + h s^2)
    half_q *= 2  # q
    odd = xp.sinh(half_q)
    h *= h
    odd *= h  # o = h^2 sinh(q)
    odd *= to_odd
    scale = gen.rbf_pdf(c, r)
    # node sums in one order for every element (a matrix product's blocking may round
    # an element by its position: dense and sparse forms, or a permuted basis, differ)
    return {
        "rho": scale * (mass + xp.sum(even * to_rho, axis=-1)),
        "m1": scale * xp.sum(odd, axis=-1),
        "m2c": scale * xp.sum(even * to_m2c, axis=-1),
    }


def _node_moments(
    xp: Any, weight: Array, plus: Array, minus: Array, u: Array, second: Array
) -> Moments:
    """rho, m1, m2c from node weights (escort and RBF included) at nodes u, 1 +- u."""
    return {
        "rho": _mirror_sum(xp, weight * plus * minus),
        "m1": _mirror_sum(xp, weight * u),
        "m2c": _mirror_sum(xp, weight * (u * u - second)),
    }


def _escort_power(xp: Any, plus: Array, minus: Array, u: Array, m: float) -> Array:
    """(plus * minus)^m, the escort (1 - u^2)^m from plus = 1 + u and minus = 1 - u.

    From SMOOTH_EXPONENT on in log space (pow of the product would lose m * eps):
    log1p(-u^2) near the centre, log(1 + u) + log(1 - u) towards the edges.
    """
    if m == 0:
        return xp.ones_like(plus)
    if m >= T.SMOOTH_EXPONENT:
        centred = xp.abs(u) < 0.5
        near = xp.log1p(-xp.where(centred, u * u, 0.0))
        far = xp.log(xp.where(centred, 1.0, plus)) + xp.log(xp.where(centred, 1.0, minus))
        return xp.exp(m * xp.where(centred, near, far))
    return (plus * minus) ** m


def _hermite_moments(ep: Array, em: Array, r: Array, m: float, second: Array, n: int) -> Moments:
    """Window moments of an RBF well inside the support, by the Gaussian's own rule.

    E[f(c + r Y)], Y ~ N(0, 1), with n Gauss-Hermite nodes: exact for polynomial f
    of degree 2 n - 1, and accurate while the escort bends little over the RBF
    (see tuning.HERMITE_MAX_BEND). 1 +- u come from the edge
    distances; mirrored nodes are summed first, so a centred RBF gives m1 = 0.
    """
    xp = _xs.namespace(r)
    (y, w) = _cached(("hermite", n), r, lambda: hermite_normal(n))
    rr = r[:, None]
    plus = em[:, None] + rr * y  # 1 + u
    minus = ep[:, None] - rr * y  # 1 - u
    u = (plus - minus) / 2
    weight = w * _escort_power(xp, plus, minus, u, m)
    return _node_moments(xp, weight, plus, minus, u, second)


def _window_quadrature(
    ep: Array, em: Array, r: Array, m: float, second: Array, accuracy: T.Accuracy
) -> Moments:
    """Gauss-Jacobi window moments (rho, m1, m2c), one window per element.

    Each element takes the rule of its (left, right) edge configuration; a
    joined edge's (1 -+ u)^m is carried by the rule's weight. 1 +- u are formed
    from the edge distances, never as differences of large numbers.
    """
    xp = _xs.namespace(r)
    window = _peak_window(ep, em, r, m, accuracy)
    left, right = window["left"], window["right"]
    config = 2 * xp.astype(left, xp.int64) + xp.astype(right, xp.int64)
    n = accuracy.window_nodes
    tables = _cached(("window", m, n), r, lambda: _window_tables(m, n))
    xi, one_plus, one_minus, w = (t[config] for t in tables)
    h, rr = window["half"][:, None], r[:, None]
    y = window["mid"][:, None] + h * xi
    plus = window["gap_lo"][:, None] + rr * h * one_plus  # 1 + u, from the near end
    minus = window["gap_hi"][:, None] + rr * h * one_minus  # 1 - u
    u = (plus - minus) / 2
    weight = w * h
    scaled_plus, scaled_minus = plus, minus
    if m != 0 and m < T.SMOOTH_EXPONENT:
        # A joined edge: the rule holds (1 -+ xi)^m, so scale by (r h)^m there
        # (no edge is joined from SMOOTH_EXPONENT on).
        scaled_plus = xp.where(left[:, None], rr * h, plus)
        scaled_minus = xp.where(right[:, None], rr * h, minus)
    escort = _escort_power(xp, scaled_plus, scaled_minus, u, m)
    weight = weight * escort * gen.rbf_pdf(y, 1.0)
    return _node_moments(xp, weight, plus, minus, u, second)


def _shared_rule(c: Array, r: Array, m: float, second: Array, n: int) -> Moments:
    """Moments from one Gauss-Jacobi rule on the whole support, shared by a row.

    c, r: (rows, N). The rule's weight is the escort (1 - u^2)^m; the N RBFs
    are evaluated on the same n nodes (one exp per node and RBF).
    """
    xp = _xs.namespace(r)
    nodes, weights = _cached(("shared", m, n), r, lambda: _shared_tables(m, n))
    half = nodes.shape[0] // 2
    u, w = nodes[:half], weights[:half]  # u < 0; node -u is its mirror
    # Node weights as columns: each sum runs over the node axis in the same order for
    # every RBF (a matrix product's blocking would make a column's rounding depend
    # on its position, and permuting the basis would move results by an ulp).
    weights_rho = (w * (1 - u * u))[:, None]
    weights_m2c = (w * (u * u - second))[:, None]
    weights_m1 = (w * u)[:, None]
    parts: dict[str, list[Array]] = {"rho": [], "m1": [], "m2c": []}
    step = max(1, (T.NODE_CHUNK * 8) // (nodes.shape[0] * c.shape[-1]))
    for i in range(0, c.shape[0], step):
        cc, rr = c[i : i + step, None, :], r[i : i + step, None, :]
        phi = gen.rbf_pdf(nodes[None, :, None] - cc, rr)  # (rows, n, N)
        low, high = phi[:, :half, :], xp.flip(phi[:, half:, :], axis=1)  # phi(u), phi(-u)
        # Mirrored pairs first: a centred RBF gives m1 = 0 exactly.
        even = low + high
        parts["rho"].append(xp.sum(weights_rho * even, axis=1))
        parts["m2c"].append(xp.sum(weights_m2c * even, axis=1))
        parts["m1"].append(xp.sum(weights_m1 * (low - high), axis=1))
    return {key: xp.concat(v) if len(v) > 1 else v[0] for key, v in parts.items()}


def _fill(
    out: Moments,
    mask: Array,
    compute: Callable[..., Moments],
    args: tuple[Array, ...],
    safe: tuple[float, ...],
    dense: bool,
    chunk: int = T.NODE_CHUNK,
) -> None:
    """out[key] = compute(*args)[key] where mask holds.

    dense: every element is computed (args outside the mask replaced by the
    harmless ``safe`` values, so no NaN can reach a gradient) and merged with
    where; no host read. Otherwise only the masked elements, in chunks.
    """
    xp = _xs.namespace(mask)
    if dense:
        safe_args = tuple(xp.where(mask, a, s) for a, s in zip(args, safe, strict=True))
        parts = [
            compute(*(a[i : i + chunk] for a in safe_args))
            for i in range(0, safe_args[0].shape[0], chunk)
        ]
        for key in out:
            value = xp.concat([p[key] for p in parts]) if len(parts) > 1 else parts[0][key]
            out[key] = xp.where(mask, value, out[key])
        return
    index = xp.nonzero(mask)[0]
    if index.shape[0] == mask.shape[0]:  # every element: slices, no gather or scatter
        for start in range(0, index.shape[0], chunk):
            part = compute(*(a[start : start + chunk] for a in args))
            for key in out:
                out[key][start : start + chunk] = part[key]
        return
    for start in range(0, index.shape[0], chunk):
        idx = index[start : start + chunk]
        part = compute(*(a[idx] for a in args))
        for key in out:
            out[key][idx] = part[key]


def _by_row(xp: Any, values: Array, row: int) -> Array:
    """Each element's row value broadcast back to the flat layout."""
    return xp.reshape(xp.broadcast_to(values, (values.shape[0], row)), (-1,))


def _negligible(
    bound: Array,
    out: Moments,
    row: int,
    absolute: Array | float | None = None,
    limit: float = 100.0,
) -> Array:
    """Where bound * size <= limit * the row's largest value, for all three moments.

    size is each element's own |rho|, |m1|, |m2c|, or 1 / ``absolute`` when the
    bound is absolute. With the default limit: where 1e-16 * bound * size stays
    below 1e-14 of the row's largest. Within a row the support, and so the units
    of these moments, is shared.
    """
    xp = _xs.namespace(bound)
    ok = xp.ones_like(bound, dtype=xp.bool)
    for value in out.values():
        largest = xp.max(xp.reshape(xp.abs(value), (-1, row)), axis=-1, keepdims=True)
        size = xp.abs(value) if absolute is None else 1 / absolute
        ok = ok & (bound * size <= limit * _by_row(xp, largest, row))
    return ok


def _far_negligible(
    outside: Array, state: tuple[Array, ...], row: int, accuracy: T.Accuracy
) -> Array:
    """Where an RBF lies so far outside the support that its moments are negligible.

    outside: RBF widths from the nearer edge to the centre (0 inside). With an escort
    of at most 1 (m >= 0), |rho|, |m1| and |m2c| are at most the Gaussian tail
    Phi(-outside); the element is negligible when that tail is at most far_negligible
    times each moment's largest magnitude in the row so far (the largest only grows
    as later regimes fill the row, so the decision stays safe).
    """
    moments = dict(zip(("rho", "m1", "m2c"), state[:3], strict=True))
    tail = _xs.ndtr(-outside)
    near = _negligible(tail, moments, row, absolute=1.0, limit=accuracy.far_negligible)
    return (outside >= accuracy.hermite_min_edge) & near


def _row_fill(
    out: Moments,
    mask: Array,
    compute: Callable[..., Moments],
    args: tuple[Array, ...],
    row: int,
    dense: bool,
) -> None:
    """Like _fill, for a computation on whole rows: rows holding any masked element."""
    xp = _xs.namespace(mask)
    shaped = tuple(xp.reshape(a, (-1, row)) for a in args)
    if dense:
        part = compute(*shaped)
        for key in out:
            out[key] = xp.where(mask, xp.reshape(part[key], (-1,)), out[key])
        return
    rows = xp.nonzero(xp.any(xp.reshape(mask, (-1, row)), axis=-1))[0]
    if rows.shape[0] == 0:
        return
    part = compute(*(a[rows] for a in shaped))
    keep = xp.reshape(mask, (-1, row))[rows]
    for key in out:
        view = xp.reshape(out[key], (-1, row))  # a view: writes reach out[key]
        view[rows] = xp.where(keep, part[key], view[rows])


def _numpy_quiet(function: Callable[..., Moments]) -> Callable[..., Moments]:
    """Run ``function`` with NumPy's floating-point warnings off for NumPy input.

    Sanitized lanes (the far side of a where, a Newton iterate past a support
    edge that is then replaced) may overflow; they never reach a result. Torch
    input runs as is (a context manager would break torch.compile's graph).
    """

    def run(*args: Any, **kwargs: Any) -> Moments:
        if any(is_numpy_array(a) for a in args):
            with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
                return function(*args, **kwargs)
        return function(*args, **kwargs)

    run.__name__, run.__doc__ = function.__name__, function.__doc__
    return run


def support_units(a: Array, delta: Array, s: Array) -> tuple[Array, Array, Array]:
    """(ep, em, r) = ((a - delta)/a, (a + delta)/a, s/a): an RBF of width s centred
    delta = mu_j - loc from the centre of a support of half-width a, in support units.

    a may have fewer elements than delta (one per row, shape (..., 1)): its reciprocal
    is formed once per row and multiplied, instead of three divisions per element
    (within 1.5 ulp of the quotients; the sums a -+ delta keep their exact form).
    """
    inverse = 1 / a
    return (a - delta) * inverse, (a + delta) * inverse, s * inverse


def closed_moments(k: int, ep: Array, em: Array, r: Array) -> Moments:
    """The generated closed form of the window moments for alpha = 1 + 1/k (any dtype).

    m1 is odd in the centre: exactly 0 for a centred RBF (rounding would leave
    ~1e-17, large against a row whose other RBFs are all far away).
    """
    xp = _xs.namespace(r)
    rho, m1, m2c = getattr(gen, f"window_moments_k{k}")(ep, em, r)
    return {"rho": rho, "m1": xp.where(ep == em, 0.0, m1), "m2c": m2c}


# Per-alpha constants as Python floats (see alpha_constants).
_CONSTANTS: dict[float, dict[str, float]] = {}


def alpha_constants(alpha: float) -> dict[str, float]:
    """The alpha-only constants of the window moments, as Python floats (cached).

    rho: 1 / B(1/2, k + 1); cov: the escort factor B(1/2, k + 1)^(alpha - 2);
    second: E[u^2] under the escort; mass: int (1 - u^2)^k du; half_width_factor
    and half_width_power: the 1D half-width law (see half_width). The generated
    closed forms evaluated once in float64 (NumPy): as Python numbers they cost
    nothing per call and torch.compile reads them as constants.
    """
    if alpha not in _CONSTANTS:
        with np.errstate(all="ignore"):
            value = np.float64(alpha)
            rho = float(gen.rho_constant(value))
            _CONSTANTS[alpha] = {
                "rho": rho,
                "cov": float(gen.cov_constant(value)),
                "second": float(gen.escort_u2(value)),
                "mass": 1 / rho,  # B(1/2, k + 1) = int (1 - u^2)^k du
                "half_width_factor": float(gen.half_width_factor(value)),
                "half_width_power": float(gen.half_width_power(value)),
            }
    return _CONSTANTS[alpha]


def half_width(alpha: float, scale: Array) -> Array:
    """The 1D beta-Gaussian's support half-width for alpha > 1, like scale (any shape).

    a = factor(alpha) * scale^power(alpha), the generated power law
    (derivations/attention.py), with the alpha-only factors as Python floats.

    Examples:
        >>> import numpy as np
        >>> round(float(half_width(2.0, np.array(1.0))), 6)  # (3/2)^(1/3)
        1.144714
    """
    c = alpha_constants(alpha)
    return c["half_width_factor"] * scale ** c["half_width_power"]


def attention_moments(alpha: float, a: Array, g: Moments) -> tuple[Array, Array, Array]:
    """(rho, J_1, J_2 - 2 mu J_1) of continuous attention from the window moments g.

    a is the beta-Gaussian's half-width (broadcast like g's values); the
    constants are Python floats, so the result keeps a's dtype. rho is an expectation
    of a positive function, so it is taken as at least 0: a moment far outside the
    support that rounds below 0 (-8.7e-308 at alpha = 1.25, sigma = 10^-1.49, an RBF
    of width 0.01 at 0.7 and the centre at 0.2, found by hypothesis; Torch's float64
    -5.2e-319) is then 0, which is never farther from the exact value than it was.
    """
    c = alpha_constants(alpha)
    return (
        _xs.at_least(g["rho"], 0.0) * (c["rho"] / a),
        a ** (alpha - 1) * c["cov"] * g["m1"],
        a**alpha * c["cov"] * g["m2c"],
    )


def moments_1d(
    alpha: float,
    loc: Array,
    scale: Array,
    mu: Array,
    s: Array,
    dense: bool,
    branch: Branch | None = None,
    accuracy: T.Accuracy = T.FLOAT64,
) -> tuple[Array, Array, Array]:
    """(rho, J_1, J_2 - 2 loc J_1) of 1D continuous attention, NumPy or Torch.

    Parameters:
        alpha: the entmax alpha >= 1.
        loc, scale: shape (...): the beta-Gaussian's location and scale (sigma).
        mu, s: shape (N,): the Gaussian RBFs' centres and widths.
        dense, branch, accuracy: as in window_moments.

    Returns:
        Three arrays of shape (..., N): in the inputs' dtype for alpha = 1 (the
        Gaussian closed form holds in any dtype); otherwise in float64, which the
        inputs must then be (the window moments need float64 edge distances).

    Examples:
        >>> import numpy as np
        >>> one = np.array([0.0])
        >>> rho, _, _ = moments_1d(2.0, one, np.array([1.0]), one, np.array([0.1]), False)
        >>> round(float(rho[0, 0]), 6)
        0.650185
    """
    xp = _xs.namespace(loc, mu)
    delta = mu - loc[..., None]
    sd = xp.broadcast_to(s, delta.shape)
    if alpha == 1:
        sc = xp.broadcast_to(scale[..., None], delta.shape)
        return (
            gen.gaussian_rho(delta, sc, sd),
            gen.gaussian_first(delta, sc, sd),
            gen.gaussian_second(delta, sc, sd),
        )
    a = half_width(alpha, scale)[..., None]  # one per row: (..., 1)
    ep, em, r = (xp.reshape(v, (-1,)) for v in support_units(a, delta, sd))
    g = window_moments(
        alpha, ep, em, r, row=mu.shape[0], dense=dense, branch=branch, accuracy=accuracy
    )
    return attention_moments(alpha, a, {key: xp.reshape(v, delta.shape) for key, v in g.items()})


def prepare_tables(alpha: float, like: Array) -> None:
    """Build every node table window_moments and radial_moments can use for this alpha,
    for like's namespace and device.

    window_moments calls it. torch.compile reads the tables as constants (building
    one while tracing would trace NumPy and break the graph), so the Torch face runs
    it outside the trace first."""
    _xs.register(like)
    _cached(("legendre", T.RADIAL_NODES), like, lambda: legendre_unit(T.RADIAL_NODES))
    if alpha == 1:
        return
    m = 1 / (alpha - 1) - 1
    second, n = alpha_constants(alpha)["second"], T.WIDE_NODES
    _cached(("wide", m, n, second), like, lambda: _wide_tables(m, n, second))
    for accuracy in (T.FLOAT64, T.FLOAT32):
        n = accuracy.window_nodes
        _cached(("window", m, n), like, lambda n=n: _window_tables(m, n))
        n = accuracy.hermite_nodes
        _cached(("hermite", n), like, lambda n=n: hermite_normal(n))
        for n in (accuracy.shared_nodes, accuracy.shared_nodes_wide):
            _cached(("shared", m, n), like, lambda n=n: _shared_tables(m, n))


def float32_closed_suffices(k: int, a: Array, loc: Array, mu: Array, s: Array) -> Array:
    """Whether the float32 closed form gives every row to float32 precision (0-dim bool).

    a, loc: shape (...,): each row's support half-width and centre (float64); mu, s:
    shape (N,): the RBFs' centres and widths. True when every RBF is at most
    FLOAT32_CLOSED_MAX_R[k] half-widths wide (s <= R a) and every row has a centre at
    most FLOAT32_ANCHOR_OUT widths outside its support (|mu - loc| - ANCHOR_OUT s <= a;
    the bound is negative: at least one width inside), so that the row's largest moment
    is one the closed form gets to float32 precision (near the edge it cancels),
    and the widths spread by at most FLOAT32_WIDTH_RATIO[k] (tsallis.core.tuning).
    Written without 1/a per element: compiled, a row's half-width
    is then formed once, not once per vector of the row.
    """
    xp = _xs.namespace(a)
    if mu.shape[0] == 0:  # no RBF: nothing anchors a row (the general path is exact)
        return xp.asarray(False)
    distance = xp.abs(mu - loc[..., None]) - T.FLOAT32_ANCHOR_OUT * s
    anchored = xp.min(distance, axis=-1) <= a
    narrow = xp.max(s) <= T.FLOAT32_CLOSED_MAX_R[k] * a
    spread = xp.max(s) <= T.FLOAT32_WIDTH_RATIO[k] * xp.min(s)  # see FLOAT32_EDGE_FLUSH
    return xp.all(anchored & narrow) & spread


State = tuple[Array, Array, Array, Array]  # rho, m1, m2c, done


def _regime(
    branch: Branch, state: State, mask: Array, run: Callable[[Moments, Array], Array]
) -> State:
    """state after run(out, mask), which fills out where mask holds and returns the new done.

    Skipped through ``branch`` when no element needs it.
    """
    xp = _xs.namespace(mask)

    def full(rho: Array, m1: Array, m2c: Array, done: Array, mask: Array) -> State:
        out = {"rho": rho, "m1": m1, "m2c": m2c}
        done = run(out, mask) | done
        return out["rho"], out["m1"], out["m2c"], done

    def cheap(rho: Array, m1: Array, m2c: Array, done: Array, mask: Array) -> State:
        return rho, m1, m2c, done

    return branch(~xp.any(mask), cheap, full, (*state, mask))


@_numpy_quiet
def window_moments(
    alpha: float,
    ep: Array,
    em: Array,
    r: Array,
    row: int,
    dense: bool,
    branch: Branch | None = None,
    accuracy: T.Accuracy = T.FLOAT64,
) -> Moments:
    """rho = G(k, 0), m1 = G(k-1, 1), m2c = G(k-1, 2) - E_escort[u^2] G(k-1, 0).

    Parameters:
        alpha: the entmax alpha > 1 (k = 1/(alpha - 1)).
        ep, em, r: flat float64 arrays (B * row,), NumPy or Torch: 1 - c, 1 + c
            and the RBF width, in units of the support's half-width.
        row: consecutive elements that share one support (N RBFs of one row).
        dense: no host reads (every branch on every element; see the module).
        branch: how the regimes after the closed form are skipped when the closed
            form gave every element (see the module); default ``full_branch``
            when dense, else ``host_branch``.
        accuracy: the node counts and thresholds of the quadrature regimes
            (tuning.FLOAT64, or tuning.FLOAT32 for results kept in float32).

    Returns:
        {"rho", "m1", "m2c"}: flat arrays like r.

    In order of preference per element: the closed form (alpha = 1 + 1/k for
    k = 1..4, where well conditioned; at k = 1 the wide expansion first from
    tuning.CLOSED_WIDE_R on); the wide-RBF expansion where the RBF
    covers the support; the RBF's own Gauss-Hermite rule where it lies well
    inside the support; one Gauss-Jacobi rule shared by the row where the RBF
    is at least SHARED_MIN_R half-widths wide; otherwise a Gauss-Jacobi window
    of its own.

    Examples:
        >>> import numpy as np
        >>> g = window_moments(2.0, np.array([1.0]), np.array([1.0]), np.array([0.1]), 1, False)
        >>> round(float(g["rho"][0]), 6)  # int (1 - u^2) phi(u / 0.1) / 0.1 du
        0.99
    """
    xp = _xs.namespace(r)
    # Regimes after the closed form are skipped per regime with a host read (sparse
    # form), or never (dense); ``branch`` decides once whether any element still needs
    # one after the closed form (torch.cond under torch.compile: a single cond keeps the
    # compiled graph, and its compile time, small).
    each = full_branch if dense else host_branch
    if branch is None:
        branch = each
    k = T.closed_k(alpha)
    m = 1 / (alpha - 1) - 1
    prepare_tables(alpha, r)
    second = alpha_constants(alpha)["second"]
    # Three arrays (the sparse form writes into them in place).
    rho, m1, m2c = (xp.zeros_like(r) for _ in range(3))
    state: State = (rho, m1, m2c, xp.zeros_like(r, dtype=xp.bool))
    outside = _xs.at_least(-xp.minimum(ep, em) / r, 0.0)
    centre = (em - ep) / 2
    mass = alpha_constants(alpha)["mass"]

    def within_reach(bound: float) -> Array:
        """Where |u (u - 2c)| / (2 r^2) <= bound on the support (the wide expansion's)."""
        return (1 + 2 * xp.abs(centre)) <= 2 * bound * r * r

    def wide(out: Moments, mask: Array) -> Array:
        def wide_form(c: Array, rr: Array) -> Moments:
            return _wide_moments(c, rr, m, second, mass)

        _fill(out, mask, wide_form, (centre, r), (0.0, 2.0), dense)
        return mask

    if k is not None:

        def closed(out: Moments, mask: Array) -> Array:
            def closed_form(e1: Array, e2: Array, rr: Array) -> Moments:
                return closed_moments(k, e1, e2, rr)

            _fill(out, mask, closed_form, (ep, em, r), (1.0, 1.0, 0.1), dense, T.CLOSED_CHUNK)
            near = outside <= T.CLOSED_MAX_OUT[k]

            def far_check(near: Array, rho: Array, m1: Array, m2c: Array) -> tuple[Array]:
                bound = (1 + outside) ** (2 * k + 3) * _xs.at_least(5 * r, 1.0) ** (k - 1)
                moments = {"rho": rho, "m1": m1, "m2c": m2c}
                return (near | _negligible(bound, moments, row),)

            # The bound only matters for RBFs far outside (skipped when there are none).
            (near,) = each(
                xp.all(near | ~mask),
                lambda near, *_: (near,),
                far_check,
                (near, out["rho"], out["m1"], out["m2c"]),
            )
            return mask & near

        closed_mask = r <= T.CLOSED_MAX_R[k]
        if k in T.CLOSED_WIDE_R:  # the closed form's m2c cancels on wide RBFs: the wide
            # expansion takes them first (before the far check, which reads the row's
            # largest moments; skipped through ``branch`` where there are none)
            reach = within_reach(T.CLOSED_WIDE_REACH)
            first = closed_mask & (r > T.CLOSED_WIDE_R[k]) & reach
            state = _regime(branch, state, first, wide)
            closed_mask = closed_mask & ~state[3]
        state = _regime(each, state, closed_mask, closed)

    def shared(out: Moments, mask: Array) -> Array:
        def shared_form(c: Array, rr: Array, n: int = accuracy.shared_nodes) -> Moments:
            return _shared_rule(c, rr, m, second, n)

        safe_r = xp.where(mask, r, xp.ones_like(r))
        if dense:
            _row_fill(out, mask, shared_form, (centre, safe_r), row, dense)
        else:  # rows whose RBFs are all wide enough take the smaller rule
            narrowest = xp.min(xp.reshape(safe_r, (-1, row)), axis=-1, keepdims=True)
            coarse = mask & _by_row(xp, narrowest >= T.SHARED_WIDE_R, row)

            def coarse_form(c: Array, rr: Array) -> Moments:
                return shared_form(c, rr, accuracy.shared_nodes_wide)

            _row_fill(out, coarse, coarse_form, (centre, safe_r), row, dense)
            _row_fill(out, mask & ~coarse, shared_form, (centre, safe_r), row, dense)
        # Its absolute error is below 1e-16 / r (measured, centres up to 8 r outside);
        # farther out that must be negligible within the row.
        far_ok = (outside <= T.SHARED_MAX_OUT) | _negligible(1 / (r * r), out, row, absolute=r)
        return mask & far_ok

    def hermite(out: Moments, mask: Array) -> Array:
        def hermite_form(e1: Array, e2: Array, rr: Array) -> Moments:
            return _hermite_moments(e1, e2, rr, m, second, accuracy.hermite_nodes)

        chunk = T.NODE_CHUNK * max(1, T.WINDOW_NODES // accuracy.hermite_nodes)
        _fill(out, mask, hermite_form, (ep, em, r), (1.0, 1.0, 0.01), dense, chunk)
        return mask

    def far(out: Moments, mask: Array) -> Array:
        return mask  # the moments stay 0: below FAR_NEGLIGIBLE of the row's largest

    # From SMOOTH_EXPONENT on, m2c cancels by about a factor m under the narrow escort, so
    # a window truncated at e^-22 costs m * 1e-10 (1e-5 at alpha = 1.0001): such windows
    # keep the float64 settings whatever the tier.
    window_accuracy = T.FLOAT64 if m >= T.SMOOTH_EXPONENT else accuracy

    def windows(out: Moments, mask: Array) -> Array:
        def window(e1: Array, e2: Array, rr: Array) -> Moments:
            return _window_quadrature(e1, e2, rr, m, second, window_accuracy)

        _fill(out, mask, window, (ep, em, r), (1.0, 1.0, 1.0), dense)
        return mask

    def rest(rho: Array, m1: Array, m2c: Array, done: Array) -> State:
        state: State = (rho, m1, m2c, done)
        wide_mask = ~done & within_reach(1.0)
        state = _regime(each, state, wide_mask, wide)
        inside = xp.minimum(ep, em) / r  # RBF widths from the centre to the nearer edge
        bend = inside * accuracy.hermite_max_bend >= max(m, 0.0)
        interior = (inside >= accuracy.hermite_min_edge) & bend
        del inside  # B * N float64: built only when a regime after the closed form runs
        state = _regime(each, state, ~state[3] & interior, hermite)
        state = _regime(each, state, ~state[3] & (r >= T.SHARED_MIN_R), shared)
        if m >= 0:  # the escort is at most 1: the Gaussian tail bounds every moment
            state = _regime(
                each, state, ~state[3] & _far_negligible(outside, state, row, accuracy), far
            )
        return _regime(each, state, ~state[3], windows)

    def finished(rho: Array, m1: Array, m2c: Array, done: Array) -> State:
        return rho, m1, m2c, done

    state = branch(xp.all(state[3]), finished, rest, state)
    return dict(zip(("rho", "m1", "m2c"), state[:3], strict=False))


@_numpy_quiet
def radial_moments(
    c: Array, omc: Array, r: Array, dense: bool, branch: Branch | None = None
) -> Moments:
    """int_0^1 u^j phi((u - c)/r)/r du for j = 1, 2, 3 (keys p1, p2, p3).

    Parameters:
        c, omc, r: flat float64 arrays: the centre, 1 - c (formed without
            cancellation by the caller) and the width, NumPy or Torch.
        dense: no host reads (see the module).
        branch: how the Gauss-Legendre regime is skipped where no RBF is wide
            (see the module); default ``full_branch`` when dense, else ``host_branch``.

    The generated closed form for r <= RADIAL_MAX_R (measured within 1.1e-13 of
    Gauss-Legendre windows, relative to the largest over the centre, up to 8
    widths outside [0, 1]). A wider RBF is smooth on [0, 1]: RADIAL_NODES
    Gauss-Legendre nodes there.

    Examples:
        >>> import numpy as np
        >>> p = radial_moments(np.array([0.5]), np.array([0.5]), np.array([1e-3]), False)
        >>> round(float(p["p1"][0]), 12)
        0.5
    """
    xp = _xs.namespace(r)
    if branch is None:
        branch = full_branch if dense else host_branch
    legendre = _cached(("legendre", T.RADIAL_NODES), r, lambda: legendre_unit(T.RADIAL_NODES))
    out = {f"p{j}": xp.zeros_like(c) for j in (1, 2, 3)}
    closed = r <= T.RADIAL_MAX_R

    def closed_form(cc: Array, oo: Array, rr: Array) -> Moments:
        return dict(zip(("p1", "p2", "p3"), gen.radial_moments(cc, oo, rr), strict=True))

    _fill(out, closed, closed_form, (c, omc, r), (0.5, 0.5, 0.1), dense, T.CLOSED_CHUNK)

    def smooth(cc: Array, rr: Array) -> Moments:
        x, w = legendre
        u = (x + 1) / 2
        weight = w / 2 * gen.rbf_pdf(u - cc[:, None], rr[:, None])
        return {f"p{j}": xp.sum(weight * u**j, axis=-1) for j in (1, 2, 3)}

    def full(p1: Array, p2: Array, p3: Array) -> tuple[Array, ...]:
        part = {"p1": p1, "p2": p2, "p3": p3}
        _fill(part, ~closed, smooth, (c, r), (0.5, 4.0), dense)
        return part["p1"], part["p2"], part["p3"]

    def cheap(p1: Array, p2: Array, p3: Array) -> tuple[Array, ...]:
        return p1, p2, p3

    values = branch(xp.all(closed), cheap, full, (out["p1"], out["p2"], out["p3"]))
    return dict(zip(("p1", "p2", "p3"), values, strict=True))
