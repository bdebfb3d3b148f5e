"""The shared numerical core: what the NumPy face (tsallis) and the Torch face
(torch_bridge) both run.

- ``tuning``: the regime thresholds shared by both backends.
- ``rules``: Gauss-Legendre and Gauss-Jacobi tables (any exponent).
- ``special``: the special-function table of the generated NumPy code.
- ``validation``: argument checks with ValueError/TypeError naming the argument.

The core imports neither face nor the tools (CLI, verify, figures); the
contracts in pyproject.toml ([tool.importlinter]) enforce it.
"""
