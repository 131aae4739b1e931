r"""Reduction of the gradient flow to two scalars, mu_OV(t) and mu_QK(t).

Procedure
---------
1. **Invariant family.** From the paper's initializations the trained matrices
   stay of the form ``sum_i theta_i U_i`` with fixed, mutually orthogonal basis
   matrices ``U_i`` (:func:`derivations.model.family`). That the gradient at
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

>>> from derivations.reduction import reduced_odes
>>> dOV, dQK = reduced_odes("CACO", in_alpha=True)
>>> dOV
alpha*eta_OV/(b*(M + exp(alpha*mu_OV) - 1))
>>> dQK
-alpha*eta_QK*mu_OV*(M - 1)*(alpha - 1)/(M*b**2*(M + exp(alpha*mu_OV) - 1))
"""
from __future__ import annotations

from functools import lru_cache

import sympy as sp

from .model import (check_parameterization, explicit_family_point,
                    explicit_model, family, basis_matrix)
from .symbols import M, alpha, b, eta_OV, eta_QK, m, mu_OV, mu_QK, n


def alpha_expr(score_gap=mu_QK):
    """alpha(mu_QK) = m e^{mu_QK} / (m e^{mu_QK} + n), from the model's softmax."""
    return family("CACO").alpha_of(score_gap)


def mu_QK_of_alpha():
    """The inverse of :func:`alpha_expr`: mu_QK = log(n alpha / (m (1 - alpha)))."""
    sol = sp.solve(sp.Eq(alpha_expr(), alpha), mu_QK)
    return sp.expand_log(sp.simplify(sol[0]), force=True)


def to_alpha(expr):
    """Rewrite an expression in mu_QK through alpha where mu_QK enters via alpha
    (e^{mu_QK} = n alpha / (m (1 - alpha))). Leaves free mu_QK elsewhere."""
    e_mu = n * alpha / (m * (1 - alpha))
    out = sp.simplify(expr.subs(sp.exp(mu_QK), e_mu))
    return sp.factor(out, deep=True) if not out.has(mu_QK) else out


def dalpha_dmu():
    """d alpha / d mu_QK = alpha (1 - alpha), derived from :func:`alpha_expr`."""
    return to_alpha(sp.diff(alpha_expr(), mu_QK))


@lru_cache(maxsize=None)
def family_flow(parameterization: str = "CACO") -> dict:
    """Gradient flow on the family: ``{theta_i: dtheta_i/dt}`` (step 2 above).

    The loss is differentiated with the attention kept as the symbol alpha and
    the chain rule taken through alpha(mu_QK), mu_QK = W_QK[q_k, r_k]/b, so the
    result is written in alpha and the family coordinates."""
    fam = family(check_parameterization(parameterization))
    loss = fam.loss_in_alpha()
    score_gap = fam.qk_entry / b
    flow = {}
    for c, (_, _, rate) in fam.coordinates.items():
        grad = sp.diff(loss, c) + sp.diff(loss, alpha) * dalpha_dmu() * sp.diff(score_gap, c)
        flow[c] = _canonical(-rate / fam.norm2[c] * grad)
    return flow


def family_mu_flow(parameterization: str):
    """``(dmu_OV/dt, dmu_QK/dt)`` by the chain rule, in family coordinates and alpha."""
    fam = family(parameterization)
    flow = family_flow(parameterization)
    return tuple(_canonical(sum(sp.diff(mu, c) * flow[c] for c in flow)) for mu in fam.mu())


def family_to_mu(parameterization: str = "CACO") -> dict:
    """Solve the collapsed coordinates for (mu_OV, mu_QK): theta_QK = b mu_QK,
    theta_OV = sqrt(b) mu_OV."""
    fam = family(parameterization)
    mu_ov_of, mu_qk_of = fam.mu()
    return sp.solve([sp.Eq(mu_ov_of, mu_OV), sp.Eq(mu_qk_of, mu_QK)], list(fam.coordinates), dict=True)[0]


@lru_cache(maxsize=None)
def collapsed_reduced_odes():
    """CACO: ``(dmu_OV/dt, dmu_QK/dt)`` in (mu_OV, alpha), derived on the family."""
    sol = family_to_mu("CACO")
    return tuple(_canonical(e.subs(sol)) for e in family_mu_flow("CACO"))


def _canonical(expr):
    """A compact form: the log-sum-exp derivative's exponentials combined,
    one fraction, common factors pulled out."""
    expr = sp.simplify(sp.powsimp(sp.expand_power_exp(expr), combine="exp"))
    return sp.factor_terms(sp.factor(sp.together(expr)))


def reduced_odes(parameterization: str = "CACO", *, balanced: bool = True, in_alpha: bool = False):
    """The reduced ODEs ``(dmu_OV/dt, dmu_QK/dt)`` of a parameterization.

    Parameters
    ----------
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}
    balanced : bool
        For factorized circuits: conserved quantity zero (balanced factors).
        Otherwise the effective rates carry the symbols ``C_QK``/``C_OV``
        (see :mod:`derivations.factorization`).
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
        from .factorization import factorized_reduced_odes
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
    (``sum_i dtheta_i/dt U_i``). Returns the list of residual entries after
    simplification: all zero means the gradient lies in the family's tangent
    space *and* the reduced family flow is the model's flow.
    """
    em = explicit_model(M_value, parameterization)
    point = explicit_family_point(M_value, parameterization)
    subs = {}
    for name, W in em.params.items():
        subs.update(dict(zip(W, point[name])))
    fam = family(parameterization)
    predicted = {}
    for c, (mat, basis, _) in fam.coordinates.items():
        rate = family_flow(parameterization)[c].subs(alpha, fam.alpha_of(fam.qk_entry / b)).subs(M, M_value)
        term = rate * basis_matrix(basis, M_value)
        predicted[mat] = predicted[mat] + term if mat in predicted else term
    residual = []
    for name, flow in em.gradient_flow().items():
        diff = flow.subs(subs) - predicted[name]
        residual.extend(sp.simplify(x) for x in diff)
    return [x for x in residual if x != 0]
