"""Timing helpers shared by the benchmark scripts (not tests)."""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable


def best_of(function: Callable[[], object], repeat: int = 7) -> float:
    """Best wall time of ``repeat`` runs (after one warm-up), in seconds."""
    function()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def interleaved_medians(
    functions: dict[str, Callable[[], object]], repeat: int = 40
) -> dict[str, float]:
    """Median wall time of each function, in seconds, with the runs interleaved.

    Interleaving (a, b, c, a, b, c, ...) lets every candidate see the same
    machine noise, so the ratios between them are steadier than the times.
    """
    for function in functions.values():
        function()
        function()
    times: dict[str, list[float]] = {name: [] for name in functions}
    for _ in range(repeat):
        for name, function in functions.items():
            start = time.perf_counter()
            function()
            times[name].append(time.perf_counter() - start)
    return {name: sorted(values)[len(values) // 2] for name, values in times.items()}


def steady_malloc() -> bool:
    """Stop glibc from mapping and unmapping every multi-MiB temporary (Linux only).

    By default each 4 MiB CPU tensor freed is returned to the OS and page-faulted
    back on the next call; that measured up to 5 ms per op at 1024 x 1024 and made
    the timings depend on the order of the candidates. With high mmap and trim
    thresholds the heap is reused, as in a steady training loop. Returns whether
    it applied.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
        mmap_threshold, trim_threshold = -3, -1  # M_MMAP_THRESHOLD, M_TRIM_THRESHOLD
        return bool(libc.mallopt(mmap_threshold, 2**30) and libc.mallopt(trim_threshold, 2**31 - 1))
    except (OSError, AttributeError):
        return False
