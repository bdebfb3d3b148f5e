"""Peak resident memory of a snippet run in a fresh Python process (for memory tests)."""

from __future__ import annotations

import subprocess
import sys

# VmHWM: the child's own peak (ru_maxrss would keep the forking parent's).
_REPORT = "print(int(open('/proc/self/status').read().split('VmHWM:')[1].split()[0]) // 1024)\n"


def peak_mb(code: str, timeout: float) -> int:
    """Run ``code`` in a new interpreter and return its peak resident memory in MB."""
    done = subprocess.run(
        [sys.executable, "-c", code + _REPORT], capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[-1])
