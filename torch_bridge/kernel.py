"""Kernel attention in Torch (Moreno 2022 section 5, Alg 1): kernel softmax and sparsemax / entmax.

p(t) = q0(t) exp_{2-alpha}(f~(t)) / Z on the base interval [a, b], with
f~(t) = sum_i gamma_i k(t, t_i) (Gaussian or Laplace kernel), and
r_j = E_p[psi_j] for Gaussian RBFs psi_j.

The quadrature (kink-aware panels, support boundaries by bracketed Newton,
Gauss-Jacobi at non-integer powers, graded panels next to a root, log-space
sums) is tsallis.core.kernel, the code tsallis.kernels.KernelFamily runs too.
This face validates the input, picks the node count and runs the core on
tensors, with autograd through the integrand (the nodes constant; see the
core's docstring for why the support boundaries need no gradient, and the
exception it makes). With gradients and a graph larger than
tuning.KERNEL_KEEP values, each chunk of panels is checkpointed: recomputed in
the backward pass instead of kept.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from torch_bridge.basis import GaussianRBF, alpha_value
from tsallis.core import kernel as core
from tsallis.core import tuning
from tsallis.core._generated import gaussian as _gaussian
from tsallis.core.bases import GaussianBase, UniformBase

__all__ = ["KernelAttention", "kernel_attention"]

_F64 = torch.float64


def _checkpointed(chunk: Callable[..., tuple], *args: torch.Tensor) -> tuple:
    """Run one chunk of panels, recomputing its intermediates in the backward pass."""
    return checkpoint(chunk, *args, use_reentrant=False)


def kernel_attention(
    gamma: torch.Tensor,
    inducing: torch.Tensor,
    basis: GaussianRBF,
    alpha: float | torch.Tensor = 2.0,
    kernel: str = "gaussian",
    bandwidth: float = 0.1,
    base: UniformBase | GaussianBase | None = None,
    *,
    nodes: int | None = None,
    validate: bool = True,
) -> torch.Tensor:
    """r_j = E_p[psi_j] for the kernel deformed-exponential density (Moreno 2022 Alg 1), (..., N).

    ``gamma`` (..., M) are the kernel weights at the ``inducing`` points (M,)
    (shared by the batch); ``kernel`` "gaussian" or "laplace" with
    ``bandwidth``; ``base`` the law Q on [a, b] (tsallis.kernels.UniformBase
    or GaussianBase; default uniform on [0, 1]); ``nodes`` Gauss-Legendre nodes
    per panel (None: 16). alpha = 1 is kernel softmax,
    alpha = 2 kernel sparsemax, any alpha > 1 kernel entmax. Gradients reach
    gamma, the inducing points and the basis; float32 and float64 (computed
    in float64). Building the panels reads the inducing points, the basis
    widths and max |f~| back from the device once per call, so under
    torch.compile this op is a graph break (it runs eagerly, gradients
    included); torch.compile(fullgraph=True) cannot trace it.

    M = 0 inducing points is f~ = 0: r_j = E_Q[psi_j]. An empty batch gives an
    empty result. Memory is bounded by CHUNK_ELEMENTS per intermediate, whatever
    the bandwidth; more than MAX_PANELS panels is refused.

    Raises:
        TypeError: gamma, the basis or the base has the wrong type.
        ValueError: shapes, devices or dtypes that do not match; a bandwidth or
            node count out of range; a bandwidth (or RBF width) so small that
            more than MAX_PANELS panels would be needed (the message says what
            would work); with ``validate``, non-finite gamma or inducing points,
            or a row whose density has no mass.

    Args:
        gamma: kernel weights, (..., M).
        inducing: the M inducing points.
        basis: a 1D ``GaussianRBF`` of N functions.
        alpha: >= 1.
        kernel: see above.
        bandwidth: see above.
        base: see above.
        nodes: see above.

    Returns:
        r of shape (..., N) in gamma's dtype.

    Examples:
        >>> import torch
        >>> from torch_bridge import GaussianRBF
        >>> basis = GaussianRBF(torch.linspace(0, 1, 4), torch.full((4,), 0.2))
        >>> gamma, inducing = torch.tensor([[1.0, -1.0, 0.5]]), torch.tensor([0.2, 0.5, 0.8])
        >>> kernel_attention(gamma, inducing, basis, alpha=2.0, bandwidth=0.1)
        tensor([[0.6737, 0.9049, 0.7609, 0.5448]])
    """
    alpha_f = alpha_value(alpha)
    if not isinstance(gamma, torch.Tensor) or not gamma.is_floating_point():
        raise TypeError("gamma must be a floating-point tensor")
    if not isinstance(inducing, torch.Tensor) or inducing.dim() != 1:
        raise ValueError("inducing must be a 1D tensor (M,) of inducing points")
    if gamma.dim() == 0 or gamma.shape[-1:] != inducing.shape:
        raise ValueError(
            f"gamma must have shape (..., {inducing.shape[0]}) to match inducing,"
            f" got {tuple(gamma.shape)}"
        )
    if not isinstance(basis, GaussianRBF) or basis.dim != 1:
        raise TypeError("basis must be a 1D GaussianRBF")
    for name, tensor in (("inducing", inducing), ("basis", basis.mu)):
        if tensor.device != gamma.device or tensor.dtype != gamma.dtype:
            raise ValueError(
                f"{name} ({tensor.dtype}, {tensor.device}) must match gamma"
                f" ({gamma.dtype}, {gamma.device})"
            )
    if kernel not in core.KERNELS:
        raise ValueError(f"kernel must be one of {core.KERNELS}, got {kernel!r}")
    if (
        isinstance(bandwidth, bool)
        or not isinstance(bandwidth, (int, float))
        or not (math.isfinite(bandwidth) and bandwidth > 0)
    ):
        raise ValueError(f"bandwidth must be a finite number > 0, got {bandwidth!r}")
    base = UniformBase() if base is None else base
    if not isinstance(base, (UniformBase, GaussianBase)):
        raise TypeError("base must be a tsallis.kernels.UniformBase or GaussianBase")
    if nodes is None:
        nodes = core.default_nodes(alpha_f)
    if not isinstance(nodes, int) or isinstance(nodes, bool) or nodes < 2:
        raise ValueError(f"nodes must be an int >= 2 (or None), got {nodes!r}")
    batch = gamma.shape[:-1]
    if batch.numel() == 0:  # empty in, empty out (on the graph, as torch's own ops)
        anchor = 0 * (gamma.sum() + inducing.sum() + basis.mu.sum() + basis.sigma.sum())
        return gamma.new_zeros(*batch, basis.size) + anchor
    if validate and not bool(torch.isfinite(gamma).all() & torch.isfinite(inducing).all()):
        raise ValueError("gamma and inducing must be finite")
    g = gamma.reshape(batch.numel(), inducing.shape[0]).to(_F64)
    points = inducing.to(_F64)
    narrowest = float(basis.sigma.detach().min())
    top = core.envelope(g, points, kernel, float(bandwidth))
    cuts = inducing.detach().cpu().tolist()
    edges = core.panel_edges(cuts, kernel, float(bandwidth), base, narrowest, top)
    setup = core.Setup(kernel, float(bandwidth), base, alpha_f, nodes, basis.size)
    mu, sd = basis.mu.to(_F64), basis.sigma.to(_F64)
    keep_graph = torch.is_grad_enabled() and any(t.requires_grad for t in (g, points, mu, sd))
    large = core.graph_values(edges, g.shape[0], points.shape[0], setup) > tuning.KERNEL_KEEP
    r, mass = core.integrate(
        g,
        points,
        setup,
        torch.as_tensor(edges, device=gamma.device),
        lambda t: _gaussian.pdf(t[..., None], mu, sd),
        _checkpointed if keep_graph and large else None,
    )
    if validate and not bool((mass > 0).all()):
        raise ValueError(
            "exp_{2-alpha}(f~) vanishes on the whole interval for some row: the density has no mass"
        )
    return r.reshape(*batch, basis.size).to(gamma.dtype)


class KernelAttention(nn.Module):
    """Kernel attention layer: forward(gamma, values) -> context B r (Moreno 2022 Alg 1).

    Holds the inducing points (a buffer, or a parameter when given one), the
    basis and the kernel settings of ``kernel_attention``. ``values`` B is
    (..., D_v, N); the context is (..., D_v).

    Args:
        inducing: the M inducing points (a tensor, or an nn.Parameter to learn them).
        basis: a 1D ``GaussianRBF`` of N functions.
        alpha: as for ``kernel_attention``.
        kernel: as for ``kernel_attention``.
        bandwidth: as for ``kernel_attention``.
        base: as for ``kernel_attention``.

    Forward:
        gamma (..., M) and values B (..., D_v, N). Returns the context (..., D_v).

    Examples:
        >>> import torch
        >>> from torch_bridge import GaussianRBF
        >>> basis = GaussianRBF(torch.linspace(0, 1, 4), torch.full((4,), 0.2))
        >>> layer = KernelAttention(torch.tensor([0.2, 0.5, 0.8]), basis, alpha=1.0)
        >>> layer(torch.tensor([[1.0, -1.0, 0.5]]), torch.ones(1, 3, 4)).shape
        torch.Size([1, 3])
    """

    def __init__(
        self,
        inducing: torch.Tensor,
        basis: GaussianRBF,
        alpha: float = 2.0,
        kernel: str = "gaussian",
        bandwidth: float = 0.1,
        base: UniformBase | GaussianBase | None = None,
        *,
        nodes: int | None = None,
    ) -> None:
        super().__init__()
        if isinstance(inducing, nn.Parameter):
            self.inducing = inducing
        else:
            self.register_buffer("inducing", inducing)
        self.basis = basis
        self.alpha = alpha_value(alpha)
        self.kernel, self.bandwidth, self.base, self.nodes = kernel, bandwidth, base, nodes

    def forward(self, gamma: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        """The context B r (..., D_v), r = E_p[psi] of the kernel family with weights gamma.

        Args:
            gamma: kernel weights (..., M), one per inducing point.
            values: B, (..., D_v, N).

        Returns:
            (..., D_v).

        Raises:
            ValueError: values whose last axis is not N, or as for ``kernel_attention``.

        Examples:
            >>> import torch
            >>> from torch_bridge import GaussianRBF
            >>> basis = GaussianRBF(torch.linspace(0, 1, 4), torch.full((4,), 0.2))
            >>> layer = KernelAttention(torch.tensor([0.2, 0.5, 0.8]), basis, alpha=2.0)
            >>> layer.forward(torch.tensor([[1.0, -1.0, 0.5]]), torch.ones(1, 2, 4)).shape
            torch.Size([1, 2])
        """
        r = kernel_attention(
            gamma,
            self.inducing,
            self.basis,
            self.alpha,
            self.kernel,
            self.bandwidth,
            self.base,
            nodes=self.nodes,
        )
        if values.shape[-1] != r.shape[-1]:
            raise ValueError(
                f"values must have shape (..., D_v, {r.shape[-1]}), got {tuple(values.shape)}"
            )
        return (values @ r[..., None])[..., 0]
