"""The README's examples run as written: Python blocks in-process, bash blocks as commands."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(), re.S)


def test_python_blocks_run():
    blocks = _blocks("python")
    assert len(blocks) >= 6
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})


def test_opens_with_the_two_setup_commands():
    first = _blocks("bash")[0].strip().splitlines()
    assert len(first) == 2
    assert "tsallis derive" in first[0] and "tsallis verify" in first[0]
    assert first[1] == "pytest"


# .ci/run runs this example itself, as its own step; running it twice costs ~30 s of CI.
RUN_BY_CI = {"tsallis derive --check"}


def _commands() -> list[str]:
    """Every line of the example bash blocks (the set-up block is what CI itself runs)."""
    lines = [line for block in _blocks("bash")[1:] for line in block.splitlines()]
    return [line.split("  #")[0].strip() for line in lines if line.strip()]


def test_examples_run_by_ci_are_in_ci():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert RUN_BY_CI <= set(_commands())
    assert RUN_BY_CI <= {line.strip() for line in ci}


def test_examples_cover_the_three_uses():
    commands = _commands()
    for needed in ("tsallis derive location-scale --g", "tsallis verify", "tsallis convergence"):
        assert any(c.startswith(needed) for c in commands), needed
    torch_code = "".join(_blocks("python"))
    for op in ("continuous_attention(", "kernel_attention(", "ev_softmax(", "BetaGaussian("):
        assert op in torch_code, op


@pytest.mark.parametrize("command", [c for c in _commands() if c not in RUN_BY_CI])
def test_bash_example_runs(command, tmp_path):
    argv = shlex.split(command)
    assert argv[0] == "tsallis", command
    done = subprocess.run(
        [sys.executable, "-m", "tsallis.cli", *argv[1:]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip(), command
