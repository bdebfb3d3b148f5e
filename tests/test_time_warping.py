"""The time-warping experiment (Moreno 2022 sec 6.1): data, labels, model guard, learning."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy import integrate

torch = pytest.importorskip("torch")

from tsallis.experiments import time_warping as tw  # noqa: E402


def _aligned(z: np.ndarray, s: float) -> float:
    """The aligned process, typed here from the issue as an independent oracle."""
    pieces = (np.cos(9 * np.pi * s), s**2, np.sin(s), np.cos(17 * np.pi * s))
    return z[min(int(4 * s), 3)] * pieces[min(int(4 * s), 3)]


def test_quarter_integrals_match_scipy():
    pieces = (
        lambda s: np.cos(9 * np.pi * s),
        lambda s: s**2,
        np.sin,
        lambda s: np.cos(17 * np.pi * s),
    )
    expected = [
        integrate.quad(f, q / 4, (q + 1) / 4, epsabs=1e-15, epsrel=1e-12)[0]
        for q, f in enumerate(pieces)
    ]
    np.testing.assert_allclose(tw._quarter_integrals(), expected, rtol=1e-11, atol=1e-15)


def test_dataset_is_seeded_and_labels_are_exact():
    x, y, rate = tw.make_dataset(200, seed=3)
    x2, y2, rate2 = tw.make_dataset(200, seed=3)
    assert np.array_equal(x, x2) and np.array_equal(y, y2) and np.array_equal(rate, rate2)
    assert x.shape == (200, tw.LENGTH) and y.shape == (200,)
    assert ((rate >= 0) & (rate < 20)).all()
    rng = np.random.default_rng(3)  # the generator's draws, in its order
    rng.uniform(0.0, 20.0, 200)
    z = rng.uniform(-4.0, 4.0, (200, 4))
    for i in range(20):
        first = sum(
            integrate.quad(lambda s, zi=z[i]: _aligned(zi, s), a, b, epsrel=1e-12)[0]
            for a, b in ((0, 0.25), (0.25, 0.5))
        )
        second = sum(
            integrate.quad(lambda s, zi=z[i]: _aligned(zi, s), a, b, epsrel=1e-12)[0]
            for a, b in ((0.5, 0.75), (0.75, 1.0))
        )
        assert y[i] == int(first > second)
        # the warp maps 0 -> 0 and 1 -> 1, so X(0) = f(0) = Z0 and X(1) = f(1) = -Z3
        assert x[i, 0] == pytest.approx(z[i, 0], abs=1e-12)
        assert x[i, -1] == pytest.approx(-z[i, 3], abs=1e-12)
        # an interior point: X(t) = f(g(t)), with g typed here
        t = 37 / 94
        g = (1 - np.exp(-rate[i] * t)) / (1 - np.exp(-rate[i]))
        assert x[i, 37] == pytest.approx(_aligned(z[i], g), abs=1e-10)
    assert 0.4 < tw.make_dataset(4000, seed=0)[1].mean() < 0.6


def test_kernel_sparsemax_heads_always_have_mass():
    torch.manual_seed(1)  # initial weights that put 3 of 512 heads below f~ = -0.5
    model = tw.TwoHeadClassifier("kernel sparsemax", tw.Settings())
    with torch.no_grad():
        for layer in model.encoder:
            if isinstance(layer, torch.nn.Linear):
                layer.weight.mul_(40.0)  # drive f~ far below -1 on some rows
        x = torch.as_tensor(tw.make_dataset(256, seed=1)[0], dtype=torch.float32)
        raw = model.encoder(x).reshape(x.shape[0], 2, -1) @ model.inducing_kernel
        assert int((raw.amax(-1) < -0.5).sum()) >= 1  # the rescaling is exercised
        (gamma,) = model.head_parameters(x)
        peak = (gamma @ model.inducing_kernel).amax(-1)
        # f~ is a float32 sum of I terms: rounding moves it by up to I eps sum |terms|
        # (with weights x 40 the terms are large; it was 1.2e-6 below -0.5 on one seed).
        terms = (gamma.abs() @ model.inducing_kernel.abs()).amax()
        slack = model.inducing_kernel.shape[0] * torch.finfo(torch.float32).eps * float(terms)
        assert float(peak.min()) >= -0.5 - slack
        assert torch.isfinite(model(x)).all()


def test_bad_model_name():
    with pytest.raises(ValueError, match="model must be one of"):
        tw.TwoHeadClassifier("attention", tw.Settings())


def test_continuous_softmax_learns():
    # 4000 series, 4 epochs (0.84 measured): chance is ~50%; the full run reaches ~92%.
    settings = dataclasses.replace(tw.Settings(), series=4000, epochs=4, seeds=1)
    x, y, _ = tw.make_dataset(settings.series, seed=0)
    _, accuracy = tw.train_one("continuous softmax", 0, (x, y), settings)
    assert accuracy > 0.75


@pytest.mark.parametrize(
    ("args", "message"),
    [(["--seeds", "0"], "--seeds must be >= 1"), (["--series", "2"], "too small")],
)
def test_cli_rejects_bad_sizes(args, message, capsys):
    from tsallis.cli import main

    assert main(["experiment", "time-warping", *args, "--figure", ""]) == 2
    assert message in capsys.readouterr().err


def test_table_intervals_match_scipy():
    from scipy import stats

    report = tw.Report(tw.Settings(models=("continuous softmax", "kernel softmax")))
    soft = np.array([0.920, 0.925, 0.912, 0.937, 0.919])
    kern = np.array([0.955, 0.950, 0.961, 0.952, 0.948])
    for seed, (a, b) in enumerate(zip(soft, kern, strict=True)):
        report.runs += [
            tw.RunResult("continuous softmax", seed, a, 1.0),
            tw.RunResult("kernel softmax", seed, b, 1.0),
        ]
    table = report.table()
    for values in (100 * soft, 100 * kern):
        low, high = stats.t.interval(0.95, values.size - 1, values.mean(), stats.sem(values))
        assert f"{low:.2f} to {high:.2f}" in table
    diff = 100 * (kern - soft)
    low, high = stats.t.interval(0.95, diff.size - 1, diff.mean(), stats.sem(diff))
    assert f"{low:+.2f} to {high:+.2f}" in table and "5 of 5" in table


def test_table_intervals_stay_within_0_and_100():
    """Accuracies near 100 %: the t-interval and the +-1.96 sd range are clipped to
    [0, 100] (the header says so) instead of reaching past 100."""
    report = tw.Report(tw.Settings(models=("continuous softmax",)))
    for seed, accuracy in enumerate([1.0, 0.99, 1.0, 0.97]):
        report.runs.append(tw.RunResult("continuous softmax", seed, accuracy, 1.0))
    table = report.table()
    assert "clipped to [0, 100]" in table
    row = next(line for line in table.splitlines() if line.startswith("| continuous softmax"))
    numbers = [float(v) for v in row.replace("|", " ").replace(" to ", " ").split()[2:6]]
    assert max(numbers) == 100.0 and min(numbers) >= 0.0, row


def test_progress_is_quiet_when_piped():
    """The progress bar (tqdm) writes nothing to a stream that is not a terminal."""
    import io

    stream = io.StringIO()
    progress = tw._Progress(3, stream)
    for step in range(3):
        progress.step(f"step {step}")
    assert "\r" not in stream.getvalue() and stream.getvalue() == ""
