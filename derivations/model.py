"""Moved to :mod:`derivations.tasks.paper.model`; this name forwards to it."""
from .tasks.paper.model import *  # noqa: F401,F403
from .tasks.paper.model import __all__  # noqa: F401
from .tasks.paper.model import _family_flow  # noqa: F401
