"""Closed forms vs the alternatives, timed side by side in one run.

    python benchmarks/bench_closed_forms.py

1. threshold: generated closed form vs solving int p = 1 with mpmath (what a
   closed form saves), one 1D beta-Gaussian.
2. cdf: generated beta-Gaussian cdf vs scipy.stats.beta on the same points.
3. logpdf: generated Torch kernel (CPU, float32 / float64) vs generated NumPy.
Ratios > 1 mean the first column is faster. Not a test: numbers vary by machine.
"""

from __future__ import annotations

import mpmath as mp
import numpy as np
from scipy import stats
from timing import best_of  # benchmarks/ is on the path when run as a script

from tsallis import groundtruth as gt
from tsallis._generated import beta_gaussian as nb


def main() -> None:
    alpha, sigma = 1.5, 0.7
    rows = []
    mp.mp.dps = 30
    family = gt.Family(
        score=lambda r: -(r**2) / (2 * mp.mpf(sigma) ** 2), alpha=mp.mpf(alpha), scale=mp.mpf(sigma)
    )
    closed = best_of(lambda: nb.threshold_1d(alpha, sigma), 50)
    root = best_of(lambda: gt.threshold(family), 3)
    rows.append(("threshold, 1 value", "closed form", closed, "mpmath root (30 dps)", root))

    k = 1 / (alpha - 1)
    low, high = -nb.half_width_1d(alpha, sigma), nb.half_width_1d(alpha, sigma)
    reference = stats.beta(k + 1, k + 1, loc=low, scale=high - low)
    for batch in (1, 100_000):
        x = np.random.default_rng(0).uniform(low, high, batch)
        ours = best_of(lambda x=x: nb.cdf_1d(x, alpha, 0.0, sigma))
        theirs = best_of(lambda x=x: reference.cdf(x))
        rows.append((f"cdf, batch {batch}", "generated NumPy", ours, "scipy.stats.beta", theirs))

    try:
        import torch

        from torch_bridge import closed_forms
    except ImportError:
        torch = None
    if torch is not None:
        torch.set_num_threads(max(1, torch.get_num_threads()))
        for batch in (1, 100_000):
            x = np.random.default_rng(0).uniform(low, high, batch)
            numpy_time = best_of(lambda x=x: nb.logpdf_1d(x, alpha, 0.0, sigma))
            for dtype in (torch.float32, torch.float64):
                xt = torch.tensor(x, dtype=dtype)
                a = torch.tensor(alpha, dtype=dtype)
                s = torch.tensor(sigma, dtype=dtype)
                torch_time = best_of(
                    lambda xt=xt, a=a, s=s: closed_forms.beta_gaussian.logpdf_1d(xt, a, 0.0, s)
                )
                label = str(dtype).replace("torch.", "")
                rows.append(
                    (
                        f"logpdf, batch {batch}",
                        f"torch CPU {label}",
                        torch_time,
                        "NumPy float64",
                        numpy_time,
                    )
                )

    print(f"{'case':<22}{'A':<18}{'time A':>12}  {'B':<22}{'time B':>12}{'B / A':>10}")
    for case, a_name, a_time, b_name, b_time in rows:
        a_us, b_us, ratio = a_time * 1e6, b_time * 1e6, b_time / a_time
        print(f"{case:<22}{a_name:<18}{a_us:>10.1f}us  {b_name:<22}{b_us:>10.1f}us{ratio:>10.1f}")


if __name__ == "__main__":
    main()
