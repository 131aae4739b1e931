r"""Numeric solution of the reduced two-scalar flow (all four parameterizations).

The right-hand sides are lambdified from :func:`derivations.reduction.reduced_odes`
(:func:`numerics.lambdified.reduced_rhs`), their Jacobian from SymPy's
``jacobian`` of the same expressions. For CACO

.. math::
    \dot\mu_{OV} = \frac{\eta_{OV}\,\alpha}{b\,(e^{\alpha\mu_{OV}} + M - 1)},\qquad
    \dot\mu_{QK} = \frac{\eta_{QK}(M-1)\,\alpha(1-\alpha)\,\mu_{OV}}{M b^2 (e^{\alpha\mu_{OV}} + M - 1)},
    \qquad \alpha = \frac{m e^{\mu_{QK}}}{m e^{\mu_{QK}} + n};

a factorized circuit replaces its rate by the effective rate
:math:`\sqrt{4\eta_A\eta_B P^2 + \eta_A^2\eta_B^2 C^2}` (P = b mu_QK or
sqrt(b) mu_OV), with the conserved C of its factors (0 when balanced).

>>> from numerics.reduced_ode import solve_reduced
>>> res = solve_reduced("CACO", target_loss=0.5)
>>> res.status, round(float(res.loss[-1]), 12)
(1, 0.5)
"""
from __future__ import annotations

import math

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import OptimizeResult

from derivations.model import check_parameterization, ov_factorized, qk_factorized

from . import lambdified as lam
from .closed_form import check_model_parameters

__all__ = ["ReducedResult", "solve_reduced", "rates_and_initial_point"]


class ReducedResult(OptimizeResult):
    """Solution of the reduced flow (a dict with attribute access, like SciPy's OdeResult).

    Attributes
    ----------
    t : ndarray
        Times of the records (``t_eval`` if given, else the solver's steps),
        ending at the terminal event if one fired.
    mu_OV, mu_QK, alpha, loss : ndarray
        State, attention on the relevant tokens and loss at ``t``.
    crossings : dict[float, dict]
        For every threshold (and ``target_loss``) crossed downwards: the state
        at the crossing, ``{"t", "mu_OV", "mu_QK", "alpha", "loss"}``.
        Thresholds not crossed are absent.
    status : int
        -1 integration step failed, 0 end of ``t_span`` reached, 1 the
        terminal event (``target_loss``) occurred.
    message : str
    success : bool
        ``status >= 0``.
    nfev, njev : int
    parameterization : str
    params : dict
        The parameter values used (incl. ``C_QK``, ``C_OV``, ``mu0``).
    balanced : bool
        Whether the balanced right-hand side was used.
    """

    def __repr__(self):
        fields = ", ".join(f"{k}={v!r}" if np.ndim(v) == 0 and not isinstance(v, dict)
                           else f"{k}=<{type(v).__name__}>" for k, v in self.items())
        return f"ReducedResult({fields})"


def _pos(name, value):
    if not (isinstance(value, (int, float, np.integer, np.floating)) and math.isfinite(value)
            and value > 0):
        raise ValueError(f"{name} must be a finite number > 0; got {value!r}")
    return float(value)


def rates_and_initial_point(parameterization="CACO", *, b=50, eta_QK=1.0, eta_OV=1.0,
                            eta_Q=None, eta_K=None, eta_O=None, eta_V=None, eps=None,
                            mu0=None):
    r"""Resolve the rates, conserved quantities and initial point of a run.

    Factor rates default to their circuit's rate. A factorized circuit starts
    from the paper's initialization of scale eps (default 1e-2):
    mu_QK(0) = eps^2/b, mu_OV(0) = eps^2/sqrt(b), with
    :math:`C = \varepsilon^2(1/\eta_A - 1/\eta_B)`
    (:func:`derivations.factorization.initial_point`, ``initial_conserved``);
    collapsed circuits start at 0. ``mu0`` overrides the initial point (C is
    still that of the eps-initialization).

    Returns
    -------
    dict
        ``eta_QK, eta_OV, eta_Q, eta_K, eta_O, eta_V, C_QK, C_OV, mu0, eps, balanced``.
    """
    check_parameterization(parameterization)
    eta_QK, eta_OV = _pos("eta_QK", eta_QK), _pos("eta_OV", eta_OV)
    eta_Q = eta_QK if eta_Q is None else _pos("eta_Q", eta_Q)
    eta_K = eta_QK if eta_K is None else _pos("eta_K", eta_K)
    eta_O = eta_OV if eta_O is None else _pos("eta_O", eta_O)
    eta_V = eta_OV if eta_V is None else _pos("eta_V", eta_V)
    eps = 1e-2 if eps is None else _pos("eps", eps)
    rates = (eta_QK, eta_OV, eta_Q, eta_K, eta_O, eta_V)
    C_QK = C_OV = 0.0
    if qk_factorized(parameterization):
        C_QK = float(lam.initial_conserved_fn("QK").func(eps, 1, 1, 1, 2, *rates, 0, 0))
    if ov_factorized(parameterization):
        C_OV = float(lam.initial_conserved_fn("OV").func(eps, 1, 1, 1, 2, *rates, 0, 0))
    if mu0 is None:
        mu0 = tuple(float(v) for v in lam.initial_point_fn(parameterization).func(eps, b))
    else:
        mu0 = tuple(float(v) for v in mu0)
        if len(mu0) != 2 or not all(math.isfinite(v) for v in mu0):
            raise ValueError(f"mu0 must be two finite numbers (mu_OV, mu_QK); got {mu0!r}")
    balanced = (C_QK == 0.0 and C_OV == 0.0)
    return dict(eta_QK=eta_QK, eta_OV=eta_OV, eta_Q=eta_Q, eta_K=eta_K, eta_O=eta_O,
                eta_V=eta_V, C_QK=C_QK, C_OV=C_OV, mu0=mu0, eps=eps, balanced=balanced)


def _check_loss_level(name, value, M):
    logM = math.log(M)
    if not (isinstance(value, (int, float, np.integer, np.floating)) and math.isfinite(value)
            and 0 < value < logM):
        raise ValueError(f"{name} must be in (0, log M) = (0, {logM!r}); got {value!r} "
                         "(a target loss the dynamics never reach)")
    return float(value)


def solve_reduced(parameterization="CACO", *, m=5, n=50, b=50, M=20, eta_QK=1.0, eta_OV=1.0,
                  eta_Q=None, eta_K=None, eta_O=None, eta_V=None, eps=None, mu0=None,
                  t_span=None, t_eval=None, loss_thresholds=(), target_loss=None,
                  rtol=1e-10, atol=None, method="DOP853", jac=True):
    r"""Integrate the reduced flow with :func:`scipy.integrate.solve_ivp`.

    Parameters
    ----------
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}
    m, n, b : float
        Token counts and embedding scale (> 0).
    M : float
        Number of classes (>= 2).
    eta_QK, eta_OV : float
        Circuit learning rates (collapsed circuits; default rate of the factors).
    eta_Q, eta_K, eta_O, eta_V : float, optional
        Factor rates (factorized circuits). Unequal factor rates make the
        conserved quantity nonzero; the unbalanced right-hand side is used.
    eps : float, optional
        Initialization scale of factorized circuits (default 1e-2).
    mu0 : (float, float), optional
        Initial (mu_OV, mu_QK), overriding the paper's initialization.
    t_span : (float, float), optional
        Default ``(0, inf)`` when ``target_loss`` is given (required otherwise).
    t_eval : array_like, optional
    loss_thresholds : sequence of float
        Loss levels in (0, log M); the state where the loss first falls
        through each is recorded in ``crossings`` (non-terminal events on
        ``log loss - log threshold``).
    target_loss : float, optional
        Stop when the loss falls to this level (terminal event).
    rtol : float
    atol : float, optional
        Default ``1e-2 * rtol * min(1, smallest nonzero |mu(0)|)``: 1e-12 from
        zero init; tighter for factorized circuits, whose eps-initialization
        starts mu_QK at eps^2/b (the first integral of FACO/FAFO contains
        n log mu_QK and needs mu_QK to relative accuracy from the start).
    method : str
        A :func:`solve_ivp` method. Default DOP853: on the CACO benchmark
        (loss 1 -> 1e-4, ratios 0.01-100) it is the fastest and most accurate
        (crossing states ~3e-12 relative to the closed form, first integral
        drift <= 3e-9, vs LSODA ~2e-10 / 1e-6, Radau 20x slower); the flow is
        not stiff.
    jac : bool
        Pass the analytic Jacobian (used by LSODA, BDF, Radau only).

    Returns
    -------
    ReducedResult

    Raises
    ------
    ValueError
        Invalid parameter (named, with its valid range); a threshold or
        target loss outside (0, log M); no ``t_span`` and no ``target_loss``.
    """
    m, n, b, M = check_model_parameters(m, n, b, M)
    setup = rates_and_initial_point(parameterization, b=b, eta_QK=eta_QK, eta_OV=eta_OV,
                                    eta_Q=eta_Q, eta_K=eta_K, eta_O=eta_O, eta_V=eta_V,
                                    eps=eps, mu0=mu0)
    thresholds = [_check_loss_level("loss_thresholds", float(v), M) for v in loss_thresholds]
    if target_loss is not None:
        target_loss = _check_loss_level("target_loss", target_loss, M)
    if t_span is None:
        if target_loss is None:
            raise ValueError("t_span is required when target_loss is not given")
        t_span = (0.0, np.inf)
    t_span = tuple(float(v) for v in t_span)
    if len(t_span) != 2 or not (math.isfinite(t_span[0]) and t_span[1] > t_span[0]):
        raise ValueError(f"t_span must be (t0, t1) with t0 finite and t1 > t0; got {t_span!r}")

    if atol is None:
        nonzero = [abs(v) for v in setup["mu0"] if v != 0]
        atol = 1e-2 * rtol * min([1.0] + nonzero)
    balanced = setup["balanced"]
    params = (m, n, b, M, setup["eta_QK"], setup["eta_OV"], setup["eta_Q"], setup["eta_K"],
              setup["eta_O"], setup["eta_V"], setup["C_QK"], setup["C_OV"])
    f = lam.reduced_rhs(parameterization, balanced).func
    J = lam.reduced_jacobian(parameterization, balanced).func
    loss_f = lam.loss_fn().func
    alpha_f = lam.alpha_fn().func

    def rhs(t, y):
        d_ov, d_qk = f(y[0], y[1], *params)
        return np.array([d_ov, d_qk], dtype=float)

    def jacobian(t, y):
        return np.array(J(y[0], y[1], *params), dtype=float).reshape(2, 2)

    def make_event(level, terminal):
        log_level = math.log(level)

        def event(t, y):
            return math.log(loss_f(y[0], y[1], m, n, M)) - log_level
        event.terminal, event.direction = terminal, -1
        return event

    events = [make_event(v, False) for v in thresholds]
    if target_loss is not None:
        events.append(make_event(target_loss, True))
    kw = {}
    if jac and method in ("LSODA", "BDF", "Radau"):
        kw["jac"] = jacobian
    sol = solve_ivp(rhs, t_span, np.array(setup["mu0"], dtype=float), method=method,
                    t_eval=t_eval, events=events or None, rtol=rtol, atol=atol, **kw)
    mu_ov, mu_qk = sol.y
    t = sol.t

    def state(tt, y):
        return dict(t=float(tt), mu_OV=float(y[0]), mu_QK=float(y[1]),
                    alpha=float(alpha_f(y[1], m, n)), loss=float(loss_f(y[0], y[1], m, n, M)))
    crossings = {}
    levels = thresholds + ([target_loss] if target_loss is not None else [])
    if events:
        for level, te, ye in zip(levels, sol.t_events, sol.y_events):
            if len(te):
                crossings[level] = state(te[0], ye[0])
    if sol.status == 1 and target_loss is not None and len(sol.t_events[-1]):
        # t_eval records stop before the event; append the terminal state.
        te, ye = sol.t_events[-1][0], sol.y_events[-1][0]
        if t.size == 0 or t[-1] < te:
            t = np.append(t, te)
            mu_ov, mu_qk = np.append(mu_ov, ye[0]), np.append(mu_qk, ye[1])
    return ReducedResult(
        t=t, mu_OV=mu_ov, mu_QK=mu_qk, alpha=np.asarray(alpha_f(mu_qk, m, n), dtype=float),
        loss=np.asarray(loss_f(mu_ov, mu_qk, m, n, M), dtype=float), crossings=crossings,
        status=sol.status, message=sol.message, success=sol.status >= 0, nfev=sol.nfev,
        njev=sol.njev, parameterization=parameterization,
        params=dict(m=m, n=n, b=b, M=M, **{k: v for k, v in setup.items() if k != "balanced"}),
        balanced=balanced)
