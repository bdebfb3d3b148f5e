"""Generated xp closed forms. Do NOT edit: run `tsallis derive`."""

from . import deformed
from . import gaussian
from . import laplace
from . import truncated_parabola
from . import truncated_paraboloid
from . import triangular
from . import location_scale_cubic
from . import location_scale_quadratic
from . import beta_gaussian
from . import special_functions
from . import attention
from . import discrete

__all__ = ["deformed", "gaussian", "laplace", "truncated_parabola", "truncated_paraboloid", "triangular", "location_scale_cubic", "location_scale_quadratic", "beta_gaussian", "special_functions", "attention", "discrete"]
