"""Moved to :mod:`numerics.model.family`; this name forwards to it."""
from .model.family import *  # noqa: F401,F403
from .model.family import __all__  # noqa: F401
