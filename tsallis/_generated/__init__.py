"""Generated numpy closed forms. Do NOT edit: run `tsallis derive`."""

from . import gaussian
from . import laplace
from . import truncated_parabola
from . import triangular
from . import location_scale_cubic
from . import location_scale_quadratic
from . import beta_gaussian
from tsallis.core._generated import deformed
from tsallis.core._generated import truncated_paraboloid
from tsallis.core._generated import special_functions
from tsallis.core._generated import attention
from tsallis.core._generated import discrete

__all__ = ["gaussian", "laplace", "truncated_parabola", "triangular", "location_scale_cubic", "location_scale_quadratic", "beta_gaussian", "deformed", "truncated_paraboloid", "special_functions", "attention", "discrete"]
