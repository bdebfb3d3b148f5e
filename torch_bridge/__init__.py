"""torch_bridge: the generated closed forms as Torch functions.

``torch_bridge.closed_forms.<family>.<kernel>`` are the generated Torch
kernels (one module per family, the same names as the NumPy side). They
broadcast, work in float32 and float64 on any device, and are differentiable
with finite gradients on the valid domain (double-where guards).
The autograd Functions and modules of later issues build on them.
"""

from torch_bridge import _generated as closed_forms

__all__ = ["closed_forms"]
