"""Moved to :mod:`derivations.output.numeric_codegen`; this name forwards to it."""
from .output.numeric_codegen import *  # noqa: F401,F403
from .output.numeric_codegen import __all__  # noqa: F401
