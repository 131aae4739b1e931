r"""Reduction of the gradient flow to two scalars, mu_OV(t) and mu_QK(t).

Procedure
---------
1. **Invariant family.** From the paper's initializations the trained matrices
   stay of the form ``sum_i theta_i U_i`` with fixed, mutually orthogonal basis
   matrices ``U_i`` (:func:`derivations.tasks.paper.model.family`). That the gradient at
   every family point lies in the span of the ``U_i`` is checked exactly on
   explicit instances by :func:`invariance_residual`.
2. **Flow on the family.** If ``grad_W L = sum_i g_i U_i`` on the family, the
   chain rule gives ``dL/dtheta_i = <grad_W L, U_i> = g_i ||U_i||^2``, hence
   (:func:`family_flow`)

   .. math:: \dot\theta_i = -\frac{\eta_i}{\lVert U_i\rVert_F^2}\,
             \frac{\partial L_{\mathrm{family}}}{\partial\theta_i}.

3. **Scalars.** ``mu_QK = W_QK[q_k, r_k]/b`` and ``mu_OV = (z_k - z_j)/alpha``
   are functions of the family coordinates; the chain rule turns step 2 into
   ODEs for them (:func:`reduced_odes`). For the collapsed parameterization
   (CACO) they reproduce the published equations (:func:`published_caco`).

>>> from derivations.tasks.paper.reduction import reduced_odes
>>> dOV, dQK = reduced_odes("CACO", in_alpha=True)
>>> dOV
alpha*eta_OV/(b*(M + exp(alpha*mu_OV) - 1))
>>> dQK
-alpha*eta_QK*mu_OV*(M - 1)*(alpha - 1)/(M*b**2*(M + exp(alpha*mu_OV) - 1))
"""
from __future__ import annotations

import sympy as sp

from ...core.vocabulary import check_parameterization
from ...engine.explicit import nonzero_entries
from ...symbolic.symbols import M, alpha, b, eta_OV, eta_QK, m, mu_OV, mu_QK, n
from .factorization import factorized_reduced_odes
from .explicit import explicit_family_point, explicit_model
from .model import basis_matrix, family

__all__ = ["alpha_expr", "family_flow", "family_mu_flow", "collapsed_reduced_odes",
           "reduced_odes", "published_caco", "reduced_loss", "published_difference", "invariance_residual"]


def alpha_expr():
    """alpha(mu_QK) = m e^{mu_QK} / (m e^{mu_QK} + n), from the model's softmax
    (:meth:`derivations.tasks.paper.model.Family.alpha_of`).

    Returns
    -------
    sympy.Expr
        alpha in mu_QK, m and n.
    """
    return family("CACO").alpha_of(mu_QK)


def family_flow(parameterization: str = "CACO") -> dict:
    """Gradient flow on the family: ``{theta_i: dtheta_i/dt}`` (step 2 above),
    :meth:`derivations.tasks.paper.model.Family.flow`.

    Parameters
    ----------
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}, optional
        Which circuits are factorized. Default "CACO".

    Returns
    -------
    dict[sympy.Symbol, sympy.Expr]
        Each family coordinate's time derivative, in the coordinates and alpha.

    Raises
    ------
    ValueError
        If ``parameterization`` is not one of the four.
    """
    return family(check_parameterization(parameterization)).flow()


def family_mu_flow(parameterization: str):
    """``(dmu_OV/dt, dmu_QK/dt)`` by the chain rule, in family coordinates and
    alpha (:meth:`derivations.tasks.paper.model.Family.mu_flow`).

    Parameters
    ----------
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}
        Which circuits are factorized.

    Returns
    -------
    (sympy.Expr, sympy.Expr)
        dmu_OV/dt and dmu_QK/dt.

    Raises
    ------
    ValueError
        If ``parameterization`` is not one of the four.
    """
    return family(check_parameterization(parameterization)).mu_flow()


def collapsed_reduced_odes():
    """CACO: ``(dmu_OV/dt, dmu_QK/dt)`` in (mu_OV, alpha), derived on the family."""
    return family("CACO").mu_flow(in_mu=True)


def reduced_odes(parameterization: str = "CACO", *, balanced: bool = True, in_alpha: bool = False):
    """The reduced ODEs ``(dmu_OV/dt, dmu_QK/dt)`` of a parameterization.

    Parameters
    ----------
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}
    balanced : bool
        For factorized circuits: conserved quantity zero (balanced factors).
        Otherwise the effective rates carry the symbols ``C_QK``/``C_OV``
        (see :mod:`derivations.tasks.paper.factorization`).
    in_alpha : bool
        Write the result with the symbol ``alpha`` for m e^{mu_QK}/(m e^{mu_QK}+n).

    Returns
    -------
    (sympy.Expr, sympy.Expr)
    """
    check_parameterization(parameterization)
    if parameterization == "CACO":
        out = collapsed_reduced_odes()
    else:
        out = factorized_reduced_odes(parameterization, balanced=balanced)
    if not in_alpha:
        out = tuple(e.subs(alpha, alpha_expr()) for e in out)
    return out


def published_caco():
    """The authors' published CACO equations (a *check*, never a source).

    Returns ``(alpha, loss, dmu_OV/dt, dmu_QK/dt)`` with alpha written out in mu_QK.
    """
    a = m * sp.exp(mu_QK) / (m * sp.exp(mu_QK) + n)
    loss = sp.log(1 + (M - 1) * sp.exp(-a * mu_OV))
    d_ov = eta_OV * a / (b * (sp.exp(a * mu_OV) + M - 1))
    d_qk = eta_QK * (M - 1) * a * (1 - a) * mu_OV / (M * b**2 * (sp.exp(a * mu_OV) + M - 1))
    return a, loss, d_ov, d_qk


def reduced_loss():
    """Loss in (mu_OV, mu_QK): log(e^{alpha mu_OV} + M - 1) - alpha mu_OV."""
    return family("CACO").reduced_loss().subs(alpha, alpha_expr())


def published_difference():
    """Derived minus published, for (alpha, loss, dmu_OV/dt, dmu_QK/dt); all
    four simplify to 0 (the identity that ties the derivation to the paper)."""
    derived = (alpha_expr(), reduced_loss(), *reduced_odes("CACO"))
    return tuple(sp.simplify(sp.expand_log(d - p, force=True)) for d, p in zip(derived, published_caco()))


def invariance_residual(M_value: int, parameterization: str = "CACO"):
    """Exact invariance check on an explicit instance with M_value classes.

    Computes the full gradient flow ``-eta dL/dW`` of every trained matrix
    with symbolic entries, evaluates it on the family (symbolic family
    coordinates), and subtracts the flow predicted by :func:`family_flow`
    (``sum_i dtheta_i/dt U_i``). Returns the list of residual entries that
    are not zero, decided by the engine's one check
    (:func:`derivations.engine.explicit.nonzero_entries`): an entry is zero when
    :func:`derivations.symbolic.exp_zero.is_zero_exactly` proves it (exponentials
    as independent symbols, a rational function whose numerator expands to 0),
    else when :func:`sympy.simplify` reduces it to 0.
    An empty list means the gradient lies in the family's tangent space *and*
    the reduced family flow is the model's flow.

    Parameters
    ----------
    M_value : int
        Number of classes of the explicit instance, in [2, MAX_CLASSES].
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}, optional
        Which circuits are factorized. Default "CACO".

    Returns
    -------
    list of sympy.Expr
        The residual entries that are not zero; empty when the family is invariant.

    Raises
    ------
    ValueError
        If ``M_value`` or ``parameterization`` is out of range.
    """
    em = explicit_model(M_value, parameterization)
    point = explicit_family_point(M_value, parameterization)
    subs = {}
    for name, W in em.params.items():
        subs.update(dict(zip(W, point[name])))
    fam = family(parameterization)
    predicted = {}
    alpha_on_family = fam.attention()
    for c, (mat, basis, _) in fam.coordinates.items():
        rate = fam.flow()[c].subs(alpha, alpha_on_family).subs(M, M_value)
        term = rate * basis_matrix(basis, M_value)
        predicted[mat] = predicted[mat] + term if mat in predicted else term
    entries = [((name, i), x) for name, flow in em.gradient_flow().items()
               for i, x in enumerate(flow.xreplace(subs) - predicted[name])]   # atoms -> family point
    return [x for _, x in nonzero_entries(entries)]
