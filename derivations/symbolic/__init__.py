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
from ..core import lazy_exports

__all__ = ["canonical", "exp_to_symbols", "is_zero_exactly", "wright_omega", "lambert_to_wright_omega",
           "from_srepr", "to_srepr", "UnsafeExpression", "SYMBOLS", "RATES"]

# loaded on first use: reading a cache does not import the zero test or the canonical form
__getattr__, __dir__ = lazy_exports(__name__, {
    ".forms": ("canonical",),
    ".exp_zero": ("exp_to_symbols", "is_zero_exactly"),
    ".special_functions": ("wright_omega", "lambert_to_wright_omega"),
    ".srepr_reader": ("from_srepr", "to_srepr", "UnsafeExpression"),
    ".symbols": ("SYMBOLS", "RATES"),
})
