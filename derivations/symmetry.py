"""Moved to :mod:`derivations.engine.symmetry`; this name forwards to it."""
from .engine.symmetry import *  # noqa: F401,F403
from .engine.symmetry import __all__  # noqa: F401
