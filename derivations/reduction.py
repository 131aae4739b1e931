"""Moved to :mod:`derivations.tasks.paper.reduction`; this name forwards to it."""
from .tasks.paper.reduction import *  # noqa: F401,F403
from .tasks.paper.reduction import __all__  # noqa: F401
