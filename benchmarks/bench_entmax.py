"""sparsemax / entmax forward + backward against torch.softmax and the entmax package.

    python benchmarks/bench_entmax.py [--quick] [--compile] [--device cuda]

float32, (1024, 1000) scores, forward + backward of (p * w).sum(), interleaved
medians in one run; the entmax package rows are skipped when it is not installed.
Two floors of the same shape, compiled (torch.compile, fullgraph), in the same run:
F, one elementwise kernel (exp(u) * v), and N, one fused Newton evaluation at alpha
= 1.3 (log1p and exp2 per entry, the row sums of p and s): the eager op's cost in
evaluations' worth. --compile adds the ops and softmax under torch.compile(fullgraph=True).
The compiled kernels are timed in a second interleaved group, after the eager one.
glibc malloc is kept in steady state as in bench_discrete.py (timing.steady_malloc;
--raw-malloc leaves it: then every fresh 4 MB temporary is page-faulted, and the
softmax row alone moved between 0.7 and 3 ms from run to run).
On the CPU, sparsemax and alpha = 1.3 also run with the loops' prefix start set the
other way from what this machine's measurement chose (tsallis.core.arrays.partition_pays).
The "sparsemax", "entmax 1.5" and "entmax 1.3" rows are the compiled kernel that hot
calls take (tsallis.core.tuning.FUSED_AFTER_CALLS; the run warms each first and prints
how long its compile took), "sparsemax, eager", "entmax 1.5, eager" and "entmax 1.3,
eager loop" the eager paths that cold calls take (the closed-form thresholds on sorted
rows on a GPU and on CPU calls of at most tuning.SORT_ELEMENTS values, else, as at this
size on the CPU, the Newton loop; at 1.3 the Newton loop).
Then the extra peak memory of one forward + backward at (65536, 1000) (on CUDA, the
allocator's peak above what was allocated before). On CUDA every timed run ends with a
synchronize. Not a test.
"""

from __future__ import annotations

import argparse
import itertools
import math
import subprocess
import sys
import time

import torch
from timing import (  # benchmarks/ is on the path when run as a script
    interleaved_medians,
    steady_malloc,
)

from torch_bridge import entmax, sparsemax
from tsallis.core import arrays, tuning

try:
    import entmax as entmax_package
except ImportError:  # the comparison is skipped
    entmax_package = None


def fwd_bwd(op, x, w):
    def run():
        x.grad = None
        (op(x) * w).sum().backward()

    return run


def with_tuning(op, name: str, value):
    """op with tsallis.core.tuning's ``name`` set to ``value`` while it runs."""

    def run(v):
        saved = getattr(tuning, name)
        setattr(tuning, name, value)
        try:
            return op(v)
        finally:
            setattr(tuning, name, saved)

    return run


def with_prefix(op, pays: bool):
    """op with the CPU loops' prefix start forced on or off (tuning.PARTITION_PAYS; it
    acts in the forward alone)."""
    return with_tuning(op, "PARTITION_PAYS", pays)


def with_fused(op, after: int | None):
    """op with tuning.FUSED_AFTER_CALLS set to ``after`` (None: the eager loop only)."""
    return with_tuning(op, "FUSED_AFTER_CALLS", after)


def warm_fused(case) -> float:
    """Call a case until its compiled kernel runs (tuning.FUSED_AFTER_CALLS calls and one);
    the seconds the hot call took, the compile included."""
    for _ in range(tuning.FUSED_AFTER_CALLS or 0):
        case()
    start = time.perf_counter()
    case()
    return time.perf_counter() - start


def synchronized(cases: dict) -> dict:
    """Each case followed by torch.cuda.synchronize(), so its time is the device's."""

    def run(case):
        case()
        torch.cuda.synchronize()

    return {name: (lambda case=case: run(case)) for name, case in cases.items()}


def compiled_floors(x: torch.Tensor, w: torch.Tensor) -> dict:
    """F: one compiled elementwise kernel; N: one fused Newton evaluation at alpha = 1.3."""
    u, v = x.detach().clone(), w.clone()
    elementwise = torch.compile(lambda a, b: torch.exp(a) * b, fullgraph=True)
    shifted = 0.3 * (u - u.amax(-1, keepdim=True))
    shift = torch.full((u.shape[0], 1), 0.45, device=u.device)

    def evaluation(shifted: torch.Tensor, shift: torch.Tensor):
        base = torch.log1p((shifted - shift).clamp_min(-1.0))
        s = torch.exp2(base * (0.7 / (0.3 * math.log(2))))
        return (s * (1 + shifted - shift)).sum(-1), s.sum(-1)

    newton = torch.compile(evaluation, fullgraph=True)
    return {"floor F": lambda: elementwise(u, v), "floor N": lambda: newton(shifted, shift)}


def compiled_cases(x: torch.Tensor, w: torch.Tensor) -> dict:
    """Forward + backward of (op(x) * w).sum(), the whole loss compiled."""
    ops = {
        "compiled softmax": lambda v: torch.softmax(v, -1),
        "compiled sparsemax": sparsemax,
        "compiled entmax 1.5": lambda v: entmax(v, 1.5),
        "compiled entmax 1.3": lambda v: entmax(v, 1.3),
    }
    cases = {}
    for name, op in ops.items():
        loss = torch.compile(lambda v, op=op: (op(v) * w).sum(), fullgraph=True)

        def run(loss=loss):
            x.grad = None
            loss(x).backward()

        try:  # a compiler failure is reported as a row, not the end of the run
            run()
        except Exception as error:
            print(f"{name}: failed to compile ({type(error).__name__}: {str(error)[:200]})")
            continue
        cases[name] = run
    return cases


def peak_mb(alpha: float, device: str, fused: bool = False) -> float:
    """Extra peak memory of one forward + backward at (65536, 1000); ``fused``: by the
    compiled kernel (tuning.FUSED_AFTER_CALLS = 0, compiled on 2048 rows first)."""
    if device != "cpu":
        op = with_fused(lambda v: entmax(v, alpha), 0 if fused else None)
        if fused:
            op(torch.randn(2048, 1000, device=device, requires_grad=True)).sum().backward()
        x = torch.randn(65536, 1000, device=device, requires_grad=True)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        op(x).sum().backward()
        torch.cuda.synchronize()
        return (torch.cuda.max_memory_allocated() - base) / 2**20
    code = (
        "import torch, resource\n"
        "from torch_bridge import entmax\n"
        "from tsallis.core import tuning\n"
        f"tuning.FUSED_AFTER_CALLS = {0 if fused else None}\n"
        + (
            f"entmax(torch.randn(2048, 1000, requires_grad=True), {alpha}).sum().backward()\n"
            if fused
            else ""
        )
        + "x = torch.randn(65536, 1000, requires_grad=True)\n"
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
        "--compile", action="store_true", help="also time the ops under torch.compile"
    )
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument(
        "--raw-malloc", action="store_true", help="leave glibc's mmap/trim thresholds alone"
    )
    args = parser.parse_args()
    if not args.raw_malloc:
        print(f"glibc malloc kept in steady state: {steady_malloc()}")
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(1024, 1000, generator=gen).to(args.device).requires_grad_(True)
    w = torch.randn(1024, 1000, generator=gen).to(args.device)
    cases = {
        "softmax": fwd_bwd(lambda v: torch.softmax(v, -1), x, w),
        "sparsemax": fwd_bwd(sparsemax, x, w),
        "entmax 1.5": fwd_bwd(lambda v: entmax(v, 1.5), x, w),
        "entmax 1.3": fwd_bwd(lambda v: entmax(v, 1.3), x, w),
    }
    if args.device == "cpu":  # the prefix start's other setting, side by side
        pays = arrays.partition_pays()
        other = "off" if pays else "on"
        print(
            f"NumPy's partition costs {arrays.partition_cost():.1f} cumulative sums"
            f" (tuning.PARTITION_RATIO {tuning.PARTITION_RATIO:g}): the prefix start is"
            f" {'on' if pays else 'off'}; rows 'start {other}' force it {other}; the loops'"
            f" log2 is {'NumPy' if arrays.numpy_log2_pays(torch) else 'Torch'}'s"
        )
        eager2 = with_fused(with_prefix(sparsemax, not pays), None)
        cases[f"sparsemax, start {other}"] = fwd_bwd(eager2, x, w)
        forced13 = with_prefix(lambda v: entmax(v, 1.3), not pays)
        eager13 = with_fused(forced13, None)
        cases[f"entmax 1.3, start {other}"] = fwd_bwd(eager13, x, w)
    cases["sparsemax, eager"] = fwd_bwd(with_fused(sparsemax, None), x, w)
    cases["entmax 1.5, eager"] = fwd_bwd(with_fused(lambda v: entmax(v, 1.5), None), x, w)
    cases["entmax 1.3, eager loop"] = fwd_bwd(with_fused(lambda v: entmax(v, 1.3), None), x, w)
    for name in ("sparsemax", "entmax 1.5", "entmax 1.3"):
        hot = warm_fused(cases[name])
        print(
            f"{name} compiles its fused kernel on call {tuning.FUSED_AFTER_CALLS + 1}"
            f" (tuning.FUSED_AFTER_CALLS): that call took {hot:.1f} s"
        )
    if entmax_package is not None:
        cases["package sparsemax"] = fwd_bwd(entmax_package.sparsemax, x, w)
        cases["package entmax15"] = fwd_bwd(entmax_package.entmax15, x, w)
        cases["package entmax_bisect 1.3"] = fwd_bwd(
            lambda v: entmax_package.entmax_bisect(v, 1.3), x, w
        )
    repeat = 5 if args.quick else 15
    if args.device != "cpu":
        repeat *= 4
        cases = synchronized(cases)
    t = interleaved_medians(cases, repeat)
    # the compiled kernels are timed as a group of their own, after the eager one:
    # interleaved with them, the eager ops measured 10-15% slower (their OpenMP
    # threads still spinning, we believe)
    compiled = compiled_floors(x, w)
    if args.compile:
        compiled.update(compiled_cases(x, w))
    if args.device != "cpu":
        compiled = synchronized(compiled)
    t.update(interleaved_medians(compiled, repeat))
    soft, floor, newton = t["softmax"], t["floor F"], t["floor N"]
    where = torch.cuda.get_device_name() if args.device != "cpu" else "CPU"
    print(
        f"torch {torch.__version__}, {where}, {torch.get_num_threads()} threads,"
        " float32 (1024, 1000)"
    )
    print(f"{'what':<28} {'ms':>8} {'x softmax':>10} {'x package':>10} {'x F':>7} {'x N':>6}")
    peers = {"sparsemax": "package sparsemax", "entmax 1.5": "package entmax15"}
    peers["entmax 1.5, eager"] = "package entmax15"
    peers["sparsemax, eager"] = "package sparsemax"
    peers["entmax 1.3"] = peers["entmax 1.3, eager loop"] = "package entmax_bisect 1.3"
    for name, value in t.items():
        peer = t.get(peers.get(name, ""), float("nan"))
        print(
            f"{name:<28} {value * 1e3:8.2f} {value / soft:10.1f} {value / peer:10.2f}"
            f" {value / floor:7.1f} {value / newton:6.1f}"
        )
    if entmax_package is not None:
        with torch.no_grad():
            pairs = ((2.0, entmax_package.sparsemax), (1.5, entmax_package.entmax15), (1.3, None))
            for alpha, peer in pairs:
                x32 = x.detach()
                exact = entmax(x32.double(), alpha)
                if peer is None:
                    peer = lambda v: entmax_package.entmax_bisect(v, 1.3)  # noqa: E731
                theirs = (peer(x32).double() - exact).abs().max()
                ours = with_fused(lambda v, a=alpha: entmax(v, a), 0)(x32).double() - exact
                eager = with_fused(lambda v, a=alpha: entmax(v, a), None)(x32).double() - exact
                print(
                    f"alpha = {alpha} float32 worst error: ours {ours.abs().max():.1e} (fused"
                    f" kernel), {eager.abs().max():.1e} (eager path), package {theirs:.1e}"
                )
    for alpha, fused in itertools.product((2.0, 1.5, 1.3), (False, True)):
        peak = peak_mb(alpha, args.device, fused)
        how = ", fused kernel" if fused else ""
        print(f"extra peak memory, (65536, 1000), alpha = {alpha}{how}: {peak:.0f} MB")


if __name__ == "__main__":
    main()
