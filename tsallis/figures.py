"""``tsallis figures``: the seed papers' figures, drawn from the toolkit's public functions.

Every curve comes from ``tsallis`` (distributions, discrete maps, kernels,
attention, convergence); nothing here types a formula. Output is deterministic:
one style, fixed inputs, and PNGs written without a timestamp or version tag.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from tsallis import discrete
from tsallis.attention import GaussianRBF, rho, ridge_value_function
from tsallis.distributions import (
    BetaGaussian,
    Gaussian,
    Laplace,
    Triangular,
    TruncatedParabola,
    TruncatedParaboloid,
)
from tsallis.kernels import KernelFamily

__all__ = [
    "FIGURES",
    "attention_1d",
    "convergence",
    "evsoftmax_simplex",
    "families_1d",
    "families_2d",
    "kernel_densities",
    "main",
    "threshold_vs_alpha",
    "write",
]

STYLE = {
    "figure.dpi": 100,
    "savefig.dpi": 110,
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "lines.linewidth": 1.6,
    "figure.constrained_layout.use": True,
}
# alpha = 1 is the Gaussian (softmax) end of every comparison.
ALPHAS = (1.0, 4 / 3, 1.5, 2.0, 3.0)
ALPHA_LABELS = {1.0: "1", 4 / 3: "4/3", 1.5: "3/2", 2.0: "2", 3.0: "3"}


def _equal_variance(alpha: float, variance: float = 1.0) -> Gaussian | BetaGaussian:
    """The 1D beta-Gaussian (Gaussian at alpha = 1) with the given variance, loc 0."""
    if alpha == 1.0:
        return Gaussian(0.0, np.sqrt(variance))
    from scipy.optimize import brentq

    # var grows like scale^(4 / (alpha + 1)) (the threshold depends on scale): solve for it
    def excess(log_scale: float) -> float:
        return float(np.log(BetaGaussian(alpha, 0.0, np.exp(log_scale)).var() / variance))

    return BetaGaussian(alpha, 0.0, float(np.exp(brentq(excess, -20.0, 20.0, xtol=1e-14))))


def _headroom(ax: object, fraction: float) -> None:
    """Raise the top of the y axis by ``fraction`` of its span: room for a legend above
    the data, so that it hides no curve."""
    low, high = ax.get_ylim()
    ax.set_ylim(low, high + fraction * (high - low))


def families_1d(plt: object) -> object:
    """Martins 2020 Fig 1 left, plus the beta-Gaussian across alpha at equal variance.

    Args:
        plt: ``matplotlib.pyplot`` (passed in: matplotlib is an optional extra;
            ``write`` selects the Agg backend and the ``STYLE``).

    Returns:
        The matplotlib figure, not saved.

    Examples:
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import matplotlib.pyplot as plt
        >>> fig = families_1d(plt)
        >>> [ax.get_title() for ax in fig.axes][1:]
        ['Laplace vs triangular (b = 1)', 'beta-Gaussian, variance 1']
        >>> plt.close(fig)
    """
    t = np.linspace(-3.2, 3.2, 1201)
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
    pairs = (
        ("Gaussian vs truncated parabola (sigma = 1)", Gaussian, TruncatedParabola),
        ("Laplace vs triangular (b = 1)", Laplace, Triangular),
    )
    for ax, (title, dense, sparse) in zip(axes[:2], pairs, strict=True):
        ax.plot(t, dense(0.0, 1.0).pdf(t), color="C0", label=f"{dense.__name__} (alpha = 1)")
        ax.plot(t, sparse(0.0, 1.0).pdf(t), color="C3", label=f"{sparse.__name__} (alpha = 2)")
        ax.set(title=title, xlabel="t", ylabel="p(t)")
        _headroom(ax, 0.25)
        ax.legend(loc="upper right")
    colours = plt.cm.viridis(np.linspace(0, 0.9, len(ALPHAS)))
    for alpha, colour in zip(ALPHAS, colours, strict=True):
        law = _equal_variance(alpha)
        label = f"alpha = {ALPHA_LABELS[alpha]}"
        if alpha > 1:
            label += f", support +-{law.support()[1]:.2f}"
        axes[2].plot(t, law.pdf(t), color=colour, label=label)
    axes[2].set(title="beta-Gaussian, variance 1", xlabel="t", ylabel="p(t)")
    _headroom(axes[2], 0.6)
    axes[2].legend(loc="upper right")
    return fig


def families_2d(plt: object) -> object:
    """Martins 2020 Fig 1 middle and right: N(0, I) and TP(0, I) with the support ellipse.

    Args:
        plt: ``matplotlib.pyplot`` (passed in: matplotlib is an optional extra;
            ``write`` selects the Agg backend and the ``STYLE``).

    Returns:
        The matplotlib figure, not saved.

    Examples:
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import matplotlib.pyplot as plt
        >>> fig = families_2d(plt)
        >>> [ax.get_title() for ax in fig.axes][:2]
        ['bivariate Gaussian N(0, I)', 'truncated paraboloid TP(0, I)']
        >>> plt.close(fig)
    """
    loc, cov = np.zeros(2), np.eye(2)
    gaussian, paraboloid = Gaussian(loc, cov), TruncatedParaboloid(loc, cov)
    grid = np.linspace(-2.5, 2.5, 301)
    xx, yy = np.meshgrid(grid, grid)
    points = np.stack([xx, yy], axis=-1)
    radius = paraboloid.support()  # in the Sigma^-1 metric; Sigma = I here
    angle = np.linspace(0, 2 * np.pi, 361)
    fig, axes = plt.subplots(1, 2, figsize=(9.6, 4.2))
    for ax, law, title in (
        (axes[0], gaussian, "bivariate Gaussian N(0, I)"),
        (axes[1], paraboloid, "truncated paraboloid TP(0, I)"),
    ):
        density = law.pdf(points)
        image = ax.contourf(xx, yy, density, levels=20, cmap="viridis")
        fig.colorbar(image, ax=ax, label="p(t)")
        ax.plot(radius * np.cos(angle), radius * np.sin(angle), "w--", lw=1.2)
        ax.set(title=title, xlabel="t1", ylabel="t2", aspect="equal")
        ax.grid(False)
    axes[1].text(
        0.0, -radius - 0.25, f"support: |t| <= {radius:.3f}", color="w", ha="center", va="top"
    )
    axes[0].text(0.0, -radius - 0.25, "TP support (dashed)", color="w", ha="center", va="top")
    return fig


_MAPS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "softmax": discrete.softmax,
    "sparsemax": discrete.sparsemax,
    "ev-softmax": discrete.ev_softmax,
}
_CORNERS = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, np.sqrt(3) / 2]])


def _to_plane(p: np.ndarray) -> np.ndarray:
    """Barycentric (..., 3) to 2D points of the equilateral triangle."""
    return p @ _CORNERS


def evsoftmax_simplex(plt: object) -> object:
    """Chen 2021 Fig 1: three maps of v = (0.4, 1.4, -0.8), and their sparsity regions.

    Args:
        plt: ``matplotlib.pyplot`` (passed in: matplotlib is an optional extra;
            ``write`` selects the Agg backend and the ``STYLE``).

    Returns:
        The matplotlib figure, not saved.

    Examples:
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import matplotlib.pyplot as plt
        >>> fig = evsoftmax_simplex(plt)
        >>> fig.axes[0].get_title()
        'maps of v = (0.4, 1.4, -0.8)'
        >>> plt.close(fig)
    """
    v = np.array([0.4, 1.4, -0.8])
    fig, axes = plt.subplots(1, 4, figsize=(14, 4.2))
    ax = axes[0]
    ax.set_axis_off()
    ax.plot(*_to_plane(np.vstack([np.eye(3), np.eye(3)[:1]])).T, color="0.3", lw=1)
    # corner labels outside the triangle, clear of its lines and of the markers at e2
    placement = (((-8, -6), "right", "top"), ((8, -6), "left", "top"), ((8, 0), "left", "center"))
    for k, name in enumerate(("e1", "e2", "e3")):
        offset, ha, va = placement[k]
        ax.annotate(name, _CORNERS[k], xytext=offset, textcoords="offset points", ha=ha, va=va)
    markers = {"softmax": "o", "sparsemax": "s", "ev-softmax": "^"}
    for k, (name, fn) in enumerate(_MAPS.items()):
        p = fn(v)
        ax.plot(
            *_to_plane(p),
            markers[name],
            ms=9,
            color=f"C{k}",
            label=f"{name}: ({', '.join(f'{x:.3f}' for x in p)})",
        )
    ax.set(title="maps of v = (0.4, 1.4, -0.8)", aspect="equal", xticks=[], yticks=[])
    ax.grid(False)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.02), fontsize=7)
    # Regions: scores z in the plane sum(z) = 1 (all three maps are translation invariant),
    # drawn on a triangle 4 times the simplex around its centre; v lies in that plane.
    u, w = np.meshgrid(np.linspace(0.0, 1.0, 401), np.linspace(0.0, np.sqrt(3) / 2, 347))
    inv = np.linalg.inv(np.vstack([_CORNERS.T, np.ones(3)]))
    bary = np.einsum("ij,jab->abi", inv, np.stack([u, w, np.ones_like(u)]))
    scores = 1 / 3 + 4 * (bary - 1 / 3)
    inside = (scores >= -1.0 - 1e-12).all(-1)
    cmap = plt.matplotlib.colors.ListedColormap(["#d7e3f4", "#7fa7d9", "#1f4e96"])
    for ax, (name, fn) in zip(axes[1:], _MAPS.items(), strict=True):
        count = (fn(scores.reshape(-1, 3)) > 1e-12).sum(-1).reshape(u.shape).astype(float)
        count[~inside] = np.nan
        image = ax.pcolormesh(u, w, count, cmap=cmap, vmin=0.5, vmax=3.5, shading="auto")
        simplex = 1 / 3 + (np.vstack([np.eye(3), np.eye(3)[:1]]) - 1 / 3) / 4
        ax.plot(*_to_plane(simplex).T, color="w", lw=1.2)
        ax.plot(*_to_plane(1 / 3 + (v - 1 / 3) / 4), "*", color="C3", ms=11, label="v")
        ax.set(title=f"{name}: nonzero entries", aspect="equal")
        ax.set_axis_off()
        ax.legend(loc="upper right")
    bar = fig.colorbar(image, ax=list(axes[1:]), ticks=[1, 2, 3], fraction=0.02)
    bar.set_label("number of nonzero entries")
    fig.supxlabel(
        "regions: score vectors z with z1 + z2 + z3 = 1 and every z_k >= -1;"
        " white triangle: z in the simplex",
        fontsize=8,
    )
    return fig


def convergence(plt: object) -> object:
    """Error against nodes for every rule and case (``tsallis convergence``).

    Runs every study first (about 10 s).

    Args:
        plt: ``matplotlib.pyplot`` (passed in: matplotlib is an optional extra;
            ``write`` selects the Agg backend and the ``STYLE``).

    Returns:
        The matplotlib figure, not saved.

    Examples:
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import matplotlib.pyplot as plt
        >>> fig = convergence(plt)
        >>> fig.get_suptitle()
        'Quadrature error against nodes (dotted: 1e-12)'
        >>> plt.close(fig)
    """
    from tsallis import convergence as study

    return study.draw(study.run(), plt)


def _multimodal(alpha: float) -> KernelFamily:
    # Two bumps and a dip on [0, 1]: for alpha > 1 the support is two disjoint intervals.
    gamma = np.array([2.0, -3.0, -3.0, 2.6, -1.5]) * (1.0 if alpha == 1 else 0.55)
    return KernelFamily(gamma, [0.15, 0.4, 0.55, 0.75, 0.95], alpha, "gaussian", 0.1)


def kernel_densities(plt: object) -> object:
    """Moreno 2022 Fig 1 style: kernel softmax / sparsemax / entmax densities on [0, 1].

    Args:
        plt: ``matplotlib.pyplot`` (passed in: matplotlib is an optional extra;
            ``write`` selects the Agg backend and the ``STYLE``).

    Returns:
        The matplotlib figure, not saved.

    Examples:
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import matplotlib.pyplot as plt
        >>> fig = kernel_densities(plt)
        >>> len(fig.axes)
        2
        >>> plt.close(fig)
    """
    t = np.linspace(0, 1, 2001)
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    for k, alpha in enumerate((1.0, 1.5, 2.0)):
        family = _multimodal(alpha)
        label = {
            1.0: "kernel softmax (alpha = 1)",
            1.5: "kernel entmax (alpha = 3/2)",
            2.0: "kernel sparsemax (alpha = 2)",
        }[alpha]
        axes[0].plot(t, family.pdf(t), color=f"C{k}", label=label)
        if alpha > 1:  # the support pieces, as bars under the axis
            for a, b in family.support:
                axes[0].plot([a, b], [-0.12 * k] * 2, color=f"C{k}", lw=4, solid_capstyle="butt")
        if alpha != 1.5:  # alpha = 3/2 shares alpha = 2's weights
            name = "alpha = 1" if alpha == 1 else "alpha = 3/2 and 2 (gamma x 0.55)"
            axes[1].plot(t, family.f_tilde(t), color=f"C{k}", label=f"f~, {name}")
    axes[0].set(
        title="densities (bars: supports, disjoint for alpha > 1)", xlabel="t", ylabel="p(t)"
    )
    _headroom(axes[0], 0.55)
    axes[0].legend(loc="upper left", fontsize=7)
    axes[1].axhline(-1.0, color="C2", ls=":", lw=1, label="-1/(alpha-1), alpha = 2")
    axes[1].axhline(-2.0, color="C1", ls=":", lw=1, label="-1/(alpha-1), alpha = 3/2")
    axes[1].set(
        title="f~(t) = sum_i gamma_i k(t, t_i), Gaussian kernel, h = 0.1",
        xlabel="t",
        ylabel="f~(t)",
    )
    low, high = axes[1].get_ylim()  # room below the curves for the legend
    axes[1].set_ylim(low - 0.45 * (high - low), high)
    axes[1].legend(loc="lower center", ncols=2, fontsize=7)
    return fig


def attention_1d(plt: object) -> object:
    """A value function V(t) = B psi(t), three attention densities, their contexts E_p[V].

    Args:
        plt: ``matplotlib.pyplot`` (passed in: matplotlib is an optional extra;
            ``write`` selects the Agg backend and the ``STYLE``).

    Returns:
        The matplotlib figure, not saved.

    Examples:
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import matplotlib.pyplot as plt
        >>> fig = attention_1d(plt)
        >>> fig.axes[1].get_title()
        'attention densities'
        >>> plt.close(fig)
    """
    positions = np.linspace(0, 1, 40)
    signal = np.sin(4 * np.pi * positions) + 1.5 * positions
    basis = GaussianRBF(np.linspace(0, 1, 16), np.full(16, 0.06))
    coeffs = ridge_value_function(signal[None], positions, basis, 0.05)[0]  # B = H G, (16,)
    t = np.linspace(-0.1, 1.1, 1201)
    value = basis(t) @ coeffs
    loc, sigma = 0.62, 0.12
    laws = {
        "continuous softmax (alpha = 1)": (1.0, Gaussian(loc, sigma)),
        "continuous entmax (alpha = 3/2)": (1.5, BetaGaussian(1.5, loc, sigma)),
        "continuous sparsemax (alpha = 2)": (2.0, TruncatedParabola(loc, sigma)),
    }
    fig, axes = plt.subplots(2, 1, figsize=(8, 5.6), sharex=True)
    axes[0].plot(positions, signal, "o", ms=3, color="0.5", label="observations")
    axes[0].plot(t, value, color="k", label="V(t) (ridge, 16 RBFs)")
    for k, (name, (alpha, law)) in enumerate(laws.items()):
        context = float(rho(alpha, loc, sigma, basis) @ coeffs)
        axes[1].plot(t, law.pdf(t), color=f"C{k}", label=name)
        axes[0].axhline(
            context, color=f"C{k}", ls="--", lw=1.2, label=f"context, {name}: {context:.3f}"
        )
    axes[0].set(
        title=f"value function and contexts c = E_p[V] (loc = {loc}, sigma = {sigma})",
        ylabel="V(t)",
    )
    _headroom(axes[0], 0.4)
    axes[0].legend(fontsize=7, loc="upper left", ncols=2)
    axes[1].set(title="attention densities", xlabel="t", ylabel="p(t)")
    axes[1].legend(loc="upper left")
    return fig


def threshold_vs_alpha(plt: object) -> object:
    """The beta-Gaussian threshold tau and support radius against alpha, Sigma = I.

    Args:
        plt: ``matplotlib.pyplot`` (passed in: matplotlib is an optional extra;
            ``write`` selects the Agg backend and the ``STYLE``).

    Returns:
        The matplotlib figure, not saved.

    Examples:
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import matplotlib.pyplot as plt
        >>> fig = threshold_vs_alpha(plt)
        >>> [ax.get_title() for ax in fig.axes]
        ['threshold: -tau (Sigma = I)', 'support radius (Mahalanobis)']
        >>> plt.close(fig)
    """
    alphas = np.linspace(1.02, 4.0, 150)
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for k, n in enumerate((1, 2, 3, 10)):
        taus, radii = [], []
        for alpha in alphas:
            law = (
                BetaGaussian(alpha, 0.0, 1.0)
                if n == 1
                else BetaGaussian(alpha, np.zeros(n), np.eye(n))
            )
            taus.append(-float(law.threshold))
            radii.append(float(law.support()[1] if n == 1 else law.support()))
        axes[0].plot(alphas, taus, color=f"C{k}", label=f"N = {n}")
        axes[1].plot(alphas, radii, color=f"C{k}", label=f"N = {n}")
    if min(min(line.get_ydata()) for line in axes[0].get_lines()) <= 0:
        raise ValueError("tau >= 0 on the grid: -tau cannot go on a log axis")
    axes[0].set(title="threshold: -tau (Sigma = I)", xlabel="alpha", ylabel="-tau", yscale="log")
    axes[1].set(title="support radius (Mahalanobis)", xlabel="alpha", ylabel="radius", yscale="log")
    for ax in axes:
        ax.legend()
    return fig


FIGURES: dict[str, Callable[[object], object]] = {
    "families_1d": families_1d,
    "families_2d": families_2d,
    "evsoftmax_simplex": evsoftmax_simplex,
    "convergence": convergence,
    "kernel_densities": kernel_densities,
    "attention_1d": attention_1d,
    "threshold_vs_alpha": threshold_vs_alpha,
}


def write(out: str | Path = "figures", only: Sequence[str] | None = None) -> list[Path]:
    """Draw the named figures (default all) into ``out``; return the PNG paths.

    Args:
        out: the folder (created if missing).
        only: names from ``FIGURES`` (None or empty: all of them).

    Returns:
        The written paths, ``out / f"{name}.png"``, in the order asked.

    Raises:
        ValueError: an unknown figure name (the message lists the valid ones).
        ModuleNotFoundError: matplotlib is not installed.

    Examples:
        >>> import tempfile
        >>> [path.name for path in write(tempfile.mkdtemp(), ["families_1d", "attention_1d"])]
        ['families_1d.png', 'attention_1d.png']
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(FIGURES) if not only else list(only)
    unknown = [n for n in names if n not in FIGURES]
    if unknown:
        raise ValueError(f"unknown figure(s) {unknown}; choose from {list(FIGURES)}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in names:
        with plt.rc_context(STYLE):
            fig = FIGURES[name](plt)
            path = out / f"{name}.png"
            fig.savefig(path, metadata={"Software": None})
            plt.close(fig)
        paths.append(path)
    return paths


def main(out: str, only: Sequence[str] | None) -> int:
    """``tsallis figures``: write the figures and print their paths.

    Args:
        out: the folder.
        only: figure names (None: all).

    Returns:
        0, or 2 for an unknown name (with a one-line message on stderr).

    Examples:
        >>> import tempfile
        >>> main(tempfile.mkdtemp(), ["no_such_figure"])
        2
    """
    try:
        start = time.perf_counter()
        for path in write(out, only):
            print(path)
    except ValueError as error:
        print(f"figures: {error}", file=sys.stderr)
        return 2
    print(f"{len(only or FIGURES)} figure(s) in {time.perf_counter() - start:.1f} s")
    return 0
