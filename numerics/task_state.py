"""Moved to :mod:`numerics.dynamics.task_systems`; this name forwards to it."""
from .dynamics.task_systems import *  # noqa: F401,F403
from .dynamics.task_systems import __all__  # noqa: F401
