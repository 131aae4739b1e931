"""Moved to :mod:`numerics.functions.lambdified`; this name forwards to it."""
from .functions.lambdified import *  # noqa: F401,F403
from .functions.lambdified import __all__  # noqa: F401
from .functions.lambdified import __getattr__  # noqa: F401  (the SymPy-side names, on demand)
