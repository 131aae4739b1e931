"""Moved to :mod:`numerics.dynamics.reduced_ode`; this name forwards to it."""
from .dynamics.reduced_ode import *  # noqa: F401,F403
from .dynamics.reduced_ode import __all__  # noqa: F401
