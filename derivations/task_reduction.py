"""Moved to :mod:`derivations.engine`; this name forwards to it."""
from .engine import *  # noqa: F401,F403
from .engine import __all__  # noqa: F401
from .core.vocabulary import PARAMETERIZATIONS  # noqa: F401
from .engine.explicit import _explicit_indices  # noqa: F401
from .engine.family import RATE_OF, eps  # noqa: F401
from .engine.reduce import active_coordinates  # noqa: F401
from .engine.symmetry import canonical, class_sum, orbit_size, pattern_name  # noqa: F401
