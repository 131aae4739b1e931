"""Moved to :mod:`numerics.dynamics.trajectory`; this name forwards to it."""
from .dynamics.trajectory import *  # noqa: F401,F403
from .dynamics.trajectory import __all__  # noqa: F401
