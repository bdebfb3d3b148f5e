"""Hot eager calls of entmax at the alphas whose powers are roots (or whole: 3/2, and 2,
sparsemax), compiled.

The core's fixed-step map at those alphas (tsallis.core.rooted.entmax_rows) is a graph
of whole-row passes that Inductor fuses: each evaluation one pass over each row, where
the eager Newton loop takes a partition, gathers and scatters and a few dozen
operations a step (on a GPU, a few dozen launches and a host read a step), and 3/2's
sort-based threshold a sort and a dozen launches. This module compiles it
(torch.compile, a static row length and any number of rows) once a call has come
tuning.FUSED_AFTER_CALLS times, runs it, and finishes the rows it leaves unsettled with
the eager loop. After its first call the compiled graph is called directly (_Direct),
not through Dynamo's frame. Measured (float32 (1024, 1000), forward + backward): see
docs/measurements.md ("A compiled kernel for hot calls", "Direct calls and sparsemax's
kernel").
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import math
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
# kernel -> the graphs its compiles captured (_capturing), and kernel -> its direct call
_GRAPHS: dict[Callable, list] = {}
_DIRECT: dict[Callable, _Direct] = {}

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
    return large and rows >= 2 and _rooted_alpha(alpha)


# rooted.rooted per alpha, remembered (it forms the alpha's power chain: a few us a call)
_rooted_alpha = functools.lru_cache(maxsize=_COUNTED_KEYS)(_rooted.rooted)


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
    steps = T.FUSED_SUPPORT_STEPS if alpha == 2.0 else steps
    rows = _own_function(next(_NUMBERS), (alpha, steps, slopes, held))
    graphs: list = []
    kernel = torch.compile(rows, fullgraph=True, dynamic=False, backend=_capturing(graphs))
    _GRAPHS[kernel] = graphs
    return kernel


def _capturing(graphs: list) -> Callable | str:
    """Inductor as torch.compile's backend, keeping each graph it compiles in ``graphs``:
    (the compiled function, its inputs' names: "rows" or "z", the row count's symbol,
    that symbol's range and the shape guards), for _Direct. "inductor" itself where its
    entry point is not importable (then no direct call)."""
    try:
        from torch._inductor.compile_fx import compile_fx
    except ImportError:  # (a Torch without it: Dynamo's calls)
        return "inductor"

    def capture(graph: torch.fx.GraphModule, example_inputs: list) -> Callable:
        compiled = compile_fx(graph, example_inputs)
        graphs.append((compiled, *_signature(graph)))
        return compiled

    return capture


def _signature(graph: torch.fx.GraphModule) -> tuple:
    """(the inputs' names, the row count's symbol, its range, the shape guards) of a
    captured graph, or (None,) * 4 where they are not one (rows, K) tensor and its row
    count, the graph a kernel compiles with its rows marked dynamic."""
    try:
        context = torch._guards.TracingContext.try_get()
        shapes = context.fake_mode.shape_env
        inputs, symbol = [], None
        for node in graph.graph.nodes:
            if node.op != "placeholder":
                continue
            value = node.meta["example_value"]
            if isinstance(value, torch.SymInt):
                inputs.append("rows")
                symbol = value.node.expr
            elif isinstance(value, torch.Tensor) and value.dim() == 2:
                inputs.append("z")
                rows = value.shape[0]
            else:
                return (None,) * 4
        if inputs.count("z") != 1 or inputs.count("rows") > 1:
            return (None,) * 4
        if not isinstance(rows, torch.SymInt) or (symbol is not None and rows.node.expr != symbol):
            return (None,) * 4
        symbol = rows.node.expr
        guards = [guard.expr for guard in shapes.guards]
        return tuple(inputs), symbol, shapes.var_to_range.get(symbol), guards
    except Exception:  # (another Torch's internals: Dynamo's calls)
        return (None,) * 4


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


class _Direct:
    """A kernel's compiled graph called without Dynamo: the frame evaluation and its
    guards were most of the kernel's call (measured: 42 us through Dynamo and 17 us
    directly on CPU rows (4, 64), where the whole entmax(x, 1.5) without grad took 67;
    on an H200, a synchronize included, 0.33 ms and 0.11, where a GPU call's cost is
    its host work). Dynamo's guards are replaced by the ones that hold here:
    _eligible's (float32, >= 2 rows), entmax_rows's (a 2-D contiguous z, no grad mode),
    the compile's row length and device (index included: Inductor's code sets it), and
    the shape guards that the compile put on the row count, evaluated once per count.
    Where any of these fails, the call goes through Dynamo as before."""

    def __init__(
        self,
        compiled: Callable,
        inputs: tuple,
        symbol: object,
        span: object,
        guards: list,
        device: torch.device,
    ) -> None:
        self.compiled, self.inputs, self.device = compiled, inputs, device
        self.symbol, self.span, self.guards = symbol, span, guards
        self.counts: dict[int, bool] = {}  # row count -> whether the guards hold
        # where the graph's outputs go among the kernel's (None: all of them, in order)
        self.places: tuple[int, ...] | None = None
        self.length = 0

    def takes(self, z: torch.Tensor) -> bool:
        """Whether this graph may run on z (the kernel's row length, contiguous, 2-D)."""
        if z.device != self.device:
            return False
        rows = z.shape[0]
        known = self.counts.get(rows)
        if known is None:
            if len(self.counts) >= _COUNTED_KEYS:
                self.counts.clear()
            known = self.counts[rows] = self._holds(rows)
        return known

    def _holds(self, rows: int) -> bool:
        try:
            value = {self.symbol: rows}
            inside = self.span is None or bool(self.span.lower <= rows <= self.span.upper)
            return inside and all(bool(g.xreplace(value)) for g in self.guards)
        except Exception:  # (a guard that does not evaluate: Dynamo's call)
            return False

    def __call__(self, z: torch.Tensor) -> tuple:
        out = self.compiled(*(z if name == "z" else z.shape[0] for name in self.inputs))
        if self.places is None:
            return tuple(out)
        # (the kernel's None outputs, without the backward's slopes, are not the graph's)
        result = [None] * self.length
        for place, value in zip(self.places, out, strict=True):
            result[place] = value
        return tuple(result)


def _direct(kernel: Callable, z: torch.Tensor, ran: tuple) -> _Direct | None:
    """The direct call of a kernel's first compile, or None: none captured, more than
    one graph, inputs other than (rows, z), or results on z that differ from Dynamo's."""
    graphs = _GRAPHS.get(kernel, [])
    if len(graphs) != 1 or graphs[0][1] is None:
        return None
    direct = _Direct(*graphs[0], z.device)
    if any(value is None for value in ran):
        direct.places = tuple(i for i, value in enumerate(ran) if value is not None)
        direct.length = len(ran)
    try:
        if not direct.takes(z):
            return None
        again = direct(z)
        same = len(again) == len(ran) and all(
            (a is None and b is None) or (a is not None and b is not None and torch.equal(a, b))
            for a, b in zip(again, ran, strict=True)
        )
    except Exception:
        return None
    return direct if same else None


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
    direct = _direct(kernel, args[0], ran)
    if direct is not None:
        _DIRECT[kernel] = direct
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
        direct = _DIRECT.get(kernel)
        if direct is not None and direct.takes(flat):
            p, s, scale, check = direct(flat)
        elif kernel in _RAN:
            p, s, scale, check = kernel(flat)
        else:  # (rows marked dynamic for the compile; the graph then takes any count)
            _arrays.register(flat)  # (its type's caches, before the trace reads them)
            flat = flat.view(flat.shape)  # (a view: the mark stays off the caller's tensor)
            torch._dynamo.mark_dynamic(flat, 0)
            ran = _first_call((alpha, size, slopes, device), kernel, flat)
            if ran is None:
                return None
            p, s, scale, check = ran
    read = check.cpu().numpy()  # (the one host read)
    # (one reduction: the maxima's sum is finite where every maximum is, unless it
    # overflows, which takes the long way; then the count of unsettled rows)
    maxima, unsettled = read.sum(axis=0)
    if not math.isfinite(maxima) and not np.isfinite(read[:, 0]).all():
        return None
    if unsettled > T.STRAGGLERS * flat.shape[0]:
        return None
    if unsettled:  # finished by the eager loop, rows apart
        left = np.flatnonzero(read[:, 1])
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
