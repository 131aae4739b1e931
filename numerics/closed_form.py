"""Moved to :mod:`numerics.dynamics.closed_form`; this name forwards to it."""
from .dynamics.closed_form import *  # noqa: F401,F403
from .dynamics.closed_form import __all__  # noqa: F401
