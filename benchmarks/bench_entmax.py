"""sparsemax / entmax forward + backward against torch.softmax and the entmax package.

    python benchmarks/bench_entmax.py [--quick]

float32, (1024, 1000) scores, forward + backward of (p * w).sum(), interleaved
medians in one run; the entmax package rows are skipped when it is not installed.
glibc malloc is kept in steady state as in bench_discrete.py (timing.steady_malloc;
--raw-malloc leaves it: then every fresh 4 MB temporary is page-faulted, and the
softmax row alone moved between 0.7 and 3 ms from run to run).
Then the extra peak memory of one forward + backward at (65536, 1000). Not a test.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

import torch
from timing import (  # benchmarks/ is on the path when run as a script
    interleaved_medians,
    steady_malloc,
)

from torch_bridge import entmax, sparsemax

try:
    import entmax as entmax_package
except ImportError:  # the comparison is skipped
    entmax_package = None


def fwd_bwd(op, x, w):
    def run():
        x.grad = None
        (op(x) * w).sum().backward()

    return run


def peak_mb(alpha: float) -> float:
    code = (
        "import torch, resource\n"
        "from torch_bridge import entmax\n"
        "x = torch.randn(65536, 1000, requires_grad=True)\n"
        "base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        f"entmax(x, {alpha}).sum().backward()\n"
        "print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024)\n"
    )
    return float(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--raw-malloc", action="store_true", help="leave glibc's mmap/trim thresholds alone"
    )
    args = parser.parse_args()
    if not args.raw_malloc:
        print(f"glibc malloc kept in steady state: {steady_malloc()}")
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(1024, 1000, generator=gen).requires_grad_(True)
    w = torch.randn(1024, 1000, generator=gen)
    cases = {
        "softmax": fwd_bwd(lambda v: torch.softmax(v, -1), x, w),
        "sparsemax": fwd_bwd(sparsemax, x, w),
        "entmax 1.5": fwd_bwd(lambda v: entmax(v, 1.5), x, w),
        "entmax 1.3": fwd_bwd(lambda v: entmax(v, 1.3), x, w),
    }
    if entmax_package is not None:
        cases["package sparsemax"] = fwd_bwd(entmax_package.sparsemax, x, w)
        cases["package entmax15"] = fwd_bwd(entmax_package.entmax15, x, w)
        cases["package entmax_bisect 1.3"] = fwd_bwd(
            lambda v: entmax_package.entmax_bisect(v, 1.3), x, w
        )
    t = interleaved_medians(cases, 5 if args.quick else 15)
    soft = t["softmax"]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, float32 (1024, 1000)")
    print(f"{'what':<28} {'ms':>8} {'x softmax':>10} {'x package':>10}")
    peers = {"sparsemax": "package sparsemax", "entmax 1.5": "package entmax15"}
    peers["entmax 1.3"] = "package entmax_bisect 1.3"
    for name, value in t.items():
        peer = t.get(peers.get(name, ""), float("nan"))
        print(f"{name:<28} {value * 1e3:8.2f} {value / soft:10.1f} {value / peer:10.2f}")
    if entmax_package is not None:
        with torch.no_grad():
            x64 = x.detach().double()
            err = (
                (entmax_package.entmax_bisect(x.detach(), 1.3).double() - entmax(x64, 1.3))
                .abs()
                .max()
            )
            ours = (entmax(x.detach(), 1.3).double() - entmax(x64, 1.3)).abs().max()
        print(f"alpha = 1.3 float32 worst error: ours {ours:.1e}, package entmax_bisect {err:.1e}")
    for alpha in (1.5, 1.3):
        print(f"extra peak memory, (65536, 1000), alpha = {alpha}: {peak_mb(alpha):.0f} MB")


if __name__ == "__main__":
    main()
