"""Kernel deformed-exponential families on an interval (Moreno 2022 section 5, Alg 1), written once.

p(t) = q0(t) exp_{2-alpha}(f~(t)) / Z on the base interval [a, b], with
f~(t) = sum_i gamma_i k(t, t_i) (Gaussian or Laplace kernel). Both faces run
this module: tsallis.kernels.KernelFamily (one row, NumPy) and
torch_bridge.kernel_attention (a batch of rows, Torch, autograd through it).

Quadrature (kink-aware; no host read after the set-up but the regime checks):
[a, b] is cut into panels at the Laplace kernel's centres (its kinks), at the
Gaussian base's break points, and into pieces no wider than the narrowest of
the kernel bandwidth, the RBF widths and the base std. Each panel gets
``nodes`` Gauss-Legendre nodes, shared by every row, so f~ on them is one
matrix product. For alpha > 1, a panel where u = 1 + (alpha-1) f~ changes sign
between its ends and nodes holds support boundaries: the roots are found
(bracketed Newton) and the positive pieces get their own nodes (Gauss-Legendre
when 1/(alpha-1) is an integer, else Gauss-Jacobi carrying |t - root|^(1/(alpha-1))
at each root). A full panel next to a root just outside it, with a non-integer
power, is graded towards that end. Everything is summed in log space (log q0 +
log exp_{2-alpha} f~ minus the row maximum), so a Gaussian base far from the mass
gives neither Z = 0 nor NaN.

Gradients (Torch): the nodes are constants. The support boundaries are
constants too, exact by the Leibniz rule (the integrand vanishes at a root),
except under a non-integer power, whose Gauss-Jacobi rule is exact only at the
exact root: there the root carries its implicit gradient (boundary_pieces).
One panel is assumed to hold at most one support boundary; panels are no wider
than the kernel bandwidth, over which u changes sign at most once unless a bump
of f~ just touches -1/(alpha-1).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from itertools import pairwise
from typing import Any, NamedTuple

import numpy as np

from tsallis.core import arrays as _xs
from tsallis.core import tuning as T
from tsallis.core._generated import deformed as _deformed
from tsallis.core.bases import GaussianBase, UniformBase
from tsallis.core.rules import gauss_jacobi

__all__ = [
    "KERNELS",
    "Piece",
    "Setup",
    "default_nodes",
    "deformed_base",
    "envelope",
    "graph_values",
    "integrate",
    "kernel_band",
    "kernel_matrix",
    "node_pieces",
    "panel_chunks",
    "panel_edges",
    "positive_somewhere",
    "singular_power",
    "support_edges",
]

Array = Any
KERNELS = ("gaussian", "laplace")
# Thresholds and node counts: tsallis.core.tuning (the KERNEL_* and GRADE_* entries).


class Setup(NamedTuple):
    """What every chunk shares: kernel, bandwidth, base, alpha, nodes per panel and the
    number V of values per node that integrate sums (for the chunk size)."""

    kernel: str
    bandwidth: float
    base: UniformBase | GaussianBase
    alpha: float
    nodes: int
    value_count: int = 1


class Piece(NamedTuple):
    """Quadrature nodes t and log masses log(q0 exp_{2-alpha}(f~) w) of some rows.

    rows None: every row, on nodes t (K,) shared by all, log_mass (B, K).
    Otherwise log_mass and t are (R, K), row r belonging to row rows[r].
    """

    log_mass: Array
    t: Array
    rows: Array | None


def _legendre(n: int, like: Array) -> tuple[Array, Array]:
    return _xs.constant_tables(("jacobi", n, 0.0, 0.0), like, lambda: gauss_jacobi(n, 0.0, 0.0))


def default_nodes(alpha: float) -> int:
    """Gauss-Legendre nodes per panel and per piece: 16 for every alpha.

    A support boundary is either inside a panel (its pieces get Gauss-Jacobi or
    Gauss-Legendre up to the root) or at least a panel width outside it (a root
    nearer than that grades the panel, see _graded_pieces); seen from at least two
    half-widths, a singularity leaves 16 nodes below 1e-24. (Before panels were
    graded, alpha > 2 took 32 nodes: [u]_+^(1/(alpha-1)) with a root just outside a
    panel was 1e-10 off with 16.) Measured: 80 families against 20-digit mpmath,
    alpha in {1.7, 2.5, 3, 5}, both kernels, within 1.6e-15.
    """
    return 16


def kernel_matrix(t: Array, inducing: Array, kernel: str, bandwidth: float) -> Array:
    """k(t, t_i): (..., M) for t (...) and inducing points (M,)."""
    xp = _xs.namespace(t)
    distance = t[..., None] - inducing
    if kernel == "gaussian":
        return xp.exp(-(distance * distance) / (2 * bandwidth * bandwidth))
    return xp.exp(-xp.abs(distance) / bandwidth)


def _reach(setup: Setup) -> float:
    """The distance beyond which the float64 kernel is exactly 0 (T.KERNEL_UNDERFLOW)."""
    if setup.kernel == "gaussian":
        return setup.bandwidth * math.sqrt(2 * T.KERNEL_UNDERFLOW)
    return setup.bandwidth * T.KERNEL_UNDERFLOW


def kernel_band(
    g: Array, inducing: Array, setup: Setup, lo: Array, hi: Array
) -> tuple[Array, Array]:
    """The columns of g (B, M) and the inducing points (M,) whose kernel is not exactly 0
    somewhere on [lo, hi]: (B, M'), (M',). One host read.

    Beyond T.KERNEL_UNDERFLOW bandwidths (Gaussian: in sqrt(2 d^2 / h^2) units) the
    float64 kernel and its derivative are exactly 0, so dropping those points changes
    nothing but the order of the sums. Narrow kernels (bandwidth 0.002 on [0, 1]: 15%
    of the points within reach of a panel) then cost what their reach costs.
    """
    xp = _xs.namespace(g)
    reach = _reach(setup)
    points = _xs.stop_gradient(inducing)
    near = (points >= lo - reach) & (points <= hi + reach)
    if bool(xp.all(near)):
        return g, inducing
    index = xp.nonzero(near)[0]
    return xp.take(g, index, axis=1), xp.take(inducing, index, axis=0)


def _f_tilde(g: Array, t: Array, inducing: Array, setup: Setup) -> Array:
    """f~ for rows g (R, M) on per-row nodes t (R, K): (R, K)."""
    k = kernel_matrix(t, inducing, setup.kernel, setup.bandwidth)  # (R, K, M)
    return (k @ g[:, :, None])[..., 0]


def panel_edges(
    inducing: Sequence[float],
    kernel: str,
    bandwidth: float,
    base: UniformBase | GaussianBase,
    narrowest_rbf: float,
    envelope: float = 0.0,
    caller: str = "kernel_attention",
) -> np.ndarray:
    """Sorted panel ends on [a, b] (float64 NumPy): kinks, base break points, width cap.

    The width cap is T.PANEL_FRACTION times the narrowest of the kernel bandwidth
    (divided by sqrt(envelope / T.STEEP_UNIT) for a steep f~), the RBF widths (inf:
    none) and the base std (shrunk where the base's mean lies far outside [a, b]).
    Raises ValueError, naming ``caller``, when that needs
    more than T.MAX_PANELS panels.
    """
    a, b = float(base.a), float(base.b)
    cuts = [a, b]
    if kernel == "laplace":
        cuts += [float(t) for t in inducing if a < t < b]
    cuts += [t for t in base.breakpoints() if a < t < b]
    steep = max(1.0, envelope / T.STEEP_UNIT)
    steep = math.sqrt(steep) if kernel == "gaussian" else steep
    limits = {"bandwidth": (bandwidth / steep, bandwidth), "RBF width": (narrowest_rbf, None)}
    if isinstance(base, GaussianBase):
        # log q0 has slope |t - mean| / std^2: panels no wider than BASE_SLOPE_WIDTH over
        # the largest slope on [a, b] (a mean far outside makes q0 steep there).
        farthest = max(abs(a - base.mean), abs(b - base.mean))
        limits["base std"] = (base.std * min(1.0, T.BASE_SLOPE_WIDTH * base.std / farthest), None)
    name, (width, _) = min(limits.items(), key=lambda item: item[1][0])
    width *= T.PANEL_FRACTION
    cuts = sorted(set(cuts))
    counts = [max(1, math.ceil((hi - lo) / width)) for lo, hi in pairwise(cuts)]
    if sum(counts) > T.MAX_PANELS:
        factor = sum(counts) / T.MAX_PANELS
        value = limits[name][1] or limits[name][0]
        why = " (with gamma this large)" if name == "bandwidth" and steep > 1 else ""
        raise ValueError(
            f"{caller}: {sum(counts)} panels would be needed on [{a:g}, {b:g}], more"
            f" than MAX_PANELS = {T.MAX_PANELS}: the panel width follows the {name}"
            f" {value:.3g}{why}; use a {name} of at least {value * factor:.3g}"
            " (or a shorter base interval)"
        )
    edges = []
    for (lo, hi), pieces in zip(pairwise(cuts), counts, strict=True):
        edges += [lo + (hi - lo) * i / pieces for i in range(pieces)]
    edges.append(b)
    return np.array(edges, dtype=np.float64)


def envelope(gamma: Array, inducing: Array, kernel: str, bandwidth: float) -> float:
    """max over rows and inducing points t_j of sum_i |gamma_i| k(t_j, t_i) (a host read).

    gamma (B, M) and inducing (M,), float64. Bounds |f~| near the inducing points;
    the curvature of f~ is at most this over bandwidth^2. In blocks of inducing
    points (memory M x block).
    """
    xp = _xs.namespace(gamma)
    if gamma.shape[0] * gamma.shape[1] == 0:
        return 0.0
    g = xp.abs(_xs.stop_gradient(gamma))
    points = _xs.stop_gradient(inducing)
    block = max(1, T.KERNEL_CHUNK // max(1, points.shape[0] + g.shape[0]))
    top = 0.0
    for start in range(0, points.shape[0], block):
        k = kernel_matrix(points[start : start + block], points, kernel, bandwidth)
        top = max(top, float(xp.max(g @ k.T)))
    return top


def deformed_base(f: Array, alpha: float) -> Array:
    """u = 1 + (alpha-1) f, whose positive part to the power 1/(alpha-1) is exp_{2-alpha}(f)."""
    return 1 + (alpha - 1) * f


def _u_and_slope(t: Array, g: Array, inducing: Array, setup: Setup) -> tuple[Array, Array]:
    """u = 1 + (alpha-1) f~(t) and du/dt, for t (R,) and g (R, M)."""
    xp = _xs.namespace(t)
    bandwidth = setup.bandwidth
    distance = t[:, None] - inducing
    k = kernel_matrix(t, inducing, setup.kernel, bandwidth)
    if setup.kernel == "gaussian":
        dk = -distance / (bandwidth * bandwidth) * k
    else:
        dk = -xp.sign(distance) / bandwidth * k
    u = deformed_base(xp.sum(g * k, axis=-1), setup.alpha)
    return u, (setup.alpha - 1) * xp.sum(g * dk, axis=-1)


def _roots(
    g: Array, lo: Array, hi: Array, u_lo: Array, u_hi: Array, inducing: Array, setup: Setup
) -> Array:
    """The root of u = 1 + (alpha-1) f~ in [lo, hi], where u changes sign.

    Bracketed Newton from the secant point: steps that leave the bracket
    become bisections. Brackets are one node spacing wide, where Newton
    converges in a few steps; T.KERNEL_NEWTON_STEPS leaves a margin. The root must be
    exact to rounding: the Gauss-Jacobi rule divides by |t - root|^(1/(alpha-1)).
    """
    xp = _xs.namespace(lo)
    left, right = lo, hi
    t = lo + (hi - lo) * (u_lo / (u_lo - u_hi))
    rising = u_lo <= 0  # u goes from <= 0 at lo to > 0 at hi
    # NumPy stops once no root moves (a further step would give the same t again);
    # Torch always takes every step (no host read, one graph under torch.compile).
    on_host = isinstance(t, np.ndarray)
    for _ in range(T.KERNEL_NEWTON_STEPS):
        u, slope = _u_and_slope(t, g, inducing, setup)
        below = (u <= 0) == rising  # the root lies to the right of t
        left, right = xp.where(below, t, left), xp.where(below, right, t)
        step = t - u / xp.where(slope == 0, xp.ones_like(slope), slope)
        inside = (slope != 0) & (step >= left) & (step <= right)
        moved = xp.where(inside, step, (left + right) / 2)
        if on_host and np.array_equal(moved, t):
            break
        t = moved
    return t


def singular_power(alpha: float) -> bool:
    """Whether [u]_+^(1/(alpha-1)) needs Gauss-Jacobi at a root: the power is not an
    integer (a polynomial up to the root) and not so high that it is flat there
    (alpha close to 1; tuning.SMOOTH_EXPONENT)."""
    power = 1 / (alpha - 1)
    return abs(power - round(power)) >= 1e-9 and power < T.SMOOTH_EXPONENT


def node_pieces(g: Array, inducing: Array, setup: Setup, edges: Array) -> list[Piece]:
    """The quadrature nodes and log masses of the panels between consecutive ``edges``.

    g (B, M) float64 kernel weights, inducing (M,), edges (P + 1,). The first piece
    is the panels' shared nodes (every row; -inf log mass where a boundary piece or
    a graded panel replaces them), then boundary and graded pieces of some rows.
    """
    xp = _xs.namespace(g)
    n, alpha = setup.nodes, setup.alpha
    g, inducing = kernel_band(g, inducing, setup, edges[0], edges[-1])
    lo_t, hi_t = edges[:-1], edges[1:]
    half = (hi_t - lo_t) / 2  # (P,)
    x, w = _legendre(n, g)
    t_shared = xp.reshape(lo_t[:, None] + half[:, None] * (x + 1), (-1,))  # (P n,)
    w_shared = xp.reshape(half[:, None] * w, (-1,))
    k_shared = kernel_matrix(t_shared, inducing, setup.kernel, setup.bandwidth)
    f_shared = g @ k_shared.T  # (B, P n)
    log_e = _deformed.log_exp_beta(f_shared, 2 - alpha)  # -inf off the support
    pieces: list[Piece] = []
    if alpha > 1:
        rows, panels = g.shape[0], lo_t.shape[0]
        points, u_points, changes = _sign_changes(g, inducing, setup, edges, t_shared, f_shared)
        full = ~xp.any(changes, axis=-1) & (u_points[..., 0] > 0)
        near = _near_root(points, u_points) if singular_power(alpha) else None
        graded = None if near is None else full & (near[0] | near[1])
        keep = full if graded is None else full & ~graded
        keep_nodes = xp.reshape(xp.broadcast_to(keep[:, :, None], (rows, panels, n)), (rows, -1))
        log_e = xp.where(keep_nodes, log_e, -math.inf)
        pieces += _boundary_pieces(g, inducing, setup, points, u_points, changes)
        if graded is not None and bool(xp.any(graded)):
            pieces += _graded_pieces(g, inducing, setup, lo_t, hi_t, graded, near)
    log_mass = log_e + setup.base.log_density(t_shared) + xp.log(w_shared)
    return [Piece(log_mass, t_shared, None), *pieces]


def _sign_changes(
    g: Array, inducing: Array, setup: Setup, edges: Array, t_shared: Array, f_shared: Array
) -> tuple[Array, Array, Array]:
    """Panel points (P, n + 2): each panel's ends and nodes; u there (B, P, n + 2); and
    whether u changes sign between consecutive points (B, P, n + 1). Constants."""
    xp = _xs.namespace(g)
    n, alpha = setup.nodes, setup.alpha
    rows, panels = g.shape[0], edges.shape[0] - 1
    k_edges = kernel_matrix(edges, inducing, setup.kernel, setup.bandwidth)
    u_edges = deformed_base(_xs.stop_gradient(g @ k_edges.T), alpha)
    u_nodes = xp.reshape(deformed_base(_xs.stop_gradient(f_shared), alpha), (rows, panels, n))
    u_points = xp.concat([u_edges[:, :-1, None], u_nodes, u_edges[:, 1:, None]], axis=-1)
    changes = (u_points[..., :-1] > 0) != (u_points[..., 1:] > 0)
    nodes = xp.reshape(t_shared, (-1, n))
    points = xp.concat([edges[:-1, None], nodes, edges[1:, None]], axis=-1)
    return points, u_points, changes


def _boundary_roots(
    g: Array, inducing: Array, setup: Setup, points: Array, u_points: Array, changes: Array
) -> tuple[Array, ...] | None:
    """(rows, panels, first root, last root) of the panels where u changes sign (None:
    none). The roots are constants (bracketed Newton on the first and last sign
    change among the panel's points; they coincide when there is one root)."""
    xp = _xs.namespace(g)
    rows, panels = xp.nonzero(xp.any(changes, axis=-1))
    if rows.shape[0] == 0:
        return None
    flags = xp.astype(changes[rows, panels], xp.int32)  # (R, n + 1)
    first = xp.argmax(flags, axis=-1)
    last = flags.shape[-1] - 1 - xp.argmax(xp.flip(flags, axis=-1), axis=-1)
    pts, vals = points[panels], u_points[rows, panels]
    k = xp.concat([first, last])[:, None]
    pts2, vals2, rows2 = xp.concat([pts, pts]), xp.concat([vals, vals]), xp.concat([rows, rows])
    lo = xp.take_along_axis(pts2, k, axis=-1)[:, 0]
    hi = xp.take_along_axis(pts2, k + 1, axis=-1)[:, 0]
    u_lo = xp.take_along_axis(vals2, k, axis=-1)[:, 0]
    u_hi = xp.take_along_axis(vals2, k + 1, axis=-1)[:, 0]
    g_const, inducing_const = _xs.stop_gradient(g), _xs.stop_gradient(inducing)
    root = _roots(g_const[rows2], lo, hi, u_lo, u_hi, inducing_const, setup)
    count = rows.shape[0]
    return rows, panels, root[:count], root[count:]


def _panel_signs(g: Array, inducing: Array, setup: Setup, edges: Array) -> tuple[Array, ...]:
    """_sign_changes of one row g (1, M) on the panels between ``edges``."""
    xp = _xs.namespace(g)
    x, _ = _legendre(setup.nodes, g)
    half = (edges[1:] - edges[:-1]) / 2
    t_shared = xp.reshape(edges[:-1, None] + half[:, None] * (x + 1), (-1,))
    f_shared = g @ kernel_matrix(t_shared, inducing, setup.kernel, setup.bandwidth).T
    return _sign_changes(g, inducing, setup, edges, t_shared, f_shared)


def positive_somewhere(g: Array, inducing: Array, setup: Setup, edges: Array) -> bool:
    """Whether u = 1 + (alpha-1) f~ of one row g (1, M) is positive at a panel edge or
    node: the support that support_edges and the quadrature see is empty just when not.
    (No root finding: a family checks its mass at construction with this.)"""
    if setup.alpha == 1:
        return True
    xp = _xs.namespace(g)
    return bool(xp.any(_panel_signs(g, inducing, setup, edges)[1] > 0))


def support_edges(g: Array, inducing: Array, setup: Setup, edges: Array) -> Array:
    """The support boundaries (roots of u = 1 + (alpha-1) f~ in [a, b]) of one row
    g (1, M), sorted, as the quadrature places them (empty for alpha = 1)."""
    xp = _xs.namespace(g)
    if setup.alpha == 1:
        return xp.zeros((0,), dtype=g.dtype, device=getattr(g, "device", None))
    found = _boundary_roots(g, inducing, setup, *_panel_signs(g, inducing, setup, edges))
    if found is None:
        return xp.zeros((0,), dtype=g.dtype, device=getattr(g, "device", None))
    _, _, r1, r2 = found
    roots = xp.concat([r1, r2[r2 != r1]])
    return xp.sort(roots)


def _boundary_pieces(
    g: Array, inducing: Array, setup: Setup, points: Array, u_points: Array, changes: Array
) -> list[Piece]:
    """Nodes and log masses on the support pieces of boundary panels.

    A boundary panel has a sign change of u between consecutive points of
    (lo, its nodes, hi). Its first and last changes bracket roots r1 <= r2, and
    its support is [lo, r1] and/or [r2, hi] (u > 0 at the panel ends) or
    [r1, r2] (u <= 0 at both ends): at most two pieces, each with its own
    nodes. (A third root in one panel, or a dip below 0 between two nodes,
    would be missed; panels are no wider than the kernel bandwidth.)

    Integer 1/(alpha-1) (alpha = 2, 3/2, 4/3, ...): [u]_+^power is smooth up to a
    root, so plain Gauss-Legendre on each piece, with the roots constants for
    autograd (the Leibniz rule of the module docstring). Otherwise Gauss-Jacobi
    with |t - root|^power at each root end; that rule is exact only at the exact
    root, so its nodes carry the root's implicit gradient
    d root = -(du/dgamma) / (du/dt) (one Newton step whose value is 0).
    """
    xp = _xs.namespace(g)
    found = _boundary_roots(g, inducing, setup, points, u_points, changes)
    if found is None:
        return []
    rows, panels, r1, r2 = found
    n = setup.nodes
    smooth = not singular_power(setup.alpha)
    pts, vals = points[panels], u_points[rows, panels]
    if not smooth:  # the roots carry their implicit gradient (see the docstring)
        both = xp.concat([r1, r2])
        u_root, slope = _u_and_slope(both, g[xp.concat([rows, rows])], inducing, setup)
        both = both - (u_root - _xs.stop_gradient(u_root)) / _xs.stop_gradient(slope)
        r1, r2 = both[: rows.shape[0]], both[rows.shape[0] :]
    lo_t, hi_t = pts[:, 0], pts[:, -1]
    in_lo, in_hi = vals[:, 0] > 0, vals[:, -1] > 0
    # The first piece of every boundary panel, then the second piece [r2, hi] of the
    # panels positive at both ends; a, b, root at a, root at b, row.
    both = xp.nonzero(in_lo & in_hi)[0]
    every = xp.ones_like(both, dtype=xp.bool)
    a_all = xp.concat([xp.where(in_lo, lo_t, xp.where(in_hi, r2, r1)), r2[both]])
    b_all = xp.concat([xp.where(in_lo, r1, xp.where(in_hi, hi_t, r2)), hi_t[both]])
    root_a_all = xp.concat([~in_lo, every])
    root_b_all = xp.concat([in_lo | ~in_hi, ~every])
    rows_all = xp.concat([rows, rows[both]])
    out = []
    # Blocks of pieces: the (pieces, n, M) kernel and (pieces, n, V) values stay within
    # T.KERNEL_CHUNK values whatever the number of boundary panels.
    block = max(1, T.KERNEL_CHUNK // (n * (inducing.shape[0] + setup.value_count + 8)))
    for start in range(0, rows_all.shape[0], block):
        sel = slice(start, start + block)
        ends = (a_all[sel], b_all[sel], root_a_all[sel], root_b_all[sel])
        out.append(_boundary_piece(g, inducing, setup, rows_all[sel], *ends))
    return out


def _boundary_piece(
    g: Array,
    inducing: Array,
    setup: Setup,
    rows: Array,
    a: Array,
    b: Array,
    root_a: Array,
    root_b: Array,
) -> Piece:
    """The nodes and log masses of support pieces [a, b] of rows ``rows`` (see
    _boundary_pieces; root_a and root_b: whether a root, not a panel end, is at a or b)."""
    xp = _xs.namespace(g)
    n, alpha = setup.nodes, setup.alpha
    power = 1 / (alpha - 1)
    smooth = not singular_power(alpha)
    half = ((b - a) / 2)[:, None]
    if smooth:
        x, w = _legendre(n, g)
        x = xp.broadcast_to(x, (a.shape[0], n))
        w = xp.broadcast_to(w, (a.shape[0], n))
    else:  # exponent power at each root end: (1 + x) at a, (1 - x) at b
        x, w = _jacobi_by_end(n, power, root_a, root_b)
    t = a[:, None] + half * (x + 1)
    log_e = _deformed.log_exp_beta(_f_tilde(g[rows], t, inducing, setup), 2 - alpha)
    log_w = xp.log(w * half)
    if not smooth:  # the rule holds |t - root|^power: leave [u]_+^power / that
        for at_root, factor in ((root_a, 1 + x), (root_b, 1 - x)):
            on = at_root[:, None]
            log_e = log_e - xp.where(on, power * xp.log(half * factor), 0.0)
            log_w = log_w + xp.where(on, power * xp.log(half), 0.0)
    return Piece(log_e + setup.base.log_density(t) + log_w, t, rows)


def _near_root(points: Array, u_points: Array) -> tuple[Array, Array, Array, Array]:
    """For the low and the high end of every panel: whether a support boundary lies
    within T.NEAR_ROOT panel widths outside that end (B, P), and its distance from
    that end in panel half-widths (B, P; the secant estimate, inf where not near).

    The root is placed by the secant through u at the end and at the first node
    inside: u decreasing outwards and u_end < T.NEAR_ROOT * width * |secant slope|.
    """
    xp = _xs.namespace(points)
    width = points[:, -1] - points[:, 0]  # (P,)
    flags, distances = [], []
    for end, inner in ((0, 1), (-1, -2)):
        u_end, u_in = u_points[..., end], u_points[..., inner]
        step = xp.abs(points[:, inner] - points[:, end])  # (P,)
        rise = u_in - u_end  # > 0: u falls towards the outside
        near = (rise > 0) & (u_end * step < T.NEAR_ROOT * width * rise)
        safe_rise = xp.where(near, rise, xp.ones_like(rise))
        distance = xp.where(near, 2 * u_end * step / (safe_rise * width), math.inf)
        flags.append(near)
        distances.append(distance)
    return flags[0], flags[1], distances[0], distances[1]


def grade_levels(distance: float) -> int:
    """How many geometric levels a half panel needs towards an end whose root lies
    ``distance`` half-widths outside it (the smallest secant estimate of the call).

    Pieces finer than the root's distance are smooth on their own scale, so the
    grading stops T.GRADE_MARGIN levels below the distance (the margin covers the
    secant estimate's error) and never goes deeper than T.GRADE_LEVELS.
    """
    if not distance > 0:
        return T.GRADE_LEVELS
    depth = math.ceil(-math.log(distance) / math.log(T.GRADE_RATIO)) + T.GRADE_MARGIN
    return max(1, min(T.GRADE_LEVELS, depth))


def _graded_pieces(
    g: Array,
    inducing: Array,
    setup: Setup,
    lo: Array,
    hi: Array,
    graded: Array,
    near: tuple[Array, Array, Array, Array],
) -> list[Piece]:
    """Nodes and log masses of full panels next to a root outside them.

    The half of such a panel at an end with a root near it (``near``: flags and
    distances at the low and the high end, see _near_root) is cut into L + 1 pieces
    shrinking geometrically (T.GRADE_RATIO) towards that end, L = grade_levels of the
    call's nearest root; the other half, at least half a panel from the root, is one
    piece and L empty ones (zero weight), so that every panel has the same number of
    pieces and a block is one array pass. Gauss-Legendre, n nodes per piece; blocks of
    panels keep the (pieces x nodes x M) intermediates within T.KERNEL_CHUNK.
    """
    xp = _xs.namespace(g)
    n = setup.nodes
    device = getattr(g, "device", None)
    x, w = _legendre(n, g)
    rows, panels = xp.nonzero(graded)
    near_lo, near_hi = near[0][rows, panels], near[1][rows, panels]
    distance = xp.minimum(near[2][rows, panels], near[3][rows, panels])
    levels = grade_levels(float(xp.min(distance)))  # one depth per call (a host read)
    # distances of the piece ends from the panel end, in half widths
    fine = [T.GRADE_RATIO**-k for k in range(levels + 1)] + [0.0]
    coarse = [1.0] * (levels + 1) + [0.0]
    ladders = xp.asarray([fine, coarse], dtype=g.dtype, device=device)  # (2, L + 2)
    per_panel = 2 * (levels + 1) * n
    block = max(1, T.KERNEL_CHUNK // (per_panel * (inducing.shape[0] + setup.value_count + 4)))
    out = []
    for start in range(0, rows.shape[0], block):
        r, pnl = rows[start : start + block], panels[start : start + block]
        half = ((hi[pnl] - lo[pnl]) / 2)[:, None]  # (R, 1)
        ends = []
        for edge, sign, at_root in ((lo[pnl], 1.0, near_lo), (hi[pnl], -1.0, near_hi)):
            ladder = ladders[xp.astype(~at_root[start : start + block], xp.int64)]  # (R, L+2)
            points = edge[:, None] + sign * half * ladder
            ends.append(
                (
                    xp.minimum(points[:, 1:], points[:, :-1]),
                    xp.maximum(points[:, 1:], points[:, :-1]),
                )
            )
        a = xp.concat([ends[0][0], ends[1][0]], axis=-1)  # (R, pieces)
        b = xp.concat([ends[0][1], ends[1][1]], axis=-1)
        piece = ((b - a) / 2)[..., None]
        t = xp.reshape(a[..., None] + piece * (x + 1), (r.shape[0], -1))  # (R, pieces n)
        weights = xp.reshape(piece * w, (r.shape[0], -1))
        log_e = _deformed.log_exp_beta(_f_tilde(g[r], t, inducing, setup), 2 - setup.alpha)
        out.append(Piece(log_e + setup.base.log_density(t) + xp.log(weights), t, r))
    return out


def _jacobi_by_end(n: int, power: float, root_a: Array, root_b: Array) -> tuple[Array, Array]:
    """Per piece, Gauss-Jacobi nodes/weights of (1 - x)^(power at b) (1 + x)^(power at a)."""
    xp = _xs.namespace(root_a)
    table = [
        _xs.constant_tables(
            ("jacobi", n, power * right, power * left),
            root_a,
            lambda right=right, left=left: gauss_jacobi(n, power * right, power * left),
        )
        for left in (0.0, 1.0)
        for right in (0.0, 1.0)
    ]
    xs = xp.stack([t[0] for t in table])
    ws = xp.stack([t[1] for t in table])
    index = 2 * xp.astype(root_a, xp.int64) + xp.astype(root_b, xp.int64)
    return xs[index], ws[index]


def panel_chunks(edges: Array, rows: int, inducing_count: int, setup: Setup) -> list[Array]:
    """The panel ends cut into overlapping runs (consecutive runs share an end).

    Each run holds about T.KERNEL_CHUNK values in the shared nodes' arrays, nodes x (M
    + V + 8 rows) (the per-row boundary pieces go in blocks of their own), and spans at
    most T.KERNEL_SPAN kernel reaches, so that kernel_band leaves most points out."""
    width = inducing_count + setup.value_count + 8 * rows
    per_chunk = max(1, T.KERNEL_CHUNK // (setup.nodes * width))
    panels = edges.shape[0] - 1
    mean_width = float(edges[-1] - edges[0]) / max(1, panels)
    if mean_width > 0:  # chunks about as wide as the kernel's reach (kernel_band)
        per_chunk = min(per_chunk, max(1, math.ceil(T.KERNEL_SPAN * _reach(setup) / mean_width)))
    return [edges[i : i + per_chunk + 1] for i in range(0, edges.shape[0] - 1, per_chunk)]


def graph_values(edges: Array, rows: int, inducing_count: int, setup: Setup) -> int:
    """About how many float64 values autograd keeps for the whole integral at once:
    per node, the kernel row (M), the values and their intermediates (6 V) and the
    per-row arrays (16 B); measured 70 MB against 146 MB estimated at B = 32, M = 500,
    V = 255 and 8000 nodes, 319 MB against 392 MB at B = 256."""
    nodes = (edges.shape[0] - 1) * setup.nodes
    return nodes * (inducing_count + 6 * setup.value_count + 16 * rows)


def integrate(
    g: Array,
    inducing: Array,
    setup: Setup,
    edges: Array,
    values: Callable[[Array], Array],
    run_chunk: Callable[..., tuple] | None = None,
) -> tuple[Array, Array]:
    """(E_p[v] (B, V), Z scaled by each row's largest node mass (B,)) for rows g (B, M).

    ``values`` maps nodes t (...,) to v(t) (..., V), V = setup.value_count. Panels
    go in chunks (panel_chunks); each chunk is scaled by its own row maximum and the sums are
    combined by an online log-sum-exp. ``run_chunk(f, *arrays)`` runs a chunk
    (default f(*arrays)); the Torch face passes a checkpoint there, so that a
    chunk's intermediates are recomputed in the backward pass instead of kept.
    """
    xp = _xs.namespace(g)
    rows = g.shape[0]
    device = getattr(g, "device", None)
    chunks = panel_chunks(edges, rows, g.shape[1], setup)

    def chunk(g: Array, inducing: Array, edges: Array) -> tuple[Array, Array, Array]:
        return _chunk_sums(g, inducing, setup, edges, values)

    top = xp.full((rows,), -math.inf, dtype=g.dtype, device=device)
    mass = xp.zeros((rows,), dtype=g.dtype, device=device)
    numer = None
    for edges_chunk in chunks:
        args = (g, inducing, edges_chunk)
        part = run_chunk(chunk, *args) if run_chunk and len(chunks) > 1 else chunk(*args)
        chunk_top, chunk_mass, chunk_numer = part
        new_top = xp.maximum(top, chunk_top)
        finite = xp.isfinite(new_top)
        old = xp.where(finite, xp.exp(xp.where(finite, top - new_top, 0.0)), 0.0)
        new = xp.where(finite, xp.exp(xp.where(finite, chunk_top - new_top, 0.0)), 0.0)
        mass = mass * old + chunk_mass * new
        scaled = chunk_numer * new[:, None]
        numer = scaled if numer is None else numer * old[:, None] + scaled
        top = new_top
    tiny = xp.finfo(g.dtype).smallest_normal
    return numer / xp.clip(mass, min=tiny)[:, None], mass


def _chunk_sums(
    g: Array, inducing: Array, setup: Setup, edges: Array, values: Callable[[Array], Array]
) -> tuple[Array, Array, Array]:
    """(row maximum of the log masses, sum of masses, sum of masses times v) on the
    panels between consecutive ``edges``, each scaled by that (constant) row maximum."""
    xp = _xs.namespace(g)
    rows = g.shape[0]
    pieces = node_pieces(g, inducing, setup, edges)
    tops = [
        xp.max(p.log_mass, axis=-1)
        if p.rows is None
        else _xs.index_max(rows, p.rows, xp.max(p.log_mass, axis=-1))
        for p in pieces
    ]
    top = _xs.stop_gradient(xp.max(xp.stack(tops), axis=0))
    safe_top = xp.where(xp.isfinite(top), top, xp.zeros_like(top))
    shared = pieces[0]
    scaled = xp.exp(shared.log_mass - safe_top[:, None])  # (B, K)
    mass, numer = xp.sum(scaled, axis=-1), scaled @ values(shared.t)
    for piece in pieces[1:]:
        scaled = xp.exp(piece.log_mass - safe_top[piece.rows, None])  # (R, K)
        mass = _xs.index_add(mass, piece.rows, xp.sum(scaled, axis=-1))
        weighted = xp.sum(scaled[:, :, None] * values(piece.t), axis=1)
        numer = _xs.index_add(numer, piece.rows, weighted)
    return top, mass, numer
