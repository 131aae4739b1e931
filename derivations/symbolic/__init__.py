"""Layer 1: the symbolic vocabulary every derivation shares (SymPy).

* :mod:`~derivations.symbolic.symbols`: the model's symbols (``m, n, b, M``, the rates,
  ``mu_OV, mu_QK``, ...; all but ``MODEL_PARAMETERS`` exported here), created once with
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

#: ``{defining module: public names}``.
_HOMES = {
    ".forms": ("canonical",),
    ".exp_zero": ("exp_to_symbols", "is_zero_exactly", "is_zero"),
    ".special_functions": ("wright_omega", "lambert_to_wright_omega"),
    ".srepr_reader": ("from_srepr", "to_srepr", "UnsafeExpression", "power_bits"),
    ".symbols": ("m", "n", "b", "M", "eta_QK", "eta_OV", "eta_Q", "eta_K", "eta_O", "eta_V",
                 "mu_OV", "mu_QK", "mu_OV_0", "mu_QK_0", "C_QK", "C_OV", "alpha", "t", "L", "r",
                 "s", "p", "RATES", "SYMBOLS", "H", "X", "Y", "F", "W", "LOSS", "ALPHA_0",
                 "ETA_EFF"),
}

__all__ = [name for names in _HOMES.values() for name in names]
# loaded on first use: reading a cache does not import the zero test or the canonical form
__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
