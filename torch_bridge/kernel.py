"""Kernel attention in Torch (seed 001 section 5, Alg 1): kernel softmax and sparsemax / entmax.

p(t) = q0(t) exp_{2-alpha}(f~(t)) / Z on the base interval [a, b], with
f~(t) = sum_i gamma_i k(t, t_i) (Gaussian or Laplace kernel), and
r_j = E_p[psi_j] for Gaussian RBFs psi_j.

Quadrature (kink-aware, no host sync after the set-up): [a, b] is cut into
panels at the Laplace kernel's centres (its kinks), at the Gaussian base's
break points, and into pieces no wider than the narrowest of the kernel
bandwidth, the RBF widths and the base std. Each panel gets ``nodes``
Gauss-Legendre nodes, shared by every row, so f~ and psi on them are matrix
products. For alpha > 1, a panel where the values of u = 1 + (alpha-1) f~ at its ends
or nodes differ in sign holds support boundaries: the roots are found
(bracketed Newton) and the positive pieces get their own nodes (Gauss-Legendre
when 1/(alpha-1) is an integer, else Gauss-Jacobi carrying |t - root|^(1/(alpha-1))
at each root). Everything is summed in log space
(log q0 + log exp_{2-alpha} f~ minus the row maximum), so a Gaussian base far
from the mass gives neither Z = 0 nor NaN.

Backward: autograd through the integrand, with the nodes constant. The
support boundaries are constants in the backward pass, which is exact by the
Leibniz rule: d/dgamma int_a^{root(gamma)} g = int dg/dgamma + g(root) droot/dgamma,
and g(root) = [u(root)]_+^(1/(alpha-1)) = 0. (Kinks of the Laplace kernel
are fixed panel ends; the integrand is continuous there, so moving them
changes nothing either.) Checked against finite differences in the tests.
The exception is a non-integer 1/(alpha-1), whose Gauss-Jacobi rule is
exact only at the exact root: there the root carries its implicit gradient
(see _boundary_part).
One panel is assumed to hold at most one support boundary; panels are no
wider than the kernel bandwidth, over which u changes sign at most once
unless a bump of f~ just touches -1/(alpha-1).
"""

from __future__ import annotations

import math
from functools import lru_cache
from itertools import pairwise
from typing import NamedTuple

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from torch_bridge._generated import deformed as _deformed
from torch_bridge._generated import gaussian as _gaussian
from torch_bridge.basis import GaussianRBF, alpha_value
from tsallis.core.bases import GaussianBase, UniformBase
from tsallis.core.rules import gauss_jacobi
from tsallis.core.tuning import SMOOTH_EXPONENT

__all__ = ["KernelAttention", "kernel_attention"]

_F64 = torch.float64
KERNELS = ("gaussian", "laplace")
_NEWTON_STEPS = 10
# Panels are no wider than this fraction of min(bandwidth, RBF widths, base std).
PANEL_FRACTION = 1.0
# Steep f~: the kernel's share of the panel width shrinks with the envelope E, the
# largest sum_i |gamma_i| k(t_j, t_i) over rows and inducing points t_j. A Gaussian
# kernel's exp(f~) peaks over about bandwidth / sqrt(E): the width shrinks by
# sqrt(E / STEEP_UNIT). A Laplace kernel's decays from its cusps over bandwidth / E:
# by E / STEEP_UNIT. (Measured: both within 1e-13 of the refined NumPy reference
# for gamma up to 1000 N(0, 1) on 12 inducing points, alpha in {1, 1.0005, 1.5, 2, 3}.)
STEEP_UNIT = 16.0
# At most MAX_PANELS panels: more is refused with a ValueError naming a bandwidth
# (or RBF width, or base std) that works.
MAX_PANELS = 1 << 16
# Memory: panels are integrated in chunks of about CHUNK_ELEMENTS float64 values per
# intermediate (rows x nodes x (M + N)); with gradients each chunk is recomputed in
# the backward pass (checkpointing), so peak memory does not grow with the panel count.
CHUNK_ELEMENTS = 1 << 22
# A full panel whose end lies within NEAR_ROOT panel widths of a support boundary
# just outside it (secant estimate through the end and the first node) holds a
# nearly singular [u]_+^power, power not an integer: each half of it is graded
# towards its end in GRADE_LEVELS pieces shrinking by GRADE_RATIO (down to 1e-16
# of its length), so that every piece lies at least 1/7 of its width from the root.
NEAR_ROOT = 1.0
GRADE_RATIO = 8.0
GRADE_LEVELS = 18


@lru_cache(maxsize=64)
def _jacobi_cpu(n: int, right: float, left: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Gauss-Jacobi nodes and weights of (1 - x)^right (1 + x)^left on [-1, 1] (copies)."""
    x, w = gauss_jacobi(n, right, left)
    return torch.tensor(x, dtype=_F64), torch.tensor(w, dtype=_F64)


def kernel_matrix(
    t: torch.Tensor, inducing: torch.Tensor, kernel: str, bandwidth: float
) -> torch.Tensor:
    """k(t, t_i): (..., M) for t (...)."""
    distance = t[..., None] - inducing
    if kernel == "gaussian":
        return torch.exp(-(distance * distance) / (2 * bandwidth * bandwidth))
    return torch.exp(-distance.abs() / bandwidth)


def _log_base(t: torch.Tensor, base: UniformBase | GaussianBase) -> torch.Tensor:
    if isinstance(base, UniformBase):
        return torch.full_like(t, -math.log(base.b - base.a))
    return _gaussian.logpdf(t, base.mean, base.std) - base.log_mass()


def panel_edges(
    inducing: torch.Tensor,
    kernel: str,
    bandwidth: float,
    base: UniformBase | GaussianBase,
    narrowest_rbf: float,
    envelope: float = 0.0,
) -> torch.Tensor:
    """Sorted panel ends on [a, b] (float64, on CPU): kinks, base break points, width cap.

    The width cap is PANEL_FRACTION times the narrowest of the kernel bandwidth
    (divided by sqrt(envelope / STEEP_UNIT) for a steep f~), the RBF widths and the
    base std. Raises ValueError when that needs more than MAX_PANELS panels.
    """
    a, b = float(base.a), float(base.b)
    cuts = [a, b]
    if kernel == "laplace":
        cuts += [float(t) for t in inducing.detach().cpu().tolist() if a < t < b]
    cuts += [t for t in base.breakpoints() if a < t < b]
    steep = max(1.0, envelope / STEEP_UNIT)
    steep = math.sqrt(steep) if kernel == "gaussian" else steep
    limits = {"bandwidth": (bandwidth / steep, bandwidth), "RBF width": (narrowest_rbf, None)}
    if isinstance(base, GaussianBase):
        limits["base std"] = (base.std, None)
    name, (width, _) = min(limits.items(), key=lambda item: item[1][0])
    width *= PANEL_FRACTION
    cuts = sorted(set(cuts))
    counts = [max(1, math.ceil((hi - lo) / width)) for lo, hi in pairwise(cuts)]
    if sum(counts) > MAX_PANELS:
        factor = sum(counts) / MAX_PANELS
        value = limits[name][1] or limits[name][0]
        why = " (with gamma this large)" if name == "bandwidth" and steep > 1 else ""
        raise ValueError(
            f"kernel_attention: {sum(counts)} panels would be needed on [{a:g}, {b:g}], more"
            f" than MAX_PANELS = {MAX_PANELS}: the panel width follows the {name}"
            f" {value:.3g}{why}; use a {name} of at least {value * factor:.3g}"
            " (or a shorter base interval)"
        )
    edges = []
    for (lo, hi), pieces in zip(pairwise(cuts), counts, strict=True):
        edges += [lo + (hi - lo) * i / pieces for i in range(pieces)]
    edges.append(b)
    return torch.tensor(edges, dtype=_F64)


def _envelope(gamma: torch.Tensor, inducing: torch.Tensor, kernel: str, bandwidth: float) -> float:
    """max over rows and inducing points t_j of sum_i |gamma_i| k(t_j, t_i) (a host read).

    Bounds |f~| near the inducing points; the curvature of f~ is at most this over
    bandwidth^2. Computed in blocks of inducing points (memory M x block).
    """
    if gamma.numel() == 0:
        return 0.0
    with torch.no_grad():
        g = gamma.detach().abs().reshape(-1, inducing.shape[0]).to(_F64)
        points = inducing.detach().to(_F64)
        block = max(1, CHUNK_ELEMENTS // max(1, points.shape[0] + g.shape[0]))
        top = 0.0
        for start in range(0, points.shape[0], block):
            k = kernel_matrix(points[start : start + block], points, kernel, bandwidth)
            top = max(top, float((g @ k.T).amax()))
    return top


def _u_and_slope(
    t: torch.Tensor,
    gamma: torch.Tensor,
    inducing: torch.Tensor,
    kernel: str,
    bandwidth: float,
    alpha: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """u = 1 + (alpha-1) f~(t) and du/dt, for t (R,) and gamma (R, M)."""
    distance = t[:, None] - inducing
    k = kernel_matrix(t, inducing, kernel, bandwidth)
    if kernel == "gaussian":
        dk = -distance / (bandwidth * bandwidth) * k
    else:
        dk = -torch.sign(distance) / bandwidth * k
    both = torch.einsum("rm,qrm->qr", gamma, torch.stack([k, dk]))
    return 1 + (alpha - 1) * both[0], (alpha - 1) * both[1]


def _roots(
    gamma: torch.Tensor,
    lo: torch.Tensor,
    hi: torch.Tensor,
    u_lo: torch.Tensor,
    u_hi: torch.Tensor,
    inducing: torch.Tensor,
    kernel: str,
    bandwidth: float,
    alpha: float,
) -> torch.Tensor:
    """The root of u = 1 + (alpha-1) f~ in [lo, hi], where u changes sign.

    Bracketed Newton from the secant point: steps that leave the bracket
    become bisections. Brackets are one node spacing wide, where Newton
    converges in a few steps; _NEWTON_STEPS leaves a margin. The root must be
    exact to rounding: the Gauss-Jacobi rule divides by |t - root|^(1/(alpha-1)).
    """
    left, right = lo.clone(), hi.clone()
    t = lo + (hi - lo) * (u_lo / (u_lo - u_hi))
    rising = u_lo <= 0  # u goes from <= 0 at lo to > 0 at hi
    for _ in range(_NEWTON_STEPS):
        u, slope = _u_and_slope(t, gamma, inducing, kernel, bandwidth, alpha)
        below = (u <= 0) == rising  # the root lies to the right of t
        left, right = torch.where(below, t, left), torch.where(below, right, t)
        step = t - u / torch.where(slope == 0, torch.ones_like(slope), slope)
        inside = (slope != 0) & (step >= left) & (step <= right)
        t = torch.where(inside, step, (left + right) / 2)
    return t


def kernel_attention(
    gamma: torch.Tensor,
    inducing: torch.Tensor,
    basis: GaussianRBF,
    alpha: float | torch.Tensor = 2.0,
    kernel: str = "gaussian",
    bandwidth: float = 0.1,
    base: UniformBase | GaussianBase | None = None,
    *,
    nodes: int | None = None,
    validate: bool = True,
) -> torch.Tensor:
    """r_j = E_p[psi_j] for the kernel deformed-exponential density (seed 001 Alg 1), (..., N).

    ``gamma`` (..., M) are the kernel weights at the ``inducing`` points (M,)
    (shared by the batch); ``kernel`` "gaussian" or "laplace" with
    ``bandwidth``; ``base`` the law Q on [a, b] (tsallis.kernels.UniformBase
    or GaussianBase; default uniform on [0, 1]); ``nodes`` Gauss-Legendre nodes
    per panel (None: 16 for alpha <= 2, 32 above). alpha = 1 is kernel softmax,
    alpha = 2 kernel sparsemax, any alpha > 1 kernel entmax. Gradients reach
    gamma, the inducing points and the basis; float32 and float64 (computed
    in float64). Building the panels reads the inducing points, the basis
    widths and max |f~| back from the device once per call.

    M = 0 inducing points is f~ = 0: r_j = E_Q[psi_j]. An empty batch gives an
    empty result. Memory is bounded by CHUNK_ELEMENTS per intermediate, whatever
    the bandwidth; more than MAX_PANELS panels is refused.

    Raises:
        TypeError: gamma, the basis or the base has the wrong type.
        ValueError: shapes, devices or dtypes that do not match; a bandwidth or
            node count out of range; a bandwidth (or RBF width) so small that
            more than MAX_PANELS panels would be needed (the message says what
            would work); with ``validate``, non-finite gamma or inducing points,
            or a row whose density has no mass.
    """
    alpha_f = alpha_value(alpha)
    if not isinstance(gamma, torch.Tensor) or not gamma.is_floating_point():
        raise TypeError("gamma must be a floating-point tensor")
    if not isinstance(inducing, torch.Tensor) or inducing.dim() != 1:
        raise ValueError("inducing must be a 1D tensor (M,) of inducing points")
    if gamma.dim() == 0 or gamma.shape[-1:] != inducing.shape:
        raise ValueError(
            f"gamma must have shape (..., {inducing.shape[0]}) to match inducing,"
            f" got {tuple(gamma.shape)}"
        )
    if not isinstance(basis, GaussianRBF) or basis.dim != 1:
        raise TypeError("basis must be a 1D GaussianRBF")
    for name, tensor in (("inducing", inducing), ("basis", basis.mu)):
        if tensor.device != gamma.device or tensor.dtype != gamma.dtype:
            raise ValueError(
                f"{name} ({tensor.dtype}, {tensor.device}) must match gamma"
                f" ({gamma.dtype}, {gamma.device})"
            )
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")
    if (
        isinstance(bandwidth, bool)
        or not isinstance(bandwidth, (int, float))
        or not (math.isfinite(bandwidth) and bandwidth > 0)
    ):
        raise ValueError(f"bandwidth must be a finite number > 0, got {bandwidth!r}")
    base = UniformBase() if base is None else base
    if not isinstance(base, (UniformBase, GaussianBase)):
        raise TypeError("base must be a tsallis.kernels.UniformBase or GaussianBase")
    if nodes is None:
        # [u]_+^(1/(alpha-1)) with 1/(alpha-1) < 1 is nearly singular in a full panel
        # next to a support boundary; 32 nodes measured 1e-15 there, 16 nodes 1e-10.
        nodes = 16 if alpha_f <= 2 else 32
    if not isinstance(nodes, int) or isinstance(nodes, bool) or nodes < 2:
        raise ValueError(f"nodes must be an int >= 2 (or None), got {nodes!r}")
    batch = gamma.shape[:-1]
    if batch.numel() == 0:  # empty in, empty out (on the graph, as torch's own ops)
        anchor = 0 * (gamma.sum() + inducing.sum() + basis.mu.sum() + basis.sigma.sum())
        return gamma.new_zeros(*batch, basis.size) + anchor
    if validate and not bool(torch.isfinite(gamma).all() & torch.isfinite(inducing).all()):
        raise ValueError("gamma and inducing must be finite")
    narrowest = float(basis.sigma.detach().min())
    envelope = _envelope(gamma, inducing, kernel, float(bandwidth))
    edges = panel_edges(inducing, kernel, float(bandwidth), base, narrowest, envelope)
    r, mass = _integrate(
        gamma.reshape(batch.numel(), inducing.shape[0]).to(_F64),
        inducing.to(_F64),
        basis,
        alpha_f,
        _Setup(kernel, float(bandwidth), base, edges.to(gamma.device), nodes),
    )
    if validate and not bool((mass > 0).all()):
        raise ValueError(
            "exp_{2-alpha}(f~) vanishes on the whole interval for some row: the density has no mass"
        )
    return r.reshape(*batch, basis.size).to(gamma.dtype)


class _Setup(NamedTuple):
    """What every chunk shares: kernel, bandwidth, base, panel ends and nodes per panel."""

    kernel: str
    bandwidth: float
    base: UniformBase | GaussianBase
    edges: torch.Tensor
    nodes: int


def _integrate(
    g: torch.Tensor, inducing: torch.Tensor, basis: GaussianRBF, alpha: float, setup: _Setup
) -> tuple[torch.Tensor, torch.Tensor]:
    """(r (B, N), Z scaled by the row maximum (B,)) for gamma (B, M) in float64.

    Panels go in chunks of about CHUNK_ELEMENTS values per intermediate; the sums
    are combined by an online log-sum-exp (each chunk is scaled by its own row
    maximum). With gradients and more than one chunk, each chunk is checkpointed
    (recomputed in the backward pass) so that its intermediates are not kept.
    """
    mu, sd = basis.mu.to(_F64), basis.sigma.to(_F64)
    rows, width = g.shape[0], g.shape[1] + mu.shape[0] + 8
    panels = setup.edges.shape[0] - 1
    per_chunk = max(1, CHUNK_ELEMENTS // (rows * setup.nodes * width))
    starts = range(0, panels, per_chunk)
    keep_graph = torch.is_grad_enabled() and any(t.requires_grad for t in (g, inducing, mu, sd))
    top = torch.full((rows,), -math.inf, dtype=_F64, device=g.device)
    mass = torch.zeros(rows, dtype=_F64, device=g.device)
    numer = torch.zeros(rows, mu.shape[0], dtype=_F64, device=g.device)
    for start in starts:
        edges = setup.edges[start : start + per_chunk + 1]
        args = (g, inducing, mu, sd, edges)
        if keep_graph and len(starts) > 1:
            part = checkpoint(_chunk, alpha, setup, *args, use_reentrant=False)
        else:
            part = _chunk(alpha, setup, *args)
        chunk_top, chunk_mass, chunk_numer = part
        new_top = torch.maximum(top, chunk_top)
        finite = torch.isfinite(new_top)
        old = torch.where(finite, torch.exp(top - new_top), 0.0)
        new = torch.where(finite, torch.exp(chunk_top - new_top), 0.0)
        mass = mass * old + chunk_mass * new
        numer = numer * old[:, None] + chunk_numer * new[:, None]
        top = new_top
    r = numer / torch.clamp(mass, min=torch.finfo(_F64).tiny)[:, None]
    return r, mass


def _chunk(
    alpha: float,
    setup: _Setup,
    g: torch.Tensor,
    inducing: torch.Tensor,
    mu: torch.Tensor,
    sd: torch.Tensor,
    edges: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(row maximum of the log masses, sum of masses, sum of masses times psi) on the
    panels between consecutive ``edges``, each scaled by that (detached) row maximum."""
    n, kernel, bandwidth, base = setup.nodes, setup.kernel, setup.bandwidth, setup.base
    lo_t, hi_t = edges[:-1], edges[1:]
    half = (hi_t - lo_t) / 2  # (P,)
    x, w = (v.to(g.device) for v in _jacobi_cpu(n, 0.0, 0.0))
    t_shared = (lo_t[:, None] + half[:, None] * (x + 1)).reshape(-1)  # (P n,)
    w_shared = (half[:, None] * w).reshape(-1)
    f_shared = g @ kernel_matrix(t_shared, inducing, kernel, bandwidth).T  # (B, P n)
    log_e = _deformed.log_exp_beta(f_shared, 2 - alpha)  # -inf off the support
    parts = []
    if alpha > 1:
        # Signs of u at each panel's ends and nodes locate the support boundaries.
        f_edges = (g @ kernel_matrix(edges, inducing, kernel, bandwidth).T).detach()
        u_nodes = (1 + (alpha - 1) * f_shared.detach()).reshape(g.shape[0], lo_t.shape[0], n)
        u_edges = 1 + (alpha - 1) * f_edges
        u_points = torch.cat([u_edges[:, :-1, None], u_nodes, u_edges[:, 1:, None]], -1)
        changes = (u_points[..., :-1] > 0) != (u_points[..., 1:] > 0)  # (B, P, n + 1)
        full = ~changes.any(-1) & (u_edges[:, :-1] > 0)
        points = torch.cat([lo_t[:, None], t_shared.reshape(-1, n), hi_t[:, None]], -1)
        graded = full & _near_root(points, u_points) if _singular_power(alpha) else None
        keep = full if graded is None else full & ~graded
        log_e = torch.where(keep.repeat_interleave(n, dim=1), log_e, -math.inf)
        parts = _boundary_parts(
            g, inducing, kernel, bandwidth, alpha, base, mu, sd, points, u_points, changes, n
        )
        if graded is not None and bool(graded.any()):
            parts += _graded_parts(
                g, inducing, kernel, bandwidth, alpha, base, mu, sd, lo_t, hi_t, graded, n
            )
    log_mass = log_e + _log_base(t_shared, base) + torch.log(w_shared)
    psi = _gaussian.pdf(t_shared[:, None], mu, sd)
    tops = [log_mass.amax(-1)] + [_row_max(p[0], p[2], g.shape[0]) for p in parts]
    top = torch.stack(tops).amax(0).detach()
    safe_top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
    scaled = torch.exp(log_mass - safe_top[:, None])  # (B, nodes)
    mass, numer = scaled.sum(-1), scaled @ psi
    for log_m, values, rows in parts:
        scaled = torch.exp(log_m - safe_top[rows, None])  # (R, n)
        mass = mass.index_add(0, rows, scaled.sum(-1))
        numer = numer.index_add(0, rows, (scaled[:, :, None] * values).sum(1))
    return top, mass, numer


def _row_max(values: torch.Tensor, rows: torch.Tensor, count: int) -> torch.Tensor:
    top = torch.full((count,), -math.inf, dtype=values.dtype, device=values.device)
    return top.scatter_reduce(0, rows, values.amax(-1), reduce="amax")


def _boundary_parts(
    g: torch.Tensor,
    inducing: torch.Tensor,
    kernel: str,
    bandwidth: float,
    alpha: float,
    base: UniformBase | GaussianBase,
    mu: torch.Tensor,
    sd: torch.Tensor,
    points: torch.Tensor,
    u_points: torch.Tensor,
    changes: torch.Tensor,
    n: int,
) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """Log masses, psi values and row indices on the support pieces of boundary panels.

    A boundary panel has a sign change of u between consecutive points of
    (lo, its nodes, hi). Its first and last changes bracket roots r1 <= r2, and
    its support is [lo, r1] and/or [r2, hi] (u > 0 at the panel ends) or
    [r1, r2] (u <= 0 at both ends): at most two pieces, each with its own
    nodes. (A third root in one panel, or a dip below 0 between two nodes,
    would be missed; panels are no wider than the kernel bandwidth.)

    Integer 1/(alpha-1) (alpha = 2, 3/2, 4/3, ...): [u]_+^power is smooth up to a
    root, so plain Gauss-Legendre on each piece, with the roots constants in
    the backward pass (the Leibniz rule of the module docstring). Otherwise
    Gauss-Jacobi with |t - root|^power at each root end; that rule is exact
    only at the exact root, so its nodes carry the root's implicit gradient
    d root = -(du/dgamma) / (du/dt) (one Newton step whose value is 0).
    """
    rows, panels = changes.any(-1).nonzero(as_tuple=True)
    if rows.numel() == 0:
        return []
    power = 1 / (alpha - 1)
    smooth = not _singular_power(alpha)
    flags = changes[rows, panels]  # (R, n + 1)
    width = flags.shape[-1]
    first = flags.int().argmax(-1)
    last = width - 1 - flags.flip(-1).int().argmax(-1)
    pts, vals = points[panels], u_points[rows, panels]
    # Both brackets in one solve (first and last coincide when there is one root).
    k = torch.cat([first, last])
    pts2, vals2, rows2 = pts.repeat(2, 1), vals.repeat(2, 1), rows.repeat(2)
    lo, hi = pts2.gather(-1, k[:, None])[:, 0], pts2.gather(-1, k[:, None] + 1)[:, 0]
    u_lo, u_hi = vals2.gather(-1, k[:, None])[:, 0], vals2.gather(-1, k[:, None] + 1)[:, 0]
    root = _roots(
        g[rows2].detach(), lo, hi, u_lo, u_hi, inducing.detach(), kernel, bandwidth, alpha
    )
    if not smooth:
        u_root, slope = _u_and_slope(root, g[rows2], inducing, kernel, bandwidth, alpha)
        root = root - (u_root - u_root.detach()) / slope.detach()
    r1, r2 = root.split(rows.shape[0])
    lo_t, hi_t = pts[:, 0], pts[:, -1]
    in_lo, in_hi = vals[:, 0] > 0, vals[:, -1] > 0
    # (a, b, root at a, root at b, which panels have this piece)
    pieces = [
        (
            torch.where(in_lo, lo_t, torch.where(in_hi, r2, r1)),
            torch.where(in_lo, r1, torch.where(in_hi, hi_t, r2)),
            ~in_lo,
            ~(~in_lo & in_hi),
            torch.ones_like(in_lo),
        ),
        (r2, hi_t, torch.ones_like(in_lo), torch.zeros_like(in_lo), in_lo & in_hi),
    ]
    out = []
    for a, b, root_a, root_b, present in pieces:
        if not bool(present.any()):
            continue
        sel = present.nonzero().squeeze(-1)
        a, b, root_a, root_b = a[sel], b[sel], root_a[sel], root_b[sel]
        half = ((b - a) / 2)[:, None]
        if smooth:
            x, w = (v.to(g.device) for v in _jacobi_cpu(n, 0.0, 0.0))
            x, w = x.expand(sel.shape[0], -1), w.expand(sel.shape[0], -1)
        else:  # exponent power at each root end: (1 + x) at a, (1 - x) at b
            x, w = _jacobi_by_end(n, power, root_a, root_b, g.device)
        t = a[:, None] + half * (x + 1)
        f = torch.einsum("rm,rnm->rn", g[rows[sel]], kernel_matrix(t, inducing, kernel, bandwidth))
        log_e = _deformed.log_exp_beta(f, 2 - alpha)
        log_w = torch.log(w * half)
        if not smooth:  # the rule holds |t - root|^power: leave [u]_+^power / that
            for at_root, factor in ((root_a, 1 + x), (root_b, 1 - x)):
                on = at_root[:, None]
                log_e = log_e - torch.where(on, power * torch.log(half * factor), 0.0)
                log_w = log_w + torch.where(on, power * torch.log(half), 0.0)
        log_mass = log_e + _log_base(t, base) + log_w
        psi = _gaussian.pdf(t[..., None], mu, sd)
        out.append((log_mass, psi, rows[sel]))
    return out


def _singular_power(alpha: float) -> bool:
    """Whether [u]_+^(1/(alpha-1)) needs Gauss-Jacobi at a root: the power is not an
    integer (a polynomial up to the root) and not so high that it is flat there
    (alpha close to 1; quadrature.SMOOTH_EXPONENT)."""
    power = 1 / (alpha - 1)
    return abs(power - round(power)) >= 1e-9 and power < SMOOTH_EXPONENT


def _near_root(points: torch.Tensor, u_points: torch.Tensor) -> torch.Tensor:
    """(B, P): a support boundary lies within NEAR_ROOT panel widths outside an end.

    The root is placed by the secant through u at the end and at the first node
    inside: u decreasing outwards and u_end < NEAR_ROOT * width * |secant slope|.
    """
    width = points[:, -1] - points[:, 0]  # (P,)
    flags = []
    for end, inner in ((0, 1), (-1, -2)):
        u_end, u_in = u_points[..., end], u_points[..., inner]
        step = (points[:, inner] - points[:, end]).abs()  # (P,)
        rise = u_in - u_end  # > 0: u falls towards the outside
        flags.append((rise > 0) & (u_end * step < NEAR_ROOT * width * rise))
    return flags[0] | flags[1]


def _graded_parts(
    g: torch.Tensor,
    inducing: torch.Tensor,
    kernel: str,
    bandwidth: float,
    alpha: float,
    base: UniformBase | GaussianBase,
    mu: torch.Tensor,
    sd: torch.Tensor,
    lo: torch.Tensor,
    hi: torch.Tensor,
    graded: torch.Tensor,
    n: int,
) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """Log masses, psi values and rows for full panels next to a root outside them.

    Each half is cut into GRADE_LEVELS + 1 pieces shrinking geometrically towards
    its outer end (Gauss-Legendre, n nodes each). Done in blocks of panels so that
    the (pieces x nodes x (M + N)) intermediates stay within CHUNK_ELEMENTS.
    """
    rows, panels = graded.nonzero(as_tuple=True)
    levels = GRADE_RATIO ** -torch.arange(GRADE_LEVELS + 1, dtype=_F64, device=g.device)
    inner = torch.cat([levels, levels.new_zeros(1)])  # distances from the end, in half widths
    x, w = (v.to(g.device) for v in _jacobi_cpu(n, 0.0, 0.0))
    per_pair = 2 * (GRADE_LEVELS + 1) * n
    block = max(1, CHUNK_ELEMENTS // (per_pair * (inducing.shape[0] + mu.shape[0] + 4)))
    out = []
    for start in range(0, rows.shape[0], block):
        r, pnl = rows[start : start + block], panels[start : start + block]
        half = ((hi[pnl] - lo[pnl]) / 2)[:, None]  # (R, 1)
        ends = []  # (a, b) of each piece: left half towards lo, right half towards hi
        for edge, sign in ((lo[pnl][:, None], 1.0), (hi[pnl][:, None], -1.0)):
            near, far = edge + sign * half * inner[1:], edge + sign * half * inner[:-1]
            ends.append((torch.minimum(near, far), torch.maximum(near, far)))
        a = torch.cat([e[0] for e in ends], -1)  # (R, pieces)
        b = torch.cat([e[1] for e in ends], -1)
        piece = ((b - a) / 2)[..., None]
        t = (a[..., None] + piece * (x + 1)).reshape(r.shape[0], -1)  # (R, pieces n)
        weights = (piece * w).reshape(r.shape[0], -1)
        k = kernel_matrix(t, inducing, kernel, bandwidth)  # (R, pieces n, M)
        f = torch.einsum("rm,rnm->rn", g[r], k)
        log_mass = _deformed.log_exp_beta(f, 2 - alpha) + _log_base(t, base) + torch.log(weights)
        out.append((log_mass, _gaussian.pdf(t[..., None], mu, sd), r))
    return out


def _jacobi_by_end(
    n: int, power: float, root_a: torch.Tensor, root_b: torch.Tensor, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per piece, Gauss-Jacobi nodes/weights of (1 - x)^(power at b) (1 + x)^(power at a)."""
    table = [
        [v.to(device) for v in _jacobi_cpu(n, power * right, power * left)]
        for left in (0.0, 1.0)
        for right in (0.0, 1.0)
    ]
    xs = torch.stack([t[0] for t in table])
    ws = torch.stack([t[1] for t in table])
    index = 2 * root_a.long() + root_b.long()
    return xs[index], ws[index]


class KernelAttention(nn.Module):
    """Kernel attention layer: forward(gamma, values) -> context B r (seed 001 Alg 1).

    Holds the inducing points (a buffer, or a parameter when given one), the
    basis and the kernel settings of ``kernel_attention``. ``values`` B is
    (..., D_v, N); the context is (..., D_v).
    """

    def __init__(
        self,
        inducing: torch.Tensor,
        basis: GaussianRBF,
        alpha: float = 2.0,
        kernel: str = "gaussian",
        bandwidth: float = 0.1,
        base: UniformBase | GaussianBase | None = None,
        *,
        nodes: int | None = None,
    ) -> None:
        super().__init__()
        if isinstance(inducing, nn.Parameter):
            self.inducing = inducing
        else:
            self.register_buffer("inducing", inducing)
        self.basis = basis
        self.alpha = alpha_value(alpha)
        self.kernel, self.bandwidth, self.base, self.nodes = kernel, bandwidth, base, nodes

    def forward(self, gamma: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        r = kernel_attention(
            gamma,
            self.inducing,
            self.basis,
            self.alpha,
            self.kernel,
            self.bandwidth,
            self.base,
            nodes=self.nodes,
        )
        if values.shape[-1] != r.shape[-1]:
            raise ValueError(
                f"values must have shape (..., D_v, {r.shape[-1]}), got {tuple(values.shape)}"
            )
        return (values @ r[..., None])[..., 0]
