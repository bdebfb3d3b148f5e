"""Evidential softmax (Chen 2021 eqs 7, 9, 10, 12) as Torch ops.

ev_softmax_train,eps(x) = softmax(y), where y = x on the support
S = {k : x_k >= min(mean(x), max(x))} and y = x + c off it, with the eq 10
shift c = log(eps) - log(1 + eps) (generated; -inf for eps = 0, which is
eq 7). The indicator is piecewise constant, so dy/dx = I almost everywhere
and the Jacobian is eq 9: the backward is exactly softmax's (log_softmax's)
backward on the output, done by one fused kernel in a custom Function.

The logits are the shared core's (tsallis.core.discrete.ev_logits, also
run by the NumPy face); this module adds the fused softmax, the eq 9
backward and the Modules. Speed: the forward is two row reductions (sum,
max), one subtraction, one in-place ``threshold`` (plus a clamp and an add
when eps > 0) and the fused softmax; the core's docstrings say why.

Conventions shared with ``tsallis.discrete``: ``mask`` marks valid entries
(True); masked entries and -inf entries take no part in the mean and get
probability 0 (log: -inf, gradient 0), whatever a masked entry holds (NaN
included). A row with no valid entry returns all 0 (log: all -inf) with zero
gradient. NaN or +inf in a valid entry raises ValueError; that check reads
the largest row spread (one small host sync per call) in eager mode. Under
torch.compile(fullgraph=True) torch.cond picks the robust path on the device;
NaN or +inf input then raises RuntimeError on the CPU (an assert in the compiled code)
and is not checked on a GPU (it propagates: a device-side assert would end the process's
CUDA context).
float16 and bfloat16 are computed in float32 and the result cast back.
torch.func's transforms (vmap, grad, jacrev, jacfwd, hessian) and forward-mode dual
tensors take the ops through a Function with a vmap rule and a jvp.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from torch_bridge import _compile
from torch_bridge.basis import constant_float
from tsallis.core import arrays as _xs
from tsallis.core import discrete as _core
from tsallis.core.arrays import functorch_wrapped
from tsallis.core.validation import broadcast_shape, real_at_least

__all__ = ["EvSoftmax", "LogEvSoftmax", "ev_softmax", "ev_softmax_nll_loss", "log_ev_softmax"]

_REDUCTIONS = ("mean", "sum", "none")
# the compiled ops' assert (_compile.check_compiled) for what eager mode's two checks say
_NAN_INPUT = "x must not contain NaN or +inf (outside the mask)"
_HALF = (torch.float16, torch.bfloat16)


def _softmax_backward(grad: torch.Tensor, out: torch.Tensor, dim: int) -> torch.Tensor:
    """out * (grad - <out, grad>): eq 9 applied to grad."""
    return torch._softmax_backward_data(grad, out, dim, out.dtype)


def _log_softmax_backward(grad: torch.Tensor, out: torch.Tensor, dim: int) -> torch.Tensor:
    """grad - exp(out) sum(grad): the gradient of the eq 12 log-likelihood."""
    return torch._log_softmax_backward_data(grad, out, dim, out.dtype)


def _check_dim(x: torch.Tensor, dim: int) -> int:
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"dim must be an int, got {dim!r}")
    if x.dim() == 0:  # (torch.softmax reads a 0-d tensor as one entry; a map here needs an axis)
        raise ValueError("x must have at least one dimension, got a 0-d tensor (reshape to (1,))")
    if not -x.dim() <= dim < x.dim():
        raise ValueError(f"dim must lie in [-{x.dim()}, {x.dim()}) for x of shape {tuple(x.shape)}")
    if x.shape[dim] == 0:
        raise ValueError(f"x must have at least one entry along dim {dim}")
    return dim % x.dim()


def _check_input(x: torch.Tensor, mask: torch.Tensor | None) -> None:
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        got = f"a {x.dtype} tensor" if isinstance(x, torch.Tensor) else type(x).__name__
        raise TypeError(f"x must be a floating-point tensor, got {got}")
    if mask is None:
        return
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        raise TypeError("mask must be a bool tensor (True = valid entry)")
    if mask.device != x.device:
        raise ValueError(f"mask is on {mask.device} but x is on {x.device}")
    if broadcast_shape(mask.shape, x.shape) != tuple(x.shape):
        raise ValueError(
            f"mask of shape {tuple(mask.shape)} does not broadcast to x {tuple(x.shape)}"
        )


class _EvSoftmaxFunction(torch.autograd.Function):
    """Forward: fused softmax / log_softmax of the shifted logits; backward: eq 9.

    ctx holds only the output and immutable flags (re-entrant).
    """

    @staticmethod
    def forward(
        ctx: torch.autograd.function.FunctionCtx,
        x: torch.Tensor,
        dim: int,
        mask: torch.Tensor | None,
        eps: float,
        log: bool,
    ) -> torch.Tensor:
        out, excluded = _forward(x, dim, mask, eps, log)
        ctx.save_for_backward(out)
        ctx.dim = dim
        ctx.log = log
        ctx.constant_entries = log and (eps == 0 or excluded)
        return out

    @staticmethod
    def backward(
        ctx: torch.autograd.function.FunctionCtx, grad: torch.Tensor
    ) -> tuple[torch.Tensor | None, ...]:
        (out,) = ctx.saved_tensors
        if not ctx.log:
            return _softmax_backward(grad, out, ctx.dim), None, None, None, None
        if ctx.constant_entries:  # -inf outputs are constants: no gradient in or out
            grad = grad.masked_fill(out == float("-inf"), 0.0)
        return _log_softmax_backward(grad, out, ctx.dim), None, None, None, None


class _TransformableEvSoftmax(torch.autograd.Function):
    """_EvSoftmaxFunction in the setup_context form, with a vmap rule and forward mode, so
    that torch.func's transforms (grad, vjp, jacrev, jacfwd, hessian, vmap) and dual
    tensors of torch.autograd.forward_ad take it. A vmapped call is one call on the
    batch (its plain values: the fast logits and the NaN check run as in eager mode). The
    backward and the jvp are eq 9's, written out (they run on batched values under
    vmap); entries whose output is 0 (log: -inf) take no tangent in or out."""

    @staticmethod
    def forward(x, dim, mask, eps, log):  # noqa: ANN001, ANN205
        return _forward(x, dim, mask, eps, log)[0]

    @staticmethod
    def setup_context(ctx, inputs, output):  # noqa: ANN001, ANN205
        ctx.save_for_backward(output)
        ctx.save_for_forward(output)
        ctx.dim, ctx.log = inputs[1], inputs[4]

    @staticmethod
    def backward(ctx, grad):  # noqa: ANN001, ANN205
        (out,) = ctx.saved_tensors
        return _eq9(grad, out, ctx.dim, ctx.log), None, None, None, None

    @staticmethod
    def jvp(ctx, x_tangent, *_):  # noqa: ANN001, ANN002, ANN205
        """eq 9 is symmetric (the backward's form); log's Jacobian, I - 1 p^T, is not."""
        (out,) = ctx.saved_tensors
        return _eq9(x_tangent, out, ctx.dim, ctx.log, forward=True)

    @staticmethod
    def vmap(info, in_dims, x, dim, mask, eps, log):  # noqa: ANN001, ANN205
        """One call on the batch (batch dimension first): the map is row by row along dim."""
        x_dim, _, mask_dim, _, _ = in_dims
        xb, batched = _batch_first(x, x_dim, info.batch_size)
        axis = dim if dim < 0 else dim + 1
        return _TransformableEvSoftmax.apply(xb, axis, batched(mask, mask_dim), eps, log), 0


def _batch_first(
    x: torch.Tensor, x_dim: int | None, size: int
) -> tuple[torch.Tensor, Callable[[torch.Tensor | None, int | None], torch.Tensor | None]]:
    """For a vmap rule: x with vmap's batch dimension first (expanded where x is not
    batched), and a function that does the same to an input that broadcasts to x from
    the right (a mask, a per-row alpha), padding it to x's rank; inputs that are not
    batched broadcast as they are."""
    rank = x.dim() - (x_dim is not None)  # (x's own rank, without the batch)
    first = x.movedim(x_dim, 0) if x_dim is not None else x.expand(size, *x.shape)

    def batched(t: torch.Tensor | None, axis: int | None) -> torch.Tensor | None:
        if t is None or axis is None:
            return t
        t = t.movedim(axis, 0)
        return t.reshape(size, *([1] * (rank - (t.dim() - 1))), *t.shape[1:])

    return first, batched


def _eq9(
    grad: torch.Tensor, out: torch.Tensor, dim: int, log: bool, forward: bool = False
) -> torch.Tensor:
    """eq 9's Jacobian J applied to ``grad``: out (grad - <out, grad>) (J is symmetric);
    for log-outputs, J = I - 1 p^T: grad - p sum(grad) (``grad`` J, the backward) or
    grad - <p, grad> (J ``grad``, ``forward``). Entries with output 0 (log: -inf)
    neither give nor take."""
    if not log:  # (the core's softmax backward, along the last axis)
        grad = grad.masked_fill(out == 0, 0.0).movedim(dim, -1)
        return _xs.softmax_backward(grad, out.movedim(dim, -1)).movedim(-1, dim)
    constant = out == float("-inf")
    grad, p = grad.masked_fill(constant, 0.0), out.exp()
    if forward:
        return (grad - (p * grad).sum(dim, keepdim=True)).masked_fill(constant, 0.0)
    return (grad - p * grad.sum(dim, keepdim=True)).masked_fill(constant, 0.0)


def _robust_branch(pred: torch.Tensor, cheap: Callable, full: Callable, operands: tuple) -> tuple:
    """ev_logits's branch under vmap (its choice would read batched values): the robust
    logits, valid for every row."""
    return full(*operands)


def _dual(*tensors: torch.Tensor | None) -> bool:
    """Whether one of these carries a forward-mode tangent (torch.autograd.forward_ad):
    the maps then take their Functions with a jvp (the plain paths would drop it)."""
    if torch.compiler.is_compiling():
        return False
    unpack = torch.autograd.forward_ad.unpack_dual
    return any(t is not None and unpack(t).tangent is not None for t in tensors)


def _forward(
    x: torch.Tensor, dim: int, mask: torch.Tensor | None, eps: float, log: bool
) -> tuple[torch.Tensor, bool]:
    """The output, and whether some entries were excluded (mask or -inf input)."""
    valid = None if mask is None else mask.expand_as(x)
    compiling = torch.compiler.is_compiling()
    branch = _compile.device_branch if compiling else None
    if _transformed(x, mask) or (compiling and _batched(x)):  # the robust logits (vmap's
        branch, compiling = _robust_branch, True  # batched values: no host read, no cond)
    y, empty = _core.ev_logits(x, valid, eps, axis=dim, branch=branch, check=not compiling)
    if compiling and not _transformed(x, mask):  # (the core's check reads the host)

        def valid_top() -> torch.Tensor:  # (no NaN nor +inf among the valid entries' maxima)
            top = x.amax(dim) if valid is None else x.masked_fill(~valid, -math.inf).amax(dim)
            return ~(top.isnan() | (top == math.inf)).any()

        _compile.check_compiled(valid_top, x, _NAN_INPUT)
    out = torch.log_softmax(y, dim) if log else torch.softmax(y, dim)
    if empty is not None:
        out = out.masked_fill_(empty, float("-inf") if log else 0.0)
    return out, empty is not None


def _apply(
    x: torch.Tensor, dim: int, mask: torch.Tensor | None, eps: float, log: bool
) -> torch.Tensor:
    _check_input(x, mask)
    dim = _check_dim(x, dim)
    eps = real_at_least("eps", constant_float(eps), 0.0)
    work = x.float() if x.dtype in _HALF else x
    if _transformed(work, mask) or _dual(work):  # (never under torch.compile)
        out = _TransformableEvSoftmax.apply(work, dim, mask, eps, log)
    elif torch.is_grad_enabled() and work.requires_grad:
        out = _EvSoftmaxFunction.apply(work, dim, mask, eps, log)
    else:  # no graph to build: skip the Function's dispatch (about 20 us)
        out, _ = _forward(work, dim, mask, eps, log)
    return out.to(x.dtype) if work is not x else out


def ev_softmax(
    x: torch.Tensor, dim: int = -1, mask: torch.Tensor | None = None, eps: float = 0.0
) -> torch.Tensor:
    """Evidential softmax along ``dim`` (eq 7); ``eps > 0`` is the training variant (eq 10).

    Args:
        x: scores (..., K, ...), float16/bfloat16/float32/float64, any device.
        dim: the axis of the distribution.
        mask: None, or a bool tensor broadcastable to x (True: a valid entry); masked
            entries get exactly 0 and no gradient, a row without a valid entry zeros.
        eps: the eq 10 eps >= 0 (0: eq 7).

    Returns:
        Probabilities of x's shape and dtype, summing to 1 along ``dim``. Gradients are
        eq 9 (closed form).

    Raises:
        TypeError: x not a floating tensor, mask not bool, dim not an int.
        ValueError: dim out of range, an empty axis, a mask on another device or of a
            shape that does not broadcast, eps < 0, NaN or +inf in a valid entry
            (eager mode).

    Examples:
        >>> import torch
        >>> ev_softmax(torch.tensor([0.4, 1.4, -0.8]))
        tensor([0.2689, 0.7311, 0.0000])
    """
    return _apply(x, dim, mask, eps, log=False)


def log_ev_softmax(
    x: torch.Tensor, dim: int = -1, mask: torch.Tensor | None = None, eps: float = 1e-6
) -> torch.Tensor:
    """log ev_softmax_train,eps(x), computed as shifted logits minus their log-sum-exp.

    Finite on valid entries when eps > 0 (for logits spread over any finite
    range); with eps = 0 entries off the support are -inf with zero gradient.

    Args:
        x: as for ``ev_softmax``.
        dim: as for ``ev_softmax``.
        mask: as for ``ev_softmax``.
        eps: the eq 10 eps >= 0 (default 1e-6).

    Returns:
        Log-probabilities of x's shape and dtype.

    Raises:
        TypeError, ValueError: as for ``ev_softmax``.

    Examples:
        >>> import torch
        >>> log_ev_softmax(torch.tensor([0.4, 1.4, -0.8]))  # eps = 1e-6: finite
        tensor([ -1.3133,  -0.3133, -16.3288])
    """
    return _apply(x, dim, mask, eps, log=True)


def ev_softmax_nll_loss(
    logits: torch.Tensor,
    target: torch.Tensor,
    eps: float = 1e-6,
    ignore_index: int = -100,
    reduction: str = "mean",
) -> torch.Tensor:
    """Negative log-likelihood of ev_softmax_train,eps (Chen 2021 section 3.2).

    Shapes as ``F.cross_entropy``: logits (N, C) or (N, C, d1, ...) with the
    classes along dim 1, or (C,) unbatched. Its gradient tends to
    ev_softmax(v) - delta_target as eps -> 0 (eq 12). eps must be > 0: with
    eps = 0 the likelihood of a class off the support is 0. ``"mean"`` over
    no non-ignored target returns 0 (torch returns NaN there).

    Args:
        logits: floating scores, (C,), (N, C) or (N, C, d1, ...).
        target: integer class indices, () , (N,) or (N, d1, ...), on logits' device.
        eps: the eq 10 eps > 0.
        ignore_index: targets equal to it count for nothing.
        reduction: "mean" (over the counted targets), "sum" or "none".

    Returns:
        A 0-dim tensor, or the per-target losses for "none".

    Raises:
        TypeError: logits not floating, target not integer, ignore_index not an int.
        ValueError: a bad shape, reduction or eps, a target out of range (checked in
            eager mode), a target on another device.

    Examples:
        >>> import torch
        >>> ev_softmax_nll_loss(torch.tensor([[0.4, 1.4, -0.8]]), torch.tensor([1]))
        tensor(0.3133)
    """
    eps = real_at_least("eps", constant_float(eps), 0.0)
    if eps == 0:
        raise ValueError(
            "eps must be > 0 for the NLL: ev_softmax gives probability 0 off its support"
        )
    _check_reduction(reduction)
    if not isinstance(logits, torch.Tensor) or logits.dim() == 0:
        raise ValueError("logits must be a tensor of shape (C,), (N, C) or (N, C, d1, ...)")
    class_dim = 1 if logits.dim() >= 2 else 0
    _check_target(logits, target, class_dim, ignore_index)
    log_p = log_ev_softmax(logits, dim=class_dim, eps=eps)
    losses = F.nll_loss(log_p, target, ignore_index=ignore_index, reduction="none")
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    counted = (target != ignore_index).sum().clamp_min(1)
    return losses.sum() / counted


def _check_reduction(reduction: object, allowed: tuple[str, ...] = _REDUCTIONS) -> None:
    """ValueError unless ``reduction`` is one of ``allowed`` (the losses' reductions)."""
    if reduction not in allowed:
        raise ValueError(f"reduction must be one of {allowed}, got {reduction!r}")


def _transformed(*tensors: torch.Tensor | None) -> bool:
    """Whether torch.func wraps one of these (vmap's batched or grad's tracked tensors):
    the maps then go through their Functions with a vmap rule, whose forward sees the
    plain tensors, and the checks that read values on the host are skipped, as under
    torch.compile."""
    return any(t is not None and functorch_wrapped(t) for t in tensors)  # (compiled: False)


# whether vmap batches a tensor, under torch.compile too: torch.cond does not run under
# a compiled vmap
_batched = _compile.batched


def _check_target(logits: torch.Tensor, target: object, class_dim: int, ignore_index: int) -> None:
    """TypeError / ValueError for a target F.nll_loss would reject with another type (the
    class values are checked in eager mode only: under torch.compile a host read would
    break the graph)."""
    if not isinstance(target, torch.Tensor):
        raise TypeError(f"target must be a tensor of class indices, got {type(target).__name__}")
    if target.is_floating_point() or target.is_complex() or target.dtype == torch.bool:
        raise TypeError(f"target must hold integer class indices, got dtype {target.dtype}")
    if not isinstance(ignore_index, int) or isinstance(ignore_index, bool):
        raise TypeError(f"ignore_index must be an int, got {ignore_index!r}")
    expected = logits.shape[:class_dim] + logits.shape[class_dim + 1 :]
    if target.shape != expected:
        raise ValueError(
            f"target must have shape {tuple(expected)} for logits {tuple(logits.shape)},"
            f" got {tuple(target.shape)}"
        )
    if target.device != logits.device:
        raise ValueError(f"target is on {target.device} but logits are on {logits.device}")
    classes = logits.shape[class_dim]
    if torch.compiler.is_compiling() or _transformed(target):  # (a host read: eager only)
        if not _transformed(target):  # (compiled on the CPU: an assert instead)

            def fits() -> torch.Tensor:
                inside = (target >= 0) & (target < classes)
                return (inside | (target == ignore_index)).all()

            message = f"target must lie in [0, {classes}) or equal ignore_index={ignore_index}"
            _compile.check_compiled(fits, target, message)
        return
    counted = target[target != ignore_index]
    if counted.numel() and bool(((counted < 0) | (counted >= classes)).any()):
        bad = counted[(counted < 0) | (counted >= classes)][0].item()
        raise ValueError(
            f"target must lie in [0, {classes}) or equal ignore_index={ignore_index}, got {bad}"
        )


class EvSoftmax(nn.Module):
    """ev-softmax along ``dim``: eps = ``eps`` (1e-6) in training mode, 0 in eval mode.

    Args:
        dim: the axis of the distribution.
        eps: the training-mode eps >= 0 (eq 10).

    Forward:
        x and an optional mask, as for ``ev_softmax``. Returns probabilities of x's shape.

    Examples:
        >>> import torch
        >>> EvSoftmax(dim=-1).eval()(torch.tensor([0.4, 1.4, -0.8]))
        tensor([0.2689, 0.7311, 0.0000])
    """

    def __init__(self, dim: int = -1, eps: float = 1e-6) -> None:
        super().__init__()
        self.dim = dim
        self.eps = real_at_least("eps", eps, 0.0)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``ev_softmax`` along ``self.dim``, eps = ``self.eps`` in training mode, else 0.

        Args:
            x: scores, as for ``ev_softmax``.
            mask: None or bool, broadcastable to x.

        Returns:
            Probabilities of x's shape.

        Examples:
            >>> import torch
            >>> EvSoftmax().eval().forward(torch.tensor([0.0, 0.0]))
            tensor([0.5000, 0.5000])
        """
        return ev_softmax(x, self.dim, mask, self.eps if self.training else 0.0)

    def extra_repr(self) -> str:
        """The settings printed in the module's repr.

        Examples:
            >>> EvSoftmax(eps=0.5)
            EvSoftmax(dim=-1, eps=0.5)
        """
        return f"dim={self.dim}, eps={self.eps}"


class LogEvSoftmax(EvSoftmax):
    """log ev-softmax along ``dim``; in eval mode (eps = 0) entries off the support are -inf.

    Args:
        dim: as for ``EvSoftmax``.
        eps: as for ``EvSoftmax``.

    Forward:
        x and an optional mask. Returns log-probabilities of x's shape.

    Examples:
        >>> import torch
        >>> LogEvSoftmax(dim=-1).eval()(torch.tensor([0.4, 1.4, -0.8]))
        tensor([-1.3133, -0.3133,    -inf])
    """

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``log_ev_softmax`` along ``self.dim``, eps = ``self.eps`` in training mode, else 0.

        Args:
            x: scores, as for ``log_ev_softmax``.
            mask: None or bool, broadcastable to x.

        Returns:
            Log-probabilities of x's shape.

        Examples:
            >>> import torch
            >>> LogEvSoftmax().eval().forward(torch.tensor([0.0, 0.0]))
            tensor([-0.6931, -0.6931])
        """
        return log_ev_softmax(x, self.dim, mask, self.eps if self.training else 0.0)
