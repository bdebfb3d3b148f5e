"""Continuous attention in Torch (Martins 2020 section 3, Prop 3, Alg 1).

rho_j = E_p[psi_j] for the alpha-entmax density p of f(t) = theta^T phi(t)
and Gaussian RBFs psi_j; J = d rho / d theta = cov_{p,2-alpha}(phi, psi) (Prop 3).

Parameters: ``loc`` mu and ``scale`` (1D: sigma, the standard deviation of the
score -(t - mu)^2 / (2 sigma^2); 2D: the 2x2 matrix Sigma). The natural
parameters theta1 = Sigma^-1 mu, theta2 = -Sigma^-1 / 2 (1D: mu/sigma^2,
-1/(2 sigma^2)) enter through ``loc_scale_from_natural``.

1D (any alpha >= 1). A custom autograd.Function. Forward: rho and the two
rows of J from the generated closed forms (alpha in {1, 5/4, 4/3, 3/2, 2},
where well conditioned) or quadrature (Gauss-Hermite for RBFs well inside
the support, Gauss-Jacobi otherwise; tsallis.core.window, the same code the
NumPy face runs).
Backward: J only, with
    d rho/d mu = J_1 / sigma^2,  d rho/d sigma = (J_2 - 2 mu J_1) / sigma^3,
and, for the basis, translation (d/d mu_j = -d/d mu) and homogeneity of
degree -1 in (mu_j - mu, a, s_j), where the half-width a grows as
sigma^(2/(alpha+1)): s_j d rho_j/d s_j = -rho_j + (mu_j - mu) d rho_j/d mu
- (alpha + 1)/2 sigma d rho_j/d sigma. alpha itself gets no gradient.

float32 input is computed in float32 where the closed form holds it to float32
precision (alpha = 1; alpha in {5/4, 4/3, 3/2, 2} for narrow enough RBFs near
the support); everything else in float64, cast to the input dtype (float16 and
bfloat16 included), with the quadrature regimes only as fine as float32 results
need (tsallis.core.tuning.FLOAT32: about 3x fewer node evaluations). The
backward runs in float32 for float32 input (from the float32-rounded moments)
and in float64 otherwise. In eager mode the forward runs in pieces of about
ROW_CHUNK elements, so its float64 temporaries do not grow with the batch. On
CPU in eager mode each numerical regime runs on its own elements and one that no
element needs is skipped (host reads). Under torch.compile a regime runs on
every element (sanitized inputs, torch.where picks), and torch.cond decides on
the device whether the float32 closed form serves the whole call and whether any
element needs a regime after the closed form, so only the branch taken runs. On
other devices in eager mode every regime runs on every element: the forward and
backward never read from the device (they run on meta tensors). Input validation
reads one flag back (pass ``validate=False`` to skip it).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.autograd.function import once_differentiable

from torch_bridge._compile import (
    branch_for,
    check_compiled,
    check_values,
    dense_for,
    device_branch,
    prepare_tables,
)
from torch_bridge.attention_2d import _attention_2d
from torch_bridge.basis import GaussianRBF, alpha_value, check_spd
from tsallis.core import window
from tsallis.core.tuning import FLOAT32, FLOAT64, HOST_ELEMENTS, ROW_CHUNK, Accuracy, closed_k
from tsallis.core.validation import broadcast_shape, real_at_least

__all__ = [
    "ContinuousAttention",
    "GaussianRBF",
    "continuous_attention",
    "loc_scale_from_natural",
    "ridge_value_function",
]

_F64 = torch.float64
_LOW = (torch.float32, torch.float16, torch.bfloat16)


def _validating(validate: bool) -> bool:
    return validate and not torch.compiler.is_compiling()


def loc_scale_from_natural(
    theta1: torch.Tensor | float, theta2: torch.Tensor | float, *, validate: bool = True
) -> tuple[torch.Tensor, torch.Tensor]:
    """(loc, scale) from the natural parameters, differentiably.

    1D: theta1 = mu / sigma^2, theta2 = -1 / (2 sigma^2) < 0 (shapes (...,)),
    returns (mu, sigma). 2D: theta1 = Sigma^-1 mu (..., 2), theta2 =
    -Sigma^-1 / 2 (..., 2, 2) symmetric negative definite, returns (mu, Sigma).
    Python numbers are accepted (as tensors of the default dtype).

    Raises:
        TypeError: an argument is neither a real tensor nor a real number.
        ValueError: NaN or inf in theta1 or theta2, theta2 >= 0 (1D), theta2 not
            symmetric negative definite (2D), or shapes that do not broadcast.
            Checked when ``validate`` (one host read).

    Args:
        theta1: mu / sigma^2, any shape.
        theta2: -1 / (2 sigma^2) < 0, broadcasting with theta1.

    Returns:
        (loc, scale) tensors of the broadcast shape.

    Examples:
        >>> loc, scale = loc_scale_from_natural(1.0, -0.5)
        >>> float(loc), float(scale)
        (1.0, 1.0)
    """
    t1 = _natural("theta1", theta1, None)
    t2 = _natural("theta2", theta2, t1)
    t1 = t1.to(t2.dtype)
    two_d = t2.dim() >= 2 and t2.shape[-2:] == (2, 2) and t1.shape[-1:] == (2,)
    if validating := validate and not torch.compiler.is_compiling():
        if not bool(torch.isfinite(t1).all()):
            raise ValueError("theta1 must be finite (no NaN or inf)")
        if not bool(torch.isfinite(t2).all()):
            raise ValueError("theta2 must be finite (no NaN or inf)")
    elif validate:  # (torch.compile: on the CPU an assert, _compile.check_compiled)
        fine = lambda: torch.isfinite(t1).all() & torch.isfinite(t2).all()  # noqa: E731
        check_compiled(fine, t1, "theta1 and theta2 must be finite (no NaN or inf)")
    pair = (t1.shape[:-1], t2.shape[:-2]) if two_d else (t1.shape, t2.shape)
    if broadcast_shape(*pair) is None:
        raise ValueError(
            f"theta1 {tuple(t1.shape)} and theta2 {tuple(t2.shape)} do not broadcast"
            " (1D: shapes (...,); 2D: (..., 2) and (..., 2, 2))"
        )
    if two_d:
        precision = -2 * t2
        if validating:
            check_spd("-2 theta2 (the precision Sigma^-1)", precision.detach())
        scale = torch.linalg.inv(precision)
        return (scale @ t1[..., None])[..., 0], scale
    if validating and not bool((t2 < 0).all()):
        raise ValueError("theta2 (= -1/(2 sigma^2)) must be < 0")
    if validate and not validating:
        check_compiled(lambda: (t2 < 0).all(), t2, "theta2 (= -1/(2 sigma^2)) must be < 0")
    return -t1 / (2 * t2), torch.rsqrt(-2 * t2)


def _natural(name: str, value: object, like: torch.Tensor | None) -> torch.Tensor:
    """A floating tensor from a tensor or a real number (TypeError otherwise)."""
    if isinstance(value, torch.Tensor):
        if not (value.is_floating_point() or value.dtype in (torch.int32, torch.int64)):
            raise TypeError(f"{name} must be a real tensor, got dtype {value.dtype}")
        return value if value.is_floating_point() else value.to(torch.get_default_dtype())
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a tensor or a real number, got {type(value).__name__}")
    dtype = like.dtype if like is not None else torch.get_default_dtype()
    device = like.device if like is not None else None
    return torch.tensor(float(value), dtype=dtype, device=device)


# ---------------------------------------------------------------- 1D


def _cast(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """t in dtype; t itself when it already is (Tensor.to costs a dispatch even then)."""
    return t if t.dtype == dtype else t.to(dtype)


def _moments_1d(
    alpha: float,
    loc: torch.Tensor,
    scale: torch.Tensor,
    mu: torch.Tensor,
    s: torch.Tensor,
    accuracy: Accuracy = FLOAT64,
) -> tuple[torch.Tensor, ...]:
    """window.moments_1d with this device's regime hooks (see the module docstring)."""
    return window.moments_1d(
        alpha, loc, scale, mu, s, dense_for(loc), branch_for(loc), accuracy=accuracy
    )


def _forward_moments(
    alpha: float, loc: torch.Tensor, scale: torch.Tensor, mu: torch.Tensor, s: torch.Tensor
) -> tuple[tuple[torch.Tensor, ...], list[torch.Tensor]]:
    """(rho, first, centred) and the inputs the backward uses, in one dtype.

    float32 input stays float32 when alpha = 1 (the Gaussian closed form holds in
    float32 for every input) or when alpha has a window closed form and
    window.float32_closed_suffices (every RBF narrow enough, every row with a
    centre at least one RBF width inside its support, and a bounded spread of
    widths). Everything else is computed in float64: the regimes of the core. The
    float32 decision is a host read in eager mode on CPU and float64 on other devices
    in eager mode (no host read). Under torch.compile it is torch.cond, whose branches must agree in
    dtype: the general branch's float64 moments are rounded to float32 and the
    backward runs in float32, as on the eager closed-form path (the moments it
    reads are then float32-exact either way).
    """
    f32 = all(t.dtype == torch.float32 for t in (loc, scale, mu, s))
    args = [loc, scale, mu, s]
    if alpha == 1 and f32:
        return _moments_1d(alpha, *args), args
    # Results rounded to float32 or below (the output has loc's dtype) need the
    # quadrature regimes only to float32 accuracy: fewer nodes (tuning.FLOAT32).
    accuracy = FLOAT32 if loc.dtype in _LOW else FLOAT64
    k = closed_k(alpha)
    compiling = torch.compiler.is_compiling()
    if alpha == 1 or not f32 or k is None or (dense_for(loc) and not compiling):
        args64 = [_cast(t, _F64) for t in args]
        return _moments_1d(alpha, *args64, accuracy), args64
    # The edge distances in float64, then rounded: formed in float32, the support's edges
    # would move by eps * a, i.e. eps / r RBF widths (1e-5 relative at r = 0.01).
    loc64, scale64, mu64 = (t.double() for t in (loc, scale, mu))
    a64 = window.half_width(alpha, scale64)[..., None]

    def units(loc64: torch.Tensor, a64: torch.Tensor, mu64: torch.Tensor) -> tuple:
        delta = mu64 - loc64[..., None]
        return tuple(v.float() for v in window.support_units(a64, delta, s))

    def closed(loc64: torch.Tensor, a64: torch.Tensor, mu64: torch.Tensor) -> tuple:
        g = window.closed_moments(k, *units(loc64, a64, mu64))
        return window.attention_moments(alpha, a64.float(), g)

    suffices = window.float32_closed_suffices(k, a64[..., 0], loc64, mu64, s)
    if compiling:
        # The closed-form branch forms the support units itself, so that they fuse into
        # its one kernel (no B x N arrays written and read back); the half-width is an
        # operand, formed once per row (fused into that kernel, its pow would be
        # recomputed for every vector of a row).
        def fast(*ops: torch.Tensor) -> tuple:
            return closed(*ops[:3])

        def general(*ops: torch.Tensor) -> tuple:
            return tuple(v.float() for v in _moments_1d(alpha, *ops[3:], accuracy))

        operands = (loc64, a64, mu64, loc64, scale64, mu64, s.double())
        return device_branch(suffices, fast, general, operands), args
    if bool(suffices):
        return closed(loc64, a64, mu64), args
    args64 = [loc64, scale64, mu64, s.double()]
    return _moments_1d(alpha, *args64, accuracy), args64


def _on_host(alpha: float, loc: torch.Tensor, elements: int) -> bool:
    """Small CPU calls at a general alpha run the core through NumPy (_host_moments)."""
    return (
        alpha != 1
        and closed_k(alpha) is None
        and elements <= HOST_ELEMENTS
        and loc.device.type == "cpu"
        and not torch.compiler.is_compiling()
    )


def _host_moments(
    alpha: float, loc: torch.Tensor, scale: torch.Tensor, mu: torch.Tensor, s: torch.Tensor
) -> tuple[torch.Tensor, ...]:
    """The moments of a small CPU call: the same core (window.moments_1d) on NumPy
    float64 views, at the accuracy of the output dtype.

    The quadrature regimes issue a few hundred array operations whatever the size
    (Newton steps, node tables, gathers); one costs about 5 us of dispatch in Torch
    on a small tensor and about 1 us in NumPy. Up to tuning.HOST_ELEMENTS NumPy is
    faster (the numbers are there); the closed forms (alpha = 1, 5/4, 4/3, 3/2, 2)
    are faster in Torch at every size.
    """
    accuracy = FLOAT32 if loc.dtype in _LOW else FLOAT64
    arrays = [t.detach().to(_F64).numpy() for t in (loc, scale, mu, s)]
    with np.errstate(all="ignore"):  # as Torch: no warnings, the values decide
        moments = window.moments_1d(alpha, *arrays, dense=False, accuracy=accuracy)
    return tuple(torch.from_numpy(np.ascontiguousarray(v)) for v in moments)


def _row_chunks(
    alpha: float, loc: torch.Tensor, scale: torch.Tensor, mu: torch.Tensor, s: torch.Tensor
) -> tuple[tuple[torch.Tensor, ...], list[torch.Tensor]]:
    """_forward_moments in pieces of about ROW_CHUNK elements (eager mode), in the dtype
    the backward runs in: float32 for float32 input, float64 otherwise.

    Peak memory is then the three moments plus one piece's float64 temporaries, not
    a dozen B x N float64 arrays. float32 input keeps float32 moments even where a
    piece was computed in float64 (rounded once): the backward reads them in float32
    as on the closed-form path and under torch.compile, so eager and compiled agree.
    Under torch.compile the call is one piece (the graph stays static).
    """
    dtype = torch.float32 if loc.dtype == torch.float32 else _F64
    n = mu.shape[0]
    rows = loc.numel()
    if _on_host(alpha, loc, rows * n):
        moments = _host_moments(alpha, loc, scale, mu, s)
        return tuple(_cast(v, dtype) for v in moments), [
            _cast(t, dtype) for t in (loc, scale, mu, s)
        ]
    step = max(1, ROW_CHUNK // max(1, n))
    if torch.compiler.is_compiling() or rows <= step:
        moments, args = _forward_moments(alpha, loc, scale, mu, s)
        return tuple(_cast(v, dtype) for v in moments), [_cast(t, dtype) for t in args]
    flat_loc, flat_scale = loc.reshape(-1), scale.reshape(-1)
    out = [torch.empty(rows, n, dtype=dtype, device=loc.device) for _ in range(3)]
    for start in range(0, rows, step):
        part, _ = _forward_moments(
            alpha, flat_loc[start : start + step], flat_scale[start : start + step], mu, s
        )
        for target, value in zip(out, part, strict=True):
            target[start : start + step] = value
    moments = tuple(v.reshape(*loc.shape, n) for v in out)
    return moments, [_cast(t, dtype) for t in (loc, scale, mu, s)]


class _Attention1D(torch.autograd.Function):
    """rho(loc, scale; mu_j, s_j) with the Prop 3 backward (see the module docstring)."""

    @staticmethod
    def forward(
        ctx: torch.autograd.function.FunctionCtx,
        loc: torch.Tensor,
        scale: torch.Tensor,
        mu: torch.Tensor,
        s: torch.Tensor,
        alpha: float,
    ) -> torch.Tensor:
        prepare_tables(alpha, loc.device)
        (rho, first, centred), args = _row_chunks(alpha, loc, scale, mu, s)
        ctx.save_for_backward(rho, first, centred, *args)
        ctx.alpha = alpha  # a Python float and a tuple of dtypes: immutable
        ctx.dtypes = tuple(t.dtype for t in (loc, scale, mu, s))
        return _cast(rho, loc.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx: torch.autograd.function.FunctionCtx, grad: torch.Tensor) -> tuple:
        rho, first, centred, loc, scale, mu, s = ctx.saved_tensors
        g = _cast(grad, rho.dtype)
        var = (scale * scale)[..., None]
        d_loc = g * first / var  # g * d rho / d mu
        d_scale = g * centred / (var * scale[..., None])  # g * d rho / d sigma
        out: list[torch.Tensor | None] = [None] * 4
        if ctx.needs_input_grad[0]:
            out[0] = d_loc.sum(-1)
        if ctx.needs_input_grad[2]:
            out[2] = -d_loc.reshape(-1, mu.shape[0]).sum(0)
        if ctx.needs_input_grad[1]:
            out[1] = d_scale.sum(-1)
        if ctx.needs_input_grad[3]:
            delta = mu - loc[..., None]
            euler = -g * rho + delta * d_loc - (ctx.alpha + 1) / 2 * scale[..., None] * d_scale
            out[3] = euler.reshape(-1, mu.shape[0]).sum(0) / s
        cast = [None if v is None else _cast(v, d) for v, d in zip(out, ctx.dtypes, strict=True)]
        return (*cast, None)


def _as_tensor(name: str, value: object, like: torch.Tensor) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        if not value.is_floating_point():
            raise TypeError(f"{name} must be a floating tensor, got {value.dtype}")
        return value
    try:
        return torch.as_tensor(value, dtype=like.dtype, device=like.device)
    except (TypeError, ValueError, RuntimeError):
        raise TypeError(f"{name} must be a tensor or a real number, got {value!r}") from None


def _check_basis(basis: object, loc: torch.Tensor, dim: int) -> GaussianRBF:
    if not isinstance(basis, GaussianRBF):
        raise TypeError(f"basis must be a GaussianRBF, got {type(basis).__name__}")
    if basis.dim != dim:
        raise ValueError(f"basis is {basis.dim}D but loc/scale describe a {dim}D density")
    if basis.mu.device != loc.device:
        raise ValueError(f"basis is on {basis.mu.device} but loc is on {loc.device}: use basis.to")
    if basis.mu.dtype != loc.dtype:
        raise ValueError(f"basis has dtype {basis.mu.dtype} but loc has {loc.dtype}: use basis.to")
    return basis


def _attention_1d(
    loc: torch.Tensor, scale: torch.Tensor, basis: GaussianRBF, alpha: float, validate: bool
) -> torch.Tensor:
    shape = broadcast_shape(loc.shape, scale.shape)
    if shape is None:
        raise ValueError(f"loc {tuple(loc.shape)} and scale {tuple(scale.shape)} must broadcast")
    if scale.dtype != loc.dtype or scale.device != loc.device:
        raise ValueError(
            f"scale ({scale.dtype}, {scale.device}) must match loc ({loc.dtype}, {loc.device})"
        )
    if validate:  # (one host read; under torch.compile on the CPU an assert)
        fine = lambda: torch.isfinite(loc).all() & (torch.isfinite(scale) & (scale > 0)).all()  # noqa: E731
        check_values(fine, loc, "loc must be finite and scale (sigma) finite and > 0")
    loc, scale = loc.expand(shape), scale.expand(shape)
    return _Attention1D.apply(loc, scale, basis.mu, basis.sigma, alpha)


# ---------------------------------------------------------------- public API


def continuous_attention(
    loc: torch.Tensor,
    scale: torch.Tensor | float,
    basis: GaussianRBF,
    alpha: float | torch.Tensor = 2.0,
    *,
    validate: bool = True,
    angles: int | None = None,
) -> torch.Tensor:
    """rho_j = E_p[psi_j] for the alpha-entmax density p (Martins 2020 eq 15), shape (..., N).

    1D: ``loc`` and ``scale`` (sigma > 0) broadcast to (...); any alpha >= 1.
    2D: ``loc`` (..., 2), ``scale`` = Sigma (..., 2, 2) positive definite;
    alpha = 1 (closed form, Alg 1) or 2 (polar coordinates, ``angles``
    trapezoid nodes in the angle; None picks n >= 8 / s for the narrowest RBF
    as seen from loc, reading one number back from the device). Gradients
    reach loc, scale and the basis parameters (2D alpha = 2: not Sigma_j);
    ``alpha`` gets none. ``validate`` checks the values (one host read).

    Args:
        loc: (...) in 1D, (..., 2) in 2D; floating, on the basis' device.
        scale: sigma > 0 (...) in 1D, Sigma (..., 2, 2) in 2D.
        basis: a ``GaussianRBF`` of N functions.
        alpha: see above (a Python float or a 0-dim tensor).
        angles: 2D alpha = 2 only: the trapezoid node count in the angle, or None.
        validate: check the values (one host read).

    Returns:
        rho of shape (..., N) in the input dtype.

    Raises:
        TypeError: non-tensor or non-floating input.
        ValueError: an unsupported alpha,
            non-finite loc, a scale <= 0 or not positive definite, mismatched shapes.

    Examples:
        >>> import torch
        >>> basis = GaussianRBF(torch.linspace(0, 1, 4), torch.full((4,), 0.2))
        >>> continuous_attention(torch.tensor([0.5]), torch.tensor([0.1]), basis, alpha=2.0)
        tensor([[0.1595, 1.3387, 1.3387, 0.1595]])
    """
    if not isinstance(loc, torch.Tensor) or not loc.is_floating_point():
        raise TypeError("loc must be a floating-point tensor")
    alpha_f = alpha_value(alpha)
    scale_t = _as_tensor("scale", scale, loc)
    if basis is not None and isinstance(basis, GaussianRBF) and basis.dim == 2:
        _check_basis(basis, loc, 2)
        if validate and not _validating(validate):
            # torch.compile: on the CPU an assert (positive definiteness is not checked there)
            fine = lambda: torch.isfinite(loc).all() & torch.isfinite(scale_t).all()  # noqa: E731
            check_compiled(fine, loc, "loc and scale (Sigma) must be finite")
        return _attention_2d(loc, scale_t, basis, alpha_f, _validating(validate), angles)
    _check_basis(basis, loc, 1)
    return _attention_1d(loc, scale_t, basis, alpha_f, validate)


def ridge_value_function(
    positions: torch.Tensor, basis: GaussianRBF, penalty: float
) -> torch.Tensor:
    """G = F^T (F F^T + penalty I)^-1 (Martins 2020 eq 16), shape (L, N); B = H G.

    F[j, l] = psi_j(t_l) for ``positions`` (L,) in 1D or (L, 2) in 2D. Solved
    by Cholesky in float64, returned in the basis dtype. Cached on the basis
    per (positions, penalty) while no basis tensor requires grad (a trainable
    basis recomputes it, differentiably).

    Args:
        positions: (L,) in 1D or (L, 2) in 2D.
        basis: a ``GaussianRBF`` of N functions.
        penalty: the ridge penalty, finite and >= 0.

    Returns:
        G of shape (L, N) in the basis dtype.

    Raises:
        TypeError, ValueError: bad positions or a penalty < 0.

    Examples:
        >>> import torch
        >>> basis = GaussianRBF(torch.linspace(0, 1, 4), torch.full((4,), 0.2))
        >>> ridge_value_function(torch.linspace(0, 1, 10), basis, penalty=0.1).shape
        torch.Size([10, 4])
    """
    if not isinstance(basis, GaussianRBF):
        raise TypeError(f"basis must be a GaussianRBF, got {type(basis).__name__}")
    if not isinstance(positions, torch.Tensor) or not positions.is_floating_point():
        raise TypeError("positions must be a floating-point tensor")
    want = (positions.shape[0],) if basis.dim == 1 else (positions.shape[0], 2)
    if positions.dim() != basis.dim or tuple(positions.shape) != want or want[0] == 0:
        raise ValueError(
            f"positions must have shape {'(L,)' if basis.dim == 1 else '(L, 2)'}"
            f" with L >= 1, got {tuple(positions.shape)}"
        )
    lam = real_at_least("penalty", penalty, 0.0)
    trainable = basis.mu.requires_grad or basis.sigma.requires_grad
    key = (
        positions.device,
        positions.dtype,
        tuple(positions.reshape(-1).tolist()),
        lam,
        basis.mu._version,
        basis.sigma._version,
    )
    if not trainable and key in basis._ridge_cache:
        return basis._ridge_cache[key]
    f = basis(positions.to(basis.mu.dtype)).to(_F64).transpose(0, 1)  # (N, L)
    gram = f @ f.transpose(0, 1) + lam * torch.eye(f.shape[0], dtype=_F64, device=f.device)
    low, info = torch.linalg.cholesky_ex(gram)
    if bool(info != 0):
        raise ValueError("F F^T + penalty I is singular: use penalty > 0")
    g = torch.cholesky_solve(f, low).transpose(0, 1).to(basis.mu.dtype)  # (L, N)
    if not trainable:
        basis._ridge_cache[key] = g
    return g


class ContinuousAttention(nn.Module):
    """Continuous attention layer: forward(loc, scale, values) -> c = B rho.

    ``values`` B (..., D_v, N) are value-function coefficients (for instance
    H @ ridge_value_function(positions, basis, penalty)); the context is
    B rho (..., D_v). See ``continuous_attention`` for loc, scale and alpha.

    Args:
        basis: a ``GaussianRBF`` of N functions.
        alpha: as for ``continuous_attention``.

    Forward:
        loc, scale as for ``continuous_attention``; values B (..., D_v, N). Returns the
        context (..., D_v).

    Examples:
        >>> import torch
        >>> basis = GaussianRBF(torch.linspace(0, 1, 4), torch.full((4,), 0.2))
        >>> layer = ContinuousAttention(basis, alpha=1.0)
        >>> layer(torch.tensor([0.5]), torch.tensor([0.1]), torch.ones(1, 3, 4)).shape
        torch.Size([1, 3])
    """

    def __init__(self, basis: GaussianRBF, alpha: float = 2.0, *, validate: bool = True) -> None:
        super().__init__()
        if not isinstance(basis, GaussianRBF):
            raise TypeError(f"basis must be a GaussianRBF, got {type(basis).__name__}")
        self.basis = basis
        self.alpha = alpha_value(alpha)
        self.validate = validate

    def forward(self, loc: torch.Tensor, scale: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        """The context B rho (..., D_v).

        Args:
            loc: as for ``continuous_attention``.
            scale: as for ``continuous_attention``.
            values: B, (..., D_v, N).

        Returns:
            (..., D_v), in the inputs' dtype.

        Raises:
            ValueError: values whose last axis is not N, or as for ``continuous_attention``.

        Examples:
            >>> import torch
            >>> basis = GaussianRBF(torch.linspace(0, 1, 4), torch.full((4,), 0.2))
            >>> layer = ContinuousAttention(basis, alpha=2.0)
            >>> layer.forward(torch.tensor([0.5]), torch.tensor([0.1]), torch.ones(1, 2, 4)).shape
            torch.Size([1, 2])
        """
        rho = continuous_attention(loc, scale, self.basis, self.alpha, validate=self.validate)
        if values.shape[-1] != rho.shape[-1]:
            raise ValueError(
                f"values must have shape (..., D_v, {rho.shape[-1]}), got {tuple(values.shape)}"
            )
        return (values @ rho[..., None])[..., 0]

    def extra_repr(self) -> str:
        """The settings printed in the module's repr.

        Examples:
            >>> import torch
            >>> basis = GaussianRBF(torch.linspace(0, 1, 4), torch.full((4,), 0.2))
            >>> ContinuousAttention(basis).extra_repr()
            'alpha=2.0, N=4, D=1'
        """
        return f"alpha={self.alpha}, N={self.basis.size}, D={self.basis.dim}"
