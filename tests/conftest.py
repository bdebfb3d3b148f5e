"""Shared fixtures: derivations are computed once per session (SymPy is slow to start)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def derived():
    from tsallis.derivations.registry import TARGETS, derived_once

    return {target.module: derived_once(target) for target in TARGETS}


def pytest_configure(config):
    """Hypothesis profiles: a short default run; HYPOTHESIS_PROFILE=slow for deep fuzzing."""
    import os

    from hypothesis import settings

    settings.register_profile("default", max_examples=40)
    settings.register_profile("slow", max_examples=1000)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

    # The CPU loops' prefix start is on where NumPy's partition is cheap, and their log2
    # is NumPy's where it is the faster (tsallis.core.arrays.partition_pays and
    # numpy_log2_pays, measured): both on in every test run, so that the same paths run
    # on every machine; the tests of the measurements set them otherwise.
    from tsallis.core import tuning

    tuning.PARTITION_PAYS = True
    tuning.NUMPY_LOG2 = True
    # Small CPU tensors take the Newton loop on NumPy views (tuning.NUMPY_NEWTON_ELEMENTS),
    # which the NumPy tests run: off here, so that the tests of the Torch ops run Torch's
    # operations on their small inputs; the test of the views sets it back.
    tuning.NUMPY_NEWTON_ELEMENTS = 0
    # Hot eager calls at rooted alphas (and 3/2) compile a fused kernel (tuning.FUSED_AFTER_CALLS,
    # counted per process): off here, so that which path a test runs does not depend on
    # how many large calls its worker made before it; tests/test_fused_entmax.py turns it
    # on for its own tests.
    tuning.FUSED_AFTER_CALLS = None


def pytest_terminal_summary(terminalreporter):
    """Print the fuzz outcome counts (tests/test_fuzz.py) when that module ran."""
    import sys

    module = sys.modules.get("test_fuzz")
    tally = getattr(module, "TALLY", None)
    if not tally:
        return
    terminalreporter.write_sep("-", "fuzz outcomes (calls)")
    for (name, outcome), count in sorted(tally.items()):
        terminalreporter.write_line(f"{count:7d}  {name}: {outcome}")
