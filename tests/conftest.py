"""Shared fixtures: derivations are computed once per session (SymPy is slow to start)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def derived():
    from derivations.registry import TARGETS

    return {target.module: target.derive() for target in TARGETS}
