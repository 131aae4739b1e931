"""Moved to :mod:`derivations.output.latex_sections`; this name forwards to it."""
from .output.latex_sections import *  # noqa: F401,F403
from .output.latex_sections import __all__  # noqa: F401
from .output.latex_sections import _engine_tex as tex  # noqa: F401
