"""``tsallis convergence``: quadrature error against node count, against mpmath.

Cases (Moreno 2022 sec 5.3.1), with f~ = sum_i gamma_i k(t, t_i):
- a: Gaussian-kernel exponential family on R, Gaussian q0: trapezoid on the line.
- b: the same f~ on [0, 1], uniform base: trapezoid (expect O(h^2)) and Gauss-Legendre.
- c: kernel deformed family, alpha = 2, Laplace kernel on [0, 1]: trapezoid (kinks: O(h^2)).
- d: case c with [.]_+ smoothed by softplus, s in {10, 100, 1000}: trapezoid; the
  smoothing bias is reported separately from the quadrature error.
- e: case c with the kink-aware rule (expect spectral).
- f: the angular integral of 2D sparsemax attention, E_p[psi] for a truncated
  paraboloid and a Gaussian RBF: periodic trapezoid (expect geometric). The radial
  integral is done by 48-point Gauss-Legendre (exact to rounding for this analytic
  integrand) until the 2D closed form of the attention work exists.

Ground truth: mpmath at 40 digits, split at every kink and support edge.
Rates: both error ~ C N^-p and error ~ C e^(-c N) are fitted on errors above
the rounding floor (1e-14 relative); the better fit is reported.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import mpmath as mp
import numpy as np

from tsallis import groundtruth as gt
from tsallis import quadrature as Q
from tsallis._generated import deformed as _deformed
from tsallis._generated import gaussian as _gaussian
from tsallis._generated import truncated_paraboloid as _paraboloid
from tsallis.kernels import kernel_sum

__all__ = [
    "CASES",
    "RULES",
    "Study",
    "draw",
    "fit_rate",
    "main",
    "plot",
    "run",
]

INDUCING = np.array([0.2, 0.45, 0.7])
GAMMA_SMOOTH = np.array([1.5, -1.0, 1.2])
GAMMA_SPARSE = np.array([1.5, -2.5, 1.2])
BANDWIDTH = 0.1
FLOOR = 1e-14
TARGETS = (1e-6, 1e-10, 1e-12)
CASES = ("a", "b", "c", "d", "e", "f")
# Every study's rule name contains one of these (tests keep the list in sync).
RULES = (
    "trapezoid",
    "trapezoid-line",
    "trapezoid+softplus",
    "gauss-legendre",
    "kink-aware",
    "periodic-trapezoid",
)


def _kernel_sum(t: np.ndarray, gamma: np.ndarray, kind: str) -> np.ndarray:
    return kernel_sum(t, gamma, INDUCING, kind, BANDWIDTH)


def _kernel_sum_mp(t: mp.mpf, gamma: np.ndarray, kind: str) -> mp.mpf:
    bw = mp.mpf(BANDWIDTH)
    total = mp.mpf(0)
    for g, c in zip(gamma, INDUCING, strict=True):
        d = t - mp.mpf(float(c))
        total += mp.mpf(float(g)) * (
            mp.exp(-(d**2) / (2 * bw**2)) if kind == "gaussian" else mp.exp(-abs(d) / bw)
        )
    return total


@dataclass
class Study:
    """Errors of one rule on one case, and what they imply.

    Attributes:
        case: the case letter (``CASES``).
        rule: the rule's name (contains one of ``RULES``).
        nodes: the node counts tried.
        errors: the relative error against mpmath at each node count.
        rate: ``fit_rate``'s result.
        nodes_for: the fewest nodes reaching each of ``TARGETS`` (None: never).
        note: what else to know (the smoothing bias of case d, the pieces of case e).

    Examples:
        >>> Study("b", "trapezoid", [5, 9], [1e-3, 2.5e-4]).errors[-1]
        0.00025
    """

    case: str
    rule: str
    nodes: list[int]
    errors: list[float]
    rate: dict[str, float | str] = field(default_factory=dict)
    nodes_for: dict[str, int | str | None] = field(default_factory=dict)
    note: str = ""


def fit_rate(nodes: list[int], errors: list[float]) -> dict[str, float | str]:
    """Fit error ~ C N^-p and error ~ C exp(-c N) above the floor; keep the better fit.

    Both are least-squares lines in log(error), against log N and N; the one with the
    smaller root-mean-square residual is kept. Errors at or below ``FLOOR`` (1e-14,
    rounding) are left out.

    Args:
        nodes: node counts.
        errors: relative errors, one per node count.

    Returns:
        ``{"kind": "algebraic" or "exponential", "value": p or c, "residual": rms}``,
        or ``{"kind": "at the rounding floor", "value": nan}`` with fewer than three
        errors above the floor.

    Examples:
        >>> fit_rate([4, 8, 16, 32], [1e-2, 2.5e-3, 6.25e-4, 1.5625e-4])
        {'kind': 'algebraic', 'value': 2.0, 'residual': 0.0}
    """
    points = [(n, e) for n, e in zip(nodes, errors, strict=True) if e > FLOOR]
    if len(points) < 3:
        return {"kind": "at the rounding floor", "value": math.nan}
    n = np.array([p[0] for p in points], dtype=float)
    log_e = np.log([p[1] for p in points])
    fits = {}
    for kind, x in (("algebraic", np.log(n)), ("exponential", n)):
        slope, intercept = np.polyfit(x, log_e, 1)
        residual = float(np.sqrt(np.mean((log_e - (slope * x + intercept)) ** 2)))
        fits[kind] = (-slope, residual)
    kind = min(fits, key=lambda k: fits[k][1])
    return {
        "kind": kind,
        "value": round(float(fits[kind][0]), 4),
        "residual": round(fits[kind][1], 4),
    }


def _nodes_for(nodes: list[int], errors: list[float]) -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    for target in TARGETS:
        hits = [n for n, e in zip(nodes, errors, strict=True) if e <= target]
        out[f"{target:g}"] = min(hits) if hits else None
    return out


def _study(
    case: str, rule: str, nodes: list[int], estimate: Callable[[int], float], truth: mp.mpf
) -> Study:
    errors = [float(abs((mp.mpf(estimate(n)) - truth) / truth)) for n in nodes]
    return Study(case, rule, nodes, errors, fit_rate(nodes, errors), _nodes_for(nodes, errors))


def _case_a() -> list[Study]:
    mean, std = 0.5, 0.3

    def f(t):  # noqa: ANN001, ANN202
        return np.exp(_gaussian.logpdf(t, mean, std) + _kernel_sum(t, GAMMA_SMOOTH, "gaussian"))

    def g(t):  # noqa: ANN001, ANN202
        return mp.npdf(t, mean, std) * mp.exp(_kernel_sum_mp(t, GAMMA_SMOOTH, "gaussian"))

    truth = mp.quad(g, [-mp.inf, -1, 0, *map(float, INDUCING), 1, 2, mp.inf])
    rule = Q.TrapezoidLine(mean, 12 * std)
    nodes = [4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512]
    return [_study("a", rule.name, nodes, lambda n: rule.integrate(f, n).value, truth)]


def _case_b() -> list[Study]:
    f = lambda t: np.exp(_kernel_sum(t, GAMMA_SMOOTH, "gaussian"))  # noqa: E731
    truth = mp.quad(
        lambda t: mp.exp(_kernel_sum_mp(t, GAMMA_SMOOTH, "gaussian")), [0, *map(float, INDUCING), 1]
    )
    out = []
    for rule, nodes in (
        (Q.Trapezoid(0, 1), [5, 9, 17, 33, 65, 129, 257, 513, 1025, 2049, 4097, 10001]),
        (Q.GaussLegendre(0, 1), [4, 8, 12, 16, 24, 32, 48, 64]),
    ):
        out.append(_study("b", rule.name, nodes, lambda n, r=rule: r.integrate(f, n).value, truth))
    return out


def _sparse() -> tuple[Callable, Callable, list[mp.mpf]]:
    """Case c: [1 + f~]_+ (alpha = 2) with a Laplace kernel; its support edges to 40 digits."""
    f = lambda t: 1 + _kernel_sum(t, GAMMA_SPARSE, "laplace")  # noqa: E731
    f_mp = lambda t: 1 + _kernel_sum_mp(t, GAMMA_SPARSE, "laplace")  # noqa: E731
    rule = Q.KinkAware(f, 0.0, 1.0, breakpoints=INDUCING)
    edges = [mp.findroot(f_mp, mp.mpf(e)) for e in rule.support_edges]
    return f, f_mp, edges


def _case_c_d_e() -> list[Study]:
    f, f_mp, edges = _sparse()
    points = sorted([mp.mpf(0), mp.mpf(1), *edges, *map(lambda c: mp.mpf(float(c)), INDUCING)])
    truth = mp.quad(lambda t: max(f_mp(t), 0), points)
    positive = lambda t: np.maximum(f(t), 0)  # noqa: E731
    trap_nodes = [5, 9, 17, 33, 65, 129, 257, 513, 1025, 2049, 4097, 10001]
    out = [
        _study(
            "c",
            "trapezoid",
            trap_nodes,
            lambda n: Q.Trapezoid(0, 1).integrate(positive, n).value,
            truth,
        )
    ]
    for s in (10.0, 100.0, 1000.0):
        smooth = lambda t, s=s: _deformed.softplus_positive(f(t), s)  # noqa: E731
        smooth_truth = mp.quad(lambda t, s=s: mp.log1p(mp.exp(s * f_mp(t))) / s, points)
        study = _study(
            "d",
            f"trapezoid+softplus(s={s:g})",
            trap_nodes,
            lambda n, sm=smooth: Q.Trapezoid(0, 1).integrate(sm, n).value,
            smooth_truth,
        )
        bias = float(abs(smooth_truth / truth - 1))
        study.note = f"smoothing bias |smoothed - exact| / exact = {bias:.3e}"
        out.append(study)
    kink = Q.KinkAware(f, 0.0, 1.0, breakpoints=INDUCING)
    per_piece = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32]
    study = _study(
        "e",
        kink.name,
        [n * len(kink.pieces) for n in per_piece],
        lambda total: kink.integrate(positive, total // len(kink.pieces)).value,
        truth,
    )
    study.note = f"{len(kink.pieces)} pieces; nodes are totals over the pieces"
    out.append(study)
    return out


def _case_f() -> list[Study]:
    """E_p[psi] for a 2D truncated paraboloid: the angular integral by the periodic trapezoid."""
    sigma = np.array([[0.3, 0.1], [0.1, 0.2]])
    mu, centre, width = np.array([0.1, -0.2]), np.array([0.3, 0.1]), 0.2
    chol = np.linalg.cholesky(sigma)
    logdet = float(np.linalg.slogdet(sigma)[1])
    lam = float(_paraboloid.threshold(2, logdet))
    radius = math.sqrt(-2 * lam)
    x_r, w_r = Q.GaussLegendre(0, radius).nodes_weights(48)

    def angular(theta):  # noqa: ANN001, ANN202
        direction = np.stack([np.cos(theta), np.sin(theta)])  # (2, n)
        points = mu[:, None, None] + (chol @ direction)[:, :, None] * x_r  # (2, n, m)
        d2 = ((points - centre[:, None, None]) ** 2).sum(0)
        psi = np.exp(_gaussian.logpdf_d2(d2 / width**2, 2, 4 * math.log(width)))
        p = _paraboloid.pdf_d2(x_r**2, 2, logdet)
        return (psi * p * x_r * w_r).sum(-1) * math.exp(logdet / 2)

    with mp.workdps(30):
        # the oracle's threshold: root of int p = 1 (ground truth), not eq 11
        paraboloid = gt.Family(
            score=lambda r: -(r**2) / 2,
            alpha=mp.mpf(2),
            dim=2,
            logdet=mp.log(mp.det(mp.matrix(sigma.tolist()))),
        )
        lam_mp = gt.threshold(paraboloid)
        l11, l21, l22 = (mp.mpf(float(v)) for v in (chol[0, 0], chol[1, 0], chol[1, 1]))

        def integrand(theta, r):  # noqa: ANN001, ANN202
            z1, z2 = r * mp.cos(theta), r * mp.sin(theta)
            x = mp.mpf(mu[0]) + l11 * z1 - mp.mpf(centre[0])
            y = mp.mpf(mu[1]) + l21 * z1 + l22 * z2 - mp.mpf(centre[1])
            psi = mp.exp(-(x * x + y * y) / (2 * mp.mpf(width) ** 2)) / (
                2 * mp.pi * mp.mpf(width) ** 2
            )
            return psi * (-lam_mp - r * r / 2) * r * l11 * l22

        truth = mp.quad(integrand, [0, mp.pi, 2 * mp.pi], [0, mp.sqrt(-2 * lam_mp)])
    rule = Q.PeriodicTrapezoid(0.0, 2 * math.pi)
    nodes = [2, 3, 4, 6, 8, 12, 16, 24, 32, 48]
    study = _study("f", rule.name, nodes, lambda n: rule.integrate(angular, n).value, truth)
    study.note = "radial integral: 48-point Gauss-Legendre"
    return [study]


RUNNERS: dict[str, Callable[[], list[Study]]] = {
    "a": _case_a,
    "b": _case_b,
    "c": _case_c_d_e,
    "d": _case_c_d_e,
    "e": _case_c_d_e,
    "f": _case_f,
}


def run(cases: list[str] | None = None, rules: list[str] | None = None) -> list[Study]:
    """All studies for the chosen cases (and rule-name substrings), at 40 digits.

    Args:
        cases: letters from ``CASES`` (None: all; case f alone takes about 10 s).
        rules: substrings of rule names (``RULES``); None keeps every rule.

    Returns:
        One ``Study`` per (case, rule).

    Raises:
        ValueError: an unknown case, or a rule substring that matches no rule.

    Examples:
        >>> [(s.rule, s.rate["kind"]) for s in run(["b"])]
        [('trapezoid', 'algebraic'), ('gauss-legendre', 'exponential')]
    """
    chosen = cases or list(CASES)
    unknown = set(chosen) - set(CASES)
    if unknown:
        raise ValueError(f"case: unknown {sorted(unknown)}; choose from {list(CASES)}")
    unmatched = [r for r in rules or () if not any(r in name for name in RULES)]
    if unmatched:
        raise ValueError(
            f"rule: {unmatched} match(es) no rule; rule names are {list(RULES)} (substrings work)"
        )
    studies: list[Study] = []
    done = set()
    with mp.workdps(40):
        for case in chosen:
            if RUNNERS[case] in done:
                continue
            done.add(RUNNERS[case])
            studies += [s for s in RUNNERS[case]() if s.case in chosen]
    if rules:
        studies = [s for s in studies if any(r in s.rule for r in rules)]
    return studies


CASE_TITLES = {
    "a": "a: kernel exp. family on R, Gaussian q0",
    "b": "b: same on [0, 1], uniform base",
    "c": "c: alpha = 2, Laplace kernel, [0, 1]",
    "d": "d: c with [.]_+ smoothed by softplus",
    "e": "e: c, kink-aware pieces",
    "f": "f: 2D sparsemax, angular integral",
}


def draw(studies: list[Study], plt: object) -> object:
    """Error against nodes, log-log, one panel per case.

    Args:
        studies: ``run``'s output.
        plt: ``matplotlib.pyplot`` (passed in: matplotlib is an optional extra).

    Returns:
        The matplotlib figure (not saved; ``plot`` saves it).

    Examples:
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import matplotlib.pyplot as plt
        >>> fig = draw(run(["b"]), plt)
        >>> [ax.get_title() for ax in fig.axes if ax.get_visible()]
        ['b: same on [0, 1], uniform base']
        >>> plt.close(fig)
    """
    from matplotlib.ticker import NullFormatter

    cases = sorted({s.case for s in studies})
    columns = min(3, len(cases))
    rows = -(-len(cases) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4.4 * columns, 3.5 * rows), squeeze=False)
    for ax in axes.flat[len(cases) :]:
        ax.set_visible(False)
    for ax, case in zip(axes.flat, cases, strict=False):
        for s in (s for s in studies if s.case == case):
            ax.loglog(s.nodes, np.maximum(s.errors, 1e-17), "o-", ms=3, lw=1.2, label=s.rule)
        ax.axhline(1e-12, color="0.5", lw=0.8, ls=":")
        ax.set(title=CASE_TITLES[case], xlabel="nodes", ylabel="relative error vs mpmath")
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6)
    fig.suptitle("Quadrature error against nodes (dotted: 1e-12)")
    return fig


def plot(studies: list[Study], path: str) -> None:
    """Write ``draw``'s figure to ``path`` (PNG, SVG, PDF: by its extension).

    Args:
        studies: ``run``'s output.
        path: the file to write.

    Raises:
        ModuleNotFoundError: matplotlib is not installed (the CLI turns this into a
            one-line message and exit 2).

    Examples:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "convergence.png")
        >>> plot(run(["b"]), path)
        >>> os.path.getsize(path) > 0
        True
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = draw(studies, plt)
    fig.tight_layout()
    fig.savefig(path, dpi=120, metadata={"Software": None})
    plt.close(fig)


def main(
    cases: list[str] | None = None,
    rules: list[str] | None = None,
    as_json: bool = False,
    plot_path: str | None = None,
) -> int:
    """``tsallis convergence``: run, print one line per study (or JSON), plot.

    Args:
        cases: letters from ``CASES`` (None: all).
        rules: rule-name substrings (None: all).
        as_json: print the studies as a JSON list instead.
        plot_path: also write ``draw``'s figure there.

    Returns:
        0, or 2 for a bad case or rule (with a one-line message on stderr).

    Examples:
        >>> main(["b"], ["gauss"])  # doctest: +ELLIPSIS
        (b) gauss-legendre                   rate exponential ... best ...
        1 studies in ... s
        0
    """
    try:
        start = time.perf_counter()
        studies = run(cases, rules)
        seconds = time.perf_counter() - start
    except ValueError as error:
        print(f"convergence: {error}", file=sys.stderr)
        return 2
    if plot_path:
        plot(studies, plot_path)
    if as_json:
        print(json.dumps([asdict(s) for s in studies], indent=1))
        return 0
    for s in studies:
        rate = s.rate
        shape = f"{rate['kind']} {rate['value']}" if "residual" in rate else str(rate["kind"])
        needs = ", ".join(
            f"{k}: {v if v is not None else '>' + str(s.nodes[-1])}" for k, v in s.nodes_for.items()
        )
        best = min(s.errors)
        print(
            f"({s.case}) {s.rule:<32} rate {shape:<22} nodes for {needs}  best {best:.1e} {s.note}"
        )
    print(f"{len(studies)} studies in {seconds:.1f} s")
    return 0
