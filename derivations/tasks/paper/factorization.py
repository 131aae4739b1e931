r"""Factorization implicitly rescales a circuit's learning rate.

For a circuit written as a product :math:`W = AB` trained with rates
:math:`\eta_A, \eta_B`, and :math:`G = \partial L/\partial W`:

1. **Induced flow** (:func:`induced_flow`). The chain rule gives
   :math:`\partial L/\partial A = G B^\top`, :math:`\partial L/\partial B = A^\top G`
   and the product rule

   .. math:: \dot W = -\eta_A\, G B^\top B - \eta_B\, A A^\top G .

2. **Conserved quantity** (:func:`conserved_quantity`):
   :math:`A^\top A/\eta_A - B B^\top/\eta_B` is constant in time; on the family
   it is the scalar ``C = a^2/eta_A - c^2/eta_B`` (zero = *balanced* factors).
3. **Effective rate** (:func:`effective_rate`). On the invariant family the
   product moves exactly like the collapsed circuit with the rate replaced by

   .. math:: \eta_{\mathrm{eff}} = \eta_A c^2 + \eta_B a^2
             = \sqrt{4\eta_A\eta_B P^2 + \eta_A^2\eta_B^2 C^2},

   where :math:`P = ac` is the circuit's magnitude (``b mu_QK`` for QK,
   ``sqrt(b) mu_OV`` for OV). For balanced factors this is
   :math:`2\sqrt{\eta_A\eta_B}\,P`: the rate grows with the circuit itself.
4. **Reduced ODEs** of CAFO, FACO, FAFO (:func:`factorized_reduced_odes`): the
   CACO equations with each factorized circuit's rate replaced by step 3.

>>> from derivations.tasks.paper.factorization import effective_rate
>>> effective_rate("QK")
2*b*sqrt(eta_K)*sqrt(eta_Q)*mu_QK
>>> effective_rate("OV", balanced=False)
sqrt(C_OV**2*eta_O**2*eta_V**2 + 4*b*eta_O*eta_V*mu_OV**2)
"""
from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import sympy as sp

from .model import family
from ...symbolic.symbols import SYMBOLS
from ...core.vocabulary import CIRCUITS, check_circuit

__all__ = ["CircuitSymbols", "circuit_symbols", "induced_flow", "conserved_quantity", "conserved_matrix_derivative",
           "rate_factor", "effective_rate", "effective_rates", "initial_conserved",
           "initial_point", "factorized_reduced_odes"]


class CircuitSymbols(NamedTuple):
    """A circuit of :data:`derivations.core.vocabulary.CIRCUITS` in SymPy terms,
    read off the families of :mod:`derivations.tasks.paper.model`.

    Attributes
    ----------
    factors : (Symbol, Symbol)
        Family coordinates of the two factors (``a_Q, c_K`` or ``o_O, v_V``).
    factor_rates : (Symbol, Symbol)
    collapsed : Symbol
        The collapsed circuit's family coordinate (``theta_QK``/``theta_OV``).
    rate : Symbol
        The collapsed circuit's rate.
    conserved : Symbol
        ``C_QK`` or ``C_OV``.
    magnitude : Expr
        The circuit's amplitude in mu units, solved from CACO's mu map
        (``b mu_QK`` for QK, ``sqrt(b) mu_OV`` for OV).
    parameterization : str
        The family with only this circuit factorized.
    """
    factors: tuple
    factor_rates: tuple
    collapsed: sp.Symbol
    rate: sp.Symbol
    conserved: sp.Symbol
    magnitude: sp.Expr
    parameterization: str


@lru_cache(maxsize=None)
def circuit_symbols(circuit: str = "QK") -> CircuitSymbols:
    """The :class:`CircuitSymbols` of ``circuit`` (``"QK"`` or ``"OV"``).

    >>> circuit_symbols("OV").magnitude
    sqrt(b)*mu_OV

    Parameters
    ----------
    circuit : {"QK", "OV"}, optional
        The factorized circuit. Default "QK".

    Returns
    -------
    CircuitSymbols

    Raises
    ------
    ValueError
        If ``circuit`` is not "QK" or "OV".
    """
    c = check_circuit(circuit)
    fam = family(c.only_factorized)
    factors = tuple(coord for basis in c.factor_bases for coord, (mat, bas, _) in fam.coordinates.items()
                    if bas == basis and mat in c.factors)
    rates = tuple(fam.coordinates[f][2] for f in factors)
    caco = family("CACO")
    (collapsed,) = [coord for coord, (mat, _, _) in caco.coordinates.items() if mat == c.matrix]
    magnitude = caco.coordinates_of_mu()[collapsed]
    return CircuitSymbols(factors, rates, collapsed, caco.coordinates[collapsed][2],
                          SYMBOLS[c.conserved], magnitude, c.only_factorized)


def _product_flow():
    """Matrix symbols A, B, G, rates and the factor gradients of the loss's
    first-order change tr(G^T A B) (matrix calculus)."""
    p_, q_, r_ = sp.symbols("p q r", integer=True, positive=True)
    A, B, G = sp.MatrixSymbol("A", p_, q_), sp.MatrixSymbol("B", q_, r_), sp.MatrixSymbol("G", p_, r_)
    eA, eB = sp.symbols("eta_A eta_B", positive=True)
    first_order = sp.Trace(G.T * A * B)
    grad_A, grad_B = sp.diff(first_order, A), sp.diff(first_order, B)
    return A, B, eA, eB, grad_A, grad_B


def induced_flow():
    """The flow of W = A B induced by gradient flow on the factors.

    Returns ``(dW/dt, dL/dA, dL/dB)`` as matrix expressions in the matrix
    symbols A, B, G (G = dL/dW). The factor gradients are derived by matrix
    calculus on the first-order change of the loss, tr(G^T A B).
    """
    A, B, eA, eB, grad_A, grad_B = _product_flow()
    dA, dB = -eA * grad_A, -eB * grad_B
    dW = sp.MatMul(dA, B) + sp.MatMul(A, dB)
    return sp.expand(dW).doit(), grad_A, grad_B


def conserved_quantity(circuit: str = "QK"):
    """The conserved quantity of a factorized circuit on the family,
    ``a^2/eta_A - c^2/eta_B`` (``C_QK`` or ``C_OV``), and its time derivative
    along the family flow (which simplifies to 0).

    Returns ``(C, dC/dt)``.

    Parameters
    ----------
    circuit : {"QK", "OV"}, optional
        The factorized circuit. Default "QK".

    Returns
    -------
    (sympy.Expr, sympy.Expr)
        C in the factor coordinates, and dC/dt (0).

    Raises
    ------
    ValueError
        If ``circuit`` is not "QK" or "OV".
    """
    cs = circuit_symbols(circuit)
    (fa, fb), (ra, rb) = cs.factors, cs.factor_rates
    flow = family(cs.parameterization).flow()
    C = fa**2 / ra - fb**2 / rb
    dC = sp.simplify(sp.diff(C, fa) * flow[fa] + sp.diff(C, fb) * flow[fb])
    return C, dC


def conserved_matrix_derivative():
    """d/dt (A^T A/eta_A - B B^T/eta_B) for the induced flow (the factor
    gradients of :func:`induced_flow`), in matrix symbols; it expands to the
    zero matrix."""
    A, B, eA, eB, grad_A, grad_B = _product_flow()
    dA, dB = -eA * grad_A, -eB * grad_B
    d = (dA.T * A + A.T * dA) / eA - (dB * B.T + B * dB.T) / eB
    return sp.expand(d).doit()


@lru_cache(maxsize=None)
def rate_factor(circuit: str = "QK"):
    """``eta_A c^2 + eta_B a^2``: the factorized product's flow divided by the
    collapsed circuit's flow per unit rate, at the same circuit value.

    Derived as the ratio of the family flows of the parameterization with
    only this circuit factorized and of CACO (the other circuit is collapsed
    in both, with the same coordinate); the loss gradient cancels.

    Parameters
    ----------
    circuit : {"QK", "OV"}, optional
        The factorized circuit. Default "QK".

    Returns
    -------
    sympy.Expr
        In the factor coordinates and rates.

    Raises
    ------
    ValueError
        If ``circuit`` is not "QK" or "OV".
    """
    cs = circuit_symbols(circuit)
    (fa, fb), theta = cs.factors, cs.collapsed
    flow = family(cs.parameterization).flow()
    product = fa * fb
    d_product = sp.diff(product, fa) * flow[fa] + sp.diff(product, fb) * flow[fb]
    collapsed_per_rate = family("CACO").flow()[theta].subs(theta, product) / cs.rate
    return sp.factor(sp.simplify(d_product / collapsed_per_rate))


@lru_cache(maxsize=None)
def effective_rate(circuit: str = "QK", balanced: bool = True):
    """The effective learning rate of a factorized circuit as a function of its
    current magnitude (mu_QK for QK, mu_OV for OV).

    From :func:`rate_factor` ``E = eta_A c^2 + eta_B a^2`` and the conserved
    ``C = a^2/eta_A - c^2/eta_B``: ``E^2 - (eta_A eta_B C)^2 = 4 eta_A eta_B (a c)^2``
    (checked by expansion), and E > 0, so
    ``E = sqrt(4 eta_A eta_B P^2 + eta_A^2 eta_B^2 C^2)`` with P = a c. Balanced
    (C = 0) factors give ``2 sqrt(eta_A eta_B) P`` (P > 0 on trajectories from
    the paper's positive initialization).

    Parameters
    ----------
    circuit : {"QK", "OV"}, optional
        The factorized circuit. Default "QK".
    balanced : bool, optional
        Balanced factors (C = 0). Default True; else the result carries ``C_QK`` or ``C_OV``.

    Returns
    -------
    sympy.Expr
        In mu_QK (QK) or mu_OV (OV), b, the factor rates and (unbalanced) the conserved symbol.

    Raises
    ------
    ValueError
        If ``circuit`` is not "QK" or "OV".
    """
    cs = circuit_symbols(circuit)
    (fa, fb), (ra, rb), Csym, P = cs.factors, cs.factor_rates, cs.conserved, cs.magnitude
    E = rate_factor(circuit)
    C, _ = conserved_quantity(circuit)
    identity = sp.expand(E**2 - (ra * rb * C) ** 2 - 4 * ra * rb * (fa * fb) ** 2)
    if identity != 0:  # pragma: no cover - a failed derivation must not pass silently
        raise ArithmeticError(f"effective-rate identity failed: {identity}")
    Ppos = sp.Symbol("P", positive=True)
    if balanced:
        return sp.sqrt(4 * ra * rb * Ppos**2).subs(Ppos, P)
    return sp.sqrt(4 * ra * rb * Ppos**2 + (ra * rb * Csym) ** 2).subs(Ppos, P)


def initial_conserved(circuit: str, eps):
    """C for the paper's initialization of scale eps (both factors eps):
    ``eps^2 (1/eta_A - 1/eta_B)``.

    Parameters
    ----------
    circuit : {"QK", "OV"}
        The factorized circuit.
    eps : sympy.Expr or float
        Initial value of both factor coordinates.

    Returns
    -------
    sympy.Expr

    Raises
    ------
    ValueError
        If ``circuit`` is not "QK" or "OV".
    """
    fa, fb = circuit_symbols(circuit).factors
    C, _ = conserved_quantity(circuit)
    return sp.simplify(C.subs({fa: eps, fb: eps}))


def initial_point(parameterization: str, eps):
    """(mu_OV(0), mu_QK(0)) of the paper's initialization: collapsed circuits
    start at 0; factorized ones at eps^2 in the product, i.e. mu_QK = eps^2/b,
    mu_OV = eps^2/sqrt(b) (from the family's mu map).

    Parameters
    ----------
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}
        Which circuits are factorized.
    eps : sympy.Expr or float
        Initial value of every factor coordinate.

    Returns
    -------
    (sympy.Expr, sympy.Expr)
        mu_OV(0) and mu_QK(0).

    Raises
    ------
    ValueError
        If ``parameterization`` is not one of the four.
    """
    fam = family(parameterization)
    mu_ov_of, mu_qk_of = fam.mu()
    factors = {f for c in ("QK", "OV") for f in circuit_symbols(c).factors}
    values = {c: (eps if c in factors else 0) for c in fam.coordinates}
    return sp.simplify(mu_ov_of.subs(values)), sp.simplify(mu_qk_of.subs(values))


def effective_rates(parameterization: str, balanced: bool = True) -> dict:
    """``{eta_QK: ..., eta_OV: ...}``: the collapsed rate of each factorized circuit of
    ``parameterization`` replaced by its :func:`effective_rate` (the one substitution that
    turns the CACO flow into a factorized one, for the paper and the engine alike).

    Parameters
    ----------
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}
        Which circuits are factorized.
    balanced : bool, optional
        Balanced factors (C = 0). Default True.

    Returns
    -------
    dict[sympy.Symbol, sympy.Expr]
        One entry per factorized circuit (empty for CACO).
    """
    return {SYMBOLS[c.rate]: effective_rate(c.name, balanced) for c in CIRCUITS.values()
            if c.factorized(parameterization)}


@lru_cache(maxsize=None)
def factorized_reduced_odes(parameterization: str, balanced: bool = True):
    """Reduced ODEs ``(dmu_OV/dt, dmu_QK/dt)`` (in alpha) of a parameterization
    with at least one factorized circuit: CACO's with eta_QK and/or eta_OV
    replaced by :func:`effective_rate` (:func:`effective_rates`).

    Parameters
    ----------
    parameterization : {"CAFO", "FACO", "FAFO"}
        Which circuits are factorized.
    balanced : bool, optional
        Balanced factors (C = 0). Default True; else the rates carry ``C_QK``/``C_OV``.

    Returns
    -------
    (sympy.Expr, sympy.Expr)
        In mu_OV, mu_QK, alpha and the model's parameters (m, n, b, M, rates).
    """
    subs = effective_rates(parameterization, balanced)
    return tuple(e.subs(subs) for e in family("CACO").mu_flow(in_mu=True))
