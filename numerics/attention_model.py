"""Moved to :mod:`numerics.model.paper`; this name forwards to it."""
from .model.paper import *  # noqa: F401,F403
from .model.paper import __all__  # noqa: F401
