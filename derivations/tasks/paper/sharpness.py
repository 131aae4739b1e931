r"""Sharpness at a fixed loss: faster QK learning gives sharper attention.

CACO from zero initialization, eta_OV = 1 and ratio r = eta_QK/eta_OV.

1. At loss level L the margin s = alpha mu_OV is fixed (:func:`margin_at_loss`):
   :math:`s = \log\frac{M-1}{e^{L}-1}`.
2. Write the state through the attention odds p = alpha/(1 - alpha)
   (:func:`state_from_odds`): alpha = p/(1+p), mu_QK = log(n p/m),
   mu_OV = s/alpha.
3. The orbit through (0, 0) (:func:`derivations.tasks.paper.first_integral.orbit`)
   becomes one equation F(p; s, r) = 0 (:func:`state_equation`), whose root
   is the state at loss L.
4. Signs (:func:`sharpness_signs`): dF/dp > 0 and dF/dr < 0, so by implicit
   differentiation dp/dr > 0; hence alpha* and mu_QK* increase and mu_OV*
   decreases with r. SymPy decides every sign from the assumptions
   (all symbols positive).

>>> from derivations.tasks.paper.sharpness import margin_at_loss, sharpness_signs
>>> margin_at_loss()
log((M - 1)/(exp(L) - 1))
>>> {name: sign for name, (_, sign) in sharpness_signs().items()}
{'dF/dp': 1, 'dF/dr': -1, 'dp/dr': 1, 'dalpha/dr': 1, 'dmu_QK/dr': 1, 'dmu_OV/dr': -1}
"""
from __future__ import annotations

from functools import lru_cache

import sympy as sp

from .first_integral import first_integral
from .model import family, mu_QK_of_alpha
from ...symbolic.symbols import L, M, alpha, eta_OV, eta_QK, mu_OV, mu_QK, p, r, s

__all__ = ["margin_at_loss", "state_from_odds", "state_equation", "sharpness_signs"]


@lru_cache(maxsize=None)
def margin_at_loss():
    """The margin s = alpha mu_OV at loss L, solved from the family's loss."""
    y = sp.Symbol("y", positive=True)   # y = e^s, so that the loss is one logarithm
    loss = family("CACO").reduced_loss().subs(alpha, 1).subs(mu_OV, sp.log(y))
    loss = sp.logcombine(sp.expand_log(loss, force=True), force=True)
    (sol,) = sp.solve(sp.Eq(loss, L), y)
    sol = sp.log(sol)
    return sp.simplify(sol)


@lru_cache(maxsize=None)
def state_from_odds():
    """``{"alpha", "mu_QK", "mu_OV"}`` as functions of the odds p and margin s."""
    a = p / (1 + p)
    return {"alpha": a,
            "mu_QK": sp.simplify(sp.expand_log(mu_QK_of_alpha().subs(alpha, a), force=True)),
            "mu_OV": sp.simplify(s / a)}


@lru_cache(maxsize=None)
def state_equation():
    """F(p; s, r): the orbit of CACO through (0, 0) at the state of margin s,
    H(mu_OV, mu_QK) - H(0, 0), normalized so that its p-coefficient is 1."""
    H = first_integral("CACO").subs({eta_QK: r, eta_OV: 1})
    state = state_from_odds()
    F = H.subs({mu_QK: state["mu_QK"], mu_OV: state["mu_OV"]}) - H.subs({mu_QK: 0, mu_OV: 0})
    F = sp.expand(sp.expand_log(sp.simplify(F), force=True))
    F = sp.expand(F / F.coeff(p, 1))
    rate_term = sp.factor(F.coeff(r, 1))
    rest = sp.expand(F - r * F.coeff(r, 1))
    return sp.logcombine(rest, force=True) + r * rate_term


def _sign(expr):
    """+1/-1 as decided by SymPy's assumptions, with M = 1 + Q, Q > 0 (M >= 2)."""
    Q = sp.Symbol("Q", positive=True)
    expr = sp.factor(sp.simplify(expr.subs(M, 1 + Q)))
    if expr.is_positive:
        return 1
    if expr.is_negative:
        return -1
    raise ArithmeticError(f"sign undecided: {expr}")  # pragma: no cover


@lru_cache(maxsize=None)
def sharpness_signs():
    """``{name: (expression, sign)}`` for dF/dp, dF/dr, dp/dr and the r-derivatives
    of alpha*, mu_QK*, mu_OV* (implicit differentiation of F = 0)."""
    F = state_equation()
    F_p, F_r = sp.diff(F, p), sp.diff(F, r)
    dp_dr = -F_r / F_p
    state = state_from_odds()
    out = {"dF/dp": F_p, "dF/dr": F_r, "dp/dr": dp_dr}
    for name in ("alpha", "mu_QK", "mu_OV"):
        out[f"d{name}/dr"] = sp.diff(state[name], p) * dp_dr
    return {k: (sp.simplify(v), _sign(v)) for k, v in out.items()}
