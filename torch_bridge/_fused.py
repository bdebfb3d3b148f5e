"""Hot eager CPU calls of entmax at the alphas whose powers are roots, compiled.

The core's fixed-step map at those alphas (tsallis.core.rooted.entmax_rows) is a graph
of whole-row passes that Inductor fuses: each evaluation one pass over each row, where
the eager Newton loop takes a partition, gathers and scatters and a few dozen
operations a step. This module compiles it (torch.compile, a static row length and
any number of rows) once a call has come tuning.FUSED_AFTER_CALLS times, runs it, and
finishes the rows it leaves unsettled with the eager loop. Measured (torch 2.13, AMD
EPYC, 2 threads, float32 (1024, 1000), alpha = 1.3, forward + backward): see
docs/measurements.md ("A compiled kernel for hot calls").
"""

from __future__ import annotations

import types
import warnings
from collections.abc import Callable

import torch

from tsallis.core import arrays as _arrays
from tsallis.core import discrete as _discrete
from tsallis.core import rooted as _rooted
from tsallis.core import tuning as T

__all__ = ["entmax_rows"]

# calls seen per (alpha, row length, slopes), and the kernels compiled for them
_CALLS: dict[tuple[float, int, bool], int] = {}
_KERNELS: dict[tuple[float, int, bool], Callable] = {}
_RAN: set[Callable] = set()  # the kernels called once (compiled)
_COUNTED_KEYS = 256  # (a schedule of alphas or lengths: the counts are bounded)
# the first compile failure (then no kernel is tried again in this process)
_FAILED: list[str] = []

_Result = tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]


def _eligible(z: torch.Tensor, alpha: float | torch.Tensor) -> bool:
    """Whether a call may take a compiled kernel (before counting it)."""
    if T.FUSED_AFTER_CALLS is None or _FAILED or not isinstance(alpha, float):
        return False
    if z.device.type != "cpu" or z.dtype != torch.float32 or z.ndim < 1:
        return False
    if torch.compiler.is_compiling() or _arrays.functorch_wrapped(z):
        return False
    size = z.shape[-1]
    rows = z.numel() // size if size else 0
    large = size >= T.FUSED_MIN_LENGTH and z.numel() >= T.FUSED_MIN_ELEMENTS
    # (two rows at least: Dynamo specializes a dimension of size 1)
    return large and rows >= 2 and _rooted.rooted(alpha)


def _hot_kernel(alpha: float, size: int, slopes: bool) -> Callable | None:
    """The compiled kernel for this call, once hot (counted here), else None."""
    key = (alpha, size, slopes)
    if key not in _CALLS and len(_CALLS) >= _COUNTED_KEYS:
        _CALLS.clear()
    _CALLS[key] = calls = _CALLS.get(key, 0) + 1
    if calls <= T.FUSED_AFTER_CALLS:
        return None
    if key not in _KERNELS:
        if len(_KERNELS) >= T.FUSED_KERNELS:
            return None
        held = _rooted.constants(alpha, size, torch.empty(0))
        rows = _own_function(len(_KERNELS), (alpha, T.FUSED_STEPS, slopes, held))
        _KERNELS[key] = torch.compile(rows, fullgraph=True, dynamic=False)
    return _KERNELS[key]


def _kernel(z: torch.Tensor, top: torch.Tensor, alpha=None, steps=None, slopes=None, held=None):  # noqa: ANN001, ANN202
    """What a kernel compiles: rooted.entmax_rows with its constants as defaults."""
    return _rooted.entmax_rows(z, top, alpha, steps, slopes, held)


def _own_function(number: int, defaults: tuple) -> Callable:
    """_kernel with a code object of its own and these defaults. Dynamo keeps the graphs
    it compiled, and counts the recompiles it allows (torch._dynamo.config.recompile_limit,
    8), per code object: kernels that shared one (a functools.partial of one function, or
    closures) were recompiles of each other, and the ninth failed to compile (measured)."""
    code = _kernel.__code__.replace(co_name=f"_kernel_{number}")
    return types.FunctionType(code, _kernel.__globals__, code.co_name, (None, *defaults))


def _quietly(kernel: Callable, *args: torch.Tensor) -> tuple:
    """A kernel's first call, which compiles it, without Dynamo's notes on tracing
    array_api_compat's lru_cache'd helpers (harmless; the user called an eager op). Only
    the first call: catch_warnings swaps the process's filters, which other threads see."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Dynamo detected", UserWarning)
        return kernel(*args)


def _dense(s: torch.Tensor | _discrete.ColumnSlopes, size: int) -> torch.Tensor:
    """s / sum(s) along the whole rows (the eager loop may give them on columns)."""
    if isinstance(s, _discrete.ColumnSlopes):
        return _arrays.scattered(s.values, s.columns, size)
    return s


def entmax_rows(
    z: torch.Tensor, top: torch.Tensor, alpha: float | torch.Tensor, slopes: bool
) -> _Result | None:
    """entmax_map's (p, s / sum(s), sum(s)) (or p, None, None without ``slopes``) by a
    compiled kernel, or None where the call takes the eager loop: not eligible, not yet
    hot, the compile failed (a RuntimeWarning, once a process), or more than
    tuning.STRAGGLERS of the rows unsettled.

    Args:
        z: (..., K) scores along the last axis, finite or -inf, each row with a finite
            entry (torch_bridge.entmax._forward's).
        top: (..., 1) z's row maxima.
        alpha: the map's alpha (a Python float, or a tensor, which is never taken).
        slopes: whether the backward's s / sum(s) and sum(s) are wanted.

    Returns:
        (p, s / sum(s), sum(s)) in z's shape (sum(s) with size 1 along the last axis),
        or None.

    Examples:
        >>> import torch
        >>> entmax_rows(torch.zeros(2, 3), torch.zeros(2, 1), 1.3, True) is None  # small
        True
    """
    if not _eligible(z, alpha):
        return None
    size = z.shape[-1]
    kernel = _hot_kernel(alpha, size, slopes)
    if kernel is None:
        return None
    flat, flat_top = z.reshape(-1, size).contiguous(), top.reshape(-1, 1).contiguous()
    for t in (flat, flat_top):
        torch._dynamo.mark_dynamic(t, 0)
    try:
        with torch.no_grad():
            if kernel in _RAN:
                p, s, scale, unsettled = kernel(flat, flat_top)
            else:  # (the compile)
                p, s, scale, unsettled = _quietly(kernel, flat, flat_top)
                _RAN.add(kernel)
    except Exception as error:  # (any compiler failure: the eager loop)
        _FAILED.append(f"{type(error).__name__}: {error}")
        warnings.warn(
            "torch_bridge.entmax: compiling the fused CPU kernel failed "
            f"({_FAILED[0][:200]}); the eager loop runs instead",
            RuntimeWarning,
            stacklevel=4,
        )
        return None
    left = unsettled.reshape(-1).nonzero().reshape(-1)
    if left.numel() > T.STRAGGLERS * flat.shape[0]:
        return None
    if left.numel():  # finished by the eager loop, rows apart
        done = _discrete.entmax_map(
            flat[left], alpha, None, True, top=flat_top[left], slopes=slopes
        )
        p[left] = done[0]
        if slopes:
            s[left], scale[left] = _dense(done[1], size), done[2]
    shape = z.shape
    if not slopes:
        return p.reshape(shape), None, None
    return p.reshape(shape), s.reshape(shape), scale.reshape((*shape[:-1], 1))
