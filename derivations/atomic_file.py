"""Moved to :mod:`derivations.core.atomic_file`; this name forwards to it."""
from .core.atomic_file import *  # noqa: F401,F403
from .core.atomic_file import __all__  # noqa: F401
