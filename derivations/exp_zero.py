"""Moved to :mod:`derivations.symbolic.exp_zero`; this name forwards to it."""
from .symbolic.exp_zero import *  # noqa: F401,F403
from .symbolic.exp_zero import __all__  # noqa: F401
