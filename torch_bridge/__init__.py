"""torch_bridge: the generated closed forms as Torch functions and ops.

``torch_bridge.closed_forms.<family>.<kernel>`` are the generated Torch
kernels (one module per family, the same names as the NumPy side). They
broadcast, work in float32 and float64 on any device, and are differentiable
with finite gradients on the valid domain (double-where guards).

Ops:
- continuous attention (Martins 2020): ``GaussianRBF``, ``continuous_attention``,
  ``ContinuousAttention``, ``ridge_value_function``, ``loc_scale_from_natural``
  (torch_bridge.attention);
- kernel attention (Moreno 2022 Alg 1): ``kernel_attention``, ``KernelAttention``
  (torch_bridge.kernel);
- ``BetaGaussian``, a torch.distributions.Distribution (torch_bridge.distributions);
- ev-softmax (Chen 2021): ``ev_softmax``, ``log_ev_softmax``,
  ``ev_softmax_nll_loss``, ``EvSoftmax``, ``LogEvSoftmax`` (torch_bridge.discrete);
- sparsemax and alpha-entmax (Martins 2020 eq 3) with their Fenchel-Young losses:
  ``sparsemax``, ``entmax``, ``sparsemax_loss``, ``entmax_loss``, ``Sparsemax``,
  ``Entmax``, ``SparsemaxLoss``, ``EntmaxLoss`` (torch_bridge.entmax).
"""

try:
    import torch as _torch
except ImportError as _missing:  # the extra was not installed
    raise ImportError(
        "torch_bridge needs PyTorch, which tsallis installs only with its torch extra: pip"
        ' install "tsallis[torch]" (on a CPU-only machine install the CPU wheel first, e.g.'
        " pip install torch==2.13.0, so that pip does not pull a CUDA build)"
    ) from _missing

from torch_bridge import _generated as closed_forms
from torch_bridge.attention import (
    ContinuousAttention,
    GaussianRBF,
    continuous_attention,
    loc_scale_from_natural,
    ridge_value_function,
)
from torch_bridge.discrete import (
    EvSoftmax,
    LogEvSoftmax,
    ev_softmax,
    ev_softmax_nll_loss,
    log_ev_softmax,
)
from torch_bridge.distributions import BetaGaussian
from torch_bridge.entmax import (
    Entmax,
    EntmaxLoss,
    Sparsemax,
    SparsemaxLoss,
    entmax,
    entmax_loss,
    sparsemax,
    sparsemax_loss,
)
from torch_bridge.kernel import KernelAttention, kernel_attention
from tsallis.core import arrays as _arrays

# the core's per-type caches filled for Torch's tensor types before any compile: Dynamo
# guards on the caches a trace reads (their length), and an entry added after a compile
# (a trace's own, or a Parameter's) failed the guard, so every later call recompiled
# (the hot-call kernel did at every new row count, measured)
for _like in (_torch.empty(0), _torch.nn.Parameter(_torch.empty(0))):
    _arrays.register(_like)
del _like

__all__ = [
    "BetaGaussian",
    "ContinuousAttention",
    "Entmax",
    "EntmaxLoss",
    "EvSoftmax",
    "GaussianRBF",
    "KernelAttention",
    "LogEvSoftmax",
    "Sparsemax",
    "SparsemaxLoss",
    "closed_forms",
    "continuous_attention",
    "entmax",
    "entmax_loss",
    "ev_softmax",
    "ev_softmax_nll_loss",
    "kernel_attention",
    "loc_scale_from_natural",
    "log_ev_softmax",
    "ridge_value_function",
    "sparsemax",
    "sparsemax_loss",
]
