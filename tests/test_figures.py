"""`tsallis figures` writes every figure, non-trivially and deterministically."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from tsallis.cli import main
from tsallis.figures import FIGURES


def test_all_seven_figures_are_written(tmp_path, capsys):
    assert main(["figures", "--out", str(tmp_path)]) == 0
    from matplotlib.image import imread

    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{n}.png" for n in FIGURES)
    assert len(FIGURES) == 7
    for name in FIGURES:
        path = tmp_path / f"{name}.png"
        assert path.stat().st_size > 20_000, name  # a blank 800 x 400 PNG is ~3 kB
        pixels = imread(path)[..., :3].reshape(-1, 3)
        colours = np.unique(np.round(pixels * 255).astype(np.uint8), axis=0)
        assert len(colours) > 50, (name, len(colours))  # lines, fills and anti-aliasing
        # ink covers a fair share of the canvas: not a blank or near-blank figure
        assert (pixels.min(axis=1) < 0.9).mean() > 0.01, name


def test_output_is_deterministic(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    names = ["families_1d", "evsoftmax_simplex", "kernel_densities"]
    assert main(["figures", "--out", str(first), "--only", *names]) == 0
    assert main(["figures", "--out", str(second), "--only", *names]) == 0
    for name in names:
        assert (first / f"{name}.png").read_bytes() == (second / f"{name}.png").read_bytes()


def test_unknown_figure_is_an_error(tmp_path, capsys):
    assert main(["figures", "--out", str(tmp_path), "--only", "nope"]) == 2
    assert "unknown figure" in capsys.readouterr().err


def test_equal_variance_family_has_variance_one():
    from tsallis.figures import ALPHAS, _equal_variance

    for alpha in ALPHAS:
        assert float(_equal_variance(alpha).var()) == pytest.approx(1.0, rel=1e-13)
