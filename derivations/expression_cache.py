"""Moved to :mod:`derivations.core.expression_cache`; this name forwards to it."""
from .core.expression_cache import *  # noqa: F401,F403
from .core.expression_cache import __all__  # noqa: F401
