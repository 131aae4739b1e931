"""The SymPy symbols of the QK/OV model, created once with their assumptions.

Every module of :mod:`derivations` imports its symbols from here, so that
expressions built in different modules combine (SymPy identifies symbols by
name *and* assumptions).

=================  ===============================================================
symbol             meaning
=================  ===============================================================
``m, n``           number of relevant / irrelevant context tokens (positive reals)
``b``              embedding scale: tokens are one-hot vectors divided by sqrt(b)
``M``              number of classes (integer >= 2); embedding dimension d = 2M
``eta_*``          learning rates: collapsed ``eta_QK, eta_OV``; factors
                   ``eta_Q, eta_K`` (W_QK = W_Q W_K^T), ``eta_O, eta_V``
                   (W_OV = W_O W_V)
``mu_OV``          logit gap per unit of relevant attention, (z_k - z_j)/alpha
``mu_QK``          score of a relevant token minus score of an irrelevant one
``mu_OV_0``,       the initial point of a trajectory
``mu_QK_0``
``C_QK, C_OV``     conserved quantities of factorized circuits (zero = balanced)
``alpha``          total attention on the m relevant tokens, in (0, 1)
``t``              gradient-flow time
``L``              a loss level (``L_star`` in the paper's fixed-loss comparison)
``r``              the learning-rate ratio eta_QK / eta_OV
``s``              the margin alpha * mu_OV
``p``              the attention odds alpha / (1 - alpha)
=================  ===============================================================

>>> from derivations.symbolic.symbols import m, mu_QK
>>> m.is_positive, mu_QK.is_real
(True, True)
"""
import sympy as sp

__all__ = ["m", "n", "b", "M", "eta_QK", "eta_OV", "eta_Q", "eta_K", "eta_O", "eta_V", "mu_OV", "mu_QK",
           "mu_OV_0", "mu_QK_0", "C_QK", "C_OV", "alpha", "t", "L", "r", "s", "p", "MODEL_PARAMETERS",
           "RATES", "SYMBOLS", "H", "X", "Y", "F", "W", "LOSS", "ALPHA_0", "ETA_EFF"]

m, n, b = sp.symbols("m n b", positive=True)
M = sp.Symbol("M", positive=True, integer=True)

eta_QK, eta_OV, eta_Q, eta_K, eta_O, eta_V = sp.symbols(
    "eta_QK eta_OV eta_Q eta_K eta_O eta_V", positive=True)

mu_OV, mu_QK = sp.symbols("mu_OV mu_QK", real=True)
mu_OV_0, mu_QK_0 = sp.symbols("mu_OV_0 mu_QK_0", real=True)
C_QK, C_OV = sp.symbols("C_QK C_OV", real=True)

alpha = sp.Symbol("alpha", positive=True)
t = sp.Symbol("t", nonnegative=True)
L = sp.Symbol("L", positive=True)
r = sp.Symbol("r", positive=True)
s = sp.Symbol("s", positive=True)
p = sp.Symbol("p", positive=True)

#: Model parameters that ``--params`` may substitute.
MODEL_PARAMETERS = (m, n, b, M)
#: All learning rates.
RATES = (eta_QK, eta_OV, eta_Q, eta_K, eta_O, eta_V)

#: Name -> symbol, for parsing expressions back (``sympy.sympify(text, locals=SYMBOLS)``).
SYMBOLS = {str(x): x for x in (
    m, n, b, M, *RATES, mu_OV, mu_QK, mu_OV_0, mu_QK_0, C_QK, C_OV,
    alpha, t, L, r, s, p)}

# Names of derived quantities, used as left-hand sides of catalog results
# (derivations.catalog.Result.lhs) and in the LaTeX prose. No assumptions:
# they are names, not variables of a derivation.
#: The first integral, the line coordinates, the state equation, a product of factors.
H, X, Y, F, W = sp.symbols("H X Y F W")
#: The loss value (a name; ``L`` above is the positive loss *level* of sharpness).
LOSS = sp.Symbol("L")
#: The attention at initialization.
ALPHA_0 = sp.Symbol("alpha_0")
#: Effective learning rates of factorized circuits.
ETA_EFF = {"QK": sp.Symbol("eta_eff^QK"), "OV": sp.Symbol("eta_eff^OV")}
