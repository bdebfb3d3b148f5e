"""Elementary helpers that generated Torch code calls (not closed forms).

``promote`` is Torch's own (argument promotion); the relative functions
exprel and log1prel, the tail-exact normal mass and the log-gamma ratio are
written once, for NumPy and Torch, in tsallis.core.arrays.
"""

from __future__ import annotations

import torch

from tsallis.core.arrays import exprel, lgamma_ratio, log1prel, ndtr, normal_mass

__all__ = ["exprel", "lgamma_ratio", "log1prel", "ndtr", "normal_mass", "promote"]


def promote(*args: object) -> tuple[torch.Tensor, ...]:
    """Turn all arguments into floating tensors on a common dtype and device.

    The first floating tensor argument sets dtype and device (else the first
    tensor's device and the default dtype). Python numbers become tensors.
    Nothing is copied when an argument already matches.
    """
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    floating = [t for t in tensors if t.is_floating_point()]
    if floating:
        dtype = torch.promote_types(floating[0].dtype, torch.float32)
        for t in floating[1:]:
            dtype = torch.promote_types(dtype, t.dtype)
        device = floating[0].device
    else:
        dtype = torch.get_default_dtype()
        device = tensors[0].device if tensors else None
    return tuple(torch.as_tensor(a, dtype=dtype, device=device) for a in args)
