"""Moved to :mod:`numerics.dynamics.reduced_system`; this name forwards to it."""
from .dynamics.reduced_system import *  # noqa: F401,F403
from .dynamics.reduced_system import __all__  # noqa: F401
