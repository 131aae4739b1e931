"""Moved to :mod:`derivations.symbolic.srepr_reader`; this name forwards to it."""
from .symbolic.srepr_reader import *  # noqa: F401,F403
from .symbolic.srepr_reader import __all__  # noqa: F401
from .symbolic.srepr_reader import ASSUMPTIONS  # noqa: F401
