"""Explicit instances of the paper's model: every entry an independent symbol.

For a concrete number of classes ``M`` (2, 3, 4, ...), every trained matrix is a SymPy ``Matrix``
of independent symbols and the population loss is built literally from the definitions of
:mod:`derivations.tasks.paper.model` (:func:`explicit_model`); :func:`explicit_family_point` writes
the invariant family (:func:`~derivations.tasks.paper.model.family`) as such matrices. These
instances *check* the reduction exactly
(:func:`derivations.tasks.paper.reduction.invariance_residual`).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sympy as sp

from ...core.vocabulary import check_classes, ov_factorized, qk_factorized
from ...engine.family import RATE_OF
from ...symbolic.symbols import b
from .model import basis_matrix, class_loss, family

__all__ = ["ExplicitModel", "explicit_shapes", "explicit_population_loss", "explicit_model",
           "explicit_family_point"]


@dataclass(frozen=True)
class ExplicitModel:
    """A concrete-M instance with symbolic matrix entries.

    Attributes
    ----------
    M : int
        Number of classes; d = 2M.
    parameterization : str
    params : dict[str, sympy.Matrix]
        The trained matrices (``W_QK`` or ``W_Q, W_K``; ``W_OV`` or ``W_O, W_V``).
    rates : dict[str, sympy.Symbol]
        The learning rate of each trained matrix.
    loss : sympy.Expr
        The population loss (1/M) sum_k CE_k.
    """
    M: int
    parameterization: str
    params: dict
    rates: dict
    loss: sp.Expr

    def gradient_flow(self):
        """``{name: -eta_name * dL/dW_name}`` as SymPy matrices."""
        return {name: -self.rates[name] * W.applyfunc(lambda w: sp.diff(self.loss, w))
                for name, W in self.params.items()}


def _circuits(parameterization, params):
    W_QK = params["W_Q"] * params["W_K"].T if qk_factorized(parameterization) else params["W_QK"]
    W_OV = params["W_O"] * params["W_V"] if ov_factorized(parameterization) else params["W_OV"]
    return W_QK, W_OV


def explicit_shapes(M_value: int, parameterization: str) -> dict:
    """Shapes of the trained matrices of an explicit instance.

    Parameters
    ----------
    M_value : int
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}

    Returns
    -------
    dict[str, tuple of int]
    """
    d = 2 * M_value
    shapes = {}
    if qk_factorized(parameterization):
        shapes.update(W_Q=(d, M_value), W_K=(d, M_value))
    else:
        shapes.update(W_QK=(d, d))
    if ov_factorized(parameterization):
        shapes.update(W_O=(M_value, M_value), W_V=(M_value, d))
    else:
        shapes.update(W_OV=(M_value, d))
    return shapes


def explicit_population_loss(M_value: int, W_QK, W_OV):
    """The population loss (1/M) sum_k CE_k for concrete M, each class's from
    :func:`~derivations.tasks.paper.model.class_loss` (q_k and r_k embedded as
    ``e/sqrt(b)``, irrelevant tokens as 0).

    Parameters
    ----------
    M_value : int
        Number of classes; d = 2M.
    W_QK, W_OV : sympy.Matrix
        The circuits, ``(d, d)`` and ``(M, d)`` (products of the factors where factorized).

    Returns
    -------
    sympy.Expr
    """
    d = 2 * M_value
    total = 0
    for k in range(M_value):
        x_q = sp.zeros(d, 1)
        x_q[k] = 1 / sp.sqrt(b)
        x_r = sp.zeros(d, 1)
        x_r[M_value + k] = 1 / sp.sqrt(b)
        total += class_loss(W_QK, W_OV, x_q, x_r, sp.zeros(d, 1), k)[0]
    return total / M_value


@lru_cache(maxsize=None)
def explicit_model(M_value: int, parameterization: str = "CACO") -> ExplicitModel:
    """Build the explicit instance with ``M_value`` classes.

    >>> em = explicit_model(2, "CACO")
    >>> em.params["W_QK"].shape, em.params["W_OV"].shape
    ((4, 4), (2, 4))

    Parameters
    ----------
    M_value : int
        In [2, MAX_CLASSES]; ValueError naming the range otherwise.
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}, default "CACO"

    Returns
    -------
    ExplicitModel
    """
    M_value = check_classes(M_value)
    params = {name: sp.Matrix(rows, cols, lambda i, j, name=name: sp.Symbol(f"{name}_{i}_{j}", real=True))
              for name, (rows, cols) in explicit_shapes(M_value, parameterization).items()}
    W_QK, W_OV = _circuits(parameterization, params)
    loss = explicit_population_loss(M_value, W_QK, W_OV)
    return ExplicitModel(M_value, parameterization, params,
                         {name: RATE_OF[name] for name in params}, loss)


def explicit_family_point(M_value: int, parameterization: str) -> dict:
    """The family as explicit matrices, ``{matrix name: Matrix}``, in the family coordinates (concrete M).

    Parameters
    ----------
    M_value : int
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}

    Returns
    -------
    dict[str, sympy.Matrix]
    """
    fam = family(parameterization)
    mats = {}
    for coord, (mat, basis, _) in fam.coordinates.items():
        term = coord * basis_matrix(basis, M_value)
        mats[mat] = mats[mat] + term if mat in mats else term
    return mats
