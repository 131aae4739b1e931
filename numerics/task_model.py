"""Moved to :mod:`numerics.model`; this name forwards to it."""
from derivations.core.vocabulary import PARAMETERIZATIONS  # noqa: F401

from .model import *  # noqa: F401,F403
from .model import __all__  # noqa: F401
