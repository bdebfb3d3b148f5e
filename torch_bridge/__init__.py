"""torch_bridge: the generated closed forms as Torch functions.

``torch_bridge.closed_forms.<family>.<kernel>`` are the generated Torch
kernels (one module per family, the same names as the NumPy side). They
broadcast, work in float32 and float64 on any device, and are differentiable
with finite gradients on the valid domain (double-where guards).

Ops: ``ev_softmax``, ``log_ev_softmax``, ``ev_softmax_nll_loss`` and the
modules ``EvSoftmax`` / ``LogEvSoftmax`` (seed 002; see torch_bridge.discrete).
"""

from torch_bridge import _generated as closed_forms
from torch_bridge.discrete import (
    EvSoftmax,
    LogEvSoftmax,
    ev_softmax,
    ev_softmax_nll_loss,
    log_ev_softmax,
)

__all__ = [
    "EvSoftmax",
    "LogEvSoftmax",
    "closed_forms",
    "ev_softmax",
    "ev_softmax_nll_loss",
    "log_ev_softmax",
]
