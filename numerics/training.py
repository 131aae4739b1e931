"""Moved to :mod:`numerics.dynamics.training`; this name forwards to it."""
from .dynamics.training import *  # noqa: F401,F403
from .dynamics.training import __all__  # noqa: F401
