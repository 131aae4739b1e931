"""Moved to :mod:`derivations.tasks.paper.factorization`; this name forwards to it."""
from .tasks.paper.factorization import *  # noqa: F401,F403
from .tasks.paper.factorization import __all__  # noqa: F401
