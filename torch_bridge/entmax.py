"""Sparsemax, alpha-entmax and their Fenchel-Young losses as Torch ops (Martins 2020 eq 3).

The maps run the shared core (tsallis.core.discrete.entmax_map: Newton's method on
the threshold, exact to the working dtype, then renormalized on the support; small
calls at alpha = 2 and 3/2 take the sort-based closed forms), which the NumPy face
runs too; this module adds the autograd Function with the
closed-form gppr backward (Martins 2020 Prop 3, finite case; the alpha-gradient from
derivations/discrete.py), the Modules and the losses.

Conventions (those of the ``entmax`` package, extended):
- ``alpha`` is any real > 0, a Python float or a tensor broadcasting to x with
  size 1 along ``dim`` (one alpha per row; it may require grad). alpha = 1 is
  softmax, alpha = 2 sparsemax, continuously in between; alpha < 1 gives dense
  maps with heavier tails than softmax.
- ``mask`` (bool, broadcastable to x) marks valid entries, as in ev_softmax:
  masked and -inf entries get exactly 0 and no gradient; a row with no valid
  entry gives zeros. NaN or +inf in a valid entry raises ValueError; so do an alpha
  <= 0 and a target out of range. Under torch.compile these value checks are asserts
  in the compiled code on the CPU (RuntimeError naming the check) and are skipped on a
  GPU, where a device-side assert would end the process's CUDA context.
- Working dtype: float16 and bfloat16 are computed in float32; any alpha > 2 is
  computed in float64 (dp/dz = p^(2-alpha) is unbounded at the support edge and
  float32 arithmetic was up to 2e-2 off at alpha = 5), with the threshold refined as
  a double-double; the result has x's dtype.
- Eager mode reads the host once per Newton step (3-10 steps) to stop when every row
  has converged, on CUDA too; under torch.compile the iteration is a device-side
  ``while_loop`` (at most 64 steps; a fixed 64 where torch lacks it) that stops the same
  way, and above alpha = 2 the refinement takes a fixed 16 steps.
- Hot eager calls at the alphas whose powers are roots (1.25, 9/7, 14/11, 1.3, 4/3,
  1.375, 1.4, 10/7) or whole (3/2), and of sparsemax, on the CPU or a CUDA device
  (float32 work, rows of at least 512, at least 2^18 values), take a compiled kernel
  once the same alpha, row length and device have come
  ``tsallis.core.tuning.FUSED_AFTER_CALLS`` (10) times: its first use compiles (1-25 s,
  once), after which float32 (1024, 1000) forward + backward took 1.8-2.5 x
  ``torch.softmax``'s time on the CPU and 1.9-2.6 x on an H200, where the eager paths
  took 3.3-6.6 x and 2.2-7.5 x (torch_bridge._fused). The kernel forms the row maxima
  and its input check itself: one host read a call, and its compiled graph is called
  without torch.compile's frame.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable

import torch
from torch import nn

from torch_bridge import _compile, _fused
from torch_bridge.basis import constant_float
from torch_bridge.discrete import (
    _batch_first,
    _batched,
    _check_dim,
    _check_input,
    _check_reduction,
    _check_target,
    _dual,
    _transformed,
)
from tsallis.core import discrete as _core
from tsallis.core.validation import broadcast_shape

__all__ = [
    "Entmax",
    "EntmaxLoss",
    "Sparsemax",
    "SparsemaxLoss",
    "entmax",
    "entmax_loss",
    "sparsemax",
    "sparsemax_loss",
]

_HALF = (torch.float16, torch.bfloat16)

try:  # a device-side loop for torch.compile (a private API; torch 2.13 has it); else fixed steps
    from torch._higher_order_ops import while_loop as _WHILE_LOOP
except ImportError:  # pragma: no cover (older torch)
    _WHILE_LOOP = None
# "elementwise_mean" is the entmax package's name for "mean" (its losses' default)
_REDUCTIONS = ("mean", "sum", "none", "elementwise_mean")
_NAN_INPUT = "x must not contain NaN or +inf in a valid entry (mask it out)"


def _moved(t: torch.Tensor, source: int, target: int) -> torch.Tensor:
    """t.movedim(source, target), or t itself where that moves nothing (the call alone
    costs about 1 us, paid up to nine times per small forward and backward)."""
    last = t.dim() - 1
    if source % (last + 1) == target % (last + 1):
        return t
    return t.movedim(source, target)


def _as(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """t in ``dtype`` (t itself when it has it, without the call)."""
    return t if t.dtype == dtype else t.to(dtype)


def _check(x: torch.Tensor, dim: int, mask: torch.Tensor | None) -> int:
    """TypeError / ValueError for a bad x, mask or dim (ev_softmax's checks); dim >= 0."""
    _check_input(x, mask)
    return _check_dim(x, dim)


def _alpha(alpha: float | torch.Tensor, x: torch.Tensor, dim: int) -> float | torch.Tensor:
    """alpha as a Python float, or as a tensor with x's number of dimensions (leading ones
    added) broadcasting to x with size 1 along dim. A 0-dim tensor that needs a gradient
    (a learned alpha) or that torch.func wraps (vmap over an ensemble's stacked alphas,
    grad in one) stays a tensor; other 0-dim tensors become floats."""
    if isinstance(alpha, torch.Tensor) and alpha.dim() == 0:
        if alpha.requires_grad or _transformed(alpha):
            alpha = alpha.reshape((1,) * x.dim())
    if isinstance(alpha, torch.Tensor) and alpha.dim() > 0:
        if not alpha.is_floating_point():
            raise TypeError(f"alpha must be a floating-point tensor, got {alpha.dtype}")
        shape = list(x.shape)
        shape[dim] = 1
        if broadcast_shape(alpha.shape, shape) != tuple(shape):
            raise ValueError(
                f"alpha of shape {tuple(alpha.shape)} must broadcast to {tuple(shape)}"
                f" (x {tuple(x.shape)} with size 1 along dim {dim})"
            )
        alpha = alpha.reshape((1,) * (x.dim() - alpha.dim()) + tuple(alpha.shape))
        positive = lambda: (torch.isfinite(alpha) & (alpha > 0)).all()  # noqa: E731
        _compile.check_values(positive, alpha, "alpha must be finite and > 0 in every row")
        return alpha
    if isinstance(alpha, bool) or not isinstance(alpha, (numbers.Real, torch.Tensor)):
        raise TypeError(f"alpha must be a real number or a tensor, got {type(alpha).__name__}")
    if not isinstance(alpha, (float, torch.Tensor)):  # an int or a NumPy number: 2 -> 2.0
        alpha = float(alpha)
    value = constant_float(alpha)
    if not value > 0 or value == float("inf"):
        raise ValueError(f"alpha must be a finite real > 0, got {value}")
    return value


def _check_package_options(
    k: object = None, n_iter: object = None, ensure_sum_one: object = True
) -> None:
    """TypeError / ValueError for the ``entmax`` package's tuning arguments, which the maps
    and losses here accept so that its callers' code runs unchanged, and which change
    nothing: there ``k`` (the sort-based maps' first guess of the support size, a top-k)
    and ``n_iter`` (the bisection's step count) trade speed or accuracy; here the support
    search and the Newton loop choose their own and the result is exact either way, and
    it always sums to 1 (``ensure_sum_one``). Kept keyword-only: the package's positional
    order (``sparsemax(X, dim, k)``) would pass k as our mask."""
    for name, value, least in (("k", k, 1), ("n_iter", n_iter, 0)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise TypeError(f"{name} must be None or an int >= {least}, got {type(value).__name__}")
        if value < least:
            raise ValueError(f"{name} must be None or an int >= {least}, got {value}")
    if not isinstance(ensure_sum_one, bool):
        raise TypeError(f"ensure_sum_one must be a bool, got {type(ensure_sum_one).__name__}")


def _forward(
    x: torch.Tensor,
    dim: int,
    alpha: float | torch.Tensor,
    mask: torch.Tensor | None,
    slopes: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | _core.ColumnSlopes | None, torch.Tensor | None]:
    """p along dim in the working dtype (see the module docstring), and for the backward
    s / sum(s) for s = p^(2-alpha) and sum(s) (size 1 along dim), or None, None (also
    without ``slopes``: a forward alone; _core.entmax_map)."""
    compiling = torch.compiler.is_compiling()
    work = torch.float32 if x.dtype in _HALF else x.dtype
    if isinstance(alpha, torch.Tensor) and alpha.numel() == 1 and not compiling:
        # one alpha for every row (a learned scalar): the map takes a Python float's
        # paths (one host read, as _alpha's check took one), where a per-row alpha takes
        # the generated kernels at every Newton step; the backward's alpha-gradient
        # stays the tensor's (computed on the support alone on the CPU). Measured (torch
        # 2.13, CPU, float32 (1024, 1000), forward + backward with the alpha-gradient,
        # alpha = 1.3, 1.5 and 1.7, with that gradient): 134-173 -> 9-13 ms.
        alpha = float(alpha)
    if isinstance(alpha, float):
        wide = alpha > 2
    else:
        wide = True if compiling else bool((alpha > 2).any())
    if wide:
        work = torch.float64
    z = _moved(_as(x, work), dim, -1)
    a = alpha if isinstance(alpha, float) else _moved(_as(alpha, work), dim, -1)
    if mask is not None:
        z = z.masked_fill(~_moved(mask.expand_as(x), dim, -1), float("-inf"))
    # hot eager calls at the alphas whose powers are roots (or whole, 3/2): a compiled
    # kernel, which forms the row maxima and their check itself (else None)
    fused = None if compiling else _fused.entmax_rows(z, a, slopes)
    if fused is not None:
        p, s, scale = fused
        if s is None:
            return _moved(p, -1, dim), None, None
        return _moved(p, -1, dim), _moved(s, -1, dim), _moved(scale, -1, dim)
    # the row maxima hold every check: NaN and +inf propagate to them, and a row
    # without a valid entry has maximum -inf
    top = z.amax(-1, keepdim=True) if z.shape[-1] else z.sum(-1, keepdim=True)
    # one host read and one kernel in the common case: the maxima's sum is finite when
    # every maximum is (isfinite(top).all() took five kernels, each a launch on a GPU);
    # a sum that overflows (maxima near the dtype's largest) only takes the long way
    has_empty = compiling or not math.isfinite(float(top.sum()))
    if compiling and not _transformed(x):  # (eager mode's check below reads the host)
        valid_top = lambda: ~(torch.isnan(top) | (top == math.inf)).any()  # noqa: E731
        _compile.check_compiled(valid_top, top, _NAN_INPUT)
    if has_empty:
        empty = top == float("-inf")
    if has_empty and not compiling:
        if bool((torch.isnan(top) | (top == float("inf"))).any()):
            raise ValueError(_NAN_INPUT)
        has_empty = bool(empty.any())
    if has_empty:
        z = z.masked_fill(empty, 0.0)
        top = top.masked_fill(empty, 0.0)
    # Eager mode stops the Newton loop once every row has converged: one host read per
    # step (3-10 steps), also on CUDA, where 64 fixed steps would launch about 3000
    # small kernels. Under torch.compile the loop is a while_loop on the device.
    on_host = not compiling
    p, s, scale = _core.entmax_map(
        z, a, None if on_host else 64, on_host, top=top, loop=_WHILE_LOOP, slopes=slopes
    )
    if has_empty:
        p = p.masked_fill(empty, 0.0)
    if isinstance(s, _core.ColumnSlopes):  # kept along the last axis
        if has_empty:
            s = s._replace(values=s.values.masked_fill(empty, 0.0))
        return _moved(p, -1, dim), s, scale
    if has_empty and s is not None:
        s = s.masked_fill(empty, 0.0)
    if s is None:
        return _moved(p, -1, dim), None, None
    return _moved(p, -1, dim), _moved(s, -1, dim), _moved(scale, -1, dim)


def _function_forward(
    x: torch.Tensor,
    alpha_tensor: torch.Tensor | None,
    dim: int,
    alpha: float,
    mask: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    """The Functions' forward: (p, s / sum(s) or s, sum(s), the support's columns)."""
    p, s, scale = _forward(x, dim, alpha if alpha_tensor is None else alpha_tensor, mask)
    if s is not None and torch.compiler.is_compiling():
        # Dynamo refuses a saved tensor that aliases another inside the traced
        # Function ("an intermediate tensor ... aliases an input or output"): s can
        # be a view of the loop's work buffers (or p itself, at alpha = 1), and so
        # can scale (in a fresh process, compiled forward + backward of sparsemax
        # and of entmax(x, 1.3) raised it on scale). Eager mode saves them as they are.
        s, scale = s.clone(), None if scale is None else scale.clone()
    columns = None
    if isinstance(s, _core.ColumnSlopes):
        s, columns = s
    return p, s, scale, columns


def _function_backward(ctx, grad: torch.Tensor) -> tuple:  # noqa: ANN001
    """The Functions' backward: the gppr form and the alpha-gradient (saved: p, s, scale,
    alpha_tensor, columns; ctx.dim, ctx.alpha)."""
    p, s, scale, alpha_tensor, columns = ctx.saved_tensors
    dim = ctx.dim
    if torch.is_grad_enabled():
        # create_graph=True: autograd records this backward for a second derivative,
        # so s = p^(2 - alpha) is formed from p, which autograd ties to x and alpha
        # (the forward's s and scale are tied to nothing: their second derivatives
        # would silently be 0), by the core's differentiable path (no out= buffers)
        s = scale = columns = None
    a = ctx.alpha if alpha_tensor is None else _moved(_as(alpha_tensor, p.dtype), dim, -1)
    with_alpha = alpha_tensor is not None and ctx.needs_input_grad[1]
    if columns is not None:  # s / sum(s) on each row's columns, along the last axis
        s = _core.ColumnSlopes(s, columns)
    elif s is not None:
        s = _moved(s, dim, -1)
        scale = None if scale is None else _moved(scale, dim, -1)
    dz, dalpha = _core.entmax_alpha_gradient(
        _moved(p, dim, -1), _moved(_as(grad, p.dtype), dim, -1), a, with_alpha, s, scale
    )
    dx = _moved(dz, -1, dim)
    if not with_alpha:
        return dx, None, None, None, None
    dalpha = dalpha.movedim(-1, dim)
    extra = dalpha.dim() - alpha_tensor.dim()
    dalpha = dalpha.sum(dim=tuple(range(extra))) if extra else dalpha
    keep = [i for i, n in enumerate(alpha_tensor.shape) if n == 1 and dalpha.shape[i] != 1]
    dalpha = dalpha.sum(dim=keep, keepdim=True) if keep else dalpha
    return dx, dalpha.to(alpha_tensor.dtype), None, None, None


class _EntmaxFunction(torch.autograd.Function):
    """Forward: the core's exact map; backward: the gppr form and the alpha-gradient
    (_TransformableEntmax: the same under torch.func's transforms)."""

    @staticmethod
    def forward(ctx, x, alpha_tensor, dim, alpha, mask):  # noqa: ANN001, ANN205
        p, s, scale, columns = _function_forward(x, alpha_tensor, dim, alpha, mask)
        ctx.save_for_backward(p, s, scale, alpha_tensor, columns)
        ctx.dim, ctx.alpha = dim, alpha
        return p

    @staticmethod
    def backward(ctx, grad):  # noqa: ANN001, ANN205
        return _function_backward(ctx, grad)


class _TransformableEntmax(torch.autograd.Function):
    """_EntmaxFunction in the setup_context form, with a vmap rule and forward mode, so
    that torch.func's transforms (grad, vjp, jacrev, jacfwd, hessian, vmap) take it: the
    forward returns p and what the backward needs (marked non-differentiable), and a
    vmapped call is one call on the batch, whose rows are the rows of every member.
    Taken where torch.func wraps an input (never under torch.compile: Dynamo does not
    trace a Function with jvp)."""

    @staticmethod
    def forward(x, alpha_tensor, dim, alpha, mask):  # noqa: ANN001, ANN205
        p, s, scale, columns = _function_forward(x, alpha_tensor, dim, alpha, mask)
        if s is p:  # (alpha = 1 without the scale: the backward forms s = p from p)
            s = None
        return p, s, scale, columns

    @staticmethod
    def setup_context(ctx, inputs, output):  # noqa: ANN001, ANN205
        _, alpha_tensor, dim, alpha, _ = inputs
        p, s, scale, columns = output
        ctx.save_for_backward(p, s, scale, alpha_tensor, columns)
        ctx.save_for_forward(p, alpha_tensor)
        ctx.dim, ctx.alpha = dim, alpha
        ctx.mark_non_differentiable(*(t for t in (s, scale, columns) if t is not None))

    @staticmethod
    def backward(ctx, grad, *_):  # noqa: ANN001, ANN002, ANN205 (s, scale, columns: none)
        return _function_backward(ctx, grad)

    @staticmethod
    def jvp(ctx, x_tangent, alpha_tangent, *_):  # noqa: ANN001, ANN002, ANN205
        """Forward mode (jacfwd, hessian): p's tangent by the core's entmax_tangent."""
        p, alpha_tensor = ctx.saved_tensors
        dim = ctx.dim
        a = ctx.alpha if alpha_tensor is None else _moved(_as(alpha_tensor, p.dtype), dim, -1)
        rows = _moved(p, dim, -1)
        if x_tangent is None:
            dz = torch.zeros_like(rows)
        else:
            dz = _moved(_as(x_tangent, p.dtype), dim, -1)
        da = None
        if alpha_tangent is not None and alpha_tensor is not None:
            da = _moved(_as(alpha_tangent, p.dtype), dim, -1)
        tangent = _moved(_core.entmax_tangent(rows, dz, a, da), -1, dim)
        return tangent, None, None, None

    @staticmethod
    def vmap(info, in_dims, x, alpha_tensor, dim, alpha, mask):  # noqa: ANN001, ANN205
        """One call on the batch (batch dimension first): entmax is row by row along dim."""
        x_dim, alpha_dim, _, _, mask_dim = in_dims
        xb, batched = _batch_first(x, x_dim, info.batch_size)
        alpha_b, mask_b = batched(alpha_tensor, alpha_dim), batched(mask, mask_dim)
        if alpha_b is not None and alpha_dim is None:  # (alpha has x's rank: see _alpha)
            alpha_b = alpha_b.unsqueeze(0)
        axis = dim if dim < 0 else dim + 1
        outputs = _TransformableEntmax.apply(xb, alpha_b, axis, alpha, mask_b)
        return outputs, tuple(None if t is None else 0 for t in outputs)


def entmax(
    x: torch.Tensor,
    alpha: float | torch.Tensor = 1.5,
    dim: int = -1,
    mask: torch.Tensor | None = None,
    *,
    k: int | None = None,
    n_iter: int | None = None,
    ensure_sum_one: bool = True,
) -> torch.Tensor:
    """alpha-entmax along ``dim``: argmax_p <p, x> + H_alpha(p) over the simplex.

    Args:
        x: scores (..., K, ...), float16/bfloat16/float32/float64; -inf entries get 0.
        alpha: a real > 0, or a tensor broadcasting to x with size 1 along ``dim``
            (per-row alpha; may require grad). 1 is softmax, 2 sparsemax.
        dim: the axis of the distribution.
        mask: bool, broadcastable to x; False entries get 0 and no gradient.
        k: the ``entmax`` package's top-k guess of the support size (None or an int
            >= 1), accepted, checked and otherwise ignored: the result is exact and sums
            to 1 whatever the package's settings are.
        n_iter: the package's bisection steps (None or an int >= 0), as ``k``.
        ensure_sum_one: the package's renormalizing (a bool), as ``k``.

    Returns:
        Probabilities of x's shape and dtype, summing to 1 along ``dim`` (rows
        without a valid entry: 0).

    Raises:
        TypeError: x, alpha, mask, k, n_iter or ensure_sum_one of the wrong type or dtype.
        ValueError: a bad alpha, dim, mask shape, k or n_iter, or NaN / +inf in a valid
            entry.

    Examples:
        >>> import torch
        >>> entmax(torch.tensor([0.0, 1.0, -1.0]), alpha=2.0)
        tensor([0., 1., 0.])
    """
    dim = _check(x, dim, mask)
    _check_package_options(k, n_iter, ensure_sum_one)
    value = _alpha(alpha, x, dim)
    alpha_tensor = value if isinstance(value, torch.Tensor) else None
    scalar = 0.0 if alpha_tensor is not None else value
    needs = torch.is_grad_enabled() and (
        x.requires_grad or (alpha_tensor is not None and alpha_tensor.requires_grad)
    )
    if torch.compiler.is_compiling() and any(_batched(t) for t in (x, alpha_tensor, mask)):
        # the compiled map writes into buffers (out=), which vmap does not batch; the
        # Function with a vmap rule is not traced by Dynamo (it has a jvp)
        raise NotImplementedError(
            "entmax and sparsemax do not run under torch.compile of torch.func.vmap:"
            " apply vmap outside the compiled function, or compile without vmap"
        )
    if _transformed(x, alpha_tensor, mask) or _dual(x, alpha_tensor):  # (not compiled)
        p = _TransformableEntmax.apply(x, alpha_tensor, dim, scalar, mask)[0]
    elif needs:
        # the lean Function otherwise: the transformable one's extra outputs cost
        # (float32 (1024, 1000) forward + backward at alpha = 2: 3.6-3.95 -> 4.1-5.3 ms;
        # one row of 10: 0.245 -> 0.295 ms; three processes each, alternating)
        p = _EntmaxFunction.apply(x, alpha_tensor, dim, scalar, mask)
    else:
        p = _forward(x, dim, value, mask, slopes=False)[0]  # (no backward: no s)
    return _as(p, x.dtype)


def sparsemax(
    x: torch.Tensor, dim: int = -1, mask: torch.Tensor | None = None, *, k: int | None = None
) -> torch.Tensor:
    """Sparsemax along ``dim`` (entmax with alpha = 2): the Euclidean projection of x
    onto the simplex, exact.

    Args:
        x: scores (..., K, ...), float16/bfloat16/float32/float64; -inf entries get 0.
        dim: the axis of the distribution.
        mask: bool, broadcastable to x; False entries get 0 and no gradient.
        k: the ``entmax`` package's top-k guess of the support size, accepted and
            checked (None or an int >= 1) and otherwise ignored (as for ``entmax``).

    Returns:
        Probabilities of x's shape and dtype, summing to 1 along ``dim``.

    Raises:
        TypeError, ValueError: as for ``entmax``.

    Examples:
        >>> import torch
        >>> sparsemax(torch.tensor([0.4, 0.9, -0.8]))
        tensor([0.2500, 0.7500, 0.0000])
    """
    return entmax(x, 2.0, dim, mask, k=k)


def entmax_loss(
    x: torch.Tensor,
    target: torch.Tensor,
    alpha: float | torch.Tensor = 1.5,
    reduction: str = "mean",
    ignore_index: int = -100,
    *,
    k: int | None = None,
    n_iter: int | None = None,
) -> torch.Tensor:
    """The Fenchel-Young loss of alpha-entmax: <p - y, x> + H_alpha(p) - H_alpha(y).

    Args:
        x: scores (..., C), classes along the last axis.
        target: class indices (...) of an integer dtype (``ignore_index`` rows count
            for nothing), or a distribution (..., C) of x's floating dtype.
        alpha: as for ``entmax`` (one per row: shape (..., 1)).
        reduction: "mean" (over counted rows; 0 when there are none), "sum" or "none";
            "elementwise_mean" (the entmax package's name) is "mean".
        ignore_index: the class index of rows to skip.
        k: the ``entmax`` package's setting, as for ``entmax`` (the loss is exact).
        n_iter: the package's setting, as for ``entmax``.

    Returns:
        The loss, (...) for "none", else a scalar, in x's dtype (float32 for float16
        and bfloat16 scores, in which it is computed). Its gradient in x is p - y
        exactly; in alpha it is dH_alpha(p)/dalpha - dH_alpha(y)/dalpha (p optimal).

    Raises:
        TypeError, ValueError: a bad x, alpha, target, ignore_index, reduction, k or n_iter (the
            messages name the argument and its valid range; class values, and a
            distribution's entries (finite, >= 0), are checked in eager mode).

    Examples:
        >>> import torch
        >>> float(entmax_loss(torch.tensor([[0.0, 10.0]]), torch.tensor([1]), 2.0))
        0.0
    """
    _check_reduction(reduction, _REDUCTIONS)
    _check(x, -1, None)
    _check_package_options(k, n_iter)
    value = _alpha(alpha, x, x.dim() - 1)
    # float16 / bfloat16 scores: the loss in float32, as the map is computed (in float16
    # the rounding of <p - y, x> made losses of 1e2-scale scores negative, -0.08)
    x = _as(x, torch.float32 if x.dtype in _HALF else x.dtype)
    with torch.no_grad():
        p = entmax(x.detach(), value.detach() if isinstance(value, torch.Tensor) else value)
    counted = None
    if isinstance(target, torch.Tensor) and target.is_floating_point():
        _check_distribution(x, target)
        y = target.to(x.dtype)
    else:
        _check_target(x, target, x.dim() - 1, ignore_index)  # ev_softmax_nll_loss's checks
        counted = target != ignore_index
        safe = torch.where(counted, target, torch.zeros_like(target))
        y = torch.zeros_like(x).scatter_(-1, safe.unsqueeze(-1).long(), 1.0)
    alpha_tensor = value if isinstance(value, torch.Tensor) else None
    scalar = 0.0 if alpha_tensor is not None else value
    one_hot = counted is not None  # (H_alpha(y) = 0)
    tracked = [t for t in (x, y, alpha_tensor) if t is not None and t.requires_grad]
    if torch.compiler.is_compiling() or not (torch.is_grad_enabled() and tracked):
        # autograd through the same rows (first derivatives only: Dynamo does not trace
        # torch.func inside a Function's backward, and torch.compile has no double
        # backward); p is optimal, so its own gradient paths cancel and are left out
        a = scalar if alpha_tensor is None else alpha_tensor
        losses = _fenchel_young(x, y, a, p, (True, True, not one_hot))
    else:
        losses = _FenchelYoungLoss.apply(x, y, alpha_tensor, scalar, p, one_hot)
    if counted is not None:
        losses = torch.where(counted, losses, torch.zeros_like(losses))
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    total = counted.sum() if counted is not None else torch.tensor(losses.numel())
    return losses.sum() / total.clamp_min(1).to(losses.dtype)


def _fenchel_young(
    x: torch.Tensor,
    y: torch.Tensor,
    alpha: float | torch.Tensor,
    p: torch.Tensor,
    terms: tuple[bool, bool, bool] = (True, True, True),
) -> torch.Tensor:
    """Per row, <p - y, x> + H_alpha(p) - H_alpha(y) at a given p (entmax(x, alpha)), of
    those three ``terms`` the ones asked for (H_alpha(y) is 0 for a one-hot y).

    An entry where x = -inf and p = y (= 0) is left out of <p - y, x> (its product would
    be -inf * 0), and its gradient in y is 0 (excluded like a masked entry, the entropy's
    slope included); wherever else p = y (off both supports) it is -x - dH_alpha(y)/dy
    (where(p == y, 0, ...) around the product gave 0 there and, at -inf, NaN).
    """
    pairing, entropy_p, entropy_y = terms
    a = alpha if isinstance(alpha, float) else alpha.to(x.dtype)
    rows = torch.zeros(x.shape[:-1], dtype=x.dtype, device=x.device)
    if pairing or entropy_y:
        excluded = (x == float("-inf")) & (p == y)
        zeros = torch.zeros_like(x)
    if pairing:
        rows = rows + ((p - y) * torch.where(excluded, zeros, x)).sum(-1)
    if entropy_p:
        rows = rows + _entropy(p, a)
    if entropy_y:  # (an excluded entry's y, 0, held: its entropy slope does not reach y)
        rows = rows - _entropy(torch.where(excluded, zeros, y), a)
    return rows


class _FenchelYoungLoss(torch.autograd.Function):
    """_fenchel_young's rows, with gradients in x, y and alpha by torch.func at the
    forward's p held fixed (p is optimal: its own paths cancel, and the gradient in x is
    p - y exactly), and where autograd records the backward (create_graph=True) at p
    formed again by entmax, which autograd ties to x and alpha: second derivatives then
    take p's dependence on them (the gradient p - y differentiates to entmax's Jacobian),
    where the plain formula's p, held fixed, would silently give none. The backward
    takes only the terms that hold an input it differentiates (x alone: <p - y, x>)."""

    generate_vmap_rule = True  # (its forward and backward are Torch's own operations)

    @staticmethod
    def forward(x, y, alpha_tensor, alpha, p, one_hot):  # noqa: ANN001, ANN205
        a = alpha if alpha_tensor is None else alpha_tensor
        return _fenchel_young(x, y, a, p, (True, True, not one_hot))

    @staticmethod
    def setup_context(ctx, inputs, output):  # noqa: ANN001, ANN205
        x, y, alpha_tensor, alpha, p, one_hot = inputs
        ctx.save_for_backward(x, y, alpha_tensor, p)
        ctx.save_for_forward(x, y, alpha_tensor, p)
        ctx.alpha, ctx.one_hot = alpha, one_hot

    @staticmethod
    def jvp(ctx, x_tangent, y_tangent, alpha_tangent, *_):  # noqa: ANN001, ANN002, ANN205
        """Forward mode: the rows' tangent by torch.func at p held fixed (p optimal)."""
        x, y, alpha_tensor, p = ctx.saved_tensors
        inputs, tangents = [x, y, alpha_tensor], [x_tangent, y_tangent, alpha_tangent]
        moving = [i for i in range(3) if inputs[i] is not None and tangents[i] is not None]
        if not moving:
            return torch.zeros(x.shape[:-1], dtype=x.dtype, device=x.device)
        rows = _rows_in(ctx, inputs, moving, p)
        primals = tuple(inputs[i] for i in moving)
        return torch.func.jvp(rows, primals, tuple(tangents[i] for i in moving))[1]

    @staticmethod
    def backward(ctx, grad):  # noqa: ANN001, ANN205
        x, y, alpha_tensor, p = ctx.saved_tensors
        if torch.is_grad_enabled():  # (create_graph) p tied to x and alpha
            p = entmax(x, ctx.alpha if alpha_tensor is None else alpha_tensor)
        inputs = [x, y, alpha_tensor]
        wanted = [i for i in range(3) if ctx.needs_input_grad[i]]
        _, pullback = torch.func.vjp(_rows_in(ctx, inputs, wanted, p), *(inputs[i] for i in wanted))
        grads = [None, None, None]
        for i, g in zip(wanted, pullback(grad), strict=True):
            grads[i] = g
        return (*grads, None, None, None)


def _rows_in(ctx, inputs: list, chosen_at: list[int], p: torch.Tensor) -> Callable:  # noqa: ANN001
    """_fenchel_young's rows as a function of the inputs (x, y, alpha) at ``chosen_at``,
    the others and p held, for torch.func (the loss Function's jvp and backward): only
    the terms that hold one of them (x alone: <p - y, x>; H_alpha(y) = 0 one-hot)."""
    by_x, by_y, by_alpha = (i in chosen_at for i in range(3))
    terms = (by_x or by_y, by_alpha, (by_y or by_alpha) and not ctx.one_hot)

    def rows(*chosen: torch.Tensor) -> torch.Tensor:
        values = list(inputs)
        for i, t in zip(chosen_at, chosen, strict=True):
            values[i] = t
        alpha = ctx.alpha if values[2] is None else values[2]
        return _fenchel_young(values[0], values[1], alpha, p, terms)

    return rows


def _check_distribution(x: torch.Tensor, target: torch.Tensor) -> None:
    """ValueError for a distribution target of another shape or device than x's, or with
    an entry that is NaN, infinite or negative (the loss would be NaN or unbounded below;
    _compile.check_values: under torch.compile a RuntimeError on the CPU, no check on a
    GPU). Its rows are not checked to sum to 1, which a float16 target does only to its
    rounding."""
    if target.shape != x.shape:
        raise ValueError(f"a distribution target must have x's shape {tuple(x.shape)}")
    if target.device != x.device:
        raise ValueError(f"target is on {target.device} but x is on {x.device}")
    fine = lambda: ((target >= 0) & (target < math.inf)).all()  # noqa: E731
    _compile.check_values(fine, target, "a distribution target must be finite and >= 0 (no NaN)")


def _entropy(p: torch.Tensor, alpha: float | torch.Tensor) -> torch.Tensor:
    """H_alpha(p) along the last axis (the generated Tsallis entropy terms, summed;
    _core.entropy_rows: on the support alone where that pays)."""
    return _core.entropy_rows(p, alpha)


def sparsemax_loss(
    x: torch.Tensor,
    target: torch.Tensor,
    reduction: str = "mean",
    ignore_index: int = -100,
    *,
    k: int | None = None,
) -> torch.Tensor:
    """The sparsemax (alpha = 2) Fenchel-Young loss: <p - y, x> + (|y|^2 - |p|^2) / 2.

    Args:
        x: as for ``entmax_loss``.
        target: as for ``entmax_loss``.
        reduction: as for ``entmax_loss``.
        ignore_index: as for ``entmax_loss``.
        k: as for ``sparsemax`` (accepted and checked, otherwise ignored).

    Returns:
        As for ``entmax_loss``.

    Raises:
        TypeError, ValueError: as for ``entmax_loss``.

    Examples:
        >>> import torch
        >>> float(sparsemax_loss(torch.tensor([[0.0, 0.5]]), torch.tensor([0])))
        0.5625
    """
    return entmax_loss(x, target, 2.0, reduction, ignore_index, k=k)


class Entmax(nn.Module):
    """alpha-entmax along ``dim``; ``alpha`` may be an ``nn.Parameter`` (learned: a 0-dim
    one, or one per row broadcasting to x with size 1 along ``dim``).

    Args:
        alpha: a real > 0, a tensor, or an nn.Parameter (as for ``entmax``).
        dim: the axis of the distribution.
        k: the ``entmax`` package's setting (its ``Entmax15(dim, k)``), accepted and
            checked as for ``entmax`` and otherwise ignored.
        n_iter: the package's setting (its ``EntmaxBisect(alpha, dim, n_iter)``), as ``k``.

    Raises:
        TypeError, ValueError: a bad k or n_iter (here; x and alpha at the call).

    Forward:
        x and an optional mask, as for ``entmax``. Returns probabilities of x's shape.

    Examples:
        >>> import torch
        >>> Entmax(alpha=2.0)(torch.tensor([0.4, 0.9, -0.8]))
        tensor([0.2500, 0.7500, 0.0000])
    """

    def __init__(
        self,
        alpha: float | torch.Tensor = 1.5,
        dim: int = -1,
        *,
        k: int | None = None,
        n_iter: int | None = None,
    ) -> None:
        super().__init__()
        _check_package_options(k, n_iter)
        self.alpha = alpha
        self.dim = dim

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``entmax(x, self.alpha, self.dim, mask)``.

        Args:
            x: scores, as for ``entmax``.
            mask: None or bool, broadcastable to x.

        Returns:
            Probabilities of x's shape and dtype.

        Examples:
            >>> import torch
            >>> Entmax(alpha=1.5).forward(torch.tensor([0.0, 0.0]))
            tensor([0.5000, 0.5000])
        """
        return entmax(x, self.alpha, self.dim, mask)

    def extra_repr(self) -> str:
        """The settings printed in the module's repr.

        Examples:
            >>> Entmax(alpha=1.5)
            Entmax(alpha=1.5, dim=-1)
        """
        alpha = self.alpha if isinstance(self.alpha, float) else "tensor"
        return f"alpha={alpha}, dim={self.dim}"


class Sparsemax(nn.Module):
    """Sparsemax along ``dim`` (the module form of ``sparsemax``; forward takes x and an
    optional mask).

    Args:
        dim: the axis of the distribution.
        k: the ``entmax`` package's setting (its ``Sparsemax(dim, k)``), accepted and
            checked as for ``sparsemax`` and otherwise ignored.

    Forward:
        x and an optional mask, as for ``sparsemax``.

    Raises:
        TypeError, ValueError: a bad k (here; x at the call).

    Examples:
        >>> import torch
        >>> Sparsemax(dim=-1)(torch.tensor([0.5, 1.0, -1.0]))
        tensor([0.2500, 0.7500, 0.0000])
    """

    def __init__(self, dim: int = -1, *, k: int | None = None) -> None:
        super().__init__()
        _check_package_options(k)
        self.dim = dim

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``sparsemax(x, self.dim, mask)``.

        Args:
            x: scores, as for ``sparsemax``.
            mask: None or bool, broadcastable to x.

        Returns:
            Probabilities of x's shape and dtype.

        Examples:
            >>> import torch
            >>> Sparsemax().forward(torch.tensor([0.0, 3.0]))
            tensor([0., 1.])
        """
        return sparsemax(x, self.dim, mask)

    def extra_repr(self) -> str:
        """The settings printed in the module's repr.

        Examples:
            >>> Sparsemax(dim=0)
            Sparsemax(dim=0)
        """
        return f"dim={self.dim}"


class EntmaxLoss(nn.Module):
    """The alpha-entmax Fenchel-Young loss as a module (the form of the ``entmax``
    package's ``EntmaxBisectLoss`` and ``Entmax15Loss``); ``alpha`` may be an
    ``nn.Parameter`` (learned, as for ``Entmax``).

    Args:
        alpha: a real > 0, a tensor, or an nn.Parameter (as for ``entmax_loss``).
        reduction: "mean" (over the rows not ignored), "sum" or "none";
            "elementwise_mean" (the entmax package's name) is "mean".
        ignore_index: the class index of rows to skip.
        k: the ``entmax`` package's setting (its ``Entmax15Loss(k, ...)``), accepted
            and checked as for ``entmax`` and otherwise ignored.
        n_iter: the package's setting (its ``EntmaxBisectLoss(alpha, n_iter, ...)``), as
            ``k``.

    Forward:
        x (..., K) scores and a target (class indices (...) or a distribution (..., K)),
        as for ``entmax_loss``. Returns the loss.

    Raises:
        ValueError: a reduction other than those above (here, not at the first call).
        TypeError, ValueError: a bad k or n_iter (here).

    Examples:
        >>> import torch
        >>> criterion = EntmaxLoss(alpha=2.0, reduction="sum")
        >>> float(criterion(torch.tensor([[0.0, 10.0], [10.0, 0.0]]), torch.tensor([1, 0])))
        0.0
    """

    def __init__(
        self,
        alpha: float | torch.Tensor = 1.5,
        reduction: str = "mean",
        ignore_index: int = -100,
        *,
        k: int | None = None,
        n_iter: int | None = None,
    ) -> None:
        super().__init__()
        _check_reduction(reduction, _REDUCTIONS)
        _check_package_options(k, n_iter)
        self.alpha = alpha
        self.reduction = reduction
        self.ignore_index = ignore_index

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """``entmax_loss(x, target, self.alpha, self.reduction, self.ignore_index)``.

        Args:
            x: scores (..., K), as for ``entmax_loss``.
            target: class indices (...) or a distribution (..., K).

        Returns:
            The loss: (...) for "none", else a scalar.

        Examples:
            >>> import torch
            >>> EntmaxLoss(alpha=1.5).forward(torch.tensor([[0.0, 0.0]]), torch.tensor([0]))
            tensor(0.3905)
        """
        return entmax_loss(x, target, self.alpha, self.reduction, self.ignore_index)

    def extra_repr(self) -> str:
        """The settings printed in the module's repr.

        Examples:
            >>> EntmaxLoss(alpha=1.3)
            EntmaxLoss(alpha=1.3, reduction='mean', ignore_index=-100)
        """
        alpha = self.alpha if isinstance(self.alpha, float) else "tensor"
        return f"alpha={alpha}, reduction={self.reduction!r}, ignore_index={self.ignore_index}"


class SparsemaxLoss(nn.Module):
    """The sparsemax Fenchel-Young loss as a module (the form of the ``entmax``
    package's ``SparsemaxLoss``).

    Args:
        reduction: as for ``EntmaxLoss``.
        ignore_index: the class index of rows to skip.
        k: the ``entmax`` package's setting (its ``SparsemaxLoss(k, ...)``), accepted and
            checked as for ``sparsemax`` and otherwise ignored.

    Forward:
        x (..., K) scores and a target, as for ``sparsemax_loss``. Returns the loss.

    Raises:
        ValueError: a bad reduction.
        TypeError, ValueError: a bad k.

    Examples:
        >>> import torch
        >>> float(SparsemaxLoss()(torch.tensor([[0.0, 0.5]]), torch.tensor([0])))
        0.5625
    """

    def __init__(
        self, reduction: str = "mean", ignore_index: int = -100, *, k: int | None = None
    ) -> None:
        super().__init__()
        _check_reduction(reduction, _REDUCTIONS)
        _check_package_options(k)
        self.reduction = reduction
        self.ignore_index = ignore_index

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """``sparsemax_loss(x, target, self.reduction, self.ignore_index)``.

        Args:
            x: scores (..., K), as for ``sparsemax_loss``.
            target: class indices (...) or a distribution (..., K).

        Returns:
            The loss: (...) for "none", else a scalar.

        Examples:
            >>> import torch
            >>> SparsemaxLoss(reduction="none").forward(
            ...     torch.tensor([[0.0, 0.5], [3.0, 0.0]]), torch.tensor([0, 0])
            ... )
            tensor([0.5625, 0.0000])
        """
        return sparsemax_loss(x, target, self.reduction, self.ignore_index)

    def extra_repr(self) -> str:
        """The settings printed in the module's repr.

        Examples:
            >>> SparsemaxLoss(ignore_index=0)
            SparsemaxLoss(reduction='mean', ignore_index=0)
        """
        return f"reduction={self.reduction!r}, ignore_index={self.ignore_index}"
