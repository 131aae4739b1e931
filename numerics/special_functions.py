"""Moved to :mod:`numerics.functions.special_functions`; this name forwards to it."""
from .functions.special_functions import *  # noqa: F401,F403
from .functions.special_functions import __all__  # noqa: F401
