"""Moved to :mod:`derivations.core.vocabulary`; this name forwards to it."""
from .core.vocabulary import *  # noqa: F401,F403
from .core.vocabulary import __all__  # noqa: F401
