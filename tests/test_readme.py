"""The README's examples run as written: Python blocks in-process (doctest blocks through
doctest, with their outputs checked; the runner is the one the wheel's smoke test uses),
bash blocks as commands."""

from __future__ import annotations

import importlib.util
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


def _runner():  # .ci/readme_examples.py (a script, not a package)
    spec = importlib.util.spec_from_file_location(
        "readme_examples", ROOT / ".ci/readme_examples.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_python_blocks_run(tmp_path, monkeypatch):
    blocks = _blocks("python")
    assert len(blocks) >= 6 and sum(">>>" in block for block in blocks) >= 2
    monkeypatch.chdir(tmp_path)
    assert _runner().main(str(README)) == 0


def test_opens_with_the_install_and_test_commands_then_the_main_job():
    first, second = (block.strip().splitlines() for block in _blocks("bash")[:2])
    assert first == ['pip install torch==2.13.0 && pip install -e ".[torch,dev]"', "pytest"]
    assert second == ["tsallis derive && tsallis verify"]


# .ci/run runs this example itself, as its own step; running it twice costs ~30 s of CI.
RUN_BY_CI = {"tsallis derive --check"}


def _commands() -> list[str]:
    """Every line of the example bash blocks (the set-up and main-job blocks are what CI
    itself runs)."""
    lines = [line for block in _blocks("bash")[2:] for line in block.splitlines()]
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
