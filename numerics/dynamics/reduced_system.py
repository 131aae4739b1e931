r"""One object per reduced system: from the derived equations to integration.

In the spirit of PyDy's ``System``, :class:`ReducedSystem` holds one
parameterization with concrete values and offers every numeric function of
its two-scalar dynamics :math:`(\mu_{OV}, \mu_{QK})`. The procedure:

1. **Validate** the parameterization and the model parameters by the one
   rule of :mod:`derivations.vocabulary` (``m, n, b`` finite and > 0, ``M``
   an integer >= 2), and every learning rate (finite, > 0).
2. **Resolve the rates**: a factor rate left out is its circuit's rate
   (:math:`\eta_Q = \eta_K = \eta_{QK}`, :math:`\eta_O = \eta_V = \eta_{OV}`).
3. **Resolve the conserved quantities** of factorized circuits at the
   paper's initialization of scale ``eps`` (default ``1e-2``),
   :math:`C = \varepsilon^2(1/\eta_A - 1/\eta_B)`
   (:func:`numerics.functions.lambdified.initial_conserved_fn`); 0 for a collapsed
   circuit. The system is *balanced* when both vanish.
4. **Resolve the initial point**: ``mu0`` if given, else the paper's
   initialization (:func:`numerics.functions.lambdified.initial_point_fn`:
   :math:`\mu_{QK}(0) = \varepsilon^2/b` and
   :math:`\mu_{OV}(0) = \varepsilon^2/\sqrt b` for factorized circuits, 0
   for collapsed ones).
5. **Bind** the derived functions (right-hand side, Jacobian, loss,
   attention, first integral, orbit; :mod:`numerics.functions.lambdified`) to these
   values once: :attr:`ReducedSystem.params` is the only place where the
   positional parameter tuple :data:`numerics.functions.lambdified.PARAMS` is built.
6. **Integrate** with :meth:`ReducedSystem.integrate`: the bounded
   (``max_steps``) step loop :func:`numerics.dynamics.bounded_ivp.solve_bounded` with
   loss events, returning a :class:`numerics.dynamics.trajectory.Trajectory`.

>>> from numerics.dynamics.reduced_system import ReducedSystem
>>> system = ReducedSystem("CACO", eta_QK=10.0)
>>> system.mu0, system.balanced
((0.0, 0.0), True)
>>> round(float(system.loss(*system.mu0)), 12) == round(float(np.log(20)), 12)
True
>>> res = system.integrate(target_loss=0.1)
>>> res.status, round(res.target_state["alpha"], 6)
(1, 0.695206)
>>> round(float(system.state_at_loss(0.1)["alpha"]), 6)
0.695206
"""
from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq

from derivations.vocabulary import (CIRCUITS, MODEL_PARAMETERS, PAPER_SETTING, RATE_NAMES,
                                    check_parameterization, ov_factorized, qk_factorized)

from ..functions import lambdified as lam
from .bounded_ivp import DEFAULT_MAX_STEPS, HORIZON, METHODS, solve_bounded
from .trajectory import Trajectory
from ..validation import (check_int, check_loss_level, check_loss_levels,
                         check_model_parameters, check_point, check_positive, check_t_span,
                         check_times)

__all__ = ["ReducedSystem", "PARAMETER_ORDER", "DEFAULT_EPS"]

#: Initialization scale of factorized circuits.
DEFAULT_EPS = 1e-2
_EPS = np.finfo(float).eps
#: Order of the parameters every generated flow function takes after its state
#: variables (:data:`numerics.functions.lambdified.PARAMS`): model parameters, rates,
#: conserved quantities, all named by :mod:`derivations.vocabulary`.
PARAMETER_ORDER = MODEL_PARAMETERS + RATE_NAMES + tuple(c.conserved for c in CIRCUITS.values())


class ReducedSystem:
    r"""The reduced flow of one parameterization with concrete values.

    Parameters
    ----------
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}
    m, n, b : float
        Relevant / irrelevant token counts and embedding scale (> 0); the
        paper's setting by default.
    M : int
        Number of classes (>= 2).
    eta_QK, eta_OV : float
        Circuit learning rates (> 0); default rates of the factors.
    eta_Q, eta_K, eta_O, eta_V : float, optional
        Factor rates; unequal ones make the conserved quantity nonzero.
    eps : float, optional
        Initialization scale of factorized circuits (default 1e-2).
    mu0 : (float, float), optional
        Initial ``(mu_OV, mu_QK)``, overriding the paper's initialization
        (the conserved quantities stay those of the eps-initialization).

    Attributes
    ----------
    parameterization : str
    m, n, b : float
    M : int
    eta_QK, eta_OV, eta_Q, eta_K, eta_O, eta_V, C_QK, C_OV, eps : float
    mu0 : tuple of float
    balanced : bool
        ``C_QK == C_OV == 0``: the balanced right-hand side is used.
    params : tuple
        Values of :data:`numerics.functions.lambdified.PARAMS`, in that order.
    """

    def __init__(self, parameterization="CACO", *, m=PAPER_SETTING["m"], n=PAPER_SETTING["n"],
                 b=PAPER_SETTING["b"], M=PAPER_SETTING["M"], eta_QK=1.0, eta_OV=1.0,
                 eta_Q=None, eta_K=None, eta_O=None, eta_V=None, eps=None, mu0=None):
        P = check_parameterization(parameterization)
        self.parameterization = P
        self.m, self.n, self.b, self.M = check_model_parameters(m, n, b, M)
        self.eta_QK = check_positive("eta_QK", eta_QK)
        self.eta_OV = check_positive("eta_OV", eta_OV)
        self.eta_Q = self.eta_QK if eta_Q is None else check_positive("eta_Q", eta_Q)
        self.eta_K = self.eta_QK if eta_K is None else check_positive("eta_K", eta_K)
        self.eta_O = self.eta_OV if eta_O is None else check_positive("eta_O", eta_O)
        self.eta_V = self.eta_OV if eta_V is None else check_positive("eta_V", eta_V)
        self.eps = DEFAULT_EPS if eps is None else check_positive("eps", eps)
        self.C_QK = self.C_OV = 0.0
        self.params = self._param_tuple()
        if qk_factorized(P):
            self.C_QK = float(lam.initial_conserved_fn("QK").func(self.eps, *self.params))
        if ov_factorized(P):
            self.C_OV = float(lam.initial_conserved_fn("OV").func(self.eps, *self.params))
        self.params = self._param_tuple()
        if mu0 is None:
            mu0 = lam.initial_point_fn(P).func(self.eps, self.b)
        self.mu0 = check_point("mu0", mu0)
        self.balanced = self.C_QK == 0.0 and self.C_OV == 0.0
        self._rhs = lam.reduced_rhs(P, self.balanced).func
        self._jac = lam.reduced_jacobian(P, self.balanced).func
        self._loss = lam.loss_fn().func
        self._alpha = lam.alpha_fn().func

    def _param_tuple(self):
        return tuple(getattr(self, name) for name in PARAMETER_ORDER)

    @property
    def values(self) -> dict:
        """``{name: value}`` in :data:`PARAMETER_ORDER`, then ``eps`` and ``mu0``."""
        out = dict(zip(PARAMETER_ORDER, self.params))
        out.update(eps=self.eps, mu0=self.mu0)
        return out

    @property
    def ratio(self) -> float:
        r""":math:`r = \eta_{QK}/\eta_{OV}`."""
        return self.eta_QK / self.eta_OV

    def __repr__(self):
        rates = ", ".join(f"{k}={getattr(self, k):g}" for k in
                          ("eta_QK", "eta_OV", "eta_Q", "eta_K", "eta_O", "eta_V"))
        return (f"ReducedSystem({self.parameterization!r}, m={self.m:g}, n={self.n:g}, "
                f"b={self.b:g}, M={self.M}, {rates}, eps={self.eps:g}, mu0={self.mu0})")

    # ------------------------------------------------------------------ #
    # derived functions
    # ------------------------------------------------------------------ #
    def rhs(self, mu_OV, mu_QK):
        """``(dmu_OV/dt, dmu_QK/dt)`` (vectorized)."""
        return self._rhs(mu_OV, mu_QK, *self.params)

    def jacobian(self, mu_OV, mu_QK) -> np.ndarray:
        """The 2x2 Jacobian of :meth:`rhs` at one point."""
        return np.array(self._jac(mu_OV, mu_QK, *self.params), dtype=float).reshape(2, 2)

    def loss(self, mu_OV, mu_QK):
        r"""Loss :math:`\log(1 + (M-1)e^{-\alpha\mu_{OV}})` (vectorized, stable)."""
        return self._loss(mu_OV, mu_QK, self.m, self.n, self.M)

    def alpha(self, mu_QK):
        r"""Attention :math:`\alpha = m e^{\mu_{QK}}/(m e^{\mu_{QK}} + n)` (vectorized)."""
        return self._alpha(mu_QK, self.m, self.n)

    def _require_balanced(self, what):
        if not self.balanced:
            raise ValueError(f"{what} is derived for balanced factors (C_QK = C_OV = 0); "
                             f"this system has C_QK={self.C_QK!r}, C_OV={self.C_OV!r}")

    def first_integral(self, mu_OV, mu_QK):
        """First integral H of the balanced flow (constant along trajectories)."""
        self._require_balanced("first_integral")
        return lam.first_integral_fn(self.parameterization).func(mu_OV, mu_QK, *self.params)

    def first_integral_scale(self, mu_OV, mu_QK):
        """Sum of the absolute values of H's terms: the scale on which H
        cancels, the denominator of a relative drift of H."""
        f = lam.first_integral_scale_fn(self.parameterization).func
        shape = np.broadcast(np.asarray(mu_OV), np.asarray(mu_QK)).shape
        return np.broadcast_to(np.asarray(f(mu_OV, mu_QK, *self.params), dtype=float), shape)

    def orbit(self, mu_OV, *, precise=False):
        r"""mu_QK on the orbit through :attr:`mu0` at the given mu_OV (balanced).

        Collapsed QK circuit: the explicit orbit
        (:func:`numerics.functions.lambdified.orbit_fn`, :math:`\log\omega(K+\log(m/n)) - \log(m/n)`),
        which loses relative accuracy while mu_QK is tiny; ``precise``
        evaluates it with mpmath at 40 digits. Factorized QK circuit: the
        implicit orbit (:func:`~numerics.functions.lambdified.orbit_residual_fn`,
        increasing in mu_QK), solved per point by :func:`scipy.optimize.brentq`
        in :math:`\log\mu_{QK}`.
        """
        self._require_balanced("orbit")
        x = np.asarray(mu_OV, dtype=float)
        P, (x0, u0) = self.parameterization, self.mu0
        if not qk_factorized(P):
            if not precise:
                return np.asarray(lam.orbit_fn(P).func(x, x0, u0, *self.params), dtype=float)
            import mpmath
            f = lam.orbit_fn(P, "mpmath").func
            with mpmath.workdps(40):
                args = [mpmath.mpf(v) for v in (x0, u0, *self.params)]
                out = [float(f(mpmath.mpf(float(xi)), *args)) for xi in x.ravel()]
            return np.array(out).reshape(x.shape)
        if not u0 > 0:
            raise ValueError(f"the implicit orbit of {P} needs mu_QK(0) > 0; got {u0!r}")
        res = lam.orbit_residual_fn(P).func
        out = np.empty(x.shape)
        for i in np.ndindex(x.shape):
            g = lambda lu, xi=x[i]: res(xi, math.exp(lu), x0, u0, *self.params)  # noqa: E731
            out[i] = math.exp(self._bracketed_root(g, math.log(u0)))
        return out

    @staticmethod
    def _bracketed_root(g, lo, step=1.0, grow=60):
        """Root of increasing ``g`` above ``lo`` (``g(lo) <= 0``): widen the
        bracket geometrically, then :func:`scipy.optimize.brentq`."""
        if g(lo) >= 0:
            return lo
        hi = lo + step
        for _ in range(grow):
            if g(hi) >= 0:
                return brentq(g, lo, hi, xtol=4 * _EPS, rtol=4 * _EPS, maxiter=200)
            lo, hi, step = hi, hi + 2 * step, 2 * step
        raise ArithmeticError("no bracket for the orbit equation")

    def state_at_loss(self, loss) -> dict:
        r"""State ``{"mu_OV", "mu_QK", "alpha"}`` of the balanced flow from
        :attr:`mu0` at the given losses (arrays), from the closed forms.

        CACO from zero: :func:`numerics.dynamics.closed_form.state_at_loss` at the
        ratio :math:`\eta_{QK}/\eta_{OV}`. Otherwise: the orbit through
        :attr:`mu0` meets the margin :math:`\alpha\mu_{OV} = s(L)`
        (:func:`numerics.functions.lambdified.margin_at_loss_fn`); along
        :math:`\mu_{OV} = s/\alpha(\mu_{QK})` the orbit residual increases in
        :math:`\mu_{QK}`, so one bracketed :func:`~scipy.optimize.brentq` per
        loss (in :math:`\log\mu_{QK}` for a factorized QK circuit) finds it.
        Losses must lie in (0, log M) and below the initial loss.
        """
        self._require_balanced("state_at_loss")
        L = np.asarray(loss, dtype=float)
        for v in L.ravel():
            check_loss_level("loss", float(v), self.M)
        P, (x0, u0) = self.parameterization, self.mu0
        if P == "CACO" and x0 == 0.0 and u0 == 0.0:
            from .closed_form import state_at_loss
            st = state_at_loss(L, self.ratio, m=self.m, n=self.n, b=self.b, M=self.M)
            return {k: np.asarray(getattr(st, k), dtype=float) for k in ("mu_OV", "mu_QK", "alpha")}
        s = np.asarray(lam.margin_at_loss_fn().func(L, self.M), dtype=float)
        s0 = float(self.alpha(u0)) * x0
        if np.any(s <= s0):
            raise ValueError(f"loss must be below the initial loss {float(self.loss(x0, u0))!r}")
        res = lam.orbit_residual_fn(P).func
        orb = None if qk_factorized(P) else lam.orbit_fn(P).func
        alpha = self._alpha
        u = np.empty(L.shape)
        for i in np.ndindex(L.shape):
            si = float(s[i])
            if orb is None:      # implicit orbit, mu_QK > 0: root in log mu_QK
                def g(lu, si=si):
                    uu = math.exp(lu)
                    return res(si / alpha(uu, self.m, self.n), uu, x0, u0, *self.params)
                u[i] = math.exp(self._bracketed_root(g, math.log(u0)))
            else:
                def g(uu, si=si):
                    return uu - orb(si / alpha(uu, self.m, self.n), x0, u0, *self.params)
                u[i] = self._bracketed_root(g, u0)
        a = np.asarray(self.alpha(u), dtype=float)
        return {"mu_OV": s / a, "mu_QK": u, "alpha": a}

    def state(self, t, y) -> dict:
        """A state record ``{"t", "mu_OV", "mu_QK", "alpha", "loss"}``."""
        return dict(t=float(t), mu_OV=float(y[0]), mu_QK=float(y[1]),
                    alpha=float(self.alpha(y[1])), loss=float(self.loss(y[0], y[1])))

    # ------------------------------------------------------------------ #
    # integration
    # ------------------------------------------------------------------ #
    def integrate(self, t_span=None, t_eval=None, *, loss_thresholds=(), target_loss=None,
                  rtol=1e-10, atol=None, method="DOP853", jac=True,
                  max_steps=DEFAULT_MAX_STEPS):
        r"""Integrate the reduced flow from :attr:`mu0`.

        Parameters
        ----------
        t_span : (float, float), optional
            Integration interval (:attr:`mu0` is the state at ``t0``); ``t1``
            may be ``inf`` only with a ``target_loss``. Default: ``(0, inf)``
            with a ``target_loss``, else ``(0, t_eval[-1])``.
        t_eval : array_like, optional
            Finite, strictly increasing output times within ``t_span``;
            default: the solver's steps.
        loss_thresholds : sequence of float
            Loss levels in (0, log M); ``crossings[i]`` records where the loss
            first falls through ``loss_thresholds[i]``.
        target_loss : float, optional
            Stop when the loss falls to this level (in (0, log M)).
        rtol : float
            Relative tolerance (finite, > 0).
        atol : float, optional
            Default ``1e-2 * rtol * min(1, smallest nonzero |mu(0)|)``: a
            factorized circuit starts at mu = eps^2/b and its first integral
            (with ``n log mu_QK``) needs mu_QK to relative accuracy from the
            start.
        method : str
            A key of :data:`METHODS`. DOP853 (default) is the fastest and
            most accurate on this non-stiff flow.
        jac : bool
            Pass the analytic Jacobian to the implicit methods.
        max_steps : int
            Bound on the solver steps (>= 1): past it the run stops with
            status -1 and what it has recorded. No run is unbounded.

        Returns
        -------
        Trajectory
            With ``system`` (this object) and ``njev``.

        Raises
        ------
        ValueError
            Invalid argument (named, with its valid range); an infinite
            ``t_span`` without ``target_loss``; no ``t_span``, ``t_eval`` or
            ``target_loss``.
        """
        thresholds = check_loss_levels("loss_thresholds", loss_thresholds, self.M)
        if target_loss is not None:
            target_loss = check_loss_level("target_loss", target_loss, self.M)
        rtol = check_positive("rtol", rtol)
        if method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
        max_steps = check_int("max_steps", max_steps, 1)
        if t_eval is not None:
            t_eval = check_times("t_eval", t_eval)
        if t_span is None:      # mu0 is the state at t = 0
            if target_loss is not None:
                t_span = (0.0, math.inf)
            elif t_eval is not None:
                t_span = (0.0, t_eval[-1])
            else:
                raise ValueError("give t_span=(t0, t1) with finite t1, t_eval, or a target_loss")
        t0, t1 = check_t_span(t_span, allow_infinite_end=target_loss is not None)
        if t_eval is not None and (t_eval[0] < t0 or t_eval[-1] > t1):
            raise ValueError(f"t_eval must lie within t_span = {(t0, t1)!r}")
        if atol is None:
            nonzero = [abs(v) for v in self.mu0 if v != 0]
            atol = 1e-2 * rtol * min([1.0] + nonzero)
        atol = check_positive("atol", atol)

        levels = thresholds + ((target_loss,) if target_loss is not None else ())
        y0 = np.array(self.mu0, dtype=float)
        out = dict(thresholds=thresholds, crossings=[None] * len(thresholds),
                   target_loss=target_loss, target_state=None, system=self,
                   parameterization=self.parameterization)
        loss0 = float(self.loss(*y0))
        if target_loss is not None and loss0 <= target_loss:
            out["target_state"] = self.state(t0, y0)
            return self._result([t0], y0[:, None], 1,
                                f"the initial loss {loss0!r} is already <= target_loss "
                                f"{target_loss!r}", 0, 0, 0, out)
        return self._run(t0, t1, y0, t_eval, levels, len(thresholds), rtol, atol, method, jac,
                         max_steps, out)

    def _run(self, t0, t1, y0, t_eval, levels, n_thr, rtol, atol, method, jac, max_steps, out):
        """:func:`numerics.dynamics.bounded_ivp.solve_bounded` with the loss events on
        ``log L - log level`` (well scaled at tiny losses)."""
        p = self.params
        f = self._rhs

        def fun(t, y):
            d_ov, d_qk = f(y[0], y[1], *p)
            return np.array([d_ov, d_qk], dtype=float)

        log_levels = [math.log(v) for v in levels]

        def g(y):
            log_loss = math.log(self.loss(y[0], y[1]))
            return [log_loss - lv for lv in log_levels]

        jacobian = (lambda t, y: self.jacobian(y[0], y[1])) if jac else None
        run = solve_bounded(fun, (t0, t1), y0, t_eval=t_eval, levels=g if levels else None,
                            terminal=n_thr if n_thr < len(levels) else None, method=method,
                            rtol=rtol, atol=atol, jac=jacobian, max_steps=max_steps)
        for k, hit in enumerate(run.hits):
            if hit is not None:
                rec = self.state(*hit)
                if k < n_thr:
                    out["crossings"][k] = rec
                else:
                    out["target_state"] = rec
        message = run.message
        y_end = run.y[-1] if len(run.t) else y0
        if run.reason == "steps":
            message += f" (loss {float(self.loss(*y_end)):.6g})"
        elif run.reason == "horizon":
            message = (f"target_loss={levels[-1]} not reached by t={min(t1, HORIZON):g} "
                       f"(loss {float(self.loss(*y_end)):.6g})")
        elif run.reason == "terminal":
            message = f"target_loss={levels[n_thr]} reached at t={run.t[-1]:.6g}"
        return self._result(run.t, run.y.T, run.status, message, run.nfev, run.njev,
                            run.nsteps, out)

    def _result(self, ts, Y, status, message, nfev, njev, steps, out):
        t = np.asarray(ts, dtype=float)
        mu_ov, mu_qk = Y
        return Trajectory(
            t=t, mu_OV=mu_ov, mu_QK=mu_qk, alpha=np.asarray(self.alpha(mu_qk), dtype=float),
            loss=np.asarray(self.loss(mu_ov, mu_qk), dtype=float), status=int(status),
            message=message, success=status >= 0, nfev=int(nfev), njev=int(njev),
            nsteps=int(steps), **out)
