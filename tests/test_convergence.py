"""Convergence studies: the fitted rates match the expected orders; the CLI output's fields."""

from __future__ import annotations

import json

import pytest

from tsallis import cli
from tsallis import convergence as C


@pytest.fixture(scope="module")
def studies():
    return {(s.case, s.rule): s for s in C.run()}


def test_rates_match_the_theory(studies):
    rate = lambda case, rule: studies[(case, rule)].rate  # noqa: E731
    assert rate("a", "trapezoid-line")["kind"] == "exponential"  # analytic on R
    assert (
        rate("b", "trapezoid")["kind"] == "algebraic"
        and 1.8 < rate("b", "trapezoid")["value"] < 2.3
    )
    assert rate("b", "gauss-legendre")["kind"] == "exponential"
    assert (
        rate("c", "trapezoid")["kind"] == "algebraic"
        and 1.6 < rate("c", "trapezoid")["value"] < 2.3
    )
    assert rate("e", "kink-aware")["kind"] == "exponential"
    assert rate("f", "periodic-trapezoid")["kind"] == "exponential"
    for s in (v for k, v in studies.items() if k[0] == "d"):
        assert s.rate["kind"] == "algebraic"  # smooth, but not periodic on [0, 1]


def test_targets_and_the_five_to_ten_points_claim(studies):
    kink = studies[("e", "kink-aware")]
    assert kink.nodes_for["1e-12"] is not None and kink.nodes_for["1e-12"] <= 64
    trapezoid = studies[("c", "trapezoid")]
    assert trapezoid.nodes_for["1e-10"] is None  # not reached with 10001 nodes
    at_9 = {k: s.errors[s.nodes.index(9)] for k, s in studies.items() if 9 in s.nodes}
    assert all(e > 1e-4 for e in at_9.values())  # 5-10 points are not "excellent" on [0, 1]


def test_smoothing_bias_falls_with_sharpness(studies):
    bias = [
        float(studies[("d", f"trapezoid+softplus(s={s})")].note.split("= ")[-1])
        for s in ("10", "100", "1000")
    ]
    assert bias[0] > bias[1] > bias[2] > 0


def test_cli_json_fields(capsys: pytest.CaptureFixture[str]):
    assert cli.main(["convergence", "--case", "f", "--json"]) == 0
    (study,) = json.loads(capsys.readouterr().out)
    assert {"case", "rule", "nodes", "errors", "rate", "nodes_for"} <= set(study)
    assert study["case"] == "f" and len(study["nodes"]) == len(study["errors"])


def test_cli_plot_and_bad_case(tmp_path, capsys: pytest.CaptureFixture[str]):
    pytest.importorskip("matplotlib")
    path = tmp_path / "convergence.png"
    assert cli.main(["convergence", "--case", "b", "--rule", "gauss", "--plot", str(path)]) == 0
    assert path.stat().st_size > 1000
    assert cli.main(["convergence", "--case", "z"]) == 2
    assert "unknown" in capsys.readouterr().err


def test_rule_names_cover_every_study(studies):
    """--rule is validated against C.RULES before running: it must name every study's rule."""
    for _, rule in studies:
        assert any(name in rule for name in C.RULES), rule
    used = {name for name in C.RULES if any(name in rule for _, rule in studies)}
    assert used == set(C.RULES)
