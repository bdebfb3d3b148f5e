"""torch_bridge attention ops against naive baselines, side by side (float32, CPU).

    python benchmarks/bench_attention.py [--quick]

Each line is the median of interleaved runs of forward + backward (medians and
ratios measured in one run; numbers vary by machine). Errors are the worst
row-relative error against a float64 reference: our own op in float64 (itself
checked against mpmath in the tests) or, for 2D and kernel attention, the NumPy
reference (tsallis.attention, tsallis.kernels). Not a test.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import torch
from timing import interleaved_medians  # benchmarks/ is on the path when run as a script

from torch_bridge import GaussianRBF, closed_forms, continuous_attention, kernel_attention
from tsallis import attention as np_attention
from tsallis.kernels import KernelFamily

F64 = torch.float64
B, N = 1024, 64


def row_error(estimate: torch.Tensor | np.ndarray, truth: torch.Tensor | np.ndarray) -> float:
    e, t = (np.asarray(torch.as_tensor(v).double()) for v in (estimate, truth))
    return float((np.abs(e - t).max(-1) / np.abs(t).max(-1)).max())


def fwd_bwd(function, *inputs):
    """A closure running function(*inputs) and a backward pass to every input."""
    weights = None

    def run():
        nonlocal weights
        for x in inputs:
            x.grad = None
        out = function(*inputs)
        if weights is None:
            weights = torch.randn(
                out.shape, dtype=out.dtype, generator=torch.Generator().manual_seed(0)
            )
        (out * weights).sum().backward()
        return out

    return run


def gauss_legendre_rho(alpha: float, nodes: int, loc, scale, basis):
    """Naive baseline: autograd through an n-node Gauss-Legendre rule on the support."""
    x, w = np.polynomial.legendre.leggauss(nodes)
    x, w = torch.tensor(x, dtype=loc.dtype), torch.tensor(w, dtype=loc.dtype)
    a = closed_forms.beta_gaussian.half_width_1d(alpha, scale)[:, None]  # (B, 1)
    t = loc[:, None] + a * x  # (B, n)
    k = 1 / (alpha - 1)
    p = torch.clamp(1 - x * x, min=0) ** k
    p = p / (p * w).sum() / a  # normalized density at the nodes
    z = (t[:, :, None] - basis.mu) / basis.sigma
    psi = torch.exp(-z * z / 2) / (basis.sigma * math.sqrt(2 * math.pi))
    return torch.einsum("bn,bnj->bj", p * w * a, psi)


def trapezoid_rho(alpha: float, points: int, loc, scale, basis, chunk: int = 64):
    """Published general-alpha approach: a uniform trapezoid on the support."""
    out = []
    for i in range(0, loc.shape[0], chunk):
        m, s = loc[i : i + chunk, None], scale[i : i + chunk, None]
        a = closed_forms.beta_gaussian.half_width_1d(alpha, s)
        u = torch.linspace(-1, 1, points, dtype=loc.dtype)
        p = torch.clamp(1 - u * u, min=0) ** (1 / (alpha - 1))
        p = p / torch.trapezoid(p, u)  # density in u
        z = (m[:, :, None] + a[:, :, None] * u[:, None] - basis.mu) / basis.sigma
        psi = torch.exp(-z * z / 2) / (basis.sigma * math.sqrt(2 * math.pi))
        out.append(torch.trapezoid(p[:, None] * psi, u[:, None], dim=1))
    return torch.cat(out)


def section_1d(repeat: int) -> None:
    gen = torch.Generator().manual_seed(0)
    basis = GaussianRBF(torch.linspace(0, 1, N), torch.full((N,), 0.1))
    basis64 = GaussianRBF(basis.mu.double(), basis.sigma.double())
    loc = torch.rand(B, generator=gen).requires_grad_(True)
    scale = torch.sqrt(10 ** (torch.rand(B, generator=gen) * 3 - 4)).requires_grad_(True)
    print(
        f"1D: B = {B}, N = {N} RBFs (sigma_j = 0.1) on [0, 1], loc ~ U(0, 1),"
        " sigma^2 log-uniform in [1e-4, 1e-1]"
    )
    for alpha in (2.0, 1.2):
        ref = continuous_attention(loc.detach().double(), scale.detach().double(), basis64, alpha)
        x = torch.randn(B, N, generator=gen)
        y = torch.randn(B, N, generator=gen)
        cases = {
            "ours": fwd_bwd(lambda m, s, a=alpha: continuous_attention(m, s, basis, a), loc, scale),
            "GL-64 autograd": fwd_bwd(
                lambda m, s, a=alpha: gauss_legendre_rho(a, 64, m, s, basis), loc, scale
            ),
            "erf + exp floor": lambda x=x, y=y: (torch.erf(x), torch.exp(y)),
        }
        times = interleaved_medians(cases, repeat)
        errors = {
            "ours": row_error(
                continuous_attention(loc.detach(), scale.detach(), basis, alpha), ref
            ),
            "GL-64 autograd": row_error(
                gauss_legendre_rho(alpha, 64, loc.detach(), scale.detach(), basis), ref
            ),
        }
        print(f"  alpha = {alpha}: fwd + bwd median, float32")
        for name, t in times.items():
            err = f"  row error {errors[name]:.1e}" if name in errors else ""
            print(f"    {name:<18} {t * 1e3:8.2f} ms{err}")
        print(
            f"    ratio ours / GL-64 = {times['ours'] / times['GL-64 autograd']:.2f},"
            f" ours / floor = {times['ours'] / times['erf + exp floor']:.1f}"
        )
        if alpha == 1.2:
            start = time.perf_counter()
            run = fwd_bwd(lambda m, s, a=alpha: trapezoid_rho(a, 1000, m, s, basis), loc, scale)
            out = run()
            elapsed = time.perf_counter() - start
            print(
                f"    {'trapezoid-1000':<18} {elapsed * 1e3:8.2f} ms (one run)"
                f"  row error {row_error(out.detach(), ref):.1e}"
            )


def section_2d(repeat: int) -> None:
    gen = torch.Generator().manual_seed(1)
    side = torch.linspace(0, 1, 10)
    mu = torch.stack(torch.meshgrid(side, side, indexing="ij"), -1).reshape(-1, 2)
    sigma = torch.eye(2).expand(100, 2, 2) * 0.01
    basis = GaussianRBF(mu, sigma.clone())
    batch = 256
    loc = torch.rand(batch, 2, generator=gen).requires_grad_(True)
    low = torch.randn(batch, 2, 2, generator=gen) * 0.2
    cov = (low @ low.transpose(-1, -2) + 0.01 * torch.eye(2)).requires_grad_(True)
    ref = np_attention.rho(
        2.0,
        loc.detach().double().numpy(),
        cov.detach().double().numpy(),
        np_attention.GaussianRBF(mu.double().numpy(), sigma.double().numpy()),
    )
    print(f"2D, alpha = 2: B = {batch}, N = 100 RBFs (10 x 10 grid, Sigma_j = 0.01 I), float32")
    for angles in (None, 64):
        run = fwd_bwd(
            lambda m, s, n=angles: continuous_attention(m, s, basis, 2.0, angles=n), loc, cov
        )
        t = interleaved_medians({"ours": run}, repeat)["ours"]
        error = row_error(run().detach(), ref)
        label = "adaptive angles" if angles is None else f"{angles} angles"
        print(f"    ours, {label:<16} {t * 1e3:8.2f} ms  row error {error:.1e}")


def section_kernel(repeat: int) -> None:
    gen = torch.Generator().manual_seed(2)
    batch, m = 64, 128
    inducing = torch.linspace(0, 1, m, dtype=F64)
    basis = GaussianRBF(torch.linspace(0, 1, N, dtype=F64), torch.full((N,), 0.03, dtype=F64))
    gamma = (torch.randn(batch, m, generator=gen, dtype=F64) * 0.4).requires_grad_(True)
    bandwidth = 0.05
    ref = np.stack(
        [
            KernelFamily(g, inducing.numpy(), alpha=2.0, bandwidth=bandwidth).expect_rbf(
                basis.mu.numpy(), basis.sigma.numpy()
            )
            for g in gamma.detach().numpy()
        ]
    )

    def trapezoid(g, points: int = 500):
        t = torch.linspace(0, 1, points, dtype=g.dtype)
        k = torch.exp(-((t[:, None] - inducing.to(g.dtype)) ** 2) / (2 * bandwidth**2))
        dens = torch.clamp(1 + g @ k.T, min=0)  # exp_0(f) = [1 + f]_+
        z = (t[:, None] - basis.mu.to(g.dtype)) / basis.sigma.to(g.dtype)
        psi = torch.exp(-z * z / 2) / (basis.sigma.to(g.dtype) * math.sqrt(2 * math.pi))
        return (
            torch.trapezoid(dens[:, :, None] * psi, t[:, None], dim=1)
            / torch.trapezoid(dens, t)[:, None]
        )

    print(
        f"kernel sparsemax: batch {batch}, {m} inducing points (Gaussian kernel,"
        f" bandwidth {bandwidth}), N = {N}"
    )
    g32 = gamma.detach().float().requires_grad_(True)
    cases = {
        "ours (float64)": fwd_bwd(
            lambda g: kernel_attention(g, inducing, basis, 2.0, bandwidth=bandwidth), gamma
        ),
        "trapezoid-500 f64": fwd_bwd(trapezoid, gamma),
        "trapezoid-500 f32": fwd_bwd(trapezoid, g32),
    }
    times = interleaved_medians(cases, repeat)
    errors = {
        "ours (float64)": row_error(
            kernel_attention(gamma.detach(), inducing, basis, 2.0, bandwidth=bandwidth), ref
        ),
        "trapezoid-500 f64": row_error(trapezoid(gamma.detach()), ref),
        "trapezoid-500 f32": row_error(trapezoid(g32.detach()), ref),
    }
    for name, t in times.items():
        print(f"    {name:<18} {t * 1e3:8.2f} ms  row error {errors[name]:.1e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    args = parser.parse_args()
    repeat = 5 if args.quick else 21
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    section_1d(repeat)
    section_2d(repeat)
    section_kernel(repeat)


if __name__ == "__main__":
    main()
