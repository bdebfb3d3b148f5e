"""tsallis: sparse (alpha-Tsallis) families with derived closed forms.

Distributions feel like scipy.stats; every closed form comes from
``derivations/`` through generated code. Importing tsallis does not import SymPy.
"""

from tsallis.deformed import exp_beta, log_beta, tsallis_entropy
from tsallis.distributions import (
    BetaGaussian,
    Gaussian,
    Laplace,
    LocationScale,
    Triangular,
    TruncatedParabola,
    TruncatedParaboloid,
)

__version__ = "0.1.0"

__all__ = [
    "BetaGaussian",
    "Gaussian",
    "Laplace",
    "LocationScale",
    "Triangular",
    "TruncatedParabola",
    "TruncatedParaboloid",
    "exp_beta",
    "log_beta",
    "tsallis_entropy",
]
