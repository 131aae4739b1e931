"""Moved to :mod:`derivations.core.output`; this name forwards to it."""
from .core.output import *  # noqa: F401,F403
from .core.output import __all__  # noqa: F401
