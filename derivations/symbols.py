"""Moved to :mod:`derivations.symbolic.symbols`; this name forwards to it."""
from .symbolic.symbols import *  # noqa: F401,F403
from .symbolic.symbols import __all__  # noqa: F401
