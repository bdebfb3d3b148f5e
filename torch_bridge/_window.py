"""1D window moments G(m, j) in Torch: the generated closed form where it is
well conditioned, Gauss-Jacobi windows elsewhere (the Torch twin of the
window machinery in tsallis.attention; see derivations/attention.py for G).

All functions take flat float64 tensors ep = 1 - c, em = 1 + c (edge
distances of the RBF centre c, support units) and r (RBF width, support
units), and return the moments

    rho = G(m + 1, 0),  m1 = G(m, 1),  m2c = G(m, 2) - second * G(m, 0),

for the escort exponent m = k - 1 = 1/(alpha - 1) - 1 and second = E[u^2]
under the escort. Nothing here syncs with the device unless ``dense`` is
False (eager CPU), where each branch runs on its own elements only.
"""

from __future__ import annotations

import math

import torch

from torch_bridge._generated import attention as gen
from torch_bridge._generated import gaussian
from tsallis.core.rules import gauss_jacobi, legendre_unit, window_rule
from tsallis.core.tuning import SMOOTH_EXPONENT, closed_k

# The closed form (evaluated in float64) is used when r <= _CLOSED_MAX_R[k] and
# the RBF centre lies at most _CLOSED_MAX_OUT[k] RBF widths outside the support:
# there its elementwise relative error is <= 3e-13 (measured against the
# Gauss-Jacobi windows over r and the centre). Farther out, see _negligible.
_CLOSED_MAX_R = {1: 2.0, 2: 0.5, 3: 0.2, 4: 0.2}
_CLOSED_MAX_OUT = {1: 2.0, 2: 2.0, 3: 2.0, 4: 1.0}
# Closed form far outside: its relative error was measured below
# 1e-16 (1 + d)^(2k+3) max(1, 5r)^(k-1) (k = 1..4, d <= 16 widths out, r <= 2);
# such an element is kept when that is negligible within its row.
# The row-shared rule: _SHARED_NODES Gauss-Jacobi nodes (_SHARED_NODES_WIDE when every
# RBF in the row is at least _SHARED_WIDE_R wide: measured as accurate), for RBFs at least
# _SHARED_MIN_R half-widths wide; measured absolute error <= 1e-16 / r for
# centres up to _SHARED_MAX_OUT widths outside (alpha = 1.01, 1.2, 3).
_SHARED_NODES = 64
_SHARED_NODES_WIDE = 32
_SHARED_WIDE_R = 0.2
_SHARED_MIN_R = 0.1
_SHARED_MAX_OUT = 8.0
# 2D sparsemax radial moments: closed form up to this RBF width (support units),
# Gauss-Legendre with _RADIAL_NODES nodes on [0, 1] beyond.
_RADIAL_MAX_R = 2.0
_RADIAL_NODES = 16
# Window: where the integrand is within e^-_WINDOW_EXP of its peak on the support.
_WINDOW_EXP = 80.0
_NODES = 64
# An edge closer to the window than _EDGE_PULL times its length joins it.
_EDGE_PULL = 0.25
_PEAK_STEPS = 12
_LEVEL_STEPS = 10
_CHUNK = 1 << 15  # elements per piece of the node-heavy branches
_BIG_CHUNK = 1 << 21  # for the elementwise closed forms


# Node tables, filled on first use per exponent (host-side scipy). torch.compile
# reads them as constants: compile after one eager call for an alpha outside
# the closed forms (those are filled at import).
_RULES: dict[float, tuple[torch.Tensor, ...]] = {}
_SHARED: dict[tuple[float, int], tuple[torch.Tensor, torch.Tensor]] = {}


def _rules_cpu(m: float) -> tuple[torch.Tensor, ...]:
    """Gauss-Jacobi rules for the four (left, right) edge configurations.

    Index 2 * left + right. Rows of xi, 1 + xi, 1 - xi and the weights of
    (1 - xi)^(m R) (1 + xi)^(m L); symmetric rules made exactly mirror-symmetric.
    """
    rows: list[list[torch.Tensor]] = [[], [], [], []]
    for left in (False, True):
        for right in (False, True):
            xi, w = window_rule(_NODES, m, left, right)  # host-side, once per alpha
            xi_t = torch.tensor(xi, dtype=torch.float64)  # a copy: the cached rule is read-only
            w_t = torch.tensor(w, dtype=torch.float64)
            if left == right:
                xi_t, w_t = (xi_t - xi_t.flip(0)) / 2, (w_t + w_t.flip(0)) / 2
            one_plus = 1 + xi_t
            one_minus = one_plus.flip(0) if left == right else 1 - xi_t
            for row, value in zip(rows, (xi_t, one_plus, one_minus, w_t), strict=True):
                row.append(value)
    return tuple(torch.stack(row) for row in rows)


def _rules(m: float, device: torch.device) -> tuple[torch.Tensor, ...]:
    if m not in _RULES:
        _RULES[m] = _rules_cpu(m)
    return tuple(t.to(device) for t in _RULES[m])


def _mirror_sum(values: torch.Tensor) -> torch.Tensor:
    """Sum over the last axis adding node i to node n-1-i first."""
    n = values.shape[-1]
    return (values[..., : n // 2] + values.flip(-1)[..., : n // 2]).sum(-1)


def _level_window(
    ep: torch.Tensor, em: torch.Tensor, r: torch.Tensor, m: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """[lo, hi] in y = (u - c)/r where log[(1 - u^2)^m phi(y)] is within _WINDOW_EXP of its peak.

    g(y) = m log((ep - r y)(em + r y)) - y^2/2 is concave with g'' <= -1, so the
    level set lies within sqrt(2 E) of the peak. The peak solves the cubic
    (c - u)(1 - u^2) = 2 m r^2 u (safeguarded Newton in a bracket); each end
    comes from Newton started outside the level set, where concavity keeps
    the iterates outside (the window is never too narrow).
    """
    edge_lo, edge_hi = -em / r, ep / r
    if m == 0:
        peak = torch.clamp(torch.zeros_like(r), min=edge_lo, max=edge_hi)
        reach = torch.sqrt(peak * peak + 2 * _WINDOW_EXP)
        return torch.maximum(edge_lo, -reach), torch.minimum(edge_hi, reach)
    c = (em - ep) / 2
    b = 1 + 2 * m * r * r
    lo_u, hi_u = -torch.ones_like(c), torch.ones_like(c)
    u = torch.clamp(c / b, -1.0, 1.0)
    for _ in range(_PEAK_STEPS):
        h = (c - u) * (1 - u * u) - 2 * m * r * r * u  # decreasing through the root
        above = h > 0
        lo_u, hi_u = torch.where(above, u, lo_u), torch.where(above, hi_u, u)
        dh = (3 * u - 2 * c) * u - b
        step = u - h / torch.where(dh < 0, dh, -torch.ones_like(dh))
        inside = (dh < 0) & (step >= lo_u) & (step <= hi_u)
        u = torch.where(inside, step, (lo_u + hi_u) / 2)
    peak = (u - c) / r

    def g(y: torch.Tensor) -> torch.Tensor:
        inner = torch.clamp((ep - r * y) * (em + r * y), min=1e-300)
        return m * torch.log(inner) - y * y / 2

    def slope(y: torch.Tensor) -> torch.Tensor:
        return m * r * (1 / (em + r * y) - 1 / (ep - r * y)) - y

    level = g(peak) - _WINDOW_EXP
    reach = math.sqrt(2 * _WINDOW_EXP) + 1
    ends = []
    for sign, edge in ((-1.0, edge_lo), (1.0, edge_hi)):
        start = peak + sign * reach
        past = start * sign >= edge * sign
        y = torch.where(past, (peak + edge) / 2, start)  # past: any finite point, replaced below
        for _ in range(_LEVEL_STEPS):
            d = slope(y)
            d = torch.where(d * sign < 0, d, -sign * torch.ones_like(d))
            y = y - (g(y) - level) / d
        ends.append(torch.where(past, edge, y))
    lo = torch.maximum(ends[0], edge_lo)
    hi = torch.minimum(ends[1], edge_hi)
    return lo, hi


def _peak_window(
    ep: torch.Tensor, em: torch.Tensor, r: torch.Tensor, m: float
) -> dict[str, torch.Tensor]:
    """The window for exponents max(m, 0) and m + 1 (their union), with joined edges.

    gap_lo, gap_hi are 1 + u and 1 - u at the window ends (0 at a joined edge).
    """
    lo_a, hi_a = _level_window(ep, em, r, max(m, 0.0))
    lo_b, hi_b = _level_window(ep, em, r, m + 1)
    lo, hi = torch.minimum(lo_a, lo_b), torch.maximum(hi_a, hi_b)
    margin = _EDGE_PULL * (hi - lo)
    # m >= SMOOTH_EXPONENT: no edge is joined; the escort vanishes to order m there.
    joins = m < SMOOTH_EXPONENT
    left = (lo + em / r <= margin) & joins
    right = (ep / r - hi <= margin) & joins
    lo = torch.where(left, -em / r, lo)
    hi = torch.where(right, ep / r, hi)
    zero = torch.zeros_like(r)
    return {
        "left": left,
        "right": right,
        "half": (hi - lo) / 2,
        "mid": (hi + lo) / 2,
        "gap_lo": torch.where(left, zero, em + r * lo),
        "gap_hi": torch.where(right, zero, ep - r * hi),
    }


def _wide_moments(
    c: torch.Tensor, r: torch.Tensor, m: float, second: torch.Tensor, mass: torch.Tensor
) -> dict[str, torch.Tensor]:
    """Window moments for a wide RBF (|u (u - 2c)| / (2 r^2) <= 1 on the support).

    phi((u - c)/r) = phi(c/r) e^(p + q), p = -u^2/(2 r^2), q = u c / r^2. The
    escort integrates u and u^2 - second to exactly 0, so only e^(p+q) - 1
    counts; its even and odd parts over mirrored nodes come from expm1, cosh
    and sinh, which keeps the O(1/r^2) moments exact. mass = int (1 - u^2)^(m+1).
    """
    xi, _, _, w = _rules(m, c.device)
    n = xi.shape[-1] // 2
    u, w = xi[3, :n], w[3, :n]  # u < 0; each node stands for itself and its mirror
    cc, rr = c[:, None], r[:, None]
    p = -(u * u) / (2 * rr * rr)
    q = u * cc / (rr * rr)
    even = 2 * (torch.expm1(p) * torch.cosh(q) + 2 * torch.sinh(q / 2) ** 2)
    odd = 2 * torch.exp(p) * torch.sinh(q)
    scale = gaussian.pdf(c, 0.0, r)
    return {
        "rho": scale * (mass + (w * (1 - u * u) * even).sum(-1)),
        "m1": scale * (w * u * odd).sum(-1),
        "m2c": scale * (w * (u * u - second) * even).sum(-1),
    }


def _window_quadrature(
    ep: torch.Tensor, em: torch.Tensor, r: torch.Tensor, m: float, second: torch.Tensor
) -> dict[str, torch.Tensor]:
    """Gauss-Jacobi window moments (rho, m1, m2c) for flat float64 inputs.

    Each element takes the rule of its (left, right) edge configuration; a
    joined edge's (1 -+ u)^m is carried by the rule's weight. 1 +- u are formed
    from the edge distances, never as differences of large numbers.
    """
    window = _peak_window(ep, em, r, m)
    config = 2 * window["left"].long() + window["right"].long()
    xi_all, plus_all, minus_all, w_all = _rules(m, ep.device)
    xi, one_plus, one_minus, w = (t[config] for t in (xi_all, plus_all, minus_all, w_all))
    h, rr = window["half"][:, None], r[:, None]
    y = window["mid"][:, None] + h * xi
    plus = window["gap_lo"][:, None] + rr * h * one_plus  # 1 + u, from the near end
    minus = window["gap_hi"][:, None] + rr * h * one_minus  # 1 - u
    u = (plus - minus) / 2
    weight = w * h
    if m >= SMOOTH_EXPONENT:  # (1 - u^2)^m in log space: pow would lose m * eps
        u_abs = u.abs()
        near = torch.log1p(-torch.where(u_abs < 0.5, u * u, 0.0))
        far = torch.log(torch.where(u_abs < 0.5, 1.0, plus)) + torch.log(
            torch.where(u_abs < 0.5, 1.0, minus)
        )
        weight = weight * torch.exp(m * torch.where(u_abs < 0.5, near, far))
    elif m != 0:
        left, right = window["left"][:, None], window["right"][:, None]
        # A joined edge: the rule holds (1 -+ xi)^m, so scale by (r h)^m there.
        scaled_plus = torch.where(left, rr * h, plus)
        scaled_minus = torch.where(right, rr * h, minus)
        weight = weight * (scaled_plus * scaled_minus) ** m
    weight = weight * gaussian.pdf(y, 0.0, 1.0)
    return {
        "rho": _mirror_sum(weight * plus * minus),
        "m1": _mirror_sum(weight * u),
        "m2c": _mirror_sum(weight * (u * u - second)),
    }


def _fill(
    out: dict[str, torch.Tensor],
    mask: torch.Tensor,
    compute: object,
    args: tuple[torch.Tensor, ...],
    safe: tuple[float, ...],
    dense: bool,
    chunk: int = _CHUNK,
) -> None:
    """out[key] = compute(*args)[key] where mask holds.

    dense: every element is computed (args outside the mask replaced by the
    harmless ``safe`` values, so no NaN can reach a gradient) and merged with
    torch.where; no host sync. Otherwise only the masked elements, in chunks.
    """
    if dense:
        safe_args = tuple(torch.where(mask, a, s) for a, s in zip(args, safe, strict=True))
        parts = [
            compute(*(a[i : i + chunk] for a in safe_args))
            for i in range(0, safe_args[0].shape[0], chunk)
        ]
        for key in out:
            value = torch.cat([p[key] for p in parts]) if len(parts) > 1 else parts[0][key]
            out[key] = torch.where(mask, value, out[key])
        return
    index = mask.nonzero().squeeze(-1)
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


def _negligible(
    bound: torch.Tensor, out: dict, row: int, absolute: torch.Tensor | None = None
) -> torch.Tensor:
    """Where 1e-16 * bound * size stays below 1e-14 of the row's largest value.

    size is each element's own |rho|, |m1|, |m2c| (all three must pass), or
    1 / ``absolute`` when the error bound is absolute. Within a row the
    support, and so the units of these moments, is shared.
    """
    ok = torch.ones_like(bound, dtype=torch.bool)
    for value in out.values():
        largest = value.abs().reshape(-1, row).amax(-1, keepdim=True)
        size = value.abs() if absolute is None else 1 / absolute
        ok = ok & (bound * size <= 100 * largest.expand(-1, row).reshape(-1))
    return ok


def _shared_rule(
    c: torch.Tensor, r: torch.Tensor, m: float, second: torch.Tensor, n: int = _SHARED_NODES
) -> dict[str, torch.Tensor]:
    """Moments from one Gauss-Jacobi rule on the whole support, shared by a row.

    c, r: (rows, N). The rule's weight is the escort (1 - u^2)^m; the N RBFs
    are evaluated on the same n nodes (one exp per node and RBF)
    and the three moments are one matrix product.
    """
    nodes, weights = _shared_nodes(m, c.device, n)
    half = nodes.shape[0] // 2
    u, w = nodes[:half], weights[:half]  # u < 0; node -u is its mirror
    even_weights = torch.stack([w * (1 - u * u), w * (u * u - second)])
    out_even, out_odd = [], []
    step = max(1, (_CHUNK * 8) // (nodes.shape[0] * c.shape[-1]))
    for i in range(0, c.shape[0], step):
        cc, rr = c[i : i + step, None, :], r[i : i + step, None, :]
        phi = gaussian.pdf(nodes[None, :, None], cc, rr)  # (rows, n, N)
        low, high = phi[:, :half], phi[:, half:].flip(1)  # phi(u), phi(-u)
        # Mirrored pairs first: a centred RBF gives m1 = 0 exactly.
        out_even.append(torch.einsum("qi,bij->qbj", even_weights, low + high))
        out_odd.append(torch.einsum("i,bij->bj", w * u, low - high))
    even = torch.cat(out_even, dim=1) if len(out_even) > 1 else out_even[0]
    odd = torch.cat(out_odd) if len(out_odd) > 1 else out_odd[0]
    return {"rho": even[0], "m1": odd, "m2c": even[1]}


def _shared_nodes_cpu(m: float, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    xi, w = gauss_jacobi(n, m, m)
    xi_t = torch.tensor(xi, dtype=torch.float64)  # a copy: the cached rule is read-only
    w_t = torch.tensor(w, dtype=torch.float64)
    return (xi_t - xi_t.flip(0)) / 2, (w_t + w_t.flip(0)) / 2  # exactly mirror-symmetric


def _shared_nodes(
    m: float, device: torch.device, n: int = _SHARED_NODES
) -> tuple[torch.Tensor, torch.Tensor]:
    if (m, n) not in _SHARED:
        _SHARED[(m, n)] = _shared_nodes_cpu(m, n)
    return tuple(t.to(device) for t in _SHARED[(m, n)])


def _row_fill(
    out: dict[str, torch.Tensor],
    mask: torch.Tensor,
    compute: object,
    args: tuple[torch.Tensor, ...],
    row: int,
    dense: bool,
) -> None:
    """Like _fill, for a computation on whole rows: rows holding any masked element."""
    shaped = tuple(a.reshape(-1, row) for a in args)
    if dense:
        part = compute(*shaped)
        for key in out:
            out[key] = torch.where(mask, part[key].reshape(-1), out[key])
        return
    rows = mask.reshape(-1, row).any(-1).nonzero().squeeze(-1)
    if rows.numel() == 0:
        return
    part = compute(*(a[rows] for a in shaped))
    for key in out:
        view = out[key].reshape(-1, row)
        view[rows] = torch.where(mask.reshape(-1, row)[rows], part[key], view[rows])


def window_moments(
    alpha: float, ep: torch.Tensor, em: torch.Tensor, r: torch.Tensor, row: int, dense: bool
) -> dict[str, torch.Tensor]:
    """rho = G(k, 0), m1 = G(k-1, 1), m2c = G(k-1, 2) - E_escort[u^2] G(k-1, 0).

    Flat float64 inputs, ``row`` consecutive elements per row (one row of rho,
    sharing one support). In order of preference per element: the closed form
    (closed alpha only, where well conditioned); the wide-RBF expansion where
    the RBF covers the support; one Gauss-Jacobi rule shared by the row where
    the RBF is at least _SHARED_MIN_R support half-widths wide; otherwise a
    Gauss-Jacobi window of its own.
    """
    k = closed_k(alpha)
    m = 1 / (alpha - 1) - 1
    _rules(m, r.device), _shared_nodes(m, r.device)  # eager: fills the tables for compile
    _shared_nodes(m, r.device, _SHARED_NODES_WIDE)
    # Constants stay 0-dim tensors (no host read, nothing for torch.compile to break on).
    second = gen.escort_u2(torch.tensor(alpha, dtype=torch.float64, device=r.device))
    out = {key: torch.zeros_like(r) for key in ("rho", "m1", "m2c")}
    outside = torch.clamp(-torch.minimum(ep, em) / r, min=0.0)
    done = torch.zeros_like(r, dtype=torch.bool)
    if k is not None:
        narrow = r <= _CLOSED_MAX_R[k]
        kernel = getattr(gen, f"window_moments_k{k}")

        def closed_form(e1: torch.Tensor, e2: torch.Tensor, rr: torch.Tensor) -> dict:
            rho, m1, m2c = kernel(e1, e2, rr)
            # m1 is odd in the centre: exactly 0 for a centred RBF (rounding would leave
            # ~1e-17, large against a row whose other RBFs are all far away).
            return {"rho": rho, "m1": torch.where(e1 == e2, 0.0, m1), "m2c": m2c}

        _fill(out, narrow, closed_form, (ep, em, r), (1.0, 1.0, 0.1), dense, chunk=_BIG_CHUNK)
        bound = (1 + outside) ** (2 * k + 3) * torch.clamp(5 * r, min=1.0) ** (k - 1)
        done = narrow & ((outside <= _CLOSED_MAX_OUT[k]) | _negligible(bound, out, row))
    centre = (em - ep) / 2
    wide = ~done & ((1 + 2 * centre.abs()) <= 2 * r * r)
    if dense or bool(wide.any()):
        mass = 1 / gen.rho_constant(
            torch.tensor(1 + 1 / (m + 1), dtype=torch.float64, device=r.device)
        )

        def wide_form(c: torch.Tensor, rr: torch.Tensor) -> dict:
            return _wide_moments(c, rr, m, second, mass)

        _fill(out, wide, wide_form, (centre, r), (0.0, 2.0), dense)
        done = done | wide
    shared = ~done & (r >= _SHARED_MIN_R)
    if dense or bool(shared.any()):

        def shared_form(c: torch.Tensor, rr: torch.Tensor, n: int = _SHARED_NODES) -> dict:
            return _shared_rule(c, rr, m, second, n)

        safe_r = torch.where(shared, r, torch.ones_like(r))
        if dense:
            _row_fill(out, shared, shared_form, (centre, safe_r), row, dense)
        else:  # rows whose RBFs are all wide enough take the smaller rule
            wide_rows = safe_r.reshape(-1, row).amin(-1, keepdim=True) >= _SHARED_WIDE_R
            coarse = shared & wide_rows.expand(-1, row).reshape(-1)

            def coarse_form(c: torch.Tensor, rr: torch.Tensor) -> dict:
                return shared_form(c, rr, _SHARED_NODES_WIDE)

            _row_fill(out, coarse, coarse_form, (centre, safe_r), row, dense)
            _row_fill(out, shared & ~coarse, shared_form, (centre, safe_r), row, dense)
        # Its absolute error is below 1e-16 / r (measured, centres up to 8 r outside);
        # farther out that must be negligible within the row.
        far_ok = (outside <= _SHARED_MAX_OUT) | _negligible(1 / (r * r), out, row, absolute=r)
        done = done | (shared & far_ok)
    rest = ~done
    if dense or bool(rest.any()):

        def window(e1: torch.Tensor, e2: torch.Tensor, rr: torch.Tensor) -> dict:
            return _window_quadrature(e1, e2, rr, m, second)

        _fill(out, rest, window, (ep, em, r), (1.0, 1.0, 1.0), dense)
    return out


def radial_moments(c: torch.Tensor, omc: torch.Tensor, r: torch.Tensor, dense: bool) -> dict:
    """int_0^1 u^j phi((u - c)/r)/r du, j = 1, 2, 3 (keys p1..p3), flat float64.

    The generated closed form (float64) for r <= _RADIAL_MAX_R: measured within
    1.1e-13 of the Gauss-Legendre windows, relative to the largest over the
    centre c (up to 8 widths outside [0, 1]). A wider RBF is smooth on [0, 1]:
    _RADIAL_NODES Gauss-Legendre nodes there.
    """
    out = {f"p{j}": torch.zeros_like(c) for j in (1, 2, 3)}
    closed = r <= _RADIAL_MAX_R

    def closed_form(cc: torch.Tensor, oo: torch.Tensor, rr: torch.Tensor) -> dict:
        return dict(zip(("p1", "p2", "p3"), gen.radial_moments(cc, oo, rr), strict=True))

    _fill(out, closed, closed_form, (c, omc, r), (0.5, 0.5, 0.1), dense, chunk=_BIG_CHUNK)
    wide = ~closed
    if dense or bool(wide.any()):

        def smooth(cc: torch.Tensor, rr: torch.Tensor) -> dict:
            x, w = (torch.tensor(t, device=cc.device) for t in legendre_unit(_RADIAL_NODES))
            u = (x + 1) / 2
            weight = w / 2 * gaussian.pdf(u, cc[:, None], rr[:, None])
            return {f"p{j}": (weight * u**j).sum(-1) for j in (1, 2, 3)}

        _fill(out, wide, smooth, (c, r), (0.5, 4.0), dense)
    return out
