"""Generated xp closed forms. Do NOT edit: run `tsallis derive`."""

from . import attention
from . import discrete

__all__ = ["attention", "discrete"]
