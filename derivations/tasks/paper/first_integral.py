r"""First integrals and explicit orbits: mu_OV and mu_QK "move along a line".

Procedure (for each parameterization, balanced factors)
-------------------------------------------------------
1. Divide the reduced ODEs: ``dmu_QK/dmu_OV = f_QK/f_OV`` (:func:`orbit_ode`).
   The margin terms cancel and the ratio *separates*,
   ``g(mu_QK) dmu_QK = h(mu_OV) dmu_OV``.
2. Integrate both sides (:func:`first_integral`):
   :math:`H = \int g\,d\mu_{QK} - \int h\,d\mu_{OV}` is constant, and
   :func:`dH_dt` simplifies to zero along the flow.
3. ``int h`` is the learning-rate ratio times a rate-free function, so in the
   coordinates ``X = int h / slope``, ``Y = int g`` every trajectory is a
   straight line of slope set by the rates (:func:`line_coordinates`).
4. Solve ``H(mu_OV, mu_QK) = H(mu_OV_0, mu_QK_0)`` for mu_QK
   (:func:`orbit`, by the engine's :func:`~derivations.engine.first_integral.orbit_of`):
   Lambert W, written with the Wright omega function; where the exponential
   integral Ei appears (factorized QK) the orbit stays implicit.

Steps 1-2 are the engine's separation
(:func:`derivations.engine.first_integral.separate`,
:func:`~derivations.engine.first_integral.integrals`), applied to the paper's
reduced ODEs.

>>> from derivations.tasks.paper.first_integral import first_integral, dH_dt, line_coordinates
>>> first_integral("CACO")
m*exp(mu_QK) + mu_QK*n - eta_QK*mu_OV**2*n/(2*b*eta_OV) + eta_QK*mu_OV**2*n/(2*M*b*eta_OV)
>>> dH_dt("CACO")
0
>>> line_coordinates("CACO")
(mu_OV**2*n*(M - 1)/(2*M*b), m*exp(mu_QK) + mu_QK*n, eta_QK/eta_OV)
"""
from __future__ import annotations

from functools import lru_cache

import sympy as sp

from ...core.vocabulary import check_parameterization
from ...engine.first_integral import integrals, orbit_of, separate
from ...symbolic.symbols import RATES, mu_OV, mu_QK
from .reduction import reduced_odes

__all__ = ["orbit_ode", "separated", "first_integral", "dH_dt", "line_coordinates", "orbit",
           "attention_on_orbit"]


@lru_cache(maxsize=None)
def orbit_ode(parameterization: str = "CACO"):
    """``dmu_QK/dmu_OV`` of the (balanced) reduced flow.

    Parameters
    ----------
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}, optional
        Which circuits are factorized. Default "CACO".

    Returns
    -------
    sympy.Expr
        :math:`f_{QK}/f_{OV}`, simplified, in mu_OV and mu_QK.

    Raises
    ------
    ValueError
        If ``parameterization`` is not one of the four.
    """
    d_ov, d_qk = reduced_odes(check_parameterization(parameterization))
    return sp.simplify(d_qk / d_ov)


@lru_cache(maxsize=None)
def separated(parameterization: str = "CACO"):
    """``(g(mu_QK), h(mu_OV))`` with ``dmu_QK/dmu_OV = h(mu_OV)/g(mu_QK)``: the
    engine's separation (:func:`derivations.engine.first_integral.separate`).

    Parameters
    ----------
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}, optional
        Which circuits are factorized. Default "CACO".

    Returns
    -------
    (sympy.Expr, sympy.Expr)
        ``g`` in mu_QK and ``h`` in mu_OV.

    Raises
    ------
    ValueError
        If ``parameterization`` is not one of the four.
    ArithmeticError
        If the orbit equation does not separate (a failed derivation).
    """
    d_ov, d_qk = reduced_odes(check_parameterization(parameterization))
    parts = separate({mu_OV: d_ov, mu_QK: d_qk}, mu_OV, mu_QK)
    if parts is None:  # pragma: no cover
        raise ArithmeticError(f"{parameterization}: orbit equation does not separate")
    return parts


@lru_cache(maxsize=None)
def _integrals(parameterization):
    return integrals(*separated(parameterization), mu_OV, mu_QK)


def first_integral(parameterization: str = "CACO"):
    """The conserved quantity ``H(mu_OV, mu_QK) = int g dmu_QK - int h dmu_OV``.

    Parameters
    ----------
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}, optional
        Which circuits are factorized. Default "CACO".

    Returns
    -------
    sympy.Expr
        H in mu_OV and mu_QK, expanded.

    Raises
    ------
    ValueError
        If ``parameterization`` is not one of the four.
    """
    G, F = _integrals(check_parameterization(parameterization))
    return sp.expand(G - F)


def dH_dt(parameterization: str = "CACO"):
    """``dH/dt`` along the reduced flow, simplified (it is 0).

    Parameters
    ----------
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}, optional
        Which circuits are factorized. Default "CACO".

    Returns
    -------
    sympy.Expr
        The simplified time derivative of :func:`first_integral`.

    Raises
    ------
    ValueError
        If ``parameterization`` is not one of the four.
    """
    H = first_integral(parameterization)
    d_ov, d_qk = reduced_odes(parameterization)
    return sp.simplify(sp.diff(H, mu_OV) * d_ov + sp.diff(H, mu_QK) * d_qk)


def line_coordinates(parameterization: str = "CACO"):
    """``(X(mu_OV), Y(mu_QK), slope)``: along every trajectory
    ``Y - Y_0 = slope (X - X_0)``; the slope is the product of the factors of
    ``int h dmu_OV`` that carry learning rates (eta_QK/eta_OV for CACO).

    Parameters
    ----------
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}, optional
        Which circuits are factorized. Default "CACO".

    Returns
    -------
    (sympy.Expr, sympy.Expr, sympy.Expr)
        X in mu_OV, Y in mu_QK, and the slope (the rate-carrying factor).

    Raises
    ------
    ValueError
        If ``parameterization`` is not one of the four.
    """
    G, F = _integrals(check_parameterization(parameterization))
    slope, X = sp.S.One, sp.S.One
    for factor in sp.Mul.make_args(sp.factor(F)):
        if factor.free_symbols & set(RATES):
            slope *= factor
        else:
            X *= factor
    return X, G, slope


@lru_cache(maxsize=None)
def orbit(parameterization: str = "CACO"):
    """The orbit through ``(mu_OV_0, mu_QK_0)``.

    Returns mu_QK as an explicit expression in mu_OV when ``H = const`` can be
    solved (CACO, CAFO: Lambert W, written as ``wright_omega``), otherwise the
    implicit equation as a :class:`sympy.Eq` (FACO, FAFO: the exponential
    integral ``Ei`` appears).

    Parameters
    ----------
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}, optional
        Which circuits are factorized. Default "CACO".

    Returns
    -------
    sympy.Expr or sympy.Eq
        mu_QK in mu_OV, mu_OV_0 and mu_QK_0, or the implicit equation ``H = H_0``.

    Raises
    ------
    ValueError
        If ``parameterization`` is not one of the four.
    """
    G, F = _integrals(check_parameterization(parameterization))
    return orbit_of(G, F, mu_OV, mu_QK)


def attention_on_orbit(parameterization: str = "CACO"):
    """alpha along the explicit orbit (CACO, CAFO): with omega = wright_omega(...)
    of :func:`orbit`, alpha = omega / (1 + omega).

    Parameters
    ----------
    parameterization : {"CACO", "CAFO"}, optional
        A parameterization with an explicit orbit. Default "CACO".

    Returns
    -------
    sympy.Expr
        alpha in mu_OV, mu_OV_0 and mu_QK_0, written with ``wright_omega``.

    Raises
    ------
    ValueError
        If the orbit is implicit (FACO, FAFO) or ``parameterization`` is unknown.
    """
    from .reduction import alpha_expr
    mu = orbit(parameterization)
    if isinstance(mu, sp.Eq):
        raise ValueError(f"the {parameterization} orbit is implicit; alpha has no closed form along it")
    from ...symbolic.special_functions import wright_omega
    w = sp.Symbol("omega", positive=True)
    expr = alpha_expr().subs(mu_QK, mu)
    omegas = list(expr.atoms(wright_omega))
    # e^{K - omega(K + log(m/n))} = (n/m) omega e^{...}/e^{...}: use omega e^omega = e^z
    (om,) = omegas
    z = om.args[0]
    expr = sp.simplify(sp.powsimp(sp.expand(expr.subs(om, w)), combine="exp"))
    expr = sp.simplify(expr.subs(sp.exp(-w), w * sp.exp(-z)).subs(sp.exp(w), sp.exp(z) / w))
    expr = sp.simplify(sp.expand_log(sp.powsimp(sp.expand(expr)), force=True))
    return expr.subs(w, om)
