"""The tsallis command: derive, verify, convergence, figures, experiment."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = [
    "build_parser",
    "main",
]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
EXIT_CODES = f"""exit codes:
  {EXIT_OK}  success
  {EXIT_FAILED}  a verification or check failed (verify, derive --check)
  {EXIT_USAGE}  usage or input error (bad option, bad g, unwritable path, missing extra)"""
DPS_RANGE = (20, 1000)  # mpmath digits: float64 needs ~17; more than 1000 is only slow


class _UsageError(Exception):
    """Bad input from the command line: one line on stderr, exit code 2."""


class _OutOfTime(BaseException):
    """Raised by SIGALRM; a BaseException so that SymPy's broad handlers let it through."""


@contextlib.contextmanager
def _time_limit(seconds: float, what: str) -> Iterator[None]:
    """Raise _UsageError when the block runs longer than ``seconds`` (POSIX main thread)."""
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable or seconds <= 0:
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise _OutOfTime

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    except _OutOfTime:
        raise _UsageError(f"{what} did not finish in {seconds:g} s (raise --timeout)") from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _digits(text: str) -> int:
    """argparse type for --dps: an integer in DPS_RANGE."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
    low, high = DPS_RANGE
    if not low <= value <= high:
        raise argparse.ArgumentTypeError(f"must lie in [{low}, {high}], got {value}")
    return value


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, got {text!r}") from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return value


def _check_writable_dir(folder: Path, option: str) -> None:
    """_UsageError unless a file can be created in ``folder`` (which must exist)."""
    if not folder.is_dir():
        raise _UsageError(f"{option}: folder {str(folder)!r} does not exist")
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        raise _UsageError(f"{option}: cannot write in {str(folder)!r} ({error.strerror})") from None


def _output_file(path: str, option: str) -> Path:
    """Check, before any work, that ``path`` can be written; returns it as a Path."""
    target = Path(path)
    if target.is_dir():
        raise _UsageError(f"{option}: {path!r} is a folder, not a file name")
    _check_writable_dir(target.parent if str(target.parent) else Path("."), option)
    return target


def _output_dir(path: str, option: str) -> Path:
    """Create ``path`` (and parents) if needed and check that it can be written."""
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise _UsageError(f"{option}: cannot create folder {path!r} ({error.strerror})") from None
    _check_writable_dir(folder, option)
    return folder


def _need_matplotlib(what: str) -> None:
    """_UsageError naming the extra when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise _UsageError(f"{what} needs matplotlib: pip install 'tsallis[plot]'") from None


def _derive(args: argparse.Namespace) -> int:
    if args.family == "location-scale":
        if args.check or args.out is not None:
            raise _UsageError(
                "derive: --check and --out regenerate every family; they take no family"
            )
        return _derive_location_scale(args)
    if args.family is not None:
        raise _UsageError(
            f"derive: unknown family {args.family!r}; only 'location-scale' takes options"
        )
    given = [f"--{name}" for name in ("g", "emit") if getattr(args, name) is not None]
    if given:
        raise _UsageError(f"derive: {', '.join(given)} need(s) the family: derive location-scale")
    from tsallis.derivations.codegen import compare_or_update
    from tsallis.derivations.registry import (
        FORMULA_SHEET,
        OUTPUT_DIRS,
        ROOT,
        render_all,
        source_checkout,
    )

    checkout = source_checkout()
    sheet = FORMULA_SHEET
    if args.out is not None:  # FORMULAS.md at the top, the modules at their package paths
        base, sheet = _output_dir(args.out, "derive --out"), Path("FORMULAS.md")
        files = render_all(readme=False)
    elif checkout is not None:
        base, files = checkout, render_all()
    elif args.check:  # an installed package (ROOT is site-packages): compare, never write
        base, files = ROOT, render_all(readme=False)
    else:
        raise _UsageError(
            "derive: tsallis is installed here, not run from a source checkout, and an"
            " installed package is never rewritten: pass --out DIR to write the generated"
            " modules and FORMULAS.md into DIR"
        )

    def where(relative: Path) -> Path:
        return base / (sheet if relative == FORMULA_SHEET else relative)

    drift = []
    for relative, text in files.items():
        diff = compare_or_update(where(relative), text, update=not args.check)
        if diff:
            drift.append(diff)
    # A module no derivation emits any more (a kernel moved to the shared core) is stale.
    for folder in OUTPUT_DIRS.values():
        for path in sorted(where(folder).glob("*.py")):
            if folder / path.name not in files:
                drift.append(f"stale generated module (no derivation emits it): {path}\n")
                if not args.check:
                    path.unlink()
    if args.check:
        if drift:
            sys.stdout.write("".join(drift))
            print(
                f"derive --check: {len(drift)} generated file(s) out of sync under {base};"
                " run `tsallis derive`.",
                file=sys.stderr,
            )
            return 1
        print(f"derive --check: the generated code under {base} is in sync with the derivations")
        return 0
    state = f"{len(drift)} file(s) updated" if drift else "everything up to date"
    print(f"derive: {state} under {base}")
    return 0


def _derive_location_scale(args: argparse.Namespace) -> int:
    import sympy as sp

    from tsallis.derivations.codegen import render_module
    from tsallis.derivations.location_scale import InvalidScoreError, derive_location_scale

    if args.g is None:
        raise _UsageError("derive location-scale: --g is required, e.g. --g 't**4/12'")
    try:
        with _time_limit(args.timeout, "derive location-scale: the derivation of g"):
            result = derive_location_scale(args.g, dps=args.dps)
    except InvalidScoreError as error:
        raise _UsageError(f"derive location-scale: {error}") from None
    a = result.support / result.symbols["scale"]
    for label, value in (("a", a), ("lambda", result.threshold), ("p(t)", result.density)):
        print(f"{label} = {sp.sstr(value)}")
        print(f"    LaTeX: {sp.latex(value)}")
    for note in result.notes:
        print(note)
    if args.emit:
        source = "derivations/location_scale.py"
        print(
            render_module(
                result.title,
                source,
                f"derive_location_scale({args.g!r})",
                result.kernels,
                args.emit,
            )
        )
    return 0


def _verify(args: argparse.Namespace) -> int:
    from tsallis.verify import main as verify_main

    return verify_main(dps=args.dps, families=args.family, as_json=args.json, full=args.full)


def _convergence(args: argparse.Namespace) -> int:
    from tsallis.convergence import main as convergence_main

    if args.plot:
        _output_file(args.plot, "convergence --plot")
        _need_matplotlib("convergence --plot")

    return convergence_main(args.case, args.rule, as_json=args.json, plot_path=args.plot)


def _figures(args: argparse.Namespace) -> int:
    from tsallis.figures import FIGURES
    from tsallis.figures import main as figures_main

    unknown = [name for name in args.only or () if name not in FIGURES]
    if unknown:
        raise _UsageError(f"figures: unknown figure(s) {unknown}; choose from {list(FIGURES)}")
    _need_matplotlib("figures")
    _output_dir(args.out, "figures --out")

    return figures_main(args.out, args.only)


def _experiment(args: argparse.Namespace) -> int:
    import dataclasses

    try:  # before the experiment's module, which imports torch
        import torch  # noqa: F401
    except ImportError:
        raise _UsageError("experiment needs torch: pip install 'tsallis[torch]'") from None
    from tsallis.experiments import time_warping

    fields = ("series", "seeds", "epochs")
    settings = dataclasses.replace(
        time_warping.Settings(),
        **{name: getattr(args, name) for name in fields if getattr(args, name) is not None},
        **({"models": tuple(args.models)} if args.models else {}),
    )
    for name in fields:
        if getattr(settings, name) < 1:
            print(f"experiment: --{name} must be >= 1", file=sys.stderr)
            return 2
    if settings.series * settings.test_fraction < 1:
        print("experiment: --series is too small for a test split", file=sys.stderr)
        return 2
    figure = None if args.figure == "" else args.figure
    if figure is not None:  # checked before hours of training, not after
        _output_file(figure, "experiment --figure")
        _need_matplotlib("experiment --figure")
    return time_warping.main(settings, figure)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``tsallis`` command (exposed for tests and docs).

    Each subcommand's namespace carries its handler as ``args.handler``; ``main``
    calls it. The documentation site prints each subcommand's help from here.

    Returns:
        The parser, with the subcommands derive (and derive location-scale), verify,
        convergence, figures and experiment.

    Examples:
        >>> args = build_parser().parse_args(["verify", "--family", "triangular"])
        >>> args.command, args.family
        ('verify', ['triangular'])
    """
    parser = argparse.ArgumentParser(
        prog="tsallis",
        description=__doc__,
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from tsallis import __version__
    from tsallis.convergence import CASES, RULES
    from tsallis.figures import FIGURES
    from tsallis.verify import FAMILIES

    parser.add_argument("--version", action="version", version=f"tsallis {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    derive = sub.add_parser(
        "derive", help="regenerate closed forms (or derive one location-scale g)"
    )
    derive.add_argument(
        "family",
        nargs="?",
        help="the one valid name, location-scale, derives the family of a custom g (--g);"
        " without it every closed form is regenerated",
    )
    derive.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 with a diff on drift"
    )
    derive.add_argument(
        "--g",
        help="g(t) as a SymPy string, e.g. 't**4/12' (write --g=EXPR if EXPR starts with '-')",
    )
    derive.add_argument("--emit", choices=["numpy", "torch"], help="also print generated source")
    derive.add_argument(
        "--out",
        metavar="DIR",
        help="write the generated modules and FORMULAS.md under DIR (needed where tsallis"
        " is installed rather than run from a source checkout, which derive never rewrites)",
    )
    derive.add_argument(
        "--dps",
        type=_digits,
        default=50,
        help=f"digits for a numeric root, {DPS_RANGE[0]} to {DPS_RANGE[1]} (default 50)",
    )
    derive.add_argument(
        "--timeout",
        type=_positive_seconds,
        default=120.0,
        help="seconds allowed for deriving one g (default 120)",
    )
    derive.set_defaults(handler=_derive)
    verify = sub.add_parser("verify", help="check generated code against mpmath")
    verify.add_argument(
        "--dps",
        type=_digits,
        default=40,
        help=f"mpmath working digits, {DPS_RANGE[0]} to {DPS_RANGE[1]} (default 40)",
    )
    verify.add_argument(
        "--family",
        nargs="+",
        metavar="NAME",
        help=f"restrict to these families: {', '.join(FAMILIES)}",
    )
    verify.add_argument("--json", action="store_true", help="print one JSON object")
    verify.add_argument(
        "--full", action="store_true", help="also every grid point of every quantity"
    )
    verify.set_defaults(handler=_verify)
    convergence = sub.add_parser("convergence", help="quadrature error against nodes, vs mpmath")
    convergence.add_argument(
        "--case",
        nargs="+",
        metavar="CASE",
        help=f"cases {', '.join(CASES)} (default: all; see the module tsallis.convergence)",
    )
    convergence.add_argument(
        "--rule",
        nargs="+",
        metavar="RULE",
        help=f"keep rules whose name contains one of these: {', '.join(RULES)}",
    )
    convergence.add_argument("--json", action="store_true", help="print a JSON list")
    convergence.add_argument(
        "--plot", metavar="PATH", help="write an error-vs-nodes figure (matplotlib)"
    )
    convergence.set_defaults(handler=_convergence)
    figures = sub.add_parser("figures", help="draw the papers' figures (matplotlib)")
    figures.add_argument("--out", default="figures", help="output folder (default figures/)")
    figures.add_argument(
        "--only", nargs="+", metavar="NAME", help=f"draw only these: {', '.join(FIGURES)}"
    )
    figures.set_defaults(handler=_figures)
    experiment = sub.add_parser("experiment", help="train small models with the torch ops")
    experiment.add_argument("name", choices=["time-warping"], help="Moreno 2022 sec 6.1")
    experiment.add_argument("--series", type=int, help="dataset size (default 10000)")
    experiment.add_argument("--seeds", type=int, help="independent runs (default 8)")
    experiment.add_argument("--epochs", type=int, help="epochs per run (default 12)")
    experiment.add_argument(
        "--models",
        nargs="+",
        choices=[
            "continuous softmax",
            "continuous sparsemax",
            "kernel softmax",
            "kernel sparsemax",
        ],
        help="subset of the four attention models (quote each name)",
    )
    experiment.add_argument(
        "--figure",
        default="figures/time_warping_densities.png",
        help="learned-densities PNG ('' for none; default figures/time_warping_densities.png)",
    )
    experiment.set_defaults(handler=_experiment)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tsallis`` console script; returns the exit code.

    Bad input never reaches the user as a traceback: usage errors, invalid
    values (ValueError, TypeError) and unwritable paths (OSError) print one
    line on stderr and return 2; set TSALLIS_DEBUG=1 to see the traceback
    instead. Other exceptions are bugs and propagate.

    Args:
        argv: the arguments after ``tsallis`` (None: ``sys.argv[1:]``).

    Returns:
        0 on success, 1 when a verification or check fails, 2 for a usage or input
        error, 130 when interrupted.

    Raises:
        SystemExit: from argparse, for ``--help``, ``--version`` (code 0) and unknown
            options (code 2).

    Examples:
        >>> main(["convergence", "--case", "b", "--rule", "gauss"])  # doctest: +ELLIPSIS
        (b) gauss-legendre ...
        1 studies in ... s
        0
        >>> main(["convergence", "--case", "z"])  # one line on stderr
        2
    """
    parser = build_parser()
    args = parser.parse_args(argv)  # argparse itself exits 2 on bad options
    if os.environ.get("TSALLIS_DEBUG"):
        return int(args.handler(args))
    try:
        return int(args.handler(args))
    except _UsageError as error:
        message = str(error)
    except (ValueError, TypeError) as error:
        message = f"{args.command}: {error}"
    except OSError as error:
        where = f" ({error.filename})" if error.filename else ""
        message = f"{args.command}: {error.strerror or error}{where}"
    except KeyboardInterrupt:
        print(f"{parser.prog}: interrupted", file=sys.stderr)
        return 130
    print(message.splitlines()[0] if message else f"{args.command}: failed", file=sys.stderr)
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
