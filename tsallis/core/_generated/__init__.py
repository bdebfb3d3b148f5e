"""Generated xp closed forms. Do NOT edit: run `tsallis derive`."""

from . import attention

__all__ = ["attention"]
