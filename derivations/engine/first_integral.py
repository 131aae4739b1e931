r"""First integrals of two-observable reduced flows, by separating the orbit equation.

One procedure serves the engine (:func:`derivations.engine.reduce.reduce_task`)
and the paper's closed forms (:mod:`derivations.tasks.paper.first_integral`):

1. :func:`separate`: divide the reduced ODEs, ``dmu_QK/dmu_OV = f_QK/f_OV``,
   and split the ratio with :func:`sympy.separatevars` into
   ``h(mu_OV) / g(mu_QK)`` (None when it does not separate);
2. :func:`integrals`: ``G = int g dmu_QK`` and ``F = int h dmu_OV``, so that
   ``H = G - F`` is constant along the flow (:func:`first_integral_of`
   checks ``dH/dt = 0``);
3. :func:`orbit_of`: solve ``G(mu_QK) = G(mu_QK_0) + F(mu_OV) - F(mu_OV_0)``
   for mu_QK (Lambert W, written with the Wright omega function), or keep the
   implicit equation where the exponential integral Ei appears.

>>> import sympy as sp
>>> x, y = sp.symbols("x y", positive=True)
>>> g, h = separate({x: 1 / y, y: x}, x, y)
>>> g, h
(1/y, x)
>>> first_integral_of({x: 1 / y, y: x}, x, y)
-x**2/2 + log(y)
"""
from __future__ import annotations

import sympy as sp

from ..symbolic.special_functions import lambert_to_wright_omega
from ..symbolic.symbols import mu_OV_0, mu_QK_0

__all__ = ["separate", "integrals", "first_integral_of", "orbit_of"]

# positive stand-ins: on every trajectory from the paper's initializations
# mu_OV, mu_QK >= 0, and factorized circuits keep them > 0.
_xo, _xq = sp.symbols("x_OV x_QK", positive=True)


def separate(odes: dict, ov, qk):
    """``(g(qk), h(ov))`` with ``d qk / d ov = h(ov) / g(qk)`` for the flow ``odes``
    (``{ov: d ov/dt, qk: d qk/dt}``), found by :func:`sympy.separatevars`; None
    when the orbit equation does not separate.

    Parameters
    ----------
    odes : dict
        ``{ov: d ov/dt, qk: d qk/dt}``.
    ov, qk : sympy.Symbol
        The logit-gap and the score-gap observable.

    Returns
    -------
    tuple of sympy.Expr or None
    """
    ratio = sp.simplify(sp.simplify(odes[qk] / odes[ov]).subs({ov: _xo, qk: _xq}))
    parts = sp.separatevars(ratio, symbols=[_xo, _xq], dict=True)
    if parts is None:
        return None
    h = parts["coeff"] * parts.get(_xo, 1)
    g = 1 / parts.get(_xq, 1)
    return sp.simplify(g).subs(_xq, qk), sp.simplify(h).subs(_xo, ov)


def integrals(g, h, ov, qk):
    """``(G(qk), F(ov))``: the antiderivatives of the separated parts (:func:`separate`).

    Parameters
    ----------
    g, h : sympy.Expr
        ``g(qk)`` and ``h(ov)``.
    ov, qk : sympy.Symbol
        The logit-gap and the score-gap observable.

    Returns
    -------
    tuple of sympy.Expr
    """
    G = sp.integrate(sp.expand(g.subs(qk, _xq)), _xq)
    F = sp.integrate(sp.expand(h.subs(ov, _xo)), _xo)
    return sp.simplify(G).subs(_xq, qk), sp.factor(F).subs(_xo, ov)


def first_integral_of(odes: dict, ov, qk):
    """``H = G - F`` (:func:`integrals`) with ``dH/dt = 0`` checked along ``odes``; None when
    the orbit equation does not separate or the check fails.

    Parameters
    ----------
    odes : dict
        ``{ov: d ov/dt, qk: d qk/dt}``.
    ov, qk : sympy.Symbol
        The logit-gap and the score-gap observable.

    Returns
    -------
    sympy.Expr or None
    """
    parts = separate(odes, ov, qk)
    if parts is None:
        return None
    G, F = integrals(*parts, ov, qk)
    H = sp.expand(G - F)
    dH = sp.simplify(sp.diff(H, ov) * odes[ov] + sp.diff(H, qk) * odes[qk])
    return H if dH == 0 else None


def orbit_of(G, F, ov, qk):
    """The orbit ``G(qk) - F(ov) = G(mu_QK_0) - F(mu_OV_0)`` through the initial values
    ``mu_OV_0``, ``mu_QK_0``: qk explicitly (Lambert W written as Wright omega) when ``G``
    inverts, else the implicit :class:`sympy.Eq` (Ei in ``G``).

    Parameters
    ----------
    G, F : sympy.Expr
        ``G(qk)`` and ``F(ov)`` (:func:`integrals`).
    ov, qk : sympy.Symbol
        The logit-gap and the score-gap observable.

    Returns
    -------
    sympy.Expr or sympy.Eq
    """
    rhs = G.subs(qk, mu_QK_0) + F - F.subs(ov, mu_OV_0)
    if G.has(sp.Ei):
        return sp.Eq(G, rhs)
    K = sp.Symbol("K", real=True)
    sol = sp.solve(sp.Eq(G, K), qk)
    if len(sol) != 1:
        return sp.Eq(G, rhs)
    return lambert_to_wright_omega(sol[0]).subs(K, rhs)
