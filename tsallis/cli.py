"""The ``tsallis`` command: derive, verify, convergence, figures, experiment."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def _derive(args: argparse.Namespace) -> int:
    if args.family == "location-scale":
        return _derive_location_scale(args)
    if args.family is not None:
        print(
            f"derive: unknown family {args.family!r}; only 'location-scale' takes options",
            file=sys.stderr,
        )
        return 2
    from derivations.codegen import compare_or_update
    from derivations.registry import ROOT, render_all

    drift = []
    for relative, text in render_all().items():
        diff = compare_or_update(ROOT / relative, text, update=not args.check)
        if diff:
            drift.append(diff)
    if args.check:
        if drift:
            sys.stdout.write("".join(drift))
            print(
                f"derive --check: {len(drift)} generated file(s) out of sync; "
                "run `tsallis derive`.",
                file=sys.stderr,
            )
            return 1
        print("derive --check: generated code is in sync with derivations/")
        return 0
    print(f"derive: {len(drift)} file(s) updated" if drift else "derive: everything up to date")
    return 0


def _derive_location_scale(args: argparse.Namespace) -> int:
    import sympy as sp

    from derivations.codegen import render_module
    from derivations.location_scale import InvalidScoreError, derive_location_scale

    if args.g is None:
        print("derive location-scale: --g is required, e.g. --g 't**4/12'", file=sys.stderr)
        return 2
    try:
        result = derive_location_scale(args.g, dps=args.dps)
    except InvalidScoreError as error:
        print(f"derive location-scale: {error}", file=sys.stderr)
        return 2
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

    return convergence_main(args.case, args.rule, as_json=args.json, plot_path=args.plot)


def _figures(args: argparse.Namespace) -> int:
    from tsallis.figures import main as figures_main

    return figures_main(args.out, args.only)


def _experiment(args: argparse.Namespace) -> int:
    import dataclasses

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
    return time_warping.main(settings, None if args.figure == "" else args.figure)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and docs)."""
    parser = argparse.ArgumentParser(prog="tsallis", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    derive = sub.add_parser(
        "derive", help="regenerate closed forms (or derive one location-scale g)"
    )
    derive.add_argument("family", nargs="?", help="'location-scale' to derive a custom g")
    derive.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 with a diff on drift"
    )
    derive.add_argument(
        "--g",
        help="g(t) as a SymPy string, e.g. 't**4/12' (write --g=EXPR if EXPR starts with '-')",
    )
    derive.add_argument("--emit", choices=["numpy", "torch"], help="also print generated source")
    derive.add_argument(
        "--dps", type=int, default=50, help="digits for a numeric root (default 50)"
    )
    derive.set_defaults(handler=_derive)
    verify = sub.add_parser("verify", help="check generated code against mpmath")
    verify.add_argument("--dps", type=int, default=40, help="mpmath working digits (default 40)")
    verify.add_argument("--family", nargs="+", help="restrict to these families")
    verify.add_argument("--json", action="store_true", help="print one JSON object")
    verify.add_argument(
        "--full", action="store_true", help="also every grid point of every quantity"
    )
    verify.set_defaults(handler=_verify)
    convergence = sub.add_parser("convergence", help="quadrature error against nodes, vs mpmath")
    convergence.add_argument("--case", nargs="+", help="cases a-f (default: all)")
    convergence.add_argument(
        "--rule", nargs="+", help="keep rules whose name contains one of these"
    )
    convergence.add_argument("--json", action="store_true", help="print a JSON list")
    convergence.add_argument(
        "--plot", metavar="PATH", help="write an error-vs-nodes figure (matplotlib)"
    )
    convergence.set_defaults(handler=_convergence)
    figures = sub.add_parser("figures", help="draw the seed papers' figures (matplotlib)")
    figures.add_argument("--out", default="figures", help="output folder (default figures/)")
    figures.add_argument("--only", nargs="+", metavar="NAME", help="draw only these figures")
    figures.set_defaults(handler=_figures)
    experiment = sub.add_parser("experiment", help="train small models with the torch ops")
    experiment.add_argument("name", choices=["time-warping"], help="seed 001 sec 6.1")
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
    """Entry point of the ``tsallis`` console script."""
    args = build_parser().parse_args(argv)
    return int(args.handler(args))


if __name__ == "__main__":
    sys.exit(main())
