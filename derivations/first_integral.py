"""Moved to :mod:`derivations.tasks.paper.first_integral`; this name forwards to it."""
from .tasks.paper.first_integral import *  # noqa: F401,F403
from .tasks.paper.first_integral import __all__  # noqa: F401
