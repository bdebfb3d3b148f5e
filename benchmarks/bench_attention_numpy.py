"""Continuous attention: tsallis.attention vs a 1000-point trapezoid, side by side.

    python benchmarks/bench_attention_numpy.py

Batch 1024 x 64 Gaussian RBFs (the size quoted for published
general-alpha code), float64 NumPy on CPU. For each alpha: rho + J from
tsallis.attention, and the same quantities from a uniform 1000-point trapezoid
over the support (what published general-alpha code does), with the worst
row-relative error of each against the other noted. Ratios > 1 mean
tsallis.attention is faster. Not a test: numbers vary by machine.
"""

from __future__ import annotations

import numpy as np
from timing import best_of  # benchmarks/ is on the path when run as a script

from tsallis._generated import beta_gaussian
from tsallis.attention import GaussianRBF, jacobian, rho

BATCH, N_BASIS, GRID = 1024, 64, 1000


def trapezoid(alpha: float, loc: np.ndarray, sigma: np.ndarray, basis: GaussianRBF) -> np.ndarray:
    """rho by the trapezoidal rule on GRID points of the support, in chunks of 64 rows."""
    out = np.empty((loc.size, basis.size))
    k = 1 / (alpha - 1)
    for start in range(0, loc.size, 64):
        mu, sd = loc[start : start + 64, None], sigma[start : start + 64, None]
        a = beta_gaussian.half_width_1d(alpha, sd)
        x = np.linspace(-1, 1, GRID) * a  # (rows, GRID)
        p = np.maximum(1 - (x / a) ** 2, 0) ** k
        p = p / np.trapezoid(p, x, axis=-1)[:, None]
        t = (mu + x)[:, :, None]
        psi = np.exp(-(((t - basis.mu) / basis.sigma) ** 2) / 2) / (
            basis.sigma * np.sqrt(2 * np.pi)
        )
        out[start : start + 64] = np.trapezoid(p[:, :, None] * psi, x[:, :, None], axis=1)
    return out


def main() -> None:
    rng = np.random.default_rng(0)
    loc = rng.uniform(0, 1, BATCH)
    sigma = np.sqrt(10 ** rng.uniform(-4, -1, BATCH))
    basis = GaussianRBF(np.linspace(0, 1, N_BASIS), np.full(N_BASIS, 0.1))
    print(f"batch {BATCH} x {N_BASIS} RBFs (sigma_j = 0.1), sigma^2 log-uniform in [1e-4, 1e-1]")
    print(
        f"{'alpha':>6} {'rho+J (s)':>10} {'trapezoid rho (s)':>18} {'ratio':>6} {'trap. error':>12}"
    )
    for alpha in (2.0, 1.5, 1.25, 1.7, 3.0):
        ours = best_of(
            lambda a=alpha: (rho(a, loc, sigma, basis), jacobian(a, loc, sigma, basis)), 3
        )
        trap = best_of(lambda a=alpha: trapezoid(a, loc, sigma, basis), 3)
        r = rho(alpha, loc, sigma, basis)
        err = (np.abs(trapezoid(alpha, loc, sigma, basis) - r).max(-1) / np.abs(r).max(-1)).max()
        print(f"{alpha:6.3g} {ours:10.3f} {trap:18.3f} {trap / ours:6.1f} {err:12.1e}")


if __name__ == "__main__":
    main()
