"""Numeric functions of the derived theory, SymPy-free at import.

* :mod:`numerics.functions.lambdified`: the named builders of the theory's functions,
  over the code generated ahead of time from the derivation catalog
  (``numerics._generated``).
* :mod:`numerics.functions.numeric_function`: :class:`NumericFunction` (named
  arguments), :func:`generated_function` (a function of the generated code by its
  registry name) and :func:`numeric`, the run-time lambdify backend for expressions
  that have no generated code (imports SymPy when called).
* :mod:`numerics.functions.special_functions`: the special functions the
  generated code calls (vectorized Wright omega, Ei, their mpmath variants).
"""
from .lambdified import *  # noqa: F401,F403
from .lambdified import __all__ as _lambdified_all
from .numeric_function import *  # noqa: F401,F403
from .numeric_function import __all__ as _numeric_function_all
from .special_functions import *  # noqa: F401,F403
from .special_functions import __all__ as _special_all

__all__ = list(_lambdified_all) + list(_numeric_function_all) + list(_special_all)
