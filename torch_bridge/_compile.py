"""What the Torch ops need to run the shared core without host reads under torch.compile.

The core (tsallis.core.window) skips a regime that no element needs through a
branch hook; here are the Torch hooks, and the node-table preparation that
torch.compile must see as a constant.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import torch

from tsallis.core import arrays as _core_arrays
from tsallis.core import branching, window
from tsallis.core import discrete as _core_discrete

__all__ = [
    "batched",
    "branch_for",
    "check_compiled",
    "check_values",
    "dense_for",
    "device_branch",
    "prepare_tables",
]


def dense_for(t: torch.Tensor) -> bool:
    """Evaluate a regime on every element (no gather, no host read) off CPU and when compiling."""
    return t.device.type != "cpu" or torch.compiler.is_compiling()


def device_branch(
    pred: torch.Tensor, cheap: Callable[..., tuple], full: Callable[..., tuple], operands: tuple
) -> tuple:
    """torch.cond: decided on the device, only the branch taken runs (under torch.compile).

    cond's outputs may not alias its inputs: a cheap branch's output that is one of
    the operands is copied.
    """

    def cheap_copy(*ops: torch.Tensor) -> tuple:
        return tuple(v.clone() if any(v is o for o in ops) else v for v in cheap(*ops))

    cond = getattr(torch, "cond", None)
    if cond is None or _floats_symbolic():  # the branch valid everywhere
        return full(*operands)
    return cond(pred, cheap_copy, full, operands)


def check_compiled(ok: Callable[[], torch.Tensor], like: torch.Tensor, message: str) -> None:
    """Under torch.compile on the CPU, an input check that eager mode makes by a host read
    (raising ValueError there): torch._assert_async raises RuntimeError(``message``) when
    the call runs with ``ok()`` (a 0-d bool tensor) False, without a graph break (also
    with fullgraph=True and dynamic=True). Elsewhere nothing: eager mode reads the host
    itself, and on a GPU the assert would be a device-side one, which ends the process's
    CUDA context; there the compiled ops skip these checks (docs/torch-ops.md), as they do
    under a compiled vmap.

    Args:
        ok: builds the condition (called only when the check is made).
        like: a tensor of the call (its device decides).
        message: what the check asks, as eager mode's ValueError says it.
    """
    if torch.compiler.is_compiling() and like.device.type == "cpu":
        condition = ok()
        if batched(condition):  # (a compiled vmap: the assert has no batching rule;
            return  # eager vmap skips the host reads too)
        torch._assert_async(condition, message)


def check_values(ok: Callable[[], torch.Tensor], like: torch.Tensor, message: str) -> None:
    """ValueError(``message``) where ``ok()`` (a 0-d bool tensor) is False, by a host read
    in eager mode; under torch.compile check_compiled's assert (on the CPU) instead; no
    check where torch.func wraps ``like`` (its values may not be read on the host).

    Args:
        ok: builds the condition (called only when the check is made).
        like: the checked tensor (its device and wrapping decide).
        message: what the check asks.
    """
    if torch.compiler.is_compiling():
        check_compiled(ok, like, message)
    elif not _core_arrays.functorch_wrapped(like) and not bool(ok()):
        raise ValueError(message)


def batched(t: torch.Tensor | None) -> bool:
    """Whether vmap batches t, under torch.compile too (Dynamo traces this check, not
    tsallis.core.arrays.functorch_wrapped's)."""
    is_batched = getattr(torch._C._functorch, "is_batchedtensor", None)
    return t is not None and is_batched is not None and bool(is_batched(t))


def _floats_symbolic() -> bool:
    """Whether this trace makes the floats it reads symbolic (torch.compile(dynamic=True)).

    Then the core's module constants (tuning values, node tables) become symbolic floats,
    and torch.cond refuses them among the values its branches capture; the cost of taking
    the full branch is the cheap branch's saving. (Dynamo keeps a float read from a module
    constant when it assumes static values, its default; torch._dynamo is imported by then.)
    """
    dynamo = sys.modules.get("torch._dynamo")
    return dynamo is not None and not dynamo.config.assume_static_by_default


def branch_for(t: torch.Tensor) -> branching.Branch:
    """How the core skips a regime no element needs: torch.cond under torch.compile, a host
    read in eager mode on CPU, never on other devices in eager mode (no host read)."""
    if torch.compiler.is_compiling():
        return device_branch
    return branching.full_branch if t.device.type != "cpu" else branching.host_branch


def _prepare(alpha: float, device: str) -> None:
    window.prepare_tables(alpha, torch.empty(0, dtype=torch.float64, device=device))


# torch.compile runs _prepare at trace time instead of tracing it (the tables are built
# with NumPy and SciPy). This is what torch._dynamo.assume_constant_result does; the
# marker is set by hand because importing torch._dynamo imports SymPy, which importing
# torch_bridge must not (tests/test_torch_attention.py). The compile-first test in
# tests/test_core_window.py fails (a graph break) if the marker stops working.
_prepare._dynamo_marked_constant = True  # type: ignore[attr-defined]


# Likewise the core's per-eps constant of ev-softmax (NumPy on Python floats), and the
# module constants the core reads inside a while_loop body (under dynamic=True Dynamo
# would make them symbolic floats, which while_loop refuses).
_core_discrete.offsupport_shift._dynamo_marked_constant = True  # type: ignore[attr-defined]
_core_arrays.constant._dynamo_marked_constant = True  # type: ignore[attr-defined]


def prepare_tables(alpha: float, device: torch.device) -> None:
    """Under torch.compile, build the core's node tables for alpha on device (at trace
    time, outside the graph). In eager mode nothing: the core builds what it uses."""
    if torch.compiler.is_compiling():
        _prepare(float(alpha), str(device))


def _register_opaque_row_sum() -> None:
    """tsallis::row_sum, Torch's own sum over the last axis (keepdim) as a custom op,
    which Inductor runs as it is: the core's row sums under torch.compile off the CPU
    (tsallis.core.arrays.OPAQUE_ROW_SUM says why). Without torch.library.custom_op
    (torch < 2.4) the core keeps Inductor's sums."""
    custom_op = getattr(torch.library, "custom_op", None)
    if custom_op is None:  # pragma: no cover (older torch)
        return

    def row_sum(x: torch.Tensor) -> torch.Tensor:
        return x.sum(-1, keepdim=True)

    op = custom_op("tsallis::row_sum", row_sum, mutates_args=(), schema="(Tensor x) -> Tensor")
    op.register_fake(row_sum)
    _core_arrays.OPAQUE_ROW_SUM = op


_register_opaque_row_sum()
