"""Moved to :mod:`derivations.symbolic.special_functions`; this name forwards to it."""
from .symbolic.special_functions import *  # noqa: F401,F403
from .symbolic.special_functions import __all__  # noqa: F401
