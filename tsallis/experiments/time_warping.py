"""Multimodal attention on time-warped signals (Moreno 2022, sections 4 and 6.1).

Series X_i(t) = f(g_i(t)) on 95 even points of [0, 1], with the warp
g(t) = (1 - e^{-l t}) / (1 - e^{-l}), l ~ U(0, 20), and the aligned process f
piecewise on quarters: Z0 cos(9 pi t), Z1 t^2, Z2 sin t, Z3 cos(17 pi t),
Z ~ U(-4, 4)^4. The label is 1[int_0^1/2 f > int_1/2^1 f]; f is linear in Z,
so the label is exact given the four quarter integrals, which mpmath computes
once at 30 digits.

One architecture, four attention densities: an MLP encoder maps the series to
the parameters of two heads (one per class); the value function is the ridge
regression (Martins 2020 eq 16) of the series onto 64 Gaussian RBFs; each head's
context <p_h, V> is a logit (times a learned scale, plus a bias).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from torch_bridge import GaussianRBF, continuous_attention, kernel_attention, ridge_value_function
from tsallis.core.kernel import kernel_matrix

__all__ = [
    "MODELS",
    "Report",
    "RunResult",
    "Settings",
    "TwoHeadClassifier",
    "head_densities",
    "main",
    "make_dataset",
    "plot_densities",
    "run",
    "train_one",
]

LENGTH = 95
MODELS = ("continuous softmax", "continuous sparsemax", "kernel softmax", "kernel sparsemax")


@dataclass(frozen=True)
class Settings:
    """Experiment sizes; the defaults are the ones the README reports.

    Attributes:
        series: series per seed (each seed draws its own data set).
        test_fraction: the held-out share (the last series).
        seeds: independent repetitions (data, split and initialisation).
        epochs: passes over the training series.
        batch: series per Adam step.
        learning_rate: Adam's step size.
        hidden: the encoder MLP's width.
        basis_size: Gaussian RBFs of the value function, evenly spaced on [0, 1].
        basis_width: their width.
        ridge_penalty: the value function's ridge penalty (Martins 2020 eq 16).
        inducing: the kernel heads' inducing points, evenly spaced on [0, 1].
        bandwidth: the kernel heads' Gaussian kernel width.
        models: which of ``MODELS`` to train.

    Examples:
        >>> Settings(series=100, seeds=1).epochs
        12
    """

    series: int = 10_000
    test_fraction: float = 0.2
    seeds: int = 8
    epochs: int = 12
    batch: int = 128
    learning_rate: float = 3e-3
    hidden: int = 64
    basis_size: int = 64
    basis_width: float = 0.02
    ridge_penalty: float = 1e-2
    inducing: int = 16
    bandwidth: float = 0.05
    models: tuple[str, ...] = MODELS


def _quarter_pieces(lib: object = np) -> list[Callable]:
    """The aligned process's four pieces, in ``lib`` (numpy for data, mpmath for labels)."""
    return [
        lambda s: lib.cos(9 * lib.pi * s),
        lambda s: s**2,
        lib.sin,
        lambda s: lib.cos(17 * lib.pi * s),
    ]


def _quarter_integrals() -> np.ndarray:
    """int of each piece over its quarter, at 30 digits (the label is linear in Z)."""
    import mpmath

    pieces = _quarter_pieces(mpmath)
    with mpmath.workdps(30):
        return np.array(
            [
                float(mpmath.quad(piece, [mpmath.mpf(q) / 4, mpmath.mpf(q + 1) / 4]))
                for q, piece in enumerate(pieces)
            ]
        )


def make_dataset(series: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X (series, 95), labels (series,), warp rates l (series,)), seeded.

    Args:
        series: how many series.
        seed: NumPy generator seed (the same seed gives the same data).

    Returns:
        X float64 (series, 95); labels int64 in {0, 1}; l float64 in [0, 20).

    Examples:
        >>> x, y, rate = make_dataset(100, 0)
        >>> x.shape, y.dtype, bool(((0 <= rate) & (rate < 20)).all())
        ((100, 95), dtype('int64'), True)
    """
    rng = np.random.default_rng(seed)
    rate = rng.uniform(0.0, 20.0, series)
    z = rng.uniform(-4.0, 4.0, (series, 4))
    t = np.linspace(0.0, 1.0, LENGTH)
    # expm1 keeps g exact for small rates (l -> 0 is the identity warp)
    with np.errstate(invalid="ignore", divide="ignore"):
        warped = np.expm1(-rate[:, None] * t) / np.expm1(-rate[:, None])
    warped = np.where(rate[:, None] > 1e-12, warped, t)
    quarter = np.minimum((warped * 4).astype(int), 3)
    x = np.zeros_like(warped)
    for q, piece in enumerate(_quarter_pieces()):
        x += np.where(quarter == q, z[:, [q]] * piece(warped), 0.0)
    c = _quarter_integrals()
    first, second = z[:, :2] @ c[:2], z[:, 2:] @ c[2:]
    return x, (first > second).astype(np.int64), rate


class TwoHeadClassifier(nn.Module):
    """Encoder -> two attention densities -> logits <p_h, V> (Moreno 2022 sec 6.1).

    Args:
        model: one of ``MODELS`` (continuous or kernel; softmax or sparsemax).
        settings: the sizes.

    Raises:
        ValueError: an unknown model name.

    Examples:
        >>> tiny = Settings(series=100, seeds=1, epochs=1, hidden=8, basis_size=8, inducing=4)
        >>> net = TwoHeadClassifier("kernel sparsemax", tiny)
        >>> net(torch.zeros(3, LENGTH)).shape
        torch.Size([3, 2])
    """

    def __init__(self, model: str, settings: Settings) -> None:
        super().__init__()
        if model not in MODELS:
            raise ValueError(f"model must be one of {MODELS}, got {model!r}")
        self.model = model
        self.kernel = model.startswith("kernel")
        self.alpha = 2.0 if model.endswith("sparsemax") else 1.0
        self.settings = settings
        per_head = settings.inducing if self.kernel else 2
        self.encoder = nn.Sequential(
            nn.Linear(LENGTH, settings.hidden),
            nn.Tanh(),
            nn.Linear(settings.hidden, settings.hidden),
            nn.Tanh(),
            nn.Linear(settings.hidden, 2 * per_head),
        )
        n = settings.basis_size
        self.basis = GaussianRBF(torch.linspace(0, 1, n), torch.full((n,), settings.basis_width))
        self.register_buffer("inducing", torch.linspace(0, 1, settings.inducing))
        self.register_buffer("positions", torch.linspace(0, 1, LENGTH))
        self.register_buffer(
            "inducing_kernel",
            kernel_matrix(self.inducing, self.inducing, "gaussian", settings.bandwidth),
        )
        self.logit_scale = nn.Parameter(torch.tensor(1.0))
        self.logit_bias = nn.Parameter(torch.zeros(2))

    def head_parameters(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Kernel: (gamma (B, 2, I),); continuous: (loc (B, 2), scale (B, 2)).

        Args:
            x: series, float32 (B, 95).

        Returns:
            The two heads' density parameters, as above.

        Examples:
            >>> tiny = Settings(series=100, seeds=1, epochs=1, hidden=8, basis_size=8, inducing=4)
            >>> net = TwoHeadClassifier("continuous softmax", tiny)
            >>> [p.shape for p in net.head_parameters(torch.zeros(3, LENGTH))]
            [torch.Size([3, 2]), torch.Size([3, 2])]
        """
        out = self.encoder(x).reshape(x.shape[0], 2, -1)
        if self.kernel and self.alpha > 1:
            # Alg 1's f~ can sit below -1/(alpha-1) everywhere (no mass: the op raises).
            # Scale gamma down so that max_i f~(t_i) >= -1/2; a no-op otherwise.
            peak = (out @ self.inducing_kernel).amax(-1, keepdim=True)
            return (out * (0.5 / torch.clamp(-peak, min=0.5)),)
        if self.kernel:
            return (out,)
        loc = torch.sigmoid(out[..., 0])
        scale = 0.005 + nn.functional.softplus(out[..., 1] - 2.0)
        return loc, scale

    def rho(self, x: torch.Tensor) -> torch.Tensor:
        """E_{p_h}[psi] (B, 2, N): each head's expectation of the N basis functions.

        Args:
            x: series, float32 (B, 95).

        Returns:
            float32 (B, 2, basis_size).

        Examples:
            >>> tiny = Settings(series=100, seeds=1, epochs=1, hidden=8, basis_size=8, inducing=4)
            >>> net = TwoHeadClassifier("continuous softmax", tiny)
            >>> net.rho(torch.zeros(3, LENGTH)).shape
            torch.Size([3, 2, 8])
        """
        params = self.head_parameters(x)
        if self.kernel:
            s = self.settings
            return kernel_attention(
                params[0], self.inducing, self.basis, self.alpha, "gaussian", s.bandwidth
            )
        return continuous_attention(*params, self.basis, self.alpha, validate=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The two class logits, scale * <p_h, V> + bias, (B, 2), for series x (B, 95).

        Args:
            x: series, float32 (B, 95).

        Returns:
            float32 (B, 2).

        Examples:
            >>> tiny = Settings(series=100, seeds=1, epochs=1, hidden=8, basis_size=8, inducing=4)
            >>> TwoHeadClassifier("continuous softmax", tiny).forward(torch.zeros(2, LENGTH)).shape
            torch.Size([2, 2])
        """
        g = ridge_value_function(self.positions, self.basis, self.settings.ridge_penalty)
        values = x @ g  # B = H G, (B, N)
        context = (self.rho(x) * values[:, None, :]).sum(-1)  # <p_h, V>, (B, 2)
        return self.logit_scale * context + self.logit_bias


def _t_half_width(values: np.ndarray) -> float:
    """Half-width of the 95% Student-t interval of the mean (0 for one value)."""
    from scipy import stats

    if values.size < 2:
        return 0.0
    return float(stats.t.ppf(0.975, values.size - 1) * values.std(ddof=1) / math.sqrt(values.size))


@dataclass
class RunResult:
    """One trained model.

    Attributes:
        model: one of ``MODELS``.
        seed: the seed of its data and initialisation.
        accuracy: test accuracy in [0, 1].
        seconds: training time.

    Examples:
        >>> RunResult("kernel softmax", 0, 0.95, 12.0).accuracy
        0.95
    """

    model: str
    seed: int
    accuracy: float
    seconds: float


@dataclass
class Report:
    """Every run of an experiment and its wall time; ``table`` formats it.

    Attributes:
        settings: the sizes used.
        runs: one ``RunResult`` per (seed, model).
        seconds: the wall time of ``run``.

    Examples:
        >>> runs = [RunResult("kernel softmax", seed, 0.9, 1.0) for seed in (0, 1)]
        >>> report = Report(Settings(seeds=2), runs)
        >>> report.accuracies("kernel softmax")
        array([0.9, 0.9])
    """

    settings: Settings
    runs: list[RunResult] = field(default_factory=list)
    seconds: float = 0.0

    def accuracies(self, model: str) -> np.ndarray:
        """The test accuracies of ``model`` in [0, 1], one per seed (empty if not run).

        Args:
            model: one of ``MODELS``.

        Returns:
            float64 (seeds,).

        Examples:
            >>> Report(Settings(), [RunResult("kernel softmax", 0, 0.9, 1.0)]).accuracies("x")
            array([], dtype=float64)
        """
        return np.array([r.accuracy for r in self.runs if r.model == model])

    def table(self) -> str:
        """Markdown table: mean, 95% t-interval of the mean, mean +-1.96 sd (Moreno 2022
        Table 1). Accuracies lie in [0, 100], so both intervals are clipped to it (a
        symmetric interval near 100 % would otherwise reach past it), and the header says
        so. Then kernel minus continuous accuracy, paired by seed, where both ran.

        Returns:
            The table, as Markdown lines joined by newlines.

        Examples:
            >>> runs = [RunResult("kernel softmax", s, a, 1.0) for s, a in ((0, 0.99), (1, 1.0))]
            >>> print(Report(Settings(seeds=2), runs).table().splitlines()[4])
            | kernel softmax | 99.50 | 93.15 to 100.00 | 98.11 to 100.00 | 99.00-100.00 | 1.0 |
        """
        s = self.settings
        lines = [
            f"time warping: {s.series} series ({1 - s.test_fraction:.0%} train), "
            f"{s.seeds} seeds, {s.epochs} epochs; test accuracy (%)",
            "",
            "| attention | mean | 95% CI of the mean (t, clipped to [0, 100]) |"
            " mean +-1.96 sd (clipped to [0, 100]) | min-max | s / run |",
            "|---|---|---|---|---|---|",
        ]
        for model in s.models:
            acc = 100 * self.accuracies(model)
            if acc.size == 0:
                continue
            sd = acc.std(ddof=1) if acc.size > 1 else 0.0
            half = _t_half_width(acc)
            secs = np.mean([r.seconds for r in self.runs if r.model == model])
            low, high = np.clip([acc.mean() - half, acc.mean() + half], 0.0, 100.0)
            spread = np.clip([acc.mean() - 1.96 * sd, acc.mean() + 1.96 * sd], 0.0, 100.0)
            lines.append(
                f"| {model} | {acc.mean():.2f} | {low:.2f} to {high:.2f}"
                f" | {spread[0]:.2f} to {spread[1]:.2f} | {acc.min():.2f}-{acc.max():.2f}"
                f" | {secs:.1f} |"
            )
        lines += self._paired_rows()
        lines.append("")
        lines.append(f"wall time {self.seconds:.0f} s, {torch.get_num_threads()} threads")
        return "\n".join(lines)

    def _paired_rows(self) -> list[str]:
        """Kernel minus continuous accuracy, paired by seed (same data, same split)."""
        rows = [
            "",
            "| paired by seed (points) | mean | 95% CI (t, clipped to [-100, 100]) | seeds won |",
            "|---|---|---|---|",
        ]
        for kernel, unimodal in (
            ("kernel softmax", "continuous softmax"),
            ("kernel sparsemax", "continuous sparsemax"),
        ):
            a, b = self.accuracies(kernel), self.accuracies(unimodal)
            if a.size < 2 or a.size != b.size:
                continue
            diff = 100 * (a - b)
            half = _t_half_width(diff)
            low, high = np.clip([diff.mean() - half, diff.mean() + half], -100.0, 100.0)
            rows.append(
                f"| {kernel} - {unimodal} | {diff.mean():+.2f} | {low:+.2f} to"
                f" {high:+.2f} | {(diff > 0).sum()} of {diff.size} |"
            )
        return rows if len(rows) > 3 else []


class _Progress:
    """A progress bar on ``stream`` (tqdm): quiet when the stream is not a terminal, so
    piped or logged output holds no carriage returns."""

    def __init__(self, total: int, stream: object = sys.stderr) -> None:
        from tqdm import tqdm

        self.bar = tqdm(total=total, file=stream, disable=None, unit="epoch", leave=True)

    def step(self, label: str) -> None:
        self.bar.set_postfix_str(label, refresh=False)
        self.bar.update()
        if self.bar.n >= self.bar.total:
            self.bar.close()


def train_one(
    model_name: str,
    seed: int,
    data: tuple[np.ndarray, np.ndarray],
    settings: Settings,
    progress: _Progress | None = None,
) -> tuple[TwoHeadClassifier, float]:
    """Train on the first (1 - test_fraction) of ``data``; return (model, test accuracy).

    Args:
        model_name: one of ``MODELS``.
        seed: seeds the initialisation and the batch order.
        data: (X (series, 95), labels (series,)) from ``make_dataset``.
        settings: the sizes.
        progress: a progress bar to advance once per epoch, or None.

    Returns:
        (the trained model in eval mode, accuracy on the held-out series in [0, 1]).

    Raises:
        ValueError: an unknown model name.

    Examples:
        >>> x, y, _ = make_dataset(100, 0)
        >>> tiny = Settings(series=100, seeds=1, epochs=1, hidden=8, basis_size=8, inducing=4)
        >>> net, accuracy = train_one("kernel sparsemax", 0, (x, y), tiny)
        >>> 0 <= accuracy <= 1, net.training
        (True, False)
    """
    x_all = torch.as_tensor(data[0], dtype=torch.float32)
    y_all = torch.as_tensor(data[1])
    n_test = round(settings.test_fraction * len(y_all))
    x_train, y_train = x_all[:-n_test], y_all[:-n_test]
    x_test, y_test = x_all[-n_test:], y_all[-n_test:]
    torch.manual_seed(seed)
    model = TwoHeadClassifier(model_name, settings)
    optimizer = torch.optim.Adam(model.parameters(), lr=settings.learning_rate)
    generator = torch.Generator().manual_seed(seed)
    for epoch in range(settings.epochs):
        model.train()
        order = torch.randperm(len(y_train), generator=generator)
        for start in range(0, len(order), settings.batch):
            idx = order[start : start + settings.batch]
            loss = nn.functional.cross_entropy(model(x_train[idx]), y_train[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if progress is not None:
            progress.step(f"{model_name}, seed {seed}, epoch {epoch + 1}")
    model.eval()
    with torch.no_grad():
        predicted = torch.cat(
            [model(x_test[i : i + 1024]).argmax(-1) for i in range(0, len(y_test), 1024)]
        )
    return model, float((predicted == y_test).double().mean())


def run(
    settings: Settings = Settings(),
    figure: str | None = None,
    stream: object = sys.stderr,
) -> Report:
    """Train every model on every seed; optionally save the learned densities figure.

    Args:
        settings: the sizes (the defaults take about 3 minutes on 2 CPU cores).
        figure: a path for ``plot_densities``' figure, or None.
        stream: where the progress bar goes (quiet unless a terminal).

    Returns:
        The ``Report``.

    Examples:
        >>> import io
        >>> tiny = Settings(series=100, seeds=1, epochs=1, hidden=8, basis_size=8, inducing=4,
        ...                 models=("continuous softmax",))
        >>> [(r.model, r.seed) for r in run(tiny, stream=io.StringIO()).runs]
        [('continuous softmax', 0)]
    """
    report = Report(settings)
    progress = _Progress(len(settings.models) * settings.seeds * settings.epochs, stream)
    start = time.perf_counter()
    last: dict[str, TwoHeadClassifier] = {}
    for seed in range(settings.seeds):
        x, y, _ = make_dataset(settings.series, seed)
        for name in settings.models:
            t0 = time.perf_counter()
            model, accuracy = train_one(name, seed, (x, y), settings, progress)
            report.runs.append(RunResult(name, seed, accuracy, time.perf_counter() - t0))
            last[name] = model
    report.seconds = time.perf_counter() - start
    if figure is not None:
        plot_densities(last, settings, figure)
    return report


def head_densities(model: TwoHeadClassifier, x: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """The two learned attention densities of one series on ``grid``, (2, len(grid)).

    Args:
        model: a trained (or fresh) ``TwoHeadClassifier``.
        x: one series, (95,).
        grid: points of [0, 1].

    Returns:
        float64 (2, len(grid)): each head's density, from the NumPy families
        (``tsallis.distributions`` or ``tsallis.kernels.KernelFamily``).

    Examples:
        >>> tiny = Settings(series=100, seeds=1, epochs=1, hidden=8, basis_size=8, inducing=4)
        >>> net = TwoHeadClassifier("continuous sparsemax", tiny)
        >>> head_densities(net, np.zeros(LENGTH), np.linspace(0, 1, 5)).shape
        (2, 5)
    """
    from tsallis.distributions import Gaussian, TruncatedParabola
    from tsallis.kernels import KernelFamily

    with torch.no_grad():
        params = [
            p[0].double().numpy()
            for p in model.head_parameters(torch.as_tensor(x[None], dtype=torch.float32))
        ]
    s = model.settings
    out = []
    for h in range(2):
        if model.kernel:
            family = KernelFamily(
                params[0][h], np.linspace(0, 1, s.inducing), model.alpha, "gaussian", s.bandwidth
            )
            out.append(family.pdf(grid))
        else:
            law = Gaussian if model.alpha == 1 else TruncatedParabola
            out.append(law(params[0][h], params[1][h]).pdf(grid))
    return np.array(out)


def plot_densities(
    models: dict[str, TwoHeadClassifier], settings: Settings, path: str, count: int = 3
) -> None:
    """Learned head densities over a few held-out series, one column per model.

    The series are the last ``count`` of the last seed's data set (held out).

    Args:
        models: name -> trained model (``run`` keeps the last seed's).
        settings: the sizes the models were trained with.
        path: the image file to write.
        count: series per column.

    Raises:
        ModuleNotFoundError: matplotlib is not installed.

    Examples:
        >>> import os, tempfile
        >>> tiny = Settings(series=100, seeds=1, epochs=1, hidden=8, basis_size=8, inducing=4)
        >>> path = os.path.join(tempfile.mkdtemp(), "densities.png")
        >>> nets = {"kernel softmax": TwoHeadClassifier("kernel softmax", tiny)}
        >>> plot_densities(nets, tiny, path)
        >>> os.path.getsize(path) > 0
        True
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x, y, rate = make_dataset(settings.series, settings.seeds - 1)
    picks = np.arange(len(y) - count, len(y))  # test series of the last seed
    grid = np.linspace(0, 1, 400)
    t = np.linspace(0, 1, LENGTH)
    names = list(models)
    fig, axes = plt.subplots(
        count, len(names), figsize=(3.2 * len(names), 2.3 * count), sharex=True, squeeze=False
    )
    for col, name in enumerate(names):
        for row, i in enumerate(picks):
            ax = axes[row, col]
            dens = head_densities(models[name], x[i], grid)
            ax.plot(t, x[i] / max(1e-9, np.abs(x[i]).max()), color="0.7", lw=0.8)
            ax.set_ylim(-1.05, 1.05)
            ax.set_yticks([-1, 0, 1])
            ax.tick_params(axis="y", labelsize=7, colors="0.45")
            twin = ax.twinx()
            twin.plot(grid, dens[0], color="C0", label="head for class 0: density p(t)")
            twin.plot(grid, dens[1], color="C3", label="head for class 1: density p(t)")
            twin.set_ylim(bottom=0.0)
            twin.yaxis.set_major_locator(plt.MaxNLocator(3))
            twin.tick_params(axis="y", labelsize=7)
            if row == 0:
                ax.set_title(name, fontsize=10)
            if col == 0:
                ax.set_ylabel(f"series {i}\nl = {rate[i]:.1f}, y = {y[i]}", fontsize=8)
    axes[-1, 0].set_xlabel("t")
    handles, labels = twin.get_legend_handles_labels()
    series = plt.Line2D([], [], color="0.7", lw=0.8)
    fig.legend(
        [series, *handles],
        ["the series X(t) / max |X| (left axis)", *(f"{s} (right axis)" for s in labels)],
        loc="lower center",
        ncols=3,
        fontsize=8,
        frameon=False,
    )
    fig.suptitle("Learned attention densities on held-out warped series")
    fig.tight_layout(rect=(0, 0.05, 1, 1))  # room for the legend below the panels
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(settings: Settings, figure: str | None) -> int:
    """``tsallis experiment time-warping``: train, print the accuracy table (and figure).

    Args:
        settings: the sizes.
        figure: a path for the learned densities figure, or None.

    Returns:
        0.

    Examples:
        >>> tiny = Settings(series=100, seeds=1, epochs=1, hidden=8, basis_size=8, inducing=4,
        ...                 models=("kernel softmax",))
        >>> main(tiny, None)  # doctest: +ELLIPSIS
        time warping: 100 series (80% train), 1 seeds, 1 epochs; test accuracy (%)
        ...
        0
    """
    report = run(settings, figure=figure)
    print(report.table())
    if figure is not None:
        print(f"learned densities: {figure}")
    return 0
