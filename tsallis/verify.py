"""``tsallis verify``: every generated function against mpmath ground truth.

The grid reaches the extremes: sigma in {1e-6, 1e-3, 1, 1e3}, alpha in
{1.01, 1.25, 4/3, 1.5, 2, 2.5, 3, 5}, N in {1, 2, 3, 5}, loc = 0.3; N-D
families use Sigma = sigma^2 M with M = I + 0.3 * ones (so det Sigma != sigma^2N).
Parameters are the float64 values themselves, converted exactly to mpmath.

Error measures (all must be <= 1e-12 in float64):
- threshold, support, variance, entropy, pdf, cdf, ppf: relative error;
- mass: |int p - 1| with p built from the generated threshold;
- mean: |E_p[t] - mean| / |loc|;
- logpdf: absolute error (the relative error of the density).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from types import ModuleType

import mpmath as mp
import numpy as np

from tsallis import groundtruth as gt
from tsallis._generated import (
    beta_gaussian,
    deformed,
    gaussian,
    laplace,
    location_scale_cubic,
    location_scale_quadratic,
    triangular,
    truncated_parabola,
    truncated_paraboloid,
)
from tsallis.distributions import LocationScale

__all__ = [
    "FAMILIES",
    "LIMIT",
    "Case1D",
    "CaseND",
    "Check",
    "cases",
    "main",
    "nd_logdet",
    "run",
    "run_1d",
    "run_deformed",
    "run_nd",
    "summarize",
]

SIGMAS = (1e-6, 1e-3, 1.0, 1e3)
ALPHAS = (1.01, 1.25, 4 / 3, 1.5, 2.0, 2.5, 3.0, 5.0)
DIMS = (1, 2, 3, 5)
LOC = 0.3
LIMIT = 1e-12


@dataclass
class Check:
    """One compared quantity at one grid point and backend.

    Attributes:
        family: the family's name (``"_nd"`` appended for the N-D kernels).
        quantity: what was compared (``"threshold"``, ``"cdf"``, ``"mass"``, ...).
        backend: ``"numpy"`` or ``"torch-float64"``.
        error: the error measure of the module docstring (relative for most).
        params: the grid point (``scale``, and ``alpha`` or ``N`` where they vary).

    Examples:
        >>> Check("triangular", "cdf", "numpy", 3e-16, {"scale": 1.0}).error <= LIMIT
        True
    """

    family: str
    quantity: str
    backend: str
    error: float
    params: dict[str, float | int] = field(default_factory=dict)


def _mp(value: float) -> mp.mpf:
    return mp.mpf(float(value))


def _rel(value: float, truth: mp.mpf) -> float:
    if not np.isfinite(value):
        return float("inf")
    if truth == 0:
        return float(abs(value))
    return float(abs((mp.mpf(value) - truth) / truth))


def _torch_closed_forms() -> ModuleType | None:
    """torch_bridge.closed_forms, or None when torch is not installed."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return None
    from torch_bridge import closed_forms

    return closed_forms


def _backends(name: str, numpy_module: ModuleType) -> Iterator[tuple[str, Callable[..., float]]]:
    """(backend, caller) pairs; a caller evaluates a kernel by name to a float."""

    def numpy_call(kernel: str, *args: float) -> float:
        return float(getattr(numpy_module, kernel)(*args))

    yield "numpy", numpy_call
    closed_forms = _torch_closed_forms()
    if closed_forms is None:
        return
    import torch

    module = getattr(closed_forms, name)

    def torch_call(kernel: str, *args: float) -> float:
        if not hasattr(module, kernel):
            raise LookupError(kernel)
        tensors = [torch.tensor(float(a), dtype=torch.float64) for a in args]
        return float(getattr(module, kernel)(*tensors))

    yield "torch-float64", torch_call


@dataclass(frozen=True)
class Case1D:
    """A 1D family at one grid point (an argument of ``run_1d``; picklable).

    Attributes:
        name: the generated module (a key of ``FAMILIES``).
        score: the score f(r) = -g(r) whose alpha-entmax is the family: ``"quadratic"``,
            ``"abs"``, ``"cubic_ls"`` or ``"quadratic_ls"``.
        alpha: the entmax alpha (1 for the Gaussian and Laplace).
        scale: sigma.
        shape: kernel arguments before (loc, scale), e.g. ``(alpha,)``.
        suffix: appended to the kernel names (``"_1d"`` for the beta-Gaussian).
        compact: whether the support is bounded.

    Examples:
        >>> Case1D("triangular", "abs", 2.0, 1.0, ()).compact
        True
    """

    name: str
    score: str  # a key of _score
    alpha: float
    scale: float
    shape: tuple[float, ...]  # kernel arguments before (loc, scale)
    suffix: str = ""  # "_1d" for the beta-Gaussian kernels
    compact: bool = True


def _score(kind: str, scale: float) -> Callable[[mp.mpf], mp.mpf]:
    s = _mp(scale)
    return {
        "quadratic": lambda r: -(r**2) / (2 * s**2),
        "abs": lambda r: -r / s,
        "cubic_ls": lambda r: -((r / s) ** 2) / (2 * s),  # g = t^3/6: f = -g'(r/s)/s
        "quadratic_ls": lambda r: -(r / s) / s,  # g = t^2/2
    }[kind]


_NUMPY = {
    "gaussian": gaussian,
    "laplace": laplace,
    "truncated_parabola": truncated_parabola,
    "triangular": triangular,
    "location_scale_cubic": location_scale_cubic,
    "location_scale_quadratic": location_scale_quadratic,
    "beta_gaussian": beta_gaussian,
    "truncated_paraboloid": truncated_paraboloid,
    "deformed": deformed,
}
_ALIASES = {"threshold": "log_partition", "tsallis_entropy": "entropy"}


def run_1d(case: Case1D) -> list[Check]:
    """Threshold, support, moments, mass, pdf/logpdf, cdf, ppf for one 1D case.

    Each generated kernel is called with float64 arguments (NumPy, and Torch float64
    when torch is installed) and compared with the mpmath ground truth
    (``tsallis.groundtruth``) at the current ``mp.mp.dps``.

    Args:
        case: the family and grid point.

    Returns:
        One ``Check`` per quantity, evaluation point and backend.

    Examples:
        >>> with mp.workdps(40):
        ...     checks = run_1d(Case1D("triangular", "abs", 2.0, 1.0, ()))
        >>> sorted({c.quantity for c in checks})[:4], max(c.error for c in checks) <= LIMIT
        (['cdf', 'half_width', 'logpdf', 'mass'], True)
    """
    fam = gt.Family(
        score=_score(case.score, case.scale),
        alpha=_mp(case.alpha),
        loc=_mp(LOC),
        scale=_mp(case.scale),
    )
    params: dict[str, float | int] = {"scale": case.scale}
    if case.suffix:
        params["alpha"] = case.alpha
    checks: list[Check] = []
    alpha_one = case.alpha == 1

    def kernel(name: str) -> str:
        return (_ALIASES.get(name, name) if alpha_one else name) + case.suffix

    numpy_module = _NUMPY[case.name]
    hint = float(getattr(numpy_module, kernel("threshold"))(*case.shape, case.scale))
    tau = gt.threshold(fam, hint=None if alpha_one else hint)
    width = gt.edge(fam, tau)
    stats = gt.moments(fam, tau)
    scalar_truth = {
        "threshold": tau,
        "variance": stats["variance"].value,
        "tsallis_entropy": stats["entropy"].value,
    }
    if case.compact:
        scalar_truth["half_width"] = width
    unit = width if case.compact else fam.scale
    offsets = [mp.mpf(0), -unit / 2, unit * mp.mpf("0.9")]
    # Inputs are rounded to float64 first; the truth is taken at those exact doubles.
    points = [_mp(float(fam.loc + o)) for o in offsets]
    levels = [_mp(q) for q in (0.05, 0.3, 0.8)]
    p = gt.density(fam, tau)
    for backend, call in _backends(case.name, numpy_module):
        for quantity, truth in scalar_truth.items():
            value = call(kernel(quantity), *case.shape, case.scale)
            checks.append(Check(case.name, quantity, backend, _rel(value, truth), params))
        generated_tau = call(kernel("threshold"), *case.shape, case.scale)
        mass = gt.mass(fam, _mp(generated_tau)).value
        checks.append(Check(case.name, "mass", backend, float(abs(mass - 1)), params))
        mean_error = abs(stats["mean"].value) / abs(fam.loc)
        checks.append(Check(case.name, "mean", backend, float(mean_error), params))
        for x in points:
            args = (float(x), *case.shape, LOC, case.scale)
            truth = p(abs(x - fam.loc))
            checks.append(
                Check(case.name, "pdf", backend, _rel(call(kernel("pdf"), *args), truth), params)
            )
            log_value = call(kernel("logpdf"), *args)
            checks.append(
                Check(case.name, "logpdf", backend, float(abs(log_value - mp.log(truth))), params)
            )
            try:
                value = call(kernel("cdf"), *args)
            except LookupError:
                continue
            checks.append(
                Check(case.name, "cdf", backend, _rel(value, gt.cdf(fam, tau, x)), params)
            )
        if backend != "numpy":
            continue
        for q in levels:
            if case.name.startswith("location_scale"):
                g = "t**3/6" if case.name.endswith("cubic") else "t**2/2"
                x_hat = float(LocationScale(g, LOC, case.scale).ppf(float(q)))
            else:
                x_hat = call(kernel("ppf"), float(q), *case.shape, LOC, case.scale)
            truth = gt.ppf(fam, tau, q, x_hat)
            checks.append(Check(case.name, "ppf", backend, _rel(x_hat, truth), params))
    return checks


@dataclass(frozen=True)
class CaseND:
    """An N-D family at one grid point (an argument of ``run_nd``; picklable).

    Attributes:
        name: ``"gaussian"``, ``"truncated_paraboloid"`` or ``"beta_gaussian"``.
        alpha: the entmax alpha.
        scale: sigma; Sigma = sigma^2 (I + 0.3 * ones).
        dim: N.

    Examples:
        >>> CaseND("truncated_paraboloid", 2.0, 1.0, 3).dim
        3
    """

    name: str
    alpha: float
    scale: float
    dim: int


def nd_logdet(scale: float, dim: int) -> tuple[float, mp.mpf]:
    """log det(scale^2 (I + 0.3 * ones)) in float64 (as a user computes it) and exactly.

    Args:
        scale: sigma > 0.
        dim: N >= 1.

    Returns:
        (the float64 value from ``numpy.linalg.slogdet``, the exact value in mpmath
        at the current precision).

    Examples:
        >>> approx, exact = nd_logdet(1.0, 2)
        >>> round(approx, 12), abs(approx - float(exact)) < 1e-15
        (0.470003629246, True)
    """
    matrix = scale**2 * (np.eye(dim) + 0.3 * np.ones((dim, dim)))
    float_logdet = float(np.linalg.slogdet(matrix)[1])
    exact = 2 * dim * mp.log(_mp(scale)) + mp.log(
        1 + mp.mpf(3) / 10 * dim
    )  # det(I + c 11^T) = 1 + cN
    return float_logdet, exact


def run_nd(case: CaseND) -> list[Check]:
    """Threshold, radius, Cov factor, entropy, mass and logpdf in N-D.

    Args:
        case: the family and grid point.

    Returns:
        One ``Check`` per quantity, evaluation point and backend.

    Examples:
        >>> with mp.workdps(40):
        ...     checks = run_nd(CaseND("truncated_paraboloid", 2.0, 1.0, 2))
        >>> sorted({c.quantity for c in checks}), max(c.error for c in checks) <= LIMIT
        (['cov_scale', 'logpdf', 'mass', 'radius', 'threshold', 'tsallis_entropy'], True)
    """
    logdet, exact = nd_logdet(case.scale, case.dim)
    fam = gt.Family(score=lambda r: -(r**2) / 2, alpha=_mp(case.alpha), dim=case.dim, logdet=exact)
    alpha_one = case.alpha == 1
    shape = () if case.name != "beta_gaussian" else (case.alpha,)
    params: dict[str, float | int] = {"scale": case.scale, "N": case.dim}
    if shape:
        params["alpha"] = case.alpha
    numpy_module = _NUMPY[case.name]
    names = {"threshold": "log_partition_nd", "tsallis_entropy": "entropy_nd"} if alpha_one else {}
    hint = float(
        getattr(numpy_module, names.get("threshold", "threshold"))(*shape, case.dim, logdet)
    )
    tau = gt.threshold(fam, hint=None if alpha_one else hint)
    stats = gt.moments(fam, tau)
    truth = {"threshold": tau, "tsallis_entropy": stats["entropy"].value}
    if not alpha_one:
        truth["radius"] = gt.edge(fam, tau)
        truth["cov_scale"] = stats["variance"].value
    radius2 = 2 * abs(tau) if not alpha_one else mp.mpf(4)
    d2s = [_mp(float(d2)) for d2 in (mp.mpf(0), radius2 / 4, radius2 * mp.mpf("0.81"))]
    p = gt.density(fam, tau)
    checks = []
    for backend, call in _backends(case.name, numpy_module):
        for quantity, value in truth.items():
            got = call(names.get(quantity, quantity), *shape, case.dim, logdet)
            checks.append(Check(case.name + "_nd", quantity, backend, _rel(got, value), params))
        generated_tau = call(names.get("threshold", "threshold"), *shape, case.dim, logdet)
        if not alpha_one:
            mass = gt.mass(fam, _mp(generated_tau)).value
            checks.append(Check(case.name + "_nd", "mass", backend, float(abs(mass - 1)), params))
        for d2 in d2s:
            got = call("logpdf_d2", float(d2), *shape, case.dim, logdet)
            expected = mp.log(p(mp.sqrt(d2)))
            checks.append(
                Check(case.name + "_nd", "logpdf", backend, float(abs(got - expected)), params)
            )
    return checks


def run_deformed(_: object = None) -> list[Check]:
    """log_beta, exp_beta and the entropy term against their definitions.

    Args:
        _: ignored (the uniform signature of the runners).

    Returns:
        One ``Check`` per function, argument pair and backend.

    Examples:
        >>> with mp.workdps(40):
        ...     checks = run_deformed()
        >>> sorted({c.quantity for c in checks}), max(c.error for c in checks) <= LIMIT
        (['exp_beta', 'log_beta', 'tsallis_entropy_term'], True)
    """
    checks = []
    betas = [2 - a for a in ALPHAS] + [1.0, 1 + 1e-9, 1.5]
    for backend, call in _backends("deformed", deformed):
        for beta in betas:
            b = _mp(beta)
            for u in (1e-3, 0.5, 2.0, 1e3):
                uu = _mp(u)
                truth = mp.log(uu) if b == 1 else (mp.power(uu, 1 - b) - 1) / (1 - b)
                checks.append(
                    Check(
                        "deformed",
                        "log_beta",
                        backend,
                        _rel(call("log_beta", u, beta), truth),
                        {"beta": beta, "u": u},
                    )
                )
            for u in (-2.0, -0.5, 0.5, 3.0):
                uu = _mp(u)
                base = 1 + (1 - b) * uu
                if b == 1:
                    truth = mp.exp(uu)
                elif base <= 0:
                    continue
                else:
                    truth = mp.power(base, 1 / (1 - b))
                checks.append(
                    Check(
                        "deformed",
                        "exp_beta",
                        backend,
                        _rel(call("exp_beta", u, beta), truth),
                        {"beta": beta, "u": u},
                    )
                )
        for alpha in (*ALPHAS, 1.0):
            a = _mp(alpha)
            for p in (1e-3, 0.2, 0.9):
                pp = _mp(p)
                truth = (
                    -pp * mp.log(pp) if a == 1 else -pp * (mp.power(pp, a - 1) - 1) / ((a - 1) * a)
                )
                got = call("tsallis_entropy_term", p, alpha)
                checks.append(
                    Check(
                        "deformed",
                        "tsallis_entropy_term",
                        backend,
                        _rel(got, truth),
                        {"alpha": alpha, "p": p},
                    )
                )
    return checks


FAMILIES = (
    "deformed",
    "gaussian",
    "laplace",
    "truncated_parabola",
    "triangular",
    "location_scale_cubic",
    "location_scale_quadratic",
    "truncated_paraboloid",
    "beta_gaussian",
)


def cases(families: list[str] | None) -> list[object]:
    """Every grid point of the selected families, as picklable case objects.

    Args:
        families: names from ``FAMILIES``, or None for all of them.

    Returns:
        ``Case1D`` and ``CaseND`` objects, and the string ``"deformed"``.

    Raises:
        ValueError: an unknown family name (the message lists the valid ones).

    Examples:
        >>> len(cases(["triangular"])), cases(["triangular"])[0].scale
        (4, 1e-06)
    """
    chosen = families or list(FAMILIES)
    unknown = set(chosen) - set(FAMILIES)
    if unknown:
        raise ValueError(f"family: unknown {sorted(unknown)}; choose from {list(FAMILIES)}")
    out: list[object] = []
    for s in SIGMAS:
        one_d = {
            "gaussian": Case1D("gaussian", "quadratic", 1.0, s, (), compact=False),
            "laplace": Case1D("laplace", "abs", 1.0, s, (), compact=False),
            "truncated_parabola": Case1D("truncated_parabola", "quadratic", 2.0, s, ()),
            "triangular": Case1D("triangular", "abs", 2.0, s, ()),
            "location_scale_cubic": Case1D("location_scale_cubic", "cubic_ls", 2.0, s, ()),
            "location_scale_quadratic": Case1D(
                "location_scale_quadratic", "quadratic_ls", 2.0, s, ()
            ),
        }
        out += [case for name, case in one_d.items() if name in chosen]
        for n in DIMS:
            if "gaussian" in chosen:
                out.append(CaseND("gaussian", 1.0, s, n))
            if "truncated_paraboloid" in chosen:
                out.append(CaseND("truncated_paraboloid", 2.0, s, n))
            if "beta_gaussian" in chosen:
                out += [CaseND("beta_gaussian", a, s, n) for a in ALPHAS]
        if "beta_gaussian" in chosen:
            out += [Case1D("beta_gaussian", "quadratic", a, s, (a,), "_1d") for a in ALPHAS]
    if "deformed" in chosen:
        out.append("deformed")
    return out


def _run(case: object, dps: int) -> list[Check]:
    with mp.workdps(dps):  # (restored: run() may work in the caller's process)
        if isinstance(case, Case1D):
            return run_1d(case)
        if isinstance(case, CaseND):
            return run_nd(case)
        return run_deformed()


def run(
    dps: int = 40, families: list[str] | None = None, workers: int | None = None
) -> list[Check]:
    """All checks for the selected families, computed in ``workers`` processes.

    Progress goes to stderr through tqdm, which is silent when stderr is not a terminal.

    Args:
        dps: mpmath decimal digits of the ground truth.
        families: names from ``FAMILIES``, or None for all of them.
        workers: processes (None: one per CPU, at most one per case; 1: in this process).

    Returns:
        Every ``Check``, in case order.

    Raises:
        ValueError: an unknown family name.

    Examples:
        >>> checks = run(30, ["triangular"], workers=1)
        >>> len(checks), max(c.error for c in checks) <= LIMIT
        (120, True)
    """
    from tqdm import tqdm  # quiet when stderr is not a terminal (no carriage returns)

    todo = cases(families)
    workers = workers or min(len(todo), os.cpu_count() or 1)
    checks: list[Check] = []
    with tqdm(total=len(todo), unit="case", file=sys.stderr, disable=None, leave=False) as bar:
        if workers <= 1:
            for case in todo:
                checks += _run(case, dps)
                bar.update()
            return checks
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(_run, case, dps) for case in todo]
            for future in futures:
                checks += future.result()
                bar.update()
    return checks


def summarize(checks: list[Check]) -> list[Check]:
    """The worst check of each (family, quantity, backend).

    Args:
        checks: the output of ``run`` (or of the runners).

    Returns:
        One ``Check`` per key, sorted by key; a NaN error counts as the worst.

    Examples:
        >>> rows = summarize([Check("f", "cdf", "numpy", 1e-16), Check("f", "cdf", "numpy", 3e-16)])
        >>> [(r.quantity, r.error) for r in rows]
        [('cdf', 3e-16)]
    """
    worst: dict[tuple[str, str, str], Check] = {}
    for check in checks:
        key = (check.family, check.quantity, check.backend)
        if key not in worst or not check.error <= worst[key].error:
            worst[key] = check
    return [worst[key] for key in sorted(worst)]


def main(
    dps: int = 40, families: list[str] | None = None, as_json: bool = False, full: bool = False
) -> int:
    """``tsallis verify``: run, print a table (or JSON), and return the exit code.

    Args:
        dps: mpmath decimal digits of the ground truth.
        families: names from ``FAMILIES``, or None for all of them.
        as_json: print JSON (``passed``, ``worst_rel_error``, ``checks``, ...) instead.
        full: with ``as_json``, every check rather than the worst per key.

    Returns:
        0 if every error is at most ``LIMIT`` (1e-12), 1 if not, 2 for an unknown
        family (with a one-line message on stderr).

    Examples:
        >>> import contextlib, io
        >>> with contextlib.redirect_stdout(io.StringIO()) as out:
        ...     code = main(30, ["triangular"])
        >>> code, out.getvalue().splitlines()[-1].endswith("PASS")
        (0, True)
    """
    if _torch_closed_forms() is None:
        print(
            "torch is not installed: skipping the Torch checks (NumPy checks still run)",
            file=sys.stderr,
        )
    try:
        start = time.perf_counter()
        checks = run(dps, families)
        seconds = time.perf_counter() - start
    except ValueError as error:
        print(f"verify: {error}", file=sys.stderr)
        return 2
    rows = summarize(checks)
    worst = max((c.error for c in checks), default=0.0)
    passed = all(c.error <= LIMIT for c in checks)
    if as_json:
        payload = {
            "passed": passed,
            "worst_rel_error": worst,
            "limit": LIMIT,
            "dps": dps,
            "seconds": round(seconds, 2),
            "n_checks": len(checks),
            "checks": [asdict(c) for c in (checks if full else rows)],
        }
        print(json.dumps(payload, indent=1))
    else:
        print(f"{'family':<26}{'quantity':<22}{'backend':<15}{'worst error':>12}  where")
        for c in rows:
            where = ", ".join(f"{k}={v:g}" for k, v in c.params.items())
            flag = "" if c.error <= LIMIT else "  FAIL"
            print(f"{c.family:<26}{c.quantity:<22}{c.backend:<15}{c.error:>12.2e}  {where}{flag}")
        verdict = "PASS" if passed else "FAIL"
        print(
            f"{len(checks)} checks at dps={dps} in {seconds:.1f} s; "
            f"worst error {worst:.2e} (limit {LIMIT:g}): {verdict}"
        )
    return 0 if passed else 1
