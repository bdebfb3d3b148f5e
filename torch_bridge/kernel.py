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

import torch
from torch import nn

from torch_bridge._generated import deformed as _deformed
from torch_bridge._generated import gaussian as _gaussian
from torch_bridge.attention import GaussianRBF, _alpha
from tsallis.kernels import GaussianBase, UniformBase

__all__ = ["KernelAttention", "kernel_attention"]

_F64 = torch.float64
KERNELS = ("gaussian", "laplace")
_NEWTON_STEPS = 10
# Panels are no wider than this fraction of min(bandwidth, RBF widths, base std).
PANEL_FRACTION = 1.0


@lru_cache(maxsize=64)
def _jacobi_cpu(n: int, right: float, left: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Gauss-Jacobi nodes and weights of (1 - x)^right (1 + x)^left on [-1, 1]."""
    from scipy.special import roots_jacobi

    x, w = roots_jacobi(n, right, left)
    return torch.as_tensor(x, dtype=_F64), torch.as_tensor(w, dtype=_F64)


def _kernel_matrix(
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
) -> torch.Tensor:
    """Sorted panel ends on [a, b] (float64, on CPU): kinks, base break points, width cap."""
    a, b = float(base.a), float(base.b)
    cuts = [a, b]
    if kernel == "laplace":
        cuts += [float(t) for t in inducing.detach().cpu().tolist() if a < t < b]
    cuts += [t for t in base.breakpoints() if a < t < b]
    width = min(bandwidth, narrowest_rbf) * PANEL_FRACTION
    if isinstance(base, GaussianBase):
        width = min(width, base.std)
    cuts = sorted(set(cuts))
    edges = []
    for lo, hi in pairwise(cuts):
        pieces = max(1, math.ceil((hi - lo) / width))
        edges += [lo + (hi - lo) * i / pieces for i in range(pieces)]
    edges.append(b)
    return torch.tensor(edges, dtype=_F64)


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
    k = _kernel_matrix(t, inducing, kernel, bandwidth)
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
    in float64). Building the panels reads the inducing points and the basis
    widths back from the device once per call.
    """
    alpha_f = _alpha(alpha)
    if not isinstance(gamma, torch.Tensor) or not gamma.is_floating_point():
        raise TypeError("gamma must be a floating-point tensor")
    if not isinstance(inducing, torch.Tensor) or inducing.dim() != 1:
        raise ValueError("inducing must be a 1D tensor (M,) of inducing points")
    if gamma.shape[-1:] != inducing.shape:
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
    if not (isinstance(bandwidth, (int, float)) and math.isfinite(bandwidth) and bandwidth > 0):
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
    if validate and not bool(torch.isfinite(gamma).all() & torch.isfinite(inducing).all()):
        raise ValueError("gamma and inducing must be finite")
    narrowest = float(basis.sigma.detach().min())
    edges = panel_edges(inducing, kernel, float(bandwidth), base, narrowest).to(gamma.device)
    out = _integrate(
        gamma.to(_F64),
        inducing.to(_F64),
        basis,
        alpha_f,
        kernel,
        float(bandwidth),
        base,
        edges,
        nodes,
    )
    mass = out[1]
    if validate and not bool((mass > 0).all()):
        raise ValueError(
            "exp_{2-alpha}(f~) vanishes on the whole interval for some row: the density has no mass"
        )
    return out[0].to(gamma.dtype)


def _integrate(
    gamma: torch.Tensor,
    inducing: torch.Tensor,
    basis: GaussianRBF,
    alpha: float,
    kernel: str,
    bandwidth: float,
    base: UniformBase | GaussianBase,
    edges: torch.Tensor,
    n: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(r, Z scaled by the row maximum) for gamma (..., M) in float64."""
    batch = gamma.shape[:-1]
    g = gamma.reshape(-1, gamma.shape[-1])  # (B, M)
    mu, sd = basis.mu.to(_F64), basis.sigma.to(_F64)
    lo_t, hi_t = edges[:-1], edges[1:]
    half = (hi_t - lo_t) / 2  # (P,)
    x, w = (v.to(g.device) for v in _jacobi_cpu(n, 0.0, 0.0))
    t_shared = (lo_t[:, None] + half[:, None] * (x + 1)).reshape(-1)  # (P n,)
    w_shared = (half[:, None] * w).reshape(-1)
    k_shared = _kernel_matrix(t_shared, inducing, kernel, bandwidth)  # (P n, M)
    f_shared = g @ k_shared.T  # (B, P n)
    beta = 2 - alpha
    log_e = _deformed.log_exp_beta(f_shared, beta)  # -inf off the support
    log_q = _log_base(t_shared, base)
    if alpha > 1:
        # Signs of u at each panel's ends and nodes locate the support boundaries.
        f_edges = (g @ _kernel_matrix(edges, inducing, kernel, bandwidth).T).detach()
        u_nodes = (1 + (alpha - 1) * f_shared.detach()).reshape(g.shape[0], -1, n)
        u_edges = 1 + (alpha - 1) * f_edges
        u_points = torch.cat([u_edges[:, :-1, None], u_nodes, u_edges[:, 1:, None]], -1)
        changes = (u_points[..., :-1] > 0) != (u_points[..., 1:] > 0)  # (B, P, n + 1)
        full = ~changes.any(-1) & (u_edges[:, :-1] > 0)
        keep = full.repeat_interleave(n, dim=1)
        log_e = torch.where(keep, log_e, torch.full_like(log_e, -math.inf))
    log_mass = log_e + log_q + torch.log(w_shared)
    psi = _gaussian.pdf(t_shared[:, None], mu, sd)
    parts = [(log_mass, psi, None)]
    if alpha > 1:
        points = torch.cat([lo_t[:, None], t_shared.reshape(-1, n), hi_t[:, None]], -1)
        parts += _boundary_parts(
            g, inducing, kernel, bandwidth, alpha, base, mu, sd, points, u_points, changes, n
        )
    top = torch.stack(
        [p[0].amax(-1) if p[2] is None else _row_max(p[0], p[2], g.shape[0]) for p in parts]
    ).amax(0)
    top = torch.where(torch.isfinite(top), top, torch.zeros_like(top)).detach()
    mass = torch.zeros(g.shape[0], dtype=_F64, device=g.device)
    numer = torch.zeros(g.shape[0], mu.shape[0], dtype=_F64, device=g.device)
    for log_m, values, rows in parts:
        if rows is None:
            scaled = torch.exp(log_m - top[:, None])  # (B, nodes)
            mass = mass + scaled.sum(-1)
            numer = numer + scaled @ values
        else:
            scaled = torch.exp(log_m - top[rows, None])  # (R, n)
            mass = mass.index_add(0, rows, scaled.sum(-1))
            numer = numer.index_add(0, rows, (scaled[:, :, None] * values).sum(1))
    r = numer / torch.clamp(mass, min=torch.finfo(_F64).tiny)[:, None]
    return r.reshape(*batch, -1), mass.reshape(batch)


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
    smooth = abs(power - round(power)) < 1e-9
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
        f = torch.einsum("rm,rnm->rn", g[rows[sel]], _kernel_matrix(t, inducing, kernel, bandwidth))
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
        self.alpha = _alpha(alpha)
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
