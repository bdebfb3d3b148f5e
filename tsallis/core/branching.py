"""How the core skips work that no element needs, on any backend.

A ``Branch`` is called as ``branch(pred, cheap, full, operands)``: ``cheap(*operands)``
may be taken only where the 0-dim boolean array ``pred`` holds, ``full(*operands)``
is valid always, and both return tuples of arrays of the same shapes and dtypes.
The core provides the two hooks that need no framework; the Torch face adds one
built on ``torch.cond`` for torch.compile (torch_bridge._compile.device_branch),
which decides on the device and runs only the branch taken.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["Branch", "full_branch", "host_branch"]

Array = Any  # a NumPy array or a Torch tensor
Branch = Callable[[Array, Callable[..., tuple], Callable[..., tuple], tuple], tuple]


def host_branch(
    pred: Array, cheap: Callable[..., tuple], full: Callable[..., tuple], operands: tuple
) -> tuple:
    """The branch that pred picks, read on the host (one read).

    Examples:
        >>> import numpy as np
        >>> host_branch(np.asarray(True), lambda x: (x + 1,), lambda x: (x,), (np.ones(2),))
        (array([2., 2.]),)
    """
    return cheap(*operands) if bool(pred) else full(*operands)


def full_branch(
    pred: Array, cheap: Callable[..., tuple], full: Callable[..., tuple], operands: tuple
) -> tuple:
    """Always the branch valid everywhere: no host read (accelerators in eager mode, meta).

    Examples:
        >>> import numpy as np
        >>> full_branch(np.asarray(True), lambda x: (x + 1,), lambda x: (x,), (np.ones(2),))
        (array([1., 1.]),)
    """
    return full(*operands)
