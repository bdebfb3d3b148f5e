"""NumPy kernel families: construction + expect_rbf, best of 7 (not a test).

    python benchmarks/bench_kernels_numpy.py

12 inducing points on [0, 1] with N(0, 1) weights (seed 0), bandwidth 0.1, and
32 Gaussian RBFs of width 0.05 on [0, 1]: KernelFamily(...).expect_rbf(mu, sigma)
for alpha in {1, 1.5, 2, 3} and both kernels, in milliseconds.
"""

from __future__ import annotations

import numpy as np
from timing import best_of  # benchmarks/ is on the path when run as a script

from tsallis.kernels import KernelFamily


def main() -> None:
    gamma = np.random.default_rng(0).normal(size=12)
    inducing = np.linspace(0, 1, 12)
    mu, sigma = np.linspace(0, 1, 32), np.full(32, 0.05)
    print(f"{'alpha':>6} {'kernel':<9} {'ms':>7}")
    for alpha in (1.0, 1.5, 2.0, 3.0):
        for kernel in ("gaussian", "laplace"):

            def run(alpha: float = alpha, kernel: str = kernel) -> np.ndarray:
                family = KernelFamily(gamma, inducing, alpha=alpha, kernel=kernel, bandwidth=0.1)
                return family.expect_rbf(mu, sigma)

            print(f"{alpha:6.1f} {kernel:<9} {best_of(run) * 1e3:7.2f}")


if __name__ == "__main__":
    main()
