"""Moved to :mod:`derivations.output.tex`; this name forwards to it."""
from .output.tex import *  # noqa: F401,F403
from .output.tex import __all__  # noqa: F401
