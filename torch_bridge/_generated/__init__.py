"""Generated torch closed forms. Do NOT edit: run `tsallis derive`."""

from tsallis.core._generated import deformed
from tsallis.core._generated import gaussian
from tsallis.core._generated import laplace
from tsallis.core._generated import truncated_parabola
from tsallis.core._generated import truncated_paraboloid
from tsallis.core._generated import triangular
from tsallis.core._generated import location_scale_cubic
from tsallis.core._generated import location_scale_quadratic
from tsallis.core._generated import beta_gaussian
from tsallis.core._generated import special_functions
from tsallis.core._generated import attention
from tsallis.core._generated import discrete

__all__ = ["deformed", "gaussian", "laplace", "truncated_parabola", "truncated_paraboloid", "triangular", "location_scale_cubic", "location_scale_quadratic", "beta_gaussian", "special_functions", "attention", "discrete"]
