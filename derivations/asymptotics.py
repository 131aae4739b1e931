"""Moved to :mod:`derivations.tasks.paper.asymptotics`; this name forwards to it."""
from .tasks.paper.asymptotics import *  # noqa: F401,F403
from .tasks.paper.asymptotics import __all__  # noqa: F401
