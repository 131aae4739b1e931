"""Moved to :mod:`derivations.tasks.paper.sharpness`; this name forwards to it."""
from .tasks.paper.sharpness import *  # noqa: F401,F403
from .tasks.paper.sharpness import __all__  # noqa: F401
