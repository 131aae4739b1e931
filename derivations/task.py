"""Moved to :mod:`derivations.tasks`; this name forwards to it."""
from .tasks import *  # noqa: F401,F403
from .tasks import __all__  # noqa: F401
