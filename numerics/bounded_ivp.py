"""Moved to :mod:`numerics.dynamics.bounded_ivp`; this name forwards to it."""
from .dynamics.bounded_ivp import *  # noqa: F401,F403
from .dynamics.bounded_ivp import __all__  # noqa: F401
