"""The array-namespace layer of the core: one implementation for NumPy and Torch.

Code written against ``xp`` (``array_api_compat.array_namespace``) runs on
NumPy arrays and Torch tensors alike, under ``torch.compile(fullgraph=True)``
too. The array API has no special functions; this module adds the few the
generated code needs (erf, erfc, log-gamma) and the relative and tail-exact
helpers built on them, written once here.

The Torch branch uses tensor methods, so the core never imports torch.
"""

from __future__ import annotations

import functools
import math
import sys
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import scipy.linalg
import scipy.special as _sp
from array_api_compat import array_namespace, is_torch_array

import tsallis.core.tuning as _tuning
from tsallis.core.tuning import FLOAT32_EDGE_FLUSH, SMALL_SOLVE, STIRLING_MIN

__all__ = [
    "arrays",
    "at_least_into",
    "cbrt_into",
    "constant",
    "constant_tables",
    "cube_root",
    "edge_exp",
    "erf",
    "erfc",
    "exp_flushed",
    "expm1",
    "exprel",
    "functorch_wrapped",
    "index_add",
    "index_max",
    "lgamma",
    "lgamma_ratio",
    "log1prel",
    "log1prel_slope",
    "log2_into",
    "mahalanobis2",
    "namespace",
    "native",
    "ndtr",
    "normal_mass",
    "numpy_log2_pays",
    "partition_cost",
    "partition_pays",
    "replace_at_most",
    "smallest",
    "softplus",
    "stop_gradient",
    "subtract_product",
]

Array = Any  # a NumPy array or a Torch tensor

# Below this |x| a Taylor polynomial is used; its truncation error is < 1e-18,
# and autograd of the direct quotient would cancel there.
_SERIES_CUTOFF = 1e-2
_EXPREL_TERMS = [1 / math.factorial(n + 1) for n in range(8)]
_LOG1PREL_TERMS = [(-1) ** n / (n + 1) for n in range(10)]
# d/dx log1prel: its Taylor series term by term, used below |x| = 0.1, where the closed
# form (x / (1 + x) - log1p(x)) / x^2 loses about 4 / |x| ulps to cancellation.
_SLOPE_CUTOFF = 0.1
_LOG1PREL_SLOPE_TERMS = [(-1) ** (m + 1) * (m + 1) / (m + 2) for m in range(17)]
_SQRT_HALF = math.sqrt(0.5)

# Stirling's series for log Gamma: (z - 1/2) log z - z + log(2 pi)/2 + S(z),
# S(z) = sum_j B_2j / (2j (2j - 1) z^(2j - 1)); eight terms leave < 2e-18 at z >= 10
# (STIRLING_MIN, in tsallis.core.tuning).
STIRLING_TERMS = [
    1 / 12,
    -1 / 360,
    1 / 1260,
    -1 / 1680,
    1 / 1188,
    -691 / 360360,
    1 / 156,
    -3617 / 122400,
]


_NUMPY_LIKE = (np.ndarray, np.generic, float, int)

# The namespace of one array type, looked up once: array_namespace costs about 3 us a
# call, which the small ops of the core pay several times per call.
_BY_TYPE: dict[type, ModuleType] = {}


def namespace(*values: object) -> ModuleType:
    """The array namespace of the array arguments (NumPy's when there are none)."""
    if len(values) == 1:
        known = _BY_TYPE.get(type(values[0]))
        if known is not None:
            return known
    found = [
        v
        for v in values
        if isinstance(v, np.ndarray)
        or (
            not isinstance(v, _NUMPY_LIKE)
            and (hasattr(v, "__array_namespace__") or is_torch_array(v))
        )
    ]
    xp = array_namespace(*found) if found else array_namespace(np.empty(0))
    if len(values) == 1 and found:
        _BY_TYPE[type(values[0])] = xp
    return xp


def arrays(*values: object) -> tuple[ModuleType, tuple[Array, ...]]:
    """(xp, the values as floating arrays of one dtype and device).

    The floating array arguments set the dtype (promoted, at least float32 for
    Torch; NumPy keeps its own promotion, float64 for integers and numbers) and
    the first one the device. Python numbers and integer arrays are converted;
    nothing is copied when an argument already matches.
    """
    # Tensors of one float32/float64 dtype and device (what the Torch faces pass): as
    # they are, with no per-value framework checks (these cost ~40 us on a 4-argument
    # kernel, more than its arithmetic on a thousand elements).
    head = values[0]
    fast = _FAST_TENSOR.get(type(head))
    if fast is not None and head.dtype in fast[1]:
        dtype, device = head.dtype, head.device
        if all(type(v) is type(head) and v.dtype == dtype and v.device == device for v in values):
            return fast[0], values
    if type(head) is np.ndarray and head.dtype in _NUMPY_FLOATS:  # NumPy of one float dtype
        if all(type(v) is np.ndarray and v.dtype == head.dtype for v in values):
            return _NUMPY, values
        # and Python floats (a Newton step's alpha): as the float64 values that the
        # general path below makes of them (np.asarray), without its per-value checks
        if all(
            (type(v) is np.ndarray and v.dtype == head.dtype) or type(v) is float for v in values
        ):
            return _NUMPY, tuple(np.float64(v) if type(v) is float else v for v in values)
    # NumPy values and Python numbers first: no framework check (cheaper, and it needs no
    # torch module at all; tests hide torch as sys.modules["torch"] = None)
    if not all(isinstance(v, _NUMPY_LIKE) for v in values) and any(
        is_torch_array(v) for v in values
    ):
        return _torch_arrays(values)
    out = []
    for v in values:
        a = np.asarray(v)
        out.append(a if np.issubdtype(a.dtype, np.floating) else a.astype(np.float64))
    return _NUMPY, tuple(out)


_F64 = np.dtype(np.float64)
_NUMPY_FLOATS = (_F64, np.dtype(np.float32))
_NUMPY = array_namespace(np.empty(0))

# Tensor type -> (its namespace, the dtypes arrays() passes through unchanged)
_FAST_TENSOR: dict[type, tuple[ModuleType, tuple]] = {}


def register(like: Array) -> None:
    """Fill the per-type caches of namespace() and arrays() for like's array type.

    window.prepare_tables calls it; the Torch face runs that outside the traced graph
    under torch.compile, since a branch of torch.cond may not mutate a global dict.
    """
    namespace(like)
    arrays(like)


# NumPy's entries from the start: torch.compile guards on these caches where a trace
# reads them, and an entry added after a compile (a NumPy call after a compiled Torch
# one) failed the guard and recompiled (torch_bridge fills Torch's at its import)
register(np.empty(0))


def _torch_arrays(values: tuple[object, ...]) -> tuple[ModuleType, tuple[Array, ...]]:
    tensors = [v for v in values if is_torch_array(v)]
    xp = namespace(tensors[0])
    _FAST_TENSOR.setdefault(type(tensors[0]), (xp, (xp.float32, xp.float64)))
    dtypes = {t.dtype for t in tensors}
    floating = [t for t in tensors if xp.isdtype(t.dtype, "real floating")]
    if len(dtypes) == 1 and tensors[0].dtype in (xp.float32, xp.float64):
        # the common case, without result_type (a few us a call)
        dtype, device = tensors[0].dtype, tensors[0].device
    elif floating:
        dtype = xp.result_type(xp.float32, *(t.dtype for t in floating))
        device = floating[0].device
    else:
        dtype, device = xp.asarray(0.0).dtype, tensors[0].device  # the default floating dtype
    out = tuple(
        (v if v.dtype == dtype and v.device == device else v.to(dtype=dtype, device=device))
        if is_torch_array(v)  # .to keeps the graph (asarray drops it before torch 2.13)
        else xp.asarray(v, dtype=dtype, device=device)
        for v in values
    )
    return xp, out


def expm1(x: Array) -> Array:
    """exp(x) - 1, relative-exact near 0, also under torch.compile.

    Inductor's CPU code generator decomposes expm1 into exp(x) - 1 (8.9e-5 relative
    error at x = 1e-12, and compiled attention gradients 2.7e-11 off eager for RBFs 100
    support widths wide), so Torch gets 2 sinh(x/2) exp(x/2) for |x| < 1/2 (Inductor
    keeps sinh; at most 3 ulp, and a gradient without cancellation there) and exp(x) - 1
    elsewhere (|result| > 0.39: exact to an ulp, and its gradient is exp(x) itself).
    """
    if not is_torch_array(x):
        return np.expm1(x)
    near = x.abs() < 0.5  # NaN: False, so NaN goes through exp(x) - 1
    half = x.where(near, 0.0) * 0.5
    return (2 * half.sinh() * half.exp()).where(near, x.exp() - 1)


def erf(x: Array) -> Array:
    """The error function."""
    return x.erf() if is_torch_array(x) else _sp.erf(x)


def erfc(x: Array) -> Array:
    """The complementary error function, relative-exact in its upper tail."""
    return x.erfc() if is_torch_array(x) else _sp.erfc(x)


def lgamma(x: Array) -> Array:
    """log |Gamma(x)|."""
    return x.lgamma() if is_torch_array(x) else _sp.gammaln(x)


def at_least(x: Array, low: float) -> Array:
    """max(x, low) elementwise (the array API's clip costs ~10 us a call on NumPy)."""
    return x.clamp(min=low) if is_torch_array(x) else np.maximum(x, low)


def constant(name: str) -> Any:
    """The module constant ``name`` of tsallis.core.arrays (a float, a list or a dict).

    torch.compile(dynamic=True) makes every float that Dynamo reads from a module
    symbolic, and Torch's ``while_loop`` refuses symbolic floats among the values its
    body captures (entmax's Newton loop failed to compile). torch_bridge._compile marks
    this function as a constant of the trace: Dynamo calls it while tracing and keeps
    the result as a constant, so the constants the loop body needs are read through it.

    Examples:
        >>> constant("EXP_FLUSH")["float32"]
        80.0
    """
    return globals()[name]


def smallest(gap: Array, k: int, scratch: bool = False) -> Array:
    """The k smallest values of ``gap`` (floating, >= 0 or +inf) along the last axis,
    (..., k), in increasing order. ``scratch``: gap may be reordered in place (no copy
    of the whole array).

    NumPy arrays and CPU tensors: a partition (linear in the axis length) of the values'
    bits as integers, whose order is the floats' for non-negative values (-0.0, which
    max - z gives where max is -0.0 and z +0.0, is the smallest integer: still first),
    then a sort of the k; CUDA tensors: topk. On the CPU (torch 2.13, float32
    (1024, 1000)) NumPy partitioned the int32 bits in 1.2 ms and the floats in 1.5 ms;
    Torch's topk took 3.5 to 4.3 ms for k = 16 to 256. A CPU tensor comes back as a
    tensor.

    Examples:
        >>> import numpy as np
        >>> smallest(np.array([0.5, 3.0, 0.0, 2.0]), 2)
        array([0. , 0.5])
    """
    if is_torch_array(gap) and gap.device.type != "cpu":
        return gap.topk(k, dim=-1, largest=False).values
    values = gap.detach().numpy() if is_torch_array(gap) else gap
    bits = values.view(np.dtype(f"i{values.dtype.itemsize}"))
    if scratch and bits.flags.c_contiguous:
        bits.partition(k - 1, axis=-1)  # in place
        part = bits[..., :k].view(values.dtype)
    else:
        part = np.partition(bits, k - 1, axis=-1)[..., :k].view(values.dtype)
    part = np.sort(part, axis=-1)
    # a copy: a view would keep the whole partitioned copy alive (at (65536, 1000) the
    # peak memory of a forward and backward rose from 767 to 1014 MB)
    part = np.ascontiguousarray(part)
    return native(gap).from_numpy(part) if is_torch_array(gap) else part


def index_bits(length: int) -> int:
    """How many low bits smallest_columns gives a column of a row of ``length`` values."""
    return max(1, (length - 1).bit_length())


def smallest_columns(gap: Array, k: int) -> tuple[Array, Array]:
    """(columns, bound): the columns (..., k) of the k smallest values of ``gap``
    (floating, >= 0 or +inf) along the last axis, in no particular order, and per row a
    bound (..., 1) that every value outside them is at least (+inf where one of the k
    is). ``gap`` is scratch: it is overwritten.

    NumPy arrays and CPU tensors: each value's bits as an integer (non-negative floats
    order like them), its low index_bits(K) bits replaced by its column, partitioned (in
    place, linear in K) as in smallest; the column comes back from the low bits, and the
    bound is the largest of the k with its low bits cleared (the truncation of every
    other value is at least that). The order is the values' up to that truncation (for
    K = 1000 in float32, 13 of the 23 mantissa bits are kept: a relative 1.2e-4), so a
    value just outside may be a little smaller than one inside, never smaller than the
    bound. Measured (torch 2.13, float32 (1024, 1000), k = 250): 0.2 ms for the bits, 0.85
    for the partition. CUDA tensors: topk, whose bound is the largest of the k. The
    columns are int64 for a tensor (torch.gather's), else NumPy's intp.

    Examples:
        >>> import numpy as np
        >>> columns, bound = smallest_columns(np.array([[0.5, 3.0, 0.0, 2.0]]), 2)
        >>> np.sort(columns, axis=-1), bound
        (array([[0, 2]]), array([[0.5]]))
    """
    if is_torch_array(gap) and gap.device.type != "cpu":
        values, columns = gap.topk(k, dim=-1, largest=False, sorted=False)
        return columns, values.amax(-1, keepdim=True)
    length, bits = gap.shape[-1], index_bits(gap.shape[-1])
    width = gap.dtype.itemsize if isinstance(gap, np.ndarray) else gap.element_size()
    low, high = (1 << bits) - 1, -(1 << bits)
    if is_torch_array(gap):  # in place, Torch's threads
        torch = sys.modules["torch"]
        keys = gap.view(torch.int32 if width == 4 else torch.int64)
        place = torch.arange(length, dtype=keys.dtype, device=keys.device)
        keys.bitwise_and_(high).bitwise_or_(place)
        keys = keys.numpy()
    else:
        keys = gap.view(np.dtype(f"i{width}"))
        np.bitwise_and(keys, high, out=keys)
        np.bitwise_or(keys, np.arange(length, dtype=keys.dtype), out=keys)
    keys.partition(k - 1, axis=-1)  # the k-th is in place, the others <= it before it
    # the float whose bits these are (its low bits cleared)
    bound = np.bitwise_and(keys[..., k - 1 : k], high).view(f"f{width}")
    if is_torch_array(gap):  # the columns by Torch's threads, as int64
        torch = sys.modules["torch"]
        part = torch.from_numpy(keys[..., :k])
        columns = torch.bitwise_and(part, low, out=torch.empty(part.shape, dtype=torch.int64))
        return columns, torch.from_numpy(bound)
    return np.bitwise_and(keys[..., :k], low, dtype=np.intp), bound


# The partition's cost against a scalar pass (partition_pays): how NumPy partitions
# depends on the CPU. Its AVX-512 select (x86-simd-sort) took 4.1-4.3 ms on float32
# (1024, 1000)'s bits on an AMD EPYC of the Zen 4 family (NumPy 2.4.6), against 0.8 ms
# for its AVX2 one on the same machine (NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL") and
# 1.2 ms on the Intel machine where the prefix start was tuned. The probe below took
# 7.6-10.2 times a cumulative sum there, 1.6 with AVX2, 10.3 with neither.
_PROBE_SHAPE = (64, 1024)
_PROBE_KTH = 255
_PROBE_REPEATS = 5
_LOG2_PROBE_SHAPE = (256, 1024)


def _fastest(run: Callable[[], object]) -> float:
    """The shortest wall time of _PROBE_REPEATS runs, in seconds (the probes below)."""
    times = []
    for _ in range(_PROBE_REPEATS):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def partition_cost() -> float:
    """What NumPy's partition of int32 keys (the bits that smallest and smallest_columns
    partition) costs on this machine, as a multiple of a cumulative sum over as many
    values (a scalar loop: both scale with the core's clock, the partition also with the
    SIMD select NumPy dispatches to). The fastest of a few runs on a fixed (64, 1024)
    array of pseudo-random keys (about 0.3 ms in all where the partition is slow).

    Returns:
        float: the ratio (1.6 where NumPy's AVX2 select runs, 9 where its AVX-512 select
        runs on a Zen 4 core; see tuning.PARTITION_RATIO).

    Examples:
        >>> partition_cost() > 0
        True
    """
    keys = np.random.default_rng(0).integers(0, 2**31 - 1, size=_PROBE_SHAPE, dtype=np.int32)
    scratch = np.empty_like(keys)

    def partition() -> None:
        np.copyto(scratch, keys)
        scratch.partition(_PROBE_KTH, axis=-1)

    summing = _fastest(lambda: np.cumsum(keys, axis=-1, out=scratch))
    return _fastest(partition) / max(summing, 1e-9)


@functools.cache
def _measured_partition_pays() -> bool:
    return partition_cost() <= _tuning.PARTITION_RATIO


def partition_pays() -> bool:
    """Whether the CPU's eager loops may start from a partition of each row's largest
    entries (core.discrete._prefix_width): tuning.PARTITION_PAYS where it is set, else
    measured once per process (partition_cost at most tuning.PARTITION_RATIO).

    Both ways give the same maps to within the loops' tolerance (a few ulps), not
    bitwise; set tuning.PARTITION_PAYS for results that must not depend on the machine.

    Returns:
        bool: True where the partition is cheap enough.

    Examples:
        >>> isinstance(partition_pays(), bool)
        True
    """
    forced = _tuning.PARTITION_PAYS
    return _measured_partition_pays() if forced is None else bool(forced)


def log2_into(x: Array, out: Array) -> Array:
    """log2(x) into ``out`` (x > 0). A CPU tensor outside torch.compile takes NumPy's
    log2 on views of both where that measured faster than Torch's (numpy_log2_pays; both
    contiguous float32 or float64): on an AMD EPYC (Zen 4) Torch 2.13's log2 took 0.53
    ms on a float32 (1024, 1000) array with two threads (1.04 with one) and NumPy 2.4's
    0.24 with one, where exp2 took 0.14 and 0.22.

    Examples:
        >>> import numpy as np
        >>> log2_into(np.array([1.0, 8.0]), np.empty(2))
        array([0., 3.])
    """
    done = _by_numpy(np.log2, x, out, lambda: numpy_log2_pays(sys.modules["torch"]))
    return done if done is not None else sys.modules["torch"].log2(x, out=out)


def _by_numpy(
    ufunc: Any, x: Array, out: Array, pays: Callable[[], bool] | None = None
) -> Array | None:
    """``ufunc``(x) into ``out`` by NumPy: for NumPy arrays, and on views of tensors
    that _numpy_viewable_pair allows where ``pays()`` (asked only then: under
    torch.compile numpy_log2_pays's measurement must not be traced); else None (the
    caller's Torch form: log2_into, cbrt_into)."""
    if not is_torch_array(x):
        return ufunc(x, out=out)
    if _numpy_viewable_pair(x, out) and (pays is None or pays()):
        ufunc(x.numpy(), out=out.numpy())
        return out
    return None


def _numpy_viewable_pair(x: Any, out: Any) -> bool:
    """Whether tensors x and ``out`` may be computed on as NumPy views (log2_into,
    cbrt_into): both contiguous CPU float32 or float64 of one dtype, outside
    torch.compile, neither requiring grad."""
    torch = sys.modules["torch"]
    if x.dtype not in (torch.float32, torch.float64) or out.dtype != x.dtype:
        return False
    if x.device.type != "cpu" or out.device.type != "cpu" or torch.compiler.is_compiling():
        return False
    contiguous = x.is_contiguous() and out.is_contiguous()
    plain = not (functorch_wrapped(x) or functorch_wrapped(out))
    return contiguous and plain and not (x.requires_grad or out.requires_grad)


def cbrt_into(x: Array, out: Array) -> Array:
    """The real cube root of x into ``out`` (which may be x). NumPy's cbrt, on views of
    both for a contiguous float32 or float64 CPU tensor outside torch.compile (Torch has
    no cube root: float32 (1024, 1000) on an AMD EPYC (Zen 4), NumPy 2.4's cbrt took
    0.31 ms with one thread, Torch's pow(x, 1/3) 1.35 with two); elsewhere x^(1/3) by
    Torch's pow, for x >= 0 (its exponent, the float nearest 1/3, is 1.9e-17 short: a
    relative |log x| 1.9e-17 more; a float32 x's in float64, whose 1/3 was 1e-8 short:
    7.5 ulps at the smallest normal number).

    Examples:
        >>> import numpy as np
        >>> cbrt_into(np.array([8.0, 0.0]), np.empty(2))
        array([2., 0.])
    """
    done = _by_numpy(np.cbrt, x, out)
    if done is not None:
        return done
    torch = sys.modules["torch"]
    if x.dtype == torch.float64:
        return torch.pow(x, 1 / 3, out=out)
    return out.copy_(torch.pow(x.double(), 1 / 3))


# A float32's bits read as an integer are about 2^23 (log2(x) + 127); a third of them
# plus this constant (2^23 * 127 * 2/3 less a tuning that centres the error) are the
# bits of a float within 3.2% of x's cube root (any positive normal x)
_CUBE_ROOT_BITS = 709921077.0


def cube_root(x: Array) -> Array:
    """The cube root of a positive normal float32 array, by arithmetic alone (one fused
    pass under torch.compile; Torch has no cube root and its pow takes a log and an exp):
    a guess from x's bits, within 3.2%, then two Halley steps g (g^3 + 2x) / (2g^3 + x),
    whose error is cubed by each (3.2e-2, 1.2e-5, rounding): within 2.5e-7 relative of
    the exact root over 2 10^6 values from 2^-126 to 2^122 (2 ulps).

    Args:
        x: float32, each entry a normal number from 2^-126 to 2^122 (0, subnormals,
            inf and NaN give garbage).

    Returns:
        x^(1/3), float32, x's shape.

    Raises:
        TypeError: for a dtype other than float32.

    Examples:
        >>> import numpy as np
        >>> cube_root(np.array([8.0, 0.001], dtype=np.float32))
        array([2. , 0.1], dtype=float32)
    """
    lib = native(x)
    if x.dtype != lib.float32:
        raise TypeError(f"x must be float32, got {x.dtype}")
    if is_torch_array(x):
        torch = sys.modules["torch"]
        bits = x.view(torch.int32).to(torch.float32)
        g = (bits * (1 / 3) + _CUBE_ROOT_BITS).to(torch.int32).view(torch.float32)
    else:
        bits = x.view(np.int32).astype(np.float32)
        g = (bits * np.float32(1 / 3) + np.float32(_CUBE_ROOT_BITS)).astype(np.int32)
        g = g.view(np.float32)
    for _ in range(2):
        cube = g * g * g
        g = g * ((cube + 2 * x) / (2 * cube + x))  # (the ratio first: no overflow)
    return g


@functools.cache
def _measured_numpy_log2(torch: ModuleType) -> bool:
    values = np.random.default_rng(0).random(_LOG2_PROBE_SHAPE, dtype=np.float32) + 0.5
    results = np.empty_like(values)
    tensor, into = torch.from_numpy(values), torch.from_numpy(results)

    own = _fastest(lambda: torch.log2(tensor, out=into))
    return _fastest(lambda: np.log2(values, out=results)) <= _tuning.NUMPY_LOG2_RATIO * own


def numpy_log2_pays(torch: ModuleType) -> bool:
    """Whether log2_into takes NumPy's log2 for CPU tensors: tuning.NUMPY_LOG2 where set,
    else measured once per process (NumPy's on a (256, 1024) float32 array at most
    tuning.NUMPY_LOG2_RATIO times Torch's, the fastest of a few runs each).

    Args:
        torch: the torch module.

    Returns:
        bool: True where NumPy's log2 is the faster.

    Examples:
        >>> import torch
        >>> isinstance(numpy_log2_pays(torch), bool)
        True
    """
    forced = _tuning.NUMPY_LOG2
    return _measured_numpy_log2(torch) if forced is None else bool(forced)


def _flat_columns(columns: np.ndarray, length: int) -> np.ndarray:
    """Indices (rows, k) into the flattened rows of length ``length`` of ``columns``."""
    k = columns.shape[-1]
    flat = columns.reshape(-1, k)
    return flat + np.arange(0, flat.shape[0] * length, length)[:, None]


def take_columns(a: Array, columns: Array) -> Array:
    """a's values at ``columns`` (..., k) along the last axis (NumPy: a flat take, which
    took 0.37 ms where take_along_axis took 1.0 on (1024, 1000) float32, k = 250)."""
    if is_torch_array(a):
        return a.gather(-1, columns)
    flat = np.ascontiguousarray(a).reshape(-1)
    return flat.take(_flat_columns(columns, a.shape[-1])).reshape(columns.shape)


def scattered(values: Array, columns: Array, length: int) -> Array:
    """Zeros (..., length) with ``values`` (..., k) at ``columns`` (a fresh array)."""
    shape = (*values.shape[:-1], length)
    if is_torch_array(values):
        zeros = sys.modules["torch"].zeros(shape, dtype=values.dtype, device=values.device)
        return zeros.scatter_(-1, columns, values)
    out = np.zeros(shape, dtype=values.dtype)
    out.reshape(-1)[_flat_columns(columns, length)] = values.reshape(-1, columns.shape[-1])
    return out


def _horner(x: Array, coefficients: list[float]) -> Array:
    out = coefficients[-1] + 0 * x
    for c in reversed(coefficients[:-1]):
        out = out * x + c
    return out


def exprel(x: Array) -> Array:
    """(exp(x) - 1) / x, equal to 1 at x = 0, with finite gradients."""
    if isinstance(x, np.ndarray):  # SciPy's ufunc: one call (4 us against 14 on 1024
        return _sp.exprel(x)  # values; both within 1 ulp of mpmath on +-[1e-300, 100])
    xp = namespace(x)
    if _undifferentiated(x):  # (as log1prel: expm1 is exact to an ulp for small x; in
        # eager mode the library's own, which Inductor's decomposition does not reach)
        zero = xp.abs(x) < xp.finfo(x.dtype).smallest_normal  # (as log1prel)
        return xp.where(zero, 1.0, xp.expm1(x) / xp.where(zero, 1.0, x))
    small = xp.abs(x) < constant("_SERIES_CUTOFF")
    safe = xp.where(small, xp.ones_like(x), x)
    return xp.where(small, _horner(x, constant("_EXPREL_TERMS")), expm1(safe) / safe)


def _undifferentiated(x: Array) -> bool:
    """Whether nothing differentiates through x: a NumPy array, or a tensor in eager mode
    that autograd does not track."""
    if not is_torch_array(x):
        return True
    torch = sys.modules["torch"]
    return not (x.requires_grad and torch.is_grad_enabled()) and not _torch_compiling(x)


def log1prel(x: Array) -> Array:
    """log(1 + x) / x, equal to 1 at x = 0, with finite gradients (x > -1).

    Where nothing differentiates through x, log1p(x) / x itself (1 at 0): log1p is exact
    to an ulp for small x, so the quotient is too (measured against mpmath on 7000
    values from -0.99 to 1e-2 and down to 1e-45: 1.46 ulps in NumPy float32, 1.28 for
    the series; 1.0 / 1.0 in float64). The series below the cutoff is for autograd, whose
    derivative of the quotient is 0 / 0 at x = 0. Six passes instead of about thirty:
    the array-alpha Newton loop's evaluation (float32 (1024, 1000)) took 25 ms, of which
    the series 9.
    """
    xp, (x,) = arrays(x)
    if _undifferentiated(x):  # (|x| below the smallest normal: 1; Torch's CPU log1p
        # takes a float32 subnormal for 0, and the quotient was 0)
        zero = xp.abs(x) < xp.finfo(x.dtype).smallest_normal
        return xp.where(zero, 1.0, xp.log1p(x) / xp.where(zero, 1.0, x))
    small = xp.abs(x) < constant("_SERIES_CUTOFF")
    safe = xp.where(small, xp.ones_like(x), x)
    return xp.where(small, _horner(x, constant("_LOG1PREL_TERMS")), xp.log1p(safe) / safe)


def native(x: Array) -> ModuleType:
    """The array library itself (numpy or torch), for ``out=`` calls that both spell the
    same way (add, subtract, multiply, divide, clip, exp, log1p): iterations that run
    over a whole batch many times reuse their buffers instead of allocating (Torch on
    CPU pays page faults for each fresh multi-megabyte temporary)."""
    return sys.modules["torch"] if is_torch_array(x) else np


# exp of an argument below -EXP_FLUSH[dtype] is set to 0 by exp_flushed: Torch's CPU exp
# (torch 2.13, float32, 1M values) took 0.30 ms on normal arguments, 1.4 ms on -inf and
# 9.2 ms where the result is subnormal (microcode assists); e^-80 is below 1e-34.
# exp2 took 0.08-0.10 ms on normal arguments and on -inf (0.28 ms where it underflows),
# within 0.83 ulp of float64 on [-120, 20]: so exp(a) is formed as exp2(a / ln 2), whose
# rounding moves e^a by a relative |a| eps, at most eps / e in absolute value for a <= 0.
EXP_FLUSH = {"float32": 80.0, "float64": 700.0}


def exp_flushed(arg: Array, out: Array) -> Array:
    """exp(arg) into ``out`` (may be arg itself), 0 where arg < -EXP_FLUSH (no subnormals).

    For probabilities of total mass 1 the flushed values are below 1e-34 (float32) and
    1e-304 (float64): invisible after rounding.
    """
    limit = constant("EXP_FLUSH")["float32" if str(arg.dtype).endswith("float32") else "float64"]
    if is_torch_array(arg):
        torch = sys.modules["torch"]
        torch.clamp(arg, min=-limit, out=out)
        return torch.threshold_(out.mul_(1 / math.log(2)).exp2_(), math.exp(-limit) * 1.5, 0.0)
    with np.errstate(under="ignore"):
        np.exp(arg, out=out)
    return out


# NumPy's exp2 (2.4, AVX-512) takes a slow path wherever a result underflows: float32
# (1024, 1000) 8.2 ms against 0.3 with the argument raised first. exp2_into's
# ``floored`` raises it to these exponents: float32 from log2 of the smallest normal
# number, -126 (fast); float64 -1000, since at -1022 itself it was slow still (8.2 ms
# against 0.9 at -1000).
EXP2_LEAST = {"float32": -126.0, "float64": -1000.0}


# at_least_into's blocks: NumPy's maximum of an array and a scalar took 0.38-0.48 ms on a
# million float32 values (NumPy 2.4, AMD EPYC; np.clip and np.fmax the same) against
# 0.09-0.18 for two arrays; blocks of this many values against a constant block
_AT_LEAST_BLOCK = 1 << 14


@functools.lru_cache(maxsize=16)
def _constant_block(value: float, dtype: np.dtype) -> np.ndarray:
    block = np.full(_AT_LEAST_BLOCK, value, dtype=dtype)
    block.flags.writeable = False
    return block


def at_least_into(x: Array, value: float, out: Array) -> Array:
    """max(x, value) into ``out`` (may be x). A C-order NumPy array of at least two
    blocks goes block by block against a constant block, NumPy's fast path (see
    _AT_LEAST_BLOCK: float32 (1024, 1000) 0.18-0.21 ms against 0.38-0.48); NaN stays
    NaN, as in np.maximum.

    Examples:
        >>> import numpy as np
        >>> at_least_into(np.array([-1.0, 2.0]), 0.5, np.empty(2))
        array([0.5, 2. ])
    """
    if is_torch_array(x):
        return sys.modules["torch"].clamp(x, min=value, out=out)
    size = x.size
    if size < 2 * _AT_LEAST_BLOCK or not (x.flags.c_contiguous and out.flags.c_contiguous):
        return np.maximum(x, x.dtype.type(value), out=out)
    block = _constant_block(float(value), x.dtype)
    source, target = x.reshape(-1), out.reshape(-1)
    for start in range(0, size, _AT_LEAST_BLOCK):
        stop = min(start + _AT_LEAST_BLOCK, size)
        np.maximum(source[start:stop], block[: stop - start], out=target[start:stop])
    return out


def exp2_into(arg: Array, out: Array, flush: bool, floored: bool = False) -> Array:
    """2**arg into ``out`` (may be arg itself); with ``flush`` (Torch), 0 where it is below
    e^-EXP_FLUSH, as in exp_flushed (NumPy needs no flush and gets none).

    ``floored`` (NumPy; Torch ignores it): at least 2**EXP2_LEAST[dtype] (about 1e-38 in
    float32, 1e-301 in float64) where the result would be smaller, for callers whose
    results are multiplied by zero there or only summed (see EXP2_LEAST).

    Examples:
        >>> import numpy as np
        >>> exp2_into(np.array([3.0, -2000.0]), np.empty(2), False, floored=True)
        array([8.00000000e+000, 9.33263619e-302])
    """
    if is_torch_array(arg):
        torch = sys.modules["torch"]
        if not flush:
            return torch.exp2(arg, out=out)
        limit = constant("EXP_FLUSH")["float32" if arg.dtype == torch.float32 else "float64"]
        torch.clamp(arg, min=-limit / math.log(2), out=out)
        return torch.threshold_(out.exp2_(), math.exp(-limit) * 1.5, 0.0)
    if floored and arg.dtype in (np.float32, np.float64):
        least = constant("EXP2_LEAST")[arg.dtype.name]
        return np.exp2(at_least_into(arg, least, out=out), out=out)
    with np.errstate(under="ignore"):
        return np.exp2(arg, out=out)


def replace_at_most(x: Array, limit: float, value: float) -> Array:
    """x where x > limit, else ``value``, in place (torch.threshold_).

    Examples:
        >>> import numpy as np
        >>> replace_at_most(np.array([-3.0, 0.5]), -1.0, -np.inf)
        array([-inf,  0.5])
    """
    if is_torch_array(x):
        return sys.modules["torch"].threshold_(x, limit, value)
    np.copyto(x, value, where=x <= limit)
    return x


def subtract_product(target: Array, x: Array, y: Array) -> Array:
    """target - x y into target, in place (Torch: addcmul_, one pass; y broadcasts), and
    returned; a fresh array where torch.func wraps one of them (vmap batches no in-place
    operation whose operands are batched at more levels than its target).

    Examples:
        >>> import numpy as np
        >>> subtract_product(np.array([1.0, 2.0]), np.array([2.0, 1.0]), np.array([0.5]))
        array([0. , 1.5])
    """
    if is_torch_array(target):
        if any(functorch_wrapped(v) for v in (target, x, y)):
            return target - x * y
        return target.addcmul_(x, -y)
    return np.subtract(target, x * y, out=target)


# A row sum that torch.compile's Inductor cannot see into, set by torch_bridge (a
# torch.library custom op running Torch's own sum). Under torch.compile off the CPU the
# core's row sums go through it: fused into a Triton reduction, the Newton step's row
# updates (the bracket, the shift and the convergence flags stored from one kernel) made
# Triton 3.6 fail to compile the kernel ("operand does not dominate this use" in its
# remove-layout-conversions pass, torch 2.11, H100: sparsemax, alpha = 1, 1.5, 2.5 and a
# per-row alpha; measured 2026-11-26). Apart, the sum is ATen's kernel and Inductor
# compiles the updates without a reduction in their kernels (then all six compiled).
# Not on the CPU (C++ kernels, no such failure) nor in eager mode, nor for the fixed-step
# map of tsallis.core.rooted (row_sum(fused=True): no Newton loop's row updates; it
# compiled into one Triton kernel on an H200, torch 2.11, Triton 3.6, 2026-11-29).
OPAQUE_ROW_SUM: Callable[[Any], Any] | None = None
HOST_DEVICES = ("cpu",)  # where the row sums stay Inductor's own


def _opaque(x: Any) -> bool:
    """Whether this torch tensor's row sum goes through OPAQUE_ROW_SUM (see there)."""
    torch = sys.modules["torch"]
    return (
        OPAQUE_ROW_SUM is not None
        and x.device.type not in HOST_DEVICES
        and x.dtype.is_floating_point
        and torch.compiler.is_compiling()
    )


def row_sum(x: Array, fused: bool = False) -> Array:
    """The sum over the last axis, kept as an axis of length 1 (a tensor: Torch's own sum,
    without array_api_compat's wrapper, which cost about 10 us a call in the Newton loop).
    ``fused``: Inductor's own sum under torch.compile off the CPU too, where it is
    otherwise OPAQUE_ROW_SUM (the fixed-step map of tsallis.core.rooted, whose graph
    has no Newton loop's row updates, asks for it).

    Examples:
        >>> import numpy as np
        >>> row_sum(np.array([[1.0, 2.0], [3.0, 4.0]]))
        array([[3.],
               [7.]])
    """
    if is_torch_array(x):
        return OPAQUE_ROW_SUM(x) if not fused and _opaque(x) else x.sum(-1, keepdim=True)
    return namespace(x).sum(x, axis=-1, keepdims=True)


def softmax_backward(grad: Array, out: Array) -> Array:
    """out (grad - <out, grad>) over the last axis, a fresh array: softmax's backward at
    its output ``out`` (Torch: its fused kernel, one pass over each row).

    Examples:
        >>> import numpy as np
        >>> softmax_backward(np.array([1.0, 3.0]), np.array([0.5, 0.5]))
        array([-0.5,  0.5])
    """
    if is_torch_array(out) and grad.is_contiguous() and out.is_contiguous():
        torch = sys.modules["torch"]
        return torch.ops.aten._softmax_backward_data(grad, out, -1, out.dtype)
    # (the fused kernel copies a non-contiguous input first: the gradient of a sum is an
    # expanded tensor, and that copy raised the peak memory of (65536, 1000) by 250 MB)
    product = native(out).multiply(out, grad)
    return subtract_product(product, out, row_sum(product))


def add_product(s: Array, x: Array, out: Array) -> Array:
    """s + s * x into ``out``, which may be s itself (torch.addcmul: one pass)."""
    if is_torch_array(s):
        return sys.modules["torch"].addcmul(s, s, x, out=out)
    return np.add(s, s * x, out=out)


def log1prel_slope(x: Array) -> Array:
    """d/dx log1prel(x) = (x / (1 + x) - log1p(x)) / x^2, equal to -1/2 at x = 0 (x > -1).

    Examples:
        >>> import numpy as np
        >>> float(log1prel_slope(np.array(0.0)))
        -0.5
    """
    xp, (x,) = arrays(x)
    small = xp.abs(x) < constant("_SLOPE_CUTOFF")
    safe = xp.where(small, xp.ones_like(x), x)
    closed = (safe / (1 + safe) - xp.log1p(safe)) / (safe * safe)
    return xp.where(small, _horner(x, constant("_LOG1PREL_SLOPE_TERMS")), closed)


def softplus(x: Array) -> Array:
    """log(1 + exp(x)) without overflow, as log(exp(0) + exp(x))."""
    xp = namespace(x)
    return xp.logaddexp(xp.zeros_like(x), x)


def ndtr(x: Array) -> Array:
    """Phi(x) = erfc(-x / sqrt 2) / 2, relative-exact in the lower tail.

    (torch.special.ndtr in torch 2.13 returns 0 below about -8.3.)
    """
    return erfc(x * -_SQRT_HALF) * 0.5  # a product: compilers keep "/ 2" a division


def normal_mass(
    lo: Array,
    hi: Array,
    at_lo: Array | None = None,
    at_hi: Array | None = None,
    erfcx_of_t: Callable[[Array], Array] | None = None,
) -> Array:
    """Phi(hi) - Phi(lo) for lo <= hi; upper tails when lo > 0 keep it relative-exact.

    Two erfc calls; the selected arguments are finite wherever lo and hi are.
    at_lo, at_hi, erfcx_of_t: exp(-lo^2/2), exp(-hi^2/2) and erfcx as a function of
    t = 3/(3 + y), when the caller holds them (the generated attention closed forms pass
    the generated polynomial, derivations/special_functions.py). For Torch float32 each
    tail is then that exponential times erfcx (_edge_tail), under torch.compile only:
    fused there, the polynomial costs less than a fifth of SLEEF's float32 erfc; in
    eager mode its 30 array operations cost more than the one erfc call. Otherwise
    (eager, float64, NumPy) they are not used.
    """
    xp, (lo, hi) = arrays(lo, hi)
    upper = lo > 0  # both ends in the upper tail: Phi(-lo) - Phi(-hi) instead
    if erfcx_of_t is not None and lo.dtype == xp.float32 and _torch_compiling(lo):
        tail_lo, tail_hi = (
            _edge_tail(xp, z, at, erfcx_of_t) for z, at in ((lo, at_lo), (hi, at_hi))
        )
        below_hi = xp.where(hi > 0, 1 - tail_hi, tail_hi)  # Phi(hi)
        return xp.where(upper, tail_lo - tail_hi, below_hi - tail_lo)
    return ndtr(xp.where(upper, -lo, hi)) - ndtr(xp.where(upper, -hi, lo))


def edge_exp(x: Array) -> Array:
    """exp(x) for the edge densities of the window closed forms.

    Compiled, in float32: 0 below -FLOAT32_EDGE_FLUSH, where the closed form's products
    would reach the subnormal range (why that drops nothing a row can see: tuning).
    """
    xp = namespace(x)
    if x.dtype == xp.float32 and _torch_compiling(x):
        return xp.where(x < -FLOAT32_EDGE_FLUSH, 0.0, xp.exp(x.clamp(min=-FLOAT32_EDGE_FLUSH)))
    return xp.exp(x)


def _torch_compiling(x: Array) -> bool:
    """Whether x is a tensor that torch.compile is tracing (torch is loaded if x is one)."""
    return is_torch_array(x) and sys.modules["torch"].compiler.is_compiling()


def functorch_wrapped(x: Array) -> bool:
    """Whether x is a tensor that torch.func wraps (vmap's batched or grad's tracked
    values, as a Function's backward sees them under vmap(grad(...))): it has no NumPy
    view and its values may not be read on the host. False under torch.compile, whose
    Dynamo does not trace the check (the compiled paths read nothing on the host).

    Examples:
        >>> import numpy as np
        >>> functorch_wrapped(np.zeros(2))
        False
    """
    if not is_torch_array(x):
        return False
    torch = sys.modules["torch"]
    if torch.compiler.is_compiling():
        return False
    wrapped = getattr(torch._C._functorch, "is_functorch_wrapped_tensor", None)
    return wrapped is not None and bool(wrapped(x))


def _edge_tail(
    xp: ModuleType, z: Array, at_z: Array, erfcx_of_t: Callable[[Array], Array]
) -> Array:
    """min(Phi(z), Phi(-z)) = exp(-z^2/2) erfcx(|z|/sqrt 2) / 2, at_z = exp(-z^2/2).

    erfcx_of_t is the generated polynomial in t = 3/(3 + y) (relative error below 2e-9),
    evaluated in float64 and rounded once: formed in
    float32, t's rounding alone would cost up to 3.4 ulp. The tail is then within about
    1 ulp of erfcx and carries at_z's relative error, which the closed form's own
    exp(-z^2/2) terms share.
    """
    y = xp.astype(xp.abs(z), xp.float64) * _SQRT_HALF
    scaled = erfcx_of_t(3 / (3 + y))
    return at_z * xp.astype(scaled, at_z.dtype) * 0.5


def _stirling_tail(z: Array) -> Array:
    return _horner(1 / (z * z), STIRLING_TERMS) / z


def lgamma_ratio(x: Array, h: Array | float) -> Array:
    """log Gamma(x + h) - log Gamma(x) for x > 0, x + h > 0, to a few ulps.

    The plain difference loses about x * eps (2.8e-10 at x = 1e6); for x and
    x + h >= STIRLING_MIN the difference of Stirling's series is formed instead:
    (x - 1/2) log1p(h/x) + h log(x + h) - h + S(x + h) - S(x). Both branches see
    sanitized arguments (finite gradients).
    """
    xp, (x, h) = arrays(x, h)
    large = (x >= STIRLING_MIN) & (x + h >= STIRLING_MIN)
    xs = xp.where(large, x, STIRLING_MIN)
    hs = xp.where(large, h, 0.0)
    asymptotic = (
        (xs - 0.5) * xp.log1p(hs / xs)
        + hs * xp.log(xs + hs)
        - hs
        + (_stirling_tail(xs + hs) - _stirling_tail(xs))
    )
    direct = lgamma(xp.where(large, 1.0, x + h)) - lgamma(xp.where(large, 1.0, x))
    return xp.where(large, asymptotic, direct)


# ---------------------------------------------------------------- what the array API lacks
# Scatter updates and gradient stops have no array-API spelling: one line per backend.

# Node tables per (key, namespace, device), converted once; torch.compile reads them as
# constants (compile after one eager call for a table built on first use).
_TABLES: dict[tuple, tuple[Array, ...]] = {}


def constant_tables(key: tuple, like: Array, build: Callable[[], tuple[np.ndarray, ...]]) -> tuple:
    """build()'s NumPy tables as float64 arrays of like's namespace and device, cached by key."""
    xp = namespace(like)
    device = getattr(like, "device", None)
    full = (*key, xp.__name__, str(device))
    if full not in _TABLES:
        _TABLES[full] = tuple(
            xp.asarray(np.array(t, dtype=np.float64), device=device) for t in build()
        )
    return _TABLES[full]


def stop_gradient(x: Array) -> Array:
    """x as a constant for autograd (Torch's detach; NumPy arrays as they are)."""
    return x.detach() if is_torch_array(x) else x


def index_add(target: Array, index: Array, values: Array) -> Array:
    """A copy of target with values[k] added to target[index[k]] along axis 0
    (repeated indices accumulate); differentiable in Torch."""
    if is_torch_array(target):
        return target.index_add(0, index, values)
    out = np.array(target, copy=True)
    np.add.at(out, index, values)
    return out


def index_max(count: int, index: Array, values: Array) -> Array:
    """(count,): the largest of values[k] over index[k] = i, -inf where none."""
    xp = namespace(values)
    top = xp.full((count,), -math.inf, dtype=values.dtype, device=getattr(values, "device", None))
    if is_torch_array(values):
        return top.scatter_reduce(0, index, values, reduce="amax")
    np.maximum.at(top, index, values)
    return top


def mahalanobis2(low: Array, diff: Array) -> Array:
    """|z|^2 with low @ z = diff: low lower-triangular (..., D, D), diff (..., D); broadcasts.

    Up to SMALL_SOLVE unknowns by forward substitution in elementwise ops, summing
    the squares as they come (differentiable, compile-friendly, and a factor shared
    by many values is not copied per value); beyond, the backend's triangular solver.
    """
    xp = namespace(diff)
    n = diff.shape[-1]
    if n > SMALL_SOLVE:
        if is_torch_array(diff):
            z = xp.linalg.solve_triangular(low, diff[..., None], upper=False)[..., 0]
        elif low.ndim == 2:  # one factor: one triangular solve for every value
            flat = np.reshape(diff, (-1, n)).T
            z = scipy.linalg.solve_triangular(low, flat, lower=True, check_finite=False).T
            z = np.reshape(z, diff.shape)
        else:
            z = np.linalg.solve(low, diff[..., None])[..., 0]  # LU: exact on a triangle too
        return _overflowed_as_inf(xp.sum(z * z, axis=-1), diff)
    # Every op here is dispatched over the whole batch, so at small batches the
    # count of ops is the cost: unbind takes the entries in one call each, and
    # Torch fuses each multiply-subtract (and each square-add) into one addcmul.
    fused = is_torch_array(diff)
    rows = [row.unbind(-1) for row in low.unbind(-2)] if fused else None
    parts = diff.unbind(-1) if fused else [diff[..., i] for i in range(n)]
    z: list[Array] = []
    total = None
    for i in range(n):
        acc = parts[i]
        for j in range(i):
            if fused:
                acc = acc.addcmul(rows[i][j], z[j], value=-1)
            else:
                acc = acc - low[..., i, j] * z[j]
        z.append(acc / (rows[i][i] if fused else low[..., i, i]))
        if total is None:
            total = z[i] * z[i]
        else:
            total = total.addcmul(z[i], z[i]) if fused else total + z[i] * z[i]
    return _overflowed_as_inf(total, diff)


def _overflowed_as_inf(total: Array, diff: Array) -> Array:
    """mahalanobis2's sum of squares, inf where it is NaN for a finite ``diff``: there an
    entry of z overflowed, and the substitution went on with inf * 0 or inf - inf (a
    subnormal Sigma = 5e-324 I, whose factor is 2.2e-162, and diff = 4e146: z_0 = inf,
    then z_1 = NaN), where |z|^2 exceeds the largest float. A NaN in diff stays NaN."""
    xp = namespace(total)
    lost = xp.isnan(total) & xp.all(xp.isfinite(diff), axis=-1)
    return xp.where(lost, math.inf, total)
