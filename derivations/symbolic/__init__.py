"""Layer 1: the symbolic vocabulary every derivation shares (SymPy).

* :mod:`~derivations.symbolic.symbols`: the model's symbols, created once with
  their assumptions;
* :mod:`~derivations.symbolic.special_functions`: the Wright omega function;
* :mod:`~derivations.symbolic.srepr_reader`: expressions stored as data
  (``srepr`` text read back from a whitelist, never ``eval``);
* :mod:`~derivations.symbolic.exp_zero`: an exact, cheap zero test for
  expressions in exponentials;
* :mod:`~derivations.symbolic.forms`: the one compact form (:func:`canonical`)
  of every derived flow.

Imports only :mod:`derivations.core` and SymPy.
"""
from .exp_zero import exp_to_symbols, is_zero_exactly
from .forms import canonical
from .special_functions import lambert_to_wright_omega, wright_omega
from .srepr_reader import UnsafeExpression, from_srepr, to_srepr
from .symbols import RATES, SYMBOLS

__all__ = ["canonical", "exp_to_symbols", "is_zero_exactly", "wright_omega", "lambert_to_wright_omega",
           "from_srepr", "to_srepr", "UnsafeExpression", "SYMBOLS", "RATES"]
