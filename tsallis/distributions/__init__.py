"""Distribution objects that feel like scipy.stats."""

from tsallis.distributions.families import (
    BetaGaussian,
    Gaussian,
    Laplace,
    LocationScale,
    Triangular,
    TruncatedParabola,
    TruncatedParaboloid,
)

__all__ = [
    "BetaGaussian",
    "Gaussian",
    "Laplace",
    "LocationScale",
    "Triangular",
    "TruncatedParabola",
    "TruncatedParaboloid",
]
