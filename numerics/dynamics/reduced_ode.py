r"""Numeric solution of the reduced two-scalar flow (all four parameterizations).

:func:`solve_reduced` is the one-call form of
``ReducedSystem(parameterization, **values).integrate(...)``
(:class:`numerics.dynamics.reduced_system.ReducedSystem`). The right-hand sides are
those derived by :func:`derivations.tasks.paper.reduction.reduced_odes`
(:func:`numerics.functions.lambdified.reduced_rhs`), their Jacobian SymPy's
``jacobian`` of the same expressions. For CACO

.. math::
    \dot\mu_{OV} = \frac{\eta_{OV}\,\alpha}{b\,(e^{\alpha\mu_{OV}} + M - 1)},\qquad
    \dot\mu_{QK} = \frac{\eta_{QK}(M-1)\,\alpha(1-\alpha)\,\mu_{OV}}{M b^2 (e^{\alpha\mu_{OV}} + M - 1)},
    \qquad \alpha = \frac{m e^{\mu_{QK}}}{m e^{\mu_{QK}} + n};

a factorized circuit replaces its rate by the effective rate
:math:`\sqrt{4\eta_A\eta_B P^2 + \eta_A^2\eta_B^2 C^2}` (P = b mu_QK or
sqrt(b) mu_OV), with the conserved C of its factors (0 when balanced).

>>> from numerics.dynamics.reduced_ode import solve_reduced
>>> res = solve_reduced("CACO", target_loss=0.5)
>>> res.status, round(float(res.loss[-1]), 12)
(1, 0.5)
"""
from __future__ import annotations

from derivations.core.vocabulary import PAPER_SETTING

from .bounded_ivp import DEFAULT_MAX_STEPS
from .reduced_system import ReducedSystem

__all__ = ["solve_reduced"]


def solve_reduced(parameterization="CACO", *, m=PAPER_SETTING["m"], n=PAPER_SETTING["n"],
                  b=PAPER_SETTING["b"], M=PAPER_SETTING["M"], eta_QK=1.0, eta_OV=1.0,
                  eta_Q=None, eta_K=None, eta_O=None, eta_V=None, eps=None, mu0=None,
                  t_span=None, t_eval=None, loss_thresholds=(), target_loss=None,
                  rtol=1e-10, atol=None, method="DOP853", jac=True,
                  max_steps=DEFAULT_MAX_STEPS):
    r"""Integrate the reduced flow (bounded: at most ``max_steps`` solver steps).

    Parameters
    ----------
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}
    m, n, b, M, eta_QK, eta_OV, eta_Q, eta_K, eta_O, eta_V, eps, mu0
        The system: see :class:`~numerics.dynamics.reduced_system.ReducedSystem`
        (paper setting, unit rates, balanced factors, paper initialization
        by default).
    t_span, t_eval, loss_thresholds, target_loss, rtol, atol, method, jac, max_steps
        The integration: see
        :meth:`~numerics.dynamics.reduced_system.ReducedSystem.integrate`. Without
        ``t_span`` the run goes to ``target_loss`` (or over ``t_eval``).

    Returns
    -------
    numerics.dynamics.trajectory.Trajectory
        ``crossings[i]`` is the state where the loss first fell through
        ``loss_thresholds[i]`` (or None); ``target_state`` where it reached
        ``target_loss``. Status -1 if ``max_steps`` ran out first (for example
        a target the trajectory never reaches).

    Raises
    ------
    ValueError
        Invalid parameter (named, with its valid range; ``eps`` in
        :data:`~numerics.dynamics.reduced_system.EPS_RANGE`); a threshold or
        target loss outside (0, log M); no end time (``t_span``, ``t_eval``
        or ``target_loss``), or an infinite one without ``target_loss``.
    """
    system = ReducedSystem(parameterization, m=m, n=n, b=b, M=M, eta_QK=eta_QK, eta_OV=eta_OV,
                           eta_Q=eta_Q, eta_K=eta_K, eta_O=eta_O, eta_V=eta_V, eps=eps, mu0=mu0)
    return system.integrate(t_span, t_eval, loss_thresholds=loss_thresholds,
                            target_loss=target_loss, rtol=rtol, atol=atol, method=method,
                            jac=jac, max_steps=max_steps)
