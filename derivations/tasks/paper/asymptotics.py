r"""Time course along the orbit and asymptotics.

1. **Time along the orbit** (:func:`time_integrand`, :func:`time_along_orbit`):
   t(mu_OV) = int dmu_OV / f_OV(mu_OV, mu_QK(mu_OV)), a quadrature along the
   explicit orbit.
2. **Early phase** (:func:`early_phase`): while mu_QK ~ 0 the attention is
   frozen at alpha_0 = m/(m+n); then t(mu_OV) integrates in closed form and
   inverts with Lambert W (written with Wright omega).
3. **Late time** (:func:`late_time`, CACO): along the orbit
   1 - alpha = 1/(1 + omega(z)) with z -> oo, so
   1 - alpha ~ 1/z ~ 2 M b eta_OV / (eta_QK (M-1) mu_OV^2); with alpha -> 1 the
   margin obeys dmu/dt = eta_OV/(b(e^mu + M - 1)), so t ~ b e^mu/eta_OV and
   L(t) t -> (M-1) b/eta_OV.

>>> from derivations.tasks.paper.asymptotics import early_phase, late_time
>>> early_phase()["alpha_0"]
m/(m + n)
>>> late_time()["loss_times_t_limit"]
b*(M - 1)/eta_OV
"""
from __future__ import annotations

from functools import lru_cache

import sympy as sp

from .first_integral import attention_on_orbit, orbit
from .reduction import alpha_expr, reduced_odes, reduced_loss
from ...symbolic.special_functions import lambert_to_wright_omega, wright_omega
from ...symbolic.symbols import alpha, mu_OV, mu_OV_0, mu_QK, mu_QK_0, t

__all__ = ["time_integrand", "time_along_orbit", "early_phase", "family_loss_at_full_attention", "late_time"]


def time_integrand(parameterization: str = "CACO"):
    """dt/dmu_OV along the explicit orbit (CACO, CAFO), in mu_OV and the initial point.

    Parameters
    ----------
    parameterization : {"CACO", "CAFO"}, optional
        A parameterization with an explicit orbit. Default "CACO".

    Returns
    -------
    sympy.Expr
        :math:`1/f_{OV}` with mu_QK replaced by the orbit, in mu_OV, mu_OV_0 and mu_QK_0.

    Raises
    ------
    ValueError
        If the orbit is implicit (FACO, FAFO) or ``parameterization`` is unknown.
    """
    d_ov, _ = reduced_odes(parameterization)
    mu = orbit(parameterization)
    if isinstance(mu, sp.Eq):
        raise ValueError(f"the {parameterization} orbit is implicit; integrate the reduced ODE instead")
    return (1 / d_ov).subs(mu_QK, mu)


def time_along_orbit(parameterization: str = "CACO"):
    """t(mu_OV) as an (unevaluated) integral from mu_OV_0.

    Parameters
    ----------
    parameterization : {"CACO", "CAFO"}, optional
        A parameterization with an explicit orbit. Default "CACO".

    Returns
    -------
    sympy.Integral
        The integral of :func:`time_integrand` from mu_OV_0 to mu_OV.

    Raises
    ------
    ValueError
        If the orbit is implicit (FACO, FAFO) or ``parameterization`` is unknown.
    """
    x = sp.Symbol("x", real=True)
    return sp.Integral(time_integrand(parameterization).subs(mu_OV, x), (x, mu_OV_0, mu_OV))


@lru_cache(maxsize=None)
def early_phase():
    """Closed form of the early phase of CACO from zero initialization.

    Returns ``{"alpha_0", "t_of_mu_OV", "mu_OV_of_t", "loss_of_t"}`` (with
    alpha_0 substituted) and the same two with the symbol alpha standing for
    alpha_0 (``"t_of_mu_OV_alpha"``, ``"mu_OV_of_t_alpha"``)."""
    a0 = sp.simplify(alpha_expr().subs(mu_QK, 0))
    # integrate and invert with alpha kept symbolic (fast, readable), then freeze it at alpha_0
    d_ov = reduced_odes("CACO", in_alpha=True)[0]
    x, tt = sp.Symbol("x", positive=True), sp.Symbol("tt", positive=True)
    t_of_mu_alpha = sp.simplify(sp.integrate(1 / d_ov.subs(mu_OV, x), (x, 0, mu_OV)))
    (sol,) = sp.solve(sp.Eq(t_of_mu_alpha.subs(mu_OV, x), tt), x)
    mu_of_t_alpha = lambert_to_wright_omega(sol).subs(tt, t)
    t_of_mu, mu_of_t = t_of_mu_alpha.subs(alpha, a0), mu_of_t_alpha.subs(alpha, a0)
    loss_t = reduced_loss().subs({mu_QK: 0, mu_OV: mu_of_t})
    return {"alpha_0": a0, "t_of_mu_OV_alpha": t_of_mu_alpha, "mu_OV_of_t_alpha": mu_of_t_alpha,
            "t_of_mu_OV": t_of_mu, "mu_OV_of_t": mu_of_t, "loss_of_t": loss_t}


def family_loss_at_full_attention():
    """The loss with alpha = 1: log(1 + (M-1) e^{-mu_OV}) (from the family's loss)."""
    from .model import family
    return family("CACO").reduced_loss().subs(alpha, 1)


@lru_cache(maxsize=None)
def late_time():
    """Late-time behaviour of CACO (from zero initialization).

    Returns ``{"one_minus_alpha", "one_minus_alpha_leading", "one_minus_alpha_ratio_limit",
    "t_of_mu_late", "loss_times_t_limit", "loss_leading"}``."""
    one_minus = sp.simplify(1 - attention_on_orbit("CACO").subs({mu_OV_0: 0, mu_QK_0: 0}))
    (om,) = one_minus.atoms(wright_omega)
    z = sp.expand(om.args[0])
    w, x = sp.Symbol("w", positive=True), sp.Symbol("x", positive=True)
    # omega(z) ~ z: z = omega + log(omega) and omega -> oo with z, so z/omega -> 1
    omega_over_z = 1 / sp.limit((w + sp.log(w)) / w, w, sp.oo)
    z_leading = sp.Poly(z, mu_OV).LC() * mu_OV**2          # z = c mu_OV^2 + O(1)
    leading = sp.simplify(1 / (omega_over_z * z_leading))
    ratio_limit = sp.simplify(sp.limit((one_minus / leading).subs(om, omega_over_z * z).subs(mu_OV, x), x, sp.oo))
    # alpha -> 1: margin ODE, time, and the loss
    d_ov = reduced_odes("CACO", in_alpha=True)[0].subs(alpha, 1)
    t_late = sp.integrate(1 / d_ov.subs(mu_OV, x), (x, 0, mu_OV))
    loss_late = family_loss_at_full_attention()
    lt_limit = sp.limit((loss_late * t_late).subs(mu_OV, x), x, sp.oo)
    return {"one_minus_alpha": one_minus, "one_minus_alpha_leading": leading,
            "one_minus_alpha_ratio_limit": ratio_limit, "t_of_mu_late": sp.simplify(t_late),
            "loss_times_t_limit": sp.simplify(lt_limit),
            "loss_leading": sp.simplify(lt_limit / t)}
