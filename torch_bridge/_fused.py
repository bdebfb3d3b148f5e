"""Hot eager calls of entmax at the alphas whose powers are roots (or whole, 3/2), compiled.

The core's fixed-step map at those alphas (tsallis.core.rooted.entmax_rows) is a graph
of whole-row passes that Inductor fuses: each evaluation one pass over each row, where
the eager Newton loop takes a partition, gathers and scatters and a few dozen
operations a step (on a GPU, a few dozen launches and a host read a step), and 3/2's
sort-based threshold a sort and a dozen launches. This module compiles it
(torch.compile, a static row length and any number of rows) once a call has come
tuning.FUSED_AFTER_CALLS times, runs it, and finishes the rows it leaves unsettled with
the eager loop. Measured (float32 (1024, 1000), forward + backward): see
docs/measurements.md ("A compiled kernel for hot calls").
"""

from __future__ import annotations

import contextlib
import itertools
import types
import warnings
from collections.abc import Callable

import numpy as np
import torch

from tsallis.core import arrays as _arrays
from tsallis.core import discrete as _discrete
from tsallis.core import rooted as _rooted
from tsallis.core import tuning as T

__all__ = ["entmax_rows"]

# calls seen per (alpha, row length, slopes, device type), and the kernels compiled for them
_Key = tuple[float, int, bool, str]
_CALLS: dict[_Key, int] = {}
_KERNELS: dict[_Key, Callable] = {}
_RAN: set[Callable] = set()  # the kernels called once (compiled)
_COUNTED_KEYS = 256  # (a schedule of alphas or lengths: the counts are bounded)
# the first compile failure (then no kernel is tried again in this process)
_FAILED: list[str] = []
_NUMBERS = itertools.count()  # each kernel's own code object's name (_own_function)
_DEVICES = ("cpu", "cuda")

_Result = tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]


def _eligible(z: torch.Tensor, alpha: float | torch.Tensor) -> bool:
    """Whether a call may take a compiled kernel (before counting it)."""
    if T.FUSED_AFTER_CALLS is None or _FAILED or not isinstance(alpha, float):
        return False
    if z.device.type not in _DEVICES or z.dtype != torch.float32 or z.ndim < 1:
        return False
    if torch.compiler.is_compiling() or _arrays.functorch_wrapped(z):
        return False
    size = z.shape[-1]
    rows = z.numel() // size if size else 0
    large = size >= T.FUSED_MIN_LENGTH and z.numel() >= T.FUSED_MIN_ELEMENTS
    # (two rows at least: Dynamo specializes a dimension of size 1)
    return large and rows >= 2 and _rooted.rooted(alpha)


def _hot_kernel(alpha: float, size: int, slopes: bool, device: str) -> Callable | None:
    """The compiled kernel for this call, once hot (counted here), else None."""
    key = (alpha, size, slopes, device)
    if key not in _CALLS and len(_CALLS) >= _COUNTED_KEYS:
        _CALLS.clear()
    _CALLS[key] = calls = _CALLS.get(key, 0) + 1
    if calls <= T.FUSED_AFTER_CALLS:
        return None
    if key not in _KERNELS:
        if len(_KERNELS) >= T.FUSED_KERNELS:
            return None
        _KERNELS[key] = _compiled(key, fused_sums=True)
    return _KERNELS[key]


def _compiled(key: _Key, fused_sums: bool) -> Callable:
    """rooted.entmax_rows for ``key`` under torch.compile (compiled at its first call)."""
    alpha, size, slopes, device = key
    held = _rooted.constants(alpha, size, torch.empty(0), fused_sums)
    steps = T.FUSED_STEPS if device == "cpu" else T.FUSED_STEPS_OFF_CPU
    rows = _own_function(next(_NUMBERS), (alpha, steps, slopes, held))
    return torch.compile(rows, fullgraph=True, dynamic=False)


def _kernel(z: torch.Tensor, alpha=None, steps=None, slopes=None, held=None):  # noqa: ANN001, ANN202
    """What a kernel compiles: the row maxima, rooted.entmax_rows with its constants as
    defaults, and the call's one host read, (rows, 2): each row's maximum (_forward's
    check: finite on every row) and whether it is unsettled (0 or 1). Per row, in the
    pass over it: their sums over the rows took two more kernels on a GPU (measured)."""
    top = z.amax(-1, keepdim=True)
    p, s, scale, unsettled = _rooted.entmax_rows(z, top, alpha, steps, slopes, held)
    return p, s, scale, torch.cat([top, unsettled.to(z.dtype)], -1)


def _own_function(number: int, defaults: tuple) -> Callable:
    """_kernel with a code object of its own and these defaults. Dynamo keeps the graphs
    it compiled, and counts the recompiles it allows (torch._dynamo.config.recompile_limit,
    8), per code object: kernels that shared one (a functools.partial of one function, or
    closures) were recompiles of each other, and the ninth failed to compile (measured)."""
    code = _kernel.__code__.replace(co_name=f"_kernel_{number}")
    return types.FunctionType(code, _kernel.__globals__, code.co_name, defaults)


def _quietly(kernel: Callable, *args: torch.Tensor) -> tuple:
    """A kernel's first call, which compiles it, without Dynamo's notes on tracing
    array_api_compat's lru_cache'd helpers (harmless; the user called an eager op). Only
    the first call: catch_warnings swaps the process's filters, which other threads see."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Dynamo detected", UserWarning)
        return kernel(*args)


def _first_call(key: _Key, kernel: Callable, *args: torch.Tensor) -> tuple | None:
    """A kernel's first call (its compile), or None where compiling failed (then a
    RuntimeWarning, once a process, and the eager loop from then on). Off the CPU a
    kernel whose row sums Inductor fuses into its passes is tried first, then one whose
    row sums stay Torch's own kernels (arrays.OPAQUE_ROW_SUM says which Triton failure
    that avoids for the Newton loop)."""
    first = ""
    try:
        try:
            ran = _quietly(kernel, *args)
        except Exception as error:
            if key[3] == "cpu":
                raise
            first = f"{type(error).__name__}: {str(error)[:200]}; then "
            kernel = _KERNELS[key] = _compiled(key, fused_sums=False)
            ran = _quietly(kernel, *args)
    except Exception as error:  # (any compiler failure: the eager loop)
        _FAILED.append(f"{first}{type(error).__name__}: {error}")
        warnings.warn(
            "torch_bridge.entmax: compiling the fused kernel failed "
            f"({_FAILED[0][:400]}); the eager loop runs instead",
            RuntimeWarning,
            stacklevel=5,
        )
        return None
    _RAN.add(kernel)
    return ran


def _dense(s: torch.Tensor | _discrete.ColumnSlopes, size: int) -> torch.Tensor:
    """s / sum(s) along the whole rows (the eager loop may give them on columns)."""
    if isinstance(s, _discrete.ColumnSlopes):
        return _arrays.scattered(s.values, s.columns, size)
    return s


def entmax_rows(z: torch.Tensor, alpha: float | torch.Tensor, slopes: bool) -> _Result | None:
    """entmax_map's (p, s / sum(s), sum(s)) (or p, None, None without ``slopes``) by a
    compiled kernel, or None where the call takes the eager path: not eligible, not yet
    hot, the compile failed (a RuntimeWarning, once a process), a row maximum not finite
    (NaN, +inf, or a row without a finite entry: the eager path's checks raise or mask),
    or more than tuning.STRAGGLERS of the rows unsettled. The kernel forms the row
    maxima and the check itself: one host read a call, where the eager path's check
    and the unsettled rows took two, and seven launches on a GPU.

    Args:
        z: (..., K) scores along the last axis, finite or -inf (torch_bridge.entmax
            ._forward's, masked).
        alpha: the map's alpha (a Python float, or a tensor, which is never taken).
        slopes: whether the backward's s / sum(s) and sum(s) are wanted.

    Returns:
        (p, s / sum(s), sum(s)) in z's shape (sum(s) with size 1 along the last axis),
        or None.

    Examples:
        >>> import torch
        >>> entmax_rows(torch.zeros(2, 3), 1.3, True) is None  # small
        True
    """
    if not _eligible(z, alpha):
        return None
    size, device = z.shape[-1], z.device.type
    kernel = _hot_kernel(alpha, size, slopes, device)
    if kernel is None:
        return None
    # (each step of this path is a few microseconds of the host, which on a GPU is
    # most of a call: a 2-D contiguous z is taken as it is, and the Functions' forward
    # runs without grad mode already)
    flat = z if z.ndim == 2 and z.is_contiguous() else z.reshape(-1, size).contiguous()
    with torch.no_grad() if torch.is_grad_enabled() else contextlib.nullcontext():
        if kernel in _RAN:
            p, s, scale, check = kernel(flat)
        else:  # (rows marked dynamic for the compile; the graph then takes any count)
            flat = flat.view(flat.shape)  # (a view: the mark stays off the caller's tensor)
            torch._dynamo.mark_dynamic(flat, 0)
            ran = _first_call((alpha, size, slopes, device), kernel, flat)
            if ran is None:
                return None
            p, s, scale, check = ran
    maxima, unsettled = check.cpu().numpy().T  # (the one host read)
    if not np.isfinite(maxima).all():
        return None
    left = np.flatnonzero(unsettled)
    if left.size > T.STRAGGLERS * flat.shape[0]:
        return None
    if left.size:  # finished by the eager loop, rows apart
        rows = torch.from_numpy(left).to(flat.device)
        done = _discrete.entmax_map(  # (their maxima: the kernel's)
            flat[rows], alpha, None, True, top=check[rows, :1], slopes=slopes
        )
        p[rows] = done[0]
        if slopes:
            s[rows], scale[rows] = _dense(done[1], size), done[2]
    if flat is not z:
        shape = z.shape
        p = p.reshape(shape)
        s, scale = (
            (None, None) if not slopes else (s.reshape(shape), scale.reshape((*shape[:-1], 1)))
        )
    return p, s, scale
