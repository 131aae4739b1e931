"""Moved to :mod:`derivations.core.cli`; this name forwards to it."""
from .core.cli import *  # noqa: F401,F403
from .core.cli import __all__  # noqa: F401
