"""Moved to :mod:`derivations.output.dynamics`; this name forwards to it."""
from .output.dynamics import *  # noqa: F401,F403
from .output.dynamics import __all__  # noqa: F401
