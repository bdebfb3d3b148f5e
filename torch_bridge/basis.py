"""What every Torch op shares: the Gaussian RBF basis and the argument checks
of alpha and of positive-definite matrices."""

from __future__ import annotations

import torch
from torch import nn

from torch_bridge._generated import gaussian
from tsallis.core.validation import real_at_least

__all__ = ["GaussianRBF", "alpha_value", "check_spd", "constant_float"]

_F64 = torch.float64


class GaussianRBF(nn.Module):
    """Gaussian RBFs psi_j(t) = N(t; mu_j, Sigma_j), as an nn.Module.

    1D: ``mu`` (N,), ``sigma`` (N,) standard deviations. 2D: ``mu`` (N, 2),
    ``sigma`` (N, 2, 2) covariances. nn.Parameter arguments stay parameters
    (trainable); plain tensors become buffers. ``.to(device, dtype)`` moves both.

    Args:
        mu: centres, (N,) in 1D or (N, 2), a floating tensor or nn.Parameter.
        sigma: standard deviations > 0 (N,) in 1D, or covariances (N, 2, 2).

    Raises:
        TypeError, ValueError: non-floating tensors, mismatched shapes or devices, a
            sigma <= 0 or a covariance that is not symmetric positive definite.

    Examples:
        >>> import torch
        >>> basis = GaussianRBF(torch.linspace(0, 1, 4), torch.full((4,), 0.2))
        >>> basis.mu.shape, basis.sigma.shape
        (torch.Size([4]), torch.Size([4]))
    """

    def __init__(self, mu: torch.Tensor, sigma: torch.Tensor) -> None:
        super().__init__()
        if not isinstance(mu, torch.Tensor) or not isinstance(sigma, torch.Tensor):
            raise TypeError("mu and sigma must be tensors")
        if not mu.is_floating_point() or mu.dtype != sigma.dtype:
            raise TypeError(
                f"mu and sigma must be floating tensors of one dtype, got {mu.dtype}, {sigma.dtype}"
            )
        if mu.device != sigma.device:
            raise ValueError(f"mu is on {mu.device} but sigma is on {sigma.device}")
        with torch.no_grad():
            if not bool(torch.isfinite(mu).all() & torch.isfinite(sigma).all()):
                raise ValueError("mu and sigma (RBF parameters) must be finite")
            if mu.dim() == 1:
                if sigma.shape != mu.shape:
                    raise ValueError(f"sigma must have shape {tuple(mu.shape)}, got {sigma.shape}")
                if not bool((sigma > 0).all()):
                    raise ValueError("sigma (RBF standard deviations) must be > 0")
            elif mu.dim() == 2 and mu.shape[1] == 2:
                if sigma.shape != (mu.shape[0], 2, 2):
                    raise ValueError(
                        f"sigma must have shape ({mu.shape[0]}, 2, 2), got {tuple(sigma.shape)}"
                    )
                check_spd("sigma (RBF covariances Sigma_j)", sigma)
            else:
                raise ValueError(f"mu must have shape (N,) or (N, 2), got {tuple(mu.shape)}")
        if mu.shape[0] == 0:
            raise ValueError("mu must hold at least one basis function (N >= 1)")
        for name, value in (("mu", mu), ("sigma", sigma)):
            if isinstance(value, nn.Parameter):
                self.register_parameter(name, value)
            else:
                self.register_buffer(name, value)
        self._ridge_cache: dict[tuple, torch.Tensor] = {}

    @property
    def dim(self) -> int:
        """D: 1 or 2.

        Examples:
            >>> import torch
            >>> GaussianRBF(torch.linspace(0, 1, 4), torch.full((4,), 0.2)).dim
            1
        """
        return 1 if self.mu.dim() == 1 else 2

    @property
    def size(self) -> int:
        """N, the number of basis functions.

        Examples:
            >>> import torch
            >>> GaussianRBF(torch.linspace(0, 1, 4), torch.full((4,), 0.2)).size
            4
        """
        return self.mu.shape[0]

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        """psi(t): 1D t (...,) -> (..., N); 2D t (..., 2) -> (..., N).

        Args:
            t: points, floating, of mu's dtype.

        Returns:
            The N basis functions at each point.

        Examples:
            >>> import torch
            >>> basis = GaussianRBF(torch.linspace(0, 1, 4), torch.full((4,), 0.2))
            >>> basis(torch.tensor([0.5, 0.1])).shape
            torch.Size([2, 4])
        """
        if self.dim == 1:
            return gaussian.pdf(t[..., None], self.mu, self.sigma)
        low = torch.linalg.cholesky(self.sigma)
        diff = (t[..., None, :] - self.mu)[..., None]
        z = torch.linalg.solve_triangular(low, diff, upper=False)[..., 0]
        logdet = 2 * torch.log(torch.diagonal(low, dim1=-2, dim2=-1)).sum(-1)
        return torch.exp(gaussian.logpdf_d2((z * z).sum(-1), 2, logdet))


def check_spd(name: str, matrix: torch.Tensor) -> None:
    """Symmetric (to 1e-6 relative) and positive definite, else ValueError.

    Args:
        name: the argument's name, for the message.
        matrix: (..., D, D).

    Raises:
        ValueError: a matrix that is not symmetric or not positive definite.

    Examples:
        >>> import torch
        >>> check_spd("Sigma", torch.eye(2))  # passes silently; a non-SPD matrix raises
    """
    if matrix.numel() == 0:
        return
    asym = (matrix - matrix.transpose(-1, -2)).abs().amax()
    if float(asym) > 1e-6 * float(matrix.abs().amax()):
        raise ValueError(f"{name} must be symmetric")
    _, info = torch.linalg.cholesky_ex(matrix.to(_F64))
    if bool((info != 0).any()):
        raise ValueError(f"{name} must be positive definite")


def alpha_value(alpha: object) -> float:
    """alpha as a Python float (one host read for a tensor; alpha gets no gradient).

    Args:
        alpha: a Python number or a 0-dim tensor.

    Returns:
        alpha as a float.

    Examples:
        >>> import torch
        >>> alpha_value(torch.tensor(1.5))
        1.5
    """
    if isinstance(alpha, torch.Tensor):
        if alpha.numel() != 1:
            raise ValueError(f"alpha must be a scalar, got shape {tuple(alpha.shape)}")
        alpha = float(alpha.detach())
    if torch.compiler.is_compiling():
        return constant_float(alpha)  # checked by the eager call
    return real_at_least("alpha", alpha, 1.0)


def constant_float(value: object) -> object:
    """A Python number argument as a constant of the traced graph under torch.compile.

    After a recompile for a new value, Dynamo's automatic dynamic makes a float
    argument symbolic, and the core needs the value itself (node tables, regimes,
    per-eps constants). __float__ specializes it: a guard on its value, so each value
    compiles once (float() and guard_float do not trace to a constant in torch 2.13).
    Outside torch.compile, and for tensors, the value is returned as it is.

    Args:
        value: a Python number (or a 0-dim tensor).

    Returns:
        The value as a float.

    Examples:
        >>> constant_float(2.5)
        2.5
    """
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if torch.compiler.is_compiling() and number:
        return value.__float__()
    return value
