"""Packaging: derive's output locations, the version, the extras' messages, the layout."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import tsallis
from tsallis import cli
from tsallis.derivations import registry


def test_derive_out_writes_every_generated_file_and_the_formula_sheet(tmp_path, capsys):
    assert cli.main(["derive", "--out", str(tmp_path)]) == 0
    assert str(tmp_path) in capsys.readouterr().out
    sheet = (tmp_path / "FORMULAS.md").read_text(encoding="utf-8")
    checked_in = (registry.ROOT / registry.FORMULA_SHEET).read_text(encoding="utf-8")
    assert sheet == checked_in
    for folder in registry.OUTPUT_DIRS.values():
        written = sorted(p.name for p in (tmp_path / folder).glob("*.py"))
        assert written == sorted(p.name for p in (registry.ROOT / folder).glob("*.py"))
    assert not (tmp_path / "README.md").exists()  # the README is the checkout's only
    # and --check compares that folder: in sync, then one edited file is drift (exit 1)
    assert cli.main(["derive", "--check", "--out", str(tmp_path)]) == 0
    (tmp_path / "FORMULAS.md").write_text("edited\n", encoding="utf-8")
    assert cli.main(["derive", "--check", "--out", str(tmp_path)]) == 1


def test_derive_never_rewrites_an_installed_package(monkeypatch, capsys):
    """Without a source checkout (an installed wheel), derive asks for --out: exit 2."""
    monkeypatch.setattr(registry, "source_checkout", lambda: None)
    before = {p: p.stat().st_mtime_ns for p in (registry.ROOT / "tsallis").rglob("*.py")}
    assert cli.main(["derive"]) == 2
    err = capsys.readouterr().err
    assert "--out DIR" in err and err.count("\n") == 1
    assert before == {p: p.stat().st_mtime_ns for p in (registry.ROOT / "tsallis").rglob("*.py")}


def test_this_tree_is_a_source_checkout():
    assert registry.source_checkout() == Path(__file__).resolve().parent.parent


def test_version_has_one_source(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"tsallis {tsallis.__version__}"


def test_torch_bridge_without_torch_names_the_extra():
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "try:\n    import torch_bridge\n"
        "except ImportError as error:\n    print(error)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert 'pip install "tsallis[torch]"' in result.stdout


def test_the_wheel_lists_only_our_import_names():
    """pyproject lists the packages explicitly: every one under tsallis or torch_bridge,
    and every package folder of the repository is listed (none left out of the wheel)."""
    import tomllib

    config = tomllib.loads((registry.ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    packages = config["tool"]["setuptools"]["packages"]
    assert {name.split(".")[0] for name in packages} == {"tsallis", "torch_bridge"}
    found = {
        init.parent.relative_to(registry.ROOT).as_posix().replace("/", ".")
        for top in ("tsallis", "torch_bridge")
        for init in (registry.ROOT / top).rglob("__init__.py")
    }
    assert found == set(packages)


def test_experiment_without_torch_names_the_extra():
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "from tsallis import cli\n"
        "sys.exit(cli.main(['experiment', 'time-warping', '--series', '40']))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 2, result.stderr
    assert "tsallis[torch]" in result.stderr and "Traceback" not in result.stderr


def test_piped_output_holds_no_carriage_returns():
    """Progress (tqdm) stays quiet when stderr is not a terminal."""
    result = subprocess.run(
        [sys.executable, "-m", "tsallis.cli", "verify", "--family", "triangular"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "\r" not in result.stdout + result.stderr
