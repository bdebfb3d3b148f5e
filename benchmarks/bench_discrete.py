"""ev-softmax ops vs torch.softmax / torch.log_softmax, side by side in one run.

    python benchmarks/bench_discrete.py [--device cuda] [--repeat 40] [--raw-malloc]

float32, shapes 4096x32, 1024x1024 and 64x32000; forward alone and
forward + backward. Times are interleaved medians; the ratio columns divide
by softmax (log_softmax for the log ops) measured in the same loop. Also
timed for reference:
- a naive autograd ev-softmax (mask-multiply, exp, normalize), the way it is
  usually written;
- entmax.sparsemax and entmax.entmax15, when the entmax package is installed.
Not a test: numbers vary by machine.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import torch
from timing import (  # benchmarks/ is on the path when run as a script
    interleaved_medians,
    steady_malloc,
)

from torch_bridge import ev_softmax, log_ev_softmax

SHAPES = ((4096, 32), (1024, 1024), (64, 32000))

try:
    import entmax
except ImportError:  # optional reference
    entmax = None


def naive_ev_softmax(x: torch.Tensor) -> torch.Tensor:
    """Eq 7 written directly with autograd: no shift, no fused kernel."""
    keep = (x >= x.mean(-1, keepdim=True)).to(x.dtype)
    e = torch.exp(x - x.amax(-1, keepdim=True)) * keep
    return e / e.sum(-1, keepdim=True)


Op = Callable[[torch.Tensor], torch.Tensor]


def candidate_groups() -> list[dict[str, tuple[Op, str]]]:
    """Groups timed together: name -> (op, the baseline its ratio is taken against).

    The slow references run in their own group, so their large temporaries
    do not disturb the timings of the fast ops.
    """
    ours: dict[str, tuple[Op, str]] = {
        "softmax": (lambda x: torch.softmax(x, -1), "softmax"),
        "ev_softmax": (lambda x: ev_softmax(x), "softmax"),
        "ev_softmax eps=1e-6": (lambda x: ev_softmax(x, eps=1e-6), "softmax"),
        "log_softmax": (lambda x: torch.log_softmax(x, -1), "log_softmax"),
        "log_ev_softmax eps=1e-6": (lambda x: log_ev_softmax(x), "log_softmax"),
    }
    references: dict[str, tuple[Op, str]] = {
        "softmax (again)": (lambda x: torch.softmax(x, -1), "softmax (again)"),
        "naive ev_softmax": (naive_ev_softmax, "softmax (again)"),
    }
    if entmax is not None:
        references["entmax.sparsemax"] = (lambda x: entmax.sparsemax(x, -1), "softmax (again)")
        references["entmax.entmax15"] = (lambda x: entmax.entmax15(x, -1), "softmax (again)")
    return [ours, references]


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def measure(shape: tuple[int, int], device: torch.device, repeat: int) -> list[tuple]:
    """Rows (name, baseline, forward s, fwd+bwd s) for one shape."""
    generator = torch.Generator().manual_seed(0)
    x = (torch.randn(*shape, generator=generator) * 3).to(device)
    leaf = x.clone().requires_grad_()
    grad = torch.randn(*shape, generator=generator).to(device)
    rows = []
    for ops in candidate_groups():
        rows += _measure_group(ops, x, leaf, grad, device, repeat)
    return rows


def _measure_group(
    ops: dict[str, tuple[Op, str]],
    x: torch.Tensor,
    leaf: torch.Tensor,
    grad: torch.Tensor,
    device: torch.device,
    repeat: int,
) -> list[tuple]:
    def forward(op: Op) -> Callable[[], None]:
        def run() -> None:
            with torch.no_grad():
                op(x)
            _sync(device)

        return run

    def backward(op: Op) -> Callable[[], None]:
        def run() -> None:
            leaf.grad = None
            op(leaf).backward(grad)
            _sync(device)

        return run

    fwd = interleaved_medians({name: forward(op) for name, (op, _) in ops.items()}, repeat)
    both = interleaved_medians({name: backward(op) for name, (op, _) in ops.items()}, repeat)
    return [(name, base, fwd[name], both[name]) for name, (_, base) in ops.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeat", type=int, default=40)
    parser.add_argument(
        "--raw-malloc", action="store_true", help="leave glibc's mmap/trim thresholds alone"
    )
    args = parser.parse_args()
    device = torch.device(args.device)
    if not args.raw_malloc:
        print(f"glibc malloc kept in steady state: {steady_malloc()}")
    print(f"device {device}, float32, torch {torch.__version__}, threads {torch.get_num_threads()}")
    if entmax is None:
        print("(entmax package not installed: its rows are skipped)")
    header = f"{'shape':>11} {'op':<24} {'fwd ms':>8} {'ratio':>6} {'fwd+bwd ms':>11} {'ratio':>6}"
    print(header)
    for shape in SHAPES:
        rows = measure(shape, device, args.repeat)
        times = {name: (f, b) for name, _, f, b in rows}
        for name, base, f, b in rows:
            label = f"{shape[0]}x{shape[1]}"
            print(
                f"{label:>11} {name:<24} {f * 1e3:8.3f} {f / times[base][0]:6.2f}"
                f" {b * 1e3:11.3f} {b / times[base][1]:6.2f}"
            )
    print("ratio: time / time of softmax (log_softmax for the log ops) in the same loop")


if __name__ == "__main__":
    main()
