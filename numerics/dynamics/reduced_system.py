r"""One object per reduced system, for every task: from the derived equations to integration.

In the spirit of PyDy's ``System``, :class:`ReducedSystem` holds one task and
parameterization with concrete values and offers every numeric function of its
reduced dynamics. Two backends, one interface:

* the **paper's task** (``task="paper"``, the default): the code generated
  ahead of time from the derivation catalog (:mod:`numerics.functions.lambdified`,
  SymPy-free), coordinates :math:`(\mu_{OV}, \mu_{QK})`, the analytic
  Jacobian, and the paper's closed forms (first integral, orbits, state at a
  loss; :class:`~numerics.dynamics.paper_closed_forms.PaperClosedForms`);
* **any other task** of the engine: its reduced system (the closed ODEs of the
  observables where the engine found them, else the family flow;
  :func:`numerics.dynamics.task_systems.reduced_flow`), lambdified at run
  time (:class:`~numerics.dynamics.lambdified_flow.LambdifiedFlow`), with the
  Jacobian differentiated by SymPy at lambdify time.

The procedure (paper's task):

1. **Validate** the parameterization and the model parameters by the one
   rule of :mod:`derivations.core.vocabulary` (``m, n, b`` finite and > 0, ``M``
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
   attention, first integral, orbit) to these values once:
   ``ReducedSystem.params`` is the only place where the positional
   parameter tuple (:data:`PARAMETER_ORDER`) is built.
6. **Integrate** with :meth:`ReducedSystem.integrate`: the bounded
   (``max_steps``) step loop :func:`numerics.dynamics.bounded_ivp.solve_loss_levels` with
   loss events, returning a :class:`numerics.dynamics.trajectory.Trajectory`.

Another task: its parameters (``m, n, b, M`` and its own, e.g. ``n_c``) are
checked by :func:`numerics.dynamics.task_systems.task_parameters`, the initial
point is 0 for collapsed circuits (``mu0`` required otherwise), and the
trajectory carries one array per reduced coordinate (``ReducedSystem.names``).

>>> from numerics.dynamics.reduced_system import ReducedSystem
>>> system = ReducedSystem("CACO", eta_QK=10.0)
>>> system.mu0, system.balanced
((0.0, 0.0), True)
>>> round(float(system.loss(*system.mu0)), 12) == round(float(np.log(20)), 12)
True
>>> res = system.integrate(target_loss=0.1)
>>> res.status, round(res.target_state["alpha"], 6)
(1, 0.695206)
>>> round(float(system.state_at_loss(0.1).alpha), 6)
0.695206
>>> task = ReducedSystem("CACO", task="query-in-context", eta_QK=10.0)
>>> task.names
('mu_QK_q', 'mu_QK', 'mu_OV_q', 'mu_OV')
>>> run = task.integrate(target_loss=0.1)
>>> run.status, round(run.target_state["alpha"], 6), task.jacobian(*task.mu0).shape
(1, 0.693866, (4, 4))
"""
from __future__ import annotations

import math

import numpy as np

from derivations.core.vocabulary import (CIRCUITS, MODEL_PARAMETERS, PAPER_SETTING, RATE_NAMES,
                                    check_model_parameters, check_parameterization, check_positive,
                                    ov_factorized, qk_factorized)

from ..functions import lambdified as lam
from ..validation import check_in_range, check_int, check_loss_level, check_loss_levels, check_point, check_t_span, check_times
from .bounded_ivp import DEFAULT_MAX_STEPS, HORIZON, IMPLICIT, METHODS, below_level, solve_loss_levels
from .paper_closed_forms import PaperClosedForms
from .trajectory import Trajectory

__all__ = ["ReducedSystem", "PARAMETER_ORDER", "DEFAULT_EPS", "EPS_RANGE"]

#: Initialization scale of factorized circuits.
DEFAULT_EPS = 1e-2
#: The initialization scales accepted: every parameterization reaches its target loss from them at
#: the paper's setting (tested); at 1e-100 FACO and past 1e2 FACO do not, past 1e154 eps^2 overflows.
EPS_RANGE = (1e-50, 1e2)
#: Order of the parameters every generated flow function takes after its state
#: variables (:data:`numerics.functions.lambdified.PARAM_NAMES`): model parameters, rates,
#: conserved quantities, all named by :mod:`derivations.core.vocabulary`.
PARAMETER_ORDER = MODEL_PARAMETERS + RATE_NAMES + tuple(c.conserved for c in CIRCUITS.values())
#: The paper's coordinates, in the order of the generated code.
PAPER_COORDINATES = ("mu_OV", "mu_QK")


class ReducedSystem(PaperClosedForms):
    r"""The reduced flow of one task and parameterization with concrete values.

    Parameters
    ----------
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}
    task : str
        A built-in task of :mod:`derivations.tasks` the engine reduces
        (default ``"paper"``: the generated backend and the closed forms).
    m, n, b : float
        Relevant / irrelevant token counts and embedding scale (> 0, in
        :data:`~derivations.core.vocabulary.MODEL_PARAMETER_RANGE`); the
        task's defaults (the paper's setting) if left out.
    M : int
        Number of classes (>= 2).
    eta_QK, eta_OV : float
        Circuit learning rates (> 0); default rates of the factors.
    eta_Q, eta_K, eta_O, eta_V : float, optional
        Factor rates; unequal ones make the conserved quantity nonzero. The two rates of a
        factorized circuit have a product of at least 5e-324 (ValueError otherwise).
    eps : float, optional
        Initialization scale of factorized circuits, in :data:`EPS_RANGE` (default 1e-2; paper's task).
    mu0 : sequence of float, optional
        Initial point, overriding the default one. Paper's task:
        ``(mu_OV, mu_QK)`` (the conserved quantities stay those of the
        eps-initialization); another task: one value per ``names``
        (default 0, required for factorized circuits).
    flow : LambdifiedFlow, optional
        The engine's flow to integrate instead of the task's default backend:
        the flow of its family coordinates
        (:func:`~numerics.dynamics.task_systems.family_system`), or the engine's
        lambdified reduced system of the paper's task
        (:func:`~numerics.dynamics.task_systems.reduced_flow`); ``mu0`` then
        gives one value per coordinate of that flow.
    **task_parameters
        The task's own parameters (e.g. ``n_c``).

    Attributes
    ----------
    task, parameterization : str
    names : tuple of str
        The reduced coordinates.
    m, n, b : float
    M : int
    eta_QK, eta_OV, eta_Q, eta_K, eta_O, eta_V, eps : float
    C_QK, C_OV : float or None
        Conserved quantities of the factors (paper's task; None otherwise).
    mu0 : tuple of float
    balanced : bool
        ``C_QK == C_OV == 0``: the balanced right-hand side is used (always
        True for another task, whose family flow needs no conserved quantity).
    params : tuple
        The positional parameter values of the backend (paper's task:
        :data:`PARAMETER_ORDER`).
    """

    def __init__(self, parameterization="CACO", *, task="paper", m=None, n=None, b=None,
                 M=None, eta_QK=1.0, eta_OV=1.0, eta_Q=None, eta_K=None, eta_O=None,
                 eta_V=None, eps=None, mu0=None, flow=None, **task_parameters):
        self.parameterization = check_parameterization(parameterization)
        self.task = task
        self.eta_QK = check_positive("eta_QK", eta_QK)
        self.eta_OV = check_positive("eta_OV", eta_OV)
        self.eta_Q = self.eta_QK if eta_Q is None else check_positive("eta_Q", eta_Q)
        self.eta_K = self.eta_QK if eta_K is None else check_positive("eta_K", eta_K)
        self.eta_O = self.eta_OV if eta_O is None else check_positive("eta_O", eta_O)
        self.eta_V = self.eta_OV if eta_V is None else check_positive("eta_V", eta_V)
        self.eps = DEFAULT_EPS if eps is None else check_in_range(
            "eps", eps, *EPS_RANGE, "(the initialization scales the reduced flow is tested on)", scalar=True)
        model = {k: v for k, v in dict(m=m, n=n, b=b, M=M).items() if v is not None}
        if task == "paper" and not task_parameters and flow is None:
            self._bind_generated(model, mu0)
        else:
            self._bind_lambdified(model, task_parameters, mu0, flow)

    def _bind_generated(self, model, mu0):
        """Paper's task: the generated functions, bound to the values."""
        P = self.parameterization
        setting = {**PAPER_SETTING, **model}
        self.m, self.n, self.b, self.M = check_model_parameters(
            setting["m"], setting["n"], setting["b"], setting["M"])
        self.names = PAPER_COORDINATES
        self.C_QK = self.C_OV = 0.0
        self.params = self._param_tuple()
        for factorized, a, b in ((qk_factorized(P), "eta_Q", "eta_K"), (ov_factorized(P), "eta_O", "eta_V")):
            if factorized and not getattr(self, a) * getattr(self, b) > 0:     # underflows to 0
                raise ValueError(f"{a} * {b} must be at least 5e-324 (a double); got {a}={getattr(self, a):g}, "
                                 f"{b}={getattr(self, b):g} (the conserved quantity of the factors, "
                                 f"eps^2 (1/{a} - 1/{b}), divides by it)")
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
        self._flow = None

    def _bind_lambdified(self, model, task_parameters, mu0, flow):
        """Another task (or a given ``flow``): the engine's reduced system,
        lambdified (SymPy at build time)."""
        from .task_systems import reduced_flow, task_parameters as resolve
        P = self.parameterization
        values = resolve(self.task, **model, **task_parameters)
        self.m, self.n, self.b, self.M = (values[k] for k in ("m", "n", "b", "M"))
        check_model_parameters(self.m, self.n, self.b, self.M)      # the paper's range, as on its own path
        self._values = dict(values, **{k: getattr(self, k) for k in RATE_NAMES})
        self._flow = flow = reduced_flow(self.task, P) if flow is None else flow
        self.names = flow.names
        self.params = flow._pvals(self._values)
        self.C_QK = self.C_OV = None
        self.balanced = True
        if mu0 is None:
            if P != "CACO":
                raise ValueError(f"task {self.task!r}, {P}: give mu0, the initial values of "
                                 f"{', '.join(self.names)} (only collapsed circuits start at 0)")
            mu0 = (0.0,) * len(self.names)
        self.mu0 = check_point("mu0", mu0, self.names)

    def _param_tuple(self):
        return tuple(getattr(self, name) for name in PARAMETER_ORDER)

    @property
    def values(self) -> dict:
        """``{name: value}`` of the parameters, then ``eps`` and ``mu0``."""
        if self._flow is None:
            out = dict(zip(PARAMETER_ORDER, self.params))
        else:
            out = dict(self._values)
        out.update(eps=self.eps, mu0=self.mu0)
        return out

    @property
    def ratio(self) -> float:
        r""":math:`r = \eta_{QK}/\eta_{OV}`."""
        return self.eta_QK / self.eta_OV

    def __repr__(self):
        rates = ", ".join(f"{k}={getattr(self, k):g}" for k in
                          ("eta_QK", "eta_OV", "eta_Q", "eta_K", "eta_O", "eta_V"))
        task = "" if self.task == "paper" else f", task={self.task!r}"
        return (f"ReducedSystem({self.parameterization!r}{task}, m={self.m:g}, n={self.n:g}, "
                f"b={self.b:g}, M={self.M}, {rates}, eps={self.eps:g}, mu0={self.mu0})")

    # ------------------------------------------------------------------ #
    # derived functions (paper: vectorized; another task: scalars)
    # ------------------------------------------------------------------ #
    def rhs(self, *y):
        """The time derivative of the coordinates at a point.

        Parameters
        ----------
        *y : float or array_like
            One value per coordinate (``names``); arrays broadcast (paper).

        Returns
        -------
        tuple or ndarray
            One derivative per coordinate.
        """
        if self._flow is None:
            return self._rhs(*y, *self.params)
        return np.array(self._flow._f(*y, *self.params), dtype=float)

    def jacobian(self, *y) -> np.ndarray:
        """The Jacobian of :meth:`rhs` at one point (paper: generated;
        another task: SymPy's Jacobian of the engine's right-hand side).

        Parameters
        ----------
        *y : float
            One value per coordinate (``names``).

        Returns
        -------
        ndarray
            Shape ``(d, d)``, ``d = len(names)``.
        """
        if self._flow is None:
            return np.array(self._jac(*y, *self.params), dtype=float).reshape(2, 2)
        return self._flow.jacobian_function()(*y, *self.params)

    def loss(self, *y):
        r"""Loss at a point (paper: :math:`\log(1 + (M-1)e^{-\alpha\mu_{OV}})`, vectorized, stable).

        Parameters
        ----------
        *y : float or array_like
            One value per coordinate (``names``).

        Returns
        -------
        float or ndarray
        """
        if self._flow is None:
            mu_OV, mu_QK = y
            return self._loss(mu_OV, mu_QK, self.m, self.n, self.M)
        return float(self._flow._L(*y, *self.params))

    def alpha(self, *y):
        r"""Attention on the relevant tokens.

        Parameters
        ----------
        *y : float or array_like
            Paper: ``mu_QK`` alone,
            :math:`\alpha = m e^{\mu_{QK}}/(m e^{\mu_{QK}} + n)` (vectorized);
            another task: one value per coordinate (``names``).

        Returns
        -------
        float or ndarray
        """
        if self._flow is None:
            (mu_QK,) = y
            return self._alpha(mu_QK, self.m, self.n)
        return float(self._flow._a(*y, *self.params))

    def _exact_loss(self, y):
        """The loss at ``y`` in mpmath (generated; another task: lambdified on first use)."""
        if self._flow is None:
            return lam.loss_fn("mpmath").func(float(y[0]), float(y[1]), self.m, self.n, self.M)
        return self._flow.loss_mpmath_function()(*(float(v) for v in y), *self.params)

    def _alpha_at(self, y):
        return self.alpha(y[1]) if self._flow is None else self.alpha(*y)

    def state(self, t, y) -> dict:
        """A state record at time ``t`` and point ``y``.

        Parameters
        ----------
        t : float
        y : sequence of float
            One value per coordinate (``names``).

        Returns
        -------
        dict
            ``{"t", <coordinates>, "alpha", "loss"}`` as floats.
        """
        out = {"t": float(t)}
        out.update(zip(self.names, (float(v) for v in y)))
        out.update(alpha=float(self._alpha_at(y)), loss=float(self.loss(*y)))
        return out

    # ------------------------------------------------------------------ #
    # integration
    # ------------------------------------------------------------------ #
    def integrate(self, t_span=None, t_eval=None, *, loss_thresholds=(), target_loss=None,
                  rtol=1e-10, atol=None, method="DOP853", jac=True,
                  max_steps=DEFAULT_MAX_STEPS):
        r"""Integrate the reduced flow from ``mu0``.

        Parameters
        ----------
        t_span : (float, float), optional
            Integration interval (``mu0`` is the state at ``t0``); ``t1`` may be ``inf`` only with a
            ``target_loss``. Default: ``(0, inf)`` with a ``target_loss``, else ``(0, t_eval[-1])``.
        t_eval : array_like, optional
            Finite, strictly increasing output times within ``t_span``; default: the solver's steps.
        loss_thresholds : sequence of float
            Loss levels in (0, log M); ``crossings[i]`` records where the loss first falls through
            ``loss_thresholds[i]``.
        target_loss : float, optional
            Stop when the loss falls to this level (in (0, log M)). A level near the initial loss
            (:func:`~numerics.dynamics.bounded_ivp.near_initial`) is located on the loss in mpmath.
        rtol : float
            Relative tolerance (finite, > 0).
        atol : float, optional
            Default ``1e-2 * rtol * min(1, smallest nonzero |mu(0)|)``: a factorized circuit starts at
            mu = eps^2/b and its first integral (with ``n log mu_QK``) needs mu_QK to relative accuracy
            from the start.
        method : str
            A key of :data:`~numerics.dynamics.bounded_ivp.METHODS`. DOP853
            (default) is the fastest and most accurate on this non-stiff flow.
        jac : bool
            Pass the analytic Jacobian to the implicit methods.
        max_steps : int
            Bound on the solver steps (>= 1): past it the run stops with
            status -1 and what it has recorded. No run is unbounded.

        Returns
        -------
        Trajectory
            With ``system`` (this object), ``njev``, and one array per
            coordinate (``names``; paper: ``mu_OV``, ``mu_QK``).

        Raises
        ------
        ValueError
            Invalid argument (named, with its valid range); an infinite
            ``t_span`` without ``target_loss``; no ``t_span``, ``t_eval`` or
            ``target_loss``.
        """
        thresholds, target_loss, t0, t1, t_eval, opts = self._integration_options(
            t_span, t_eval, loss_thresholds, target_loss, rtol, atol, method, max_steps)
        levels = thresholds + ((target_loss,) if target_loss is not None else ())
        y0 = np.array(self.mu0, dtype=float)
        out = dict(thresholds=thresholds, crossings=[None] * len(thresholds),
                   target_loss=target_loss, target_state=None, system=self,
                   parameterization=self.parameterization)
        if self._flow is not None:
            out.update(task=self.task, coordinates=self.names)
        loss0 = float(self.loss(*y0))
        if target_loss is not None and below_level(y0, target_loss, loss0, self._exact_loss):
            out["target_state"] = self.state(t0, y0)
            return self._result([t0], y0[None, :], 1,
                                f"the initial loss {loss0!r} is already <= target_loss "
                                f"{target_loss!r}", 0, 0, 0, {**out, "reason": "terminal"})
        return self._run(t0, t1, y0, t_eval, levels, len(thresholds), jac, opts, out)

    def _integration_options(self, t_span, t_eval, loss_thresholds, target_loss, rtol, atol,
                             method, max_steps):
        """The checked arguments of :meth:`integrate`."""
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
        return thresholds, target_loss, t0, t1, t_eval, dict(
            rtol=rtol, atol=atol, method=method, max_steps=max_steps)

    def _run(self, t0, t1, y0, t_eval, levels, n_thr, jac, opts, out):
        """:func:`numerics.dynamics.bounded_ivp.solve_loss_levels`: the loss
        events on ``log L - log level`` (well scaled at tiny losses)."""
        def fun(t, y):
            return np.array(self.rhs(*y), dtype=float)

        def log_loss(y):
            return math.log(self.loss(*y))

        # the Jacobian only for the implicit methods (another task's is lambdified on first use)
        jacobian = (lambda t, y: self.jacobian(*y)) if jac and opts["method"] in IMPLICIT else None
        run = solve_loss_levels(fun, (t0, t1), y0, log_loss, levels, n_thr, t_eval=t_eval,
                                jac=jacobian, exact_loss=self._exact_loss, **opts)
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
        elif run.reason in ("failed", "unresolved"):    # a descent too fast for the doubles near t
            what = "the solver stopped" if run.reason == "failed" else "a loss level was not resolved"
            message = (f"{what} at t={run.t[-1]:.6g} (loss {float(self.loss(*y_end)):.6g}; relevant share "
                       f"at the start {float(self._alpha_at(y0)):.3g}): {run.message}")
            if "spacing between numbers" in run.message:
                message += " The descent after the plateau is too fast for the doubles near t."
        elif run.reason == "nonfinite" and run.nsteps == 0:    # e.g. a factorized QK circuit: mu_QK(0) = eps^2/b
            start = ", ".join(f"{k}={v:.6g}" for k, v in zip(self.names, y0))
            message += f" ({start}; b={self.b:g}" + (f", eps={self.eps:g})" if self._flow is None else ")")
        elif run.reason == "horizon":
            message = (f"target_loss={levels[-1]} not reached by t={min(t1, HORIZON):g} "
                       f"(loss {float(self.loss(*y_end)):.6g})")
        elif run.reason == "terminal":
            message = f"target_loss={levels[n_thr]} reached at t={run.t[-1]:.6g}"
        return self._result(run.t, run.y, run.status, message, run.nfev, run.njev,
                            run.nsteps, {**out, "reason": run.reason})

    def _result(self, ts, Y, status, message, nfev, njev, steps, out):
        """The :class:`Trajectory` of the records ``Y`` (records x coordinates)."""
        t = np.asarray(ts, dtype=float)
        Y = np.asarray(Y, dtype=float).reshape(len(t), len(self.names))
        coords = {name: Y[:, i] for i, name in enumerate(self.names)}
        if self._flow is None:
            alpha = np.asarray(self.alpha(coords["mu_QK"]), dtype=float)
            loss = np.asarray(self.loss(coords["mu_OV"], coords["mu_QK"]), dtype=float)
        else:
            alpha = np.array([self.alpha(*y) for y in Y], dtype=float)
            loss = np.array([self.loss(*y) for y in Y], dtype=float)
            coords["y"] = Y
        return Trajectory(
            t=t, **coords, alpha=alpha, loss=loss, status=int(status),
            message=message, success=status >= 0, nfev=int(nfev), njev=int(njev),
            nsteps=int(steps), **out)
