"""Moved to :mod:`numerics.dynamics.gradient_flow`; this name forwards to it."""
from .dynamics.gradient_flow import *  # noqa: F401,F403
from .dynamics.gradient_flow import __all__  # noqa: F401
