r"""Gradient flow and gradient descent for :class:`numerics.attention_model.AttentionModel`.

Both integrators work on the flat parameter vector :math:`\theta` of
:meth:`AttentionModel.flatten` with per-entry rates
:math:`\eta` (:meth:`AttentionModel.rates_vector`):

* gradient flow  :math:`\dot\theta = -\eta\odot\nabla_\theta L(\theta)`
  (:func:`gradient_flow`, bounded :func:`numerics.bounded_ivp.solve_bounded`);
* gradient descent :math:`\theta_{s+1} = \theta_s - \mathrm{lr}\,\eta\odot\nabla_\theta L(\theta_s)`
  (:func:`gradient_descent`), reported at time :math:`t = s\cdot\mathrm{lr}` so
  that it converges to the flow at first order as :math:`\mathrm{lr}\to 0`.

Both return a :class:`numerics.trajectory.Trajectory` (the type the reduced
flow returns too) with the reduced coordinates :math:`(\mu_{OV}, \mu_{QK})`
projected on the invariant family (:mod:`numerics.invariant_family`), the
class-averaged attention :math:`\alpha`, the loss, the relative distance
from the family and the final parameters.

>>> from numerics.attention_model import AttentionModel
>>> from numerics.invariant_family import structured_params
>>> model = AttentionModel("CACO", M=3, m=2, n=5, b=2, eta_OV=5.0)
>>> gd = gradient_descent(model, structured_params(model), 0.1, 1000, target_loss=0.2)
>>> gd.status, bool(gd.target_state["loss"] <= 0.2 < gd.loss[-2])
(1, True)
>>> with np.errstate(all="ignore"):
...     gradient_descent(model, structured_params(model), 1e300, 10).status   # diverges
-1
"""

from __future__ import annotations

import math

import numpy as np
from .model.paper import AttentionModel
from .bounded_ivp import DEFAULT_MAX_STEPS, METHODS, solve_bounded
from .model.family import summarize
from .trajectory import Trajectory
from .validation import check_int, check_positive, check_t_span, check_times

__all__ = ["gradient_flow", "gradient_descent"]

_SUMMARY_KEYS = ("loss", "alpha", "mu_OV", "mu_QK", "distance")


def _check_thresholds(loss_thresholds, target_loss):
    if isinstance(loss_thresholds, (str, bytes)) or not np.iterable(loss_thresholds):
        raise ValueError("loss_thresholds must be a sequence of finite numbers > 0, "
                         f"got {loss_thresholds!r}")
    thr = tuple(check_positive("loss_thresholds", x) for x in loss_thresholds)
    if target_loss is not None:
        target_loss = check_positive("target_loss", target_loss)
    return thr, target_loss


def _initial_vector(model, params0):
    if not isinstance(model, AttentionModel):
        raise ValueError(f"model must be an AttentionModel, got {type(model).__name__}")
    if isinstance(params0, dict):
        model._check_params(params0)
        vec = model.flatten(params0).astype(float, copy=True)
    else:
        vec = np.array(params0, dtype=float, copy=True)
        if vec.shape != (model.n_params,):
            raise ValueError(
                f"params0 must be a params dict or a flat vector of length {model.n_params}, "
                f"got shape {vec.shape}"
            )
    if not np.all(np.isfinite(vec)):
        raise ValueError("params0 must be finite")
    return vec


def _state(model, t, vec):
    out = {"t": float(t)}
    out.update({k: float(v) for k, v in summarize(model, vec).items()})
    out["params"] = {k: v.copy() for k, v in model.unflatten(vec).items()}
    return out


def _result(model, t, summary, final_vec, status, message, crossings, target_state,
            thresholds, target_loss, nfev, nsteps, step=None):
    fields = {k: np.asarray(summary[k], dtype=float) for k in _SUMMARY_KEYS}
    bad = [k for k, v in fields.items() if not np.all(np.isfinite(v))]
    if status >= 0 and (bad or not np.all(np.isfinite(final_vec))):
        status = -1
        message = (f"non-finite {', '.join(bad) or 'parameters'} along the run "
                   f"(diverged; was: {message})")
    return Trajectory(
        t=np.asarray(t, dtype=float), **fields,
        params={k: v.copy() for k, v in model.unflatten(final_vec).items()},
        status=int(status), message=str(message), success=status >= 0,
        thresholds=thresholds, crossings=crossings, target_loss=target_loss,
        target_state=target_state, nfev=int(nfev),
        **({} if nsteps is None else {"nsteps": int(nsteps)}),
        **({} if step is None else {"step": step}))


def gradient_flow(
    model,
    params0,
    t_eval=None,
    *,
    t_span=None,
    rtol=1e-10,
    atol=1e-12,
    method="DOP853",
    loss_thresholds=(),
    target_loss=None,
    max_step=np.inf,
    max_steps=DEFAULT_MAX_STEPS,
):
    r"""Integrate the gradient flow :math:`\dot W = -\eta_W\,\partial L/\partial W`.

    Parameters
    ----------
    model : AttentionModel
    params0 : dict[str, ndarray] or ndarray
        Initial parameters (dict, or flat vector of :meth:`AttentionModel.flatten`;
        finite).
    t_eval : array_like, optional
        Increasing output times (at least two); the integration interval is
        ``(t_eval[0], t_eval[-1])`` unless ``t_span`` is given.
    t_span : (float, float), optional
        Integration interval.  If ``t_eval`` is omitted the solver's own steps
        are recorded.
    rtol, atol : float
        Relative and absolute tolerances (finite, > 0).
    method : str
        A key of :data:`numerics.bounded_ivp.METHODS` (default ``"DOP853"``).
    loss_thresholds : sequence of float
        ``crossings[i]`` records the state where the loss first falls through
        ``loss_thresholds[i]`` (located between solver steps to solver
        accuracy).
    target_loss : float, optional
        Stop (terminal event) when the loss falls to this value; the state is
        ``target_state``.
    max_step : float
        Largest step of the solver.
    max_steps : int
        Bound on the solver steps (>= 1): past it the run stops with status
        -1 and what it has recorded.

    Returns
    -------
    numerics.trajectory.Trajectory
        Records at ``t_eval`` (those reached before a terminal event, then
        the terminal state), with ``distance`` and the final ``params``.
        Status -1 if the solver failed, ran out of ``max_steps`` or a value
        became non-finite.

    Notes
    -----
    Integrated by :func:`numerics.bounded_ivp.solve_bounded`, the step loop
    of :func:`scipy.integrate.solve_ivp` with a step bound.
    """
    vec0 = _initial_vector(model, params0)
    thr, target_loss = _check_thresholds(loss_thresholds, target_loss)
    rtol = check_positive("rtol", rtol)
    atol = check_positive("atol", atol)
    max_steps = check_int("max_steps", max_steps, 1)
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
    if t_eval is None and t_span is None:
        raise ValueError("give t_eval (increasing times) or t_span=(t0, t1)")
    if t_eval is not None:
        t_eval = check_times("t_eval", t_eval)
        if t_eval.size < 2 and t_span is None:
            raise ValueError("t_eval must contain at least two times when t_span is not given")
    if t_span is None:
        t_span = (float(t_eval[0]), float(t_eval[-1]))
    t_span = check_t_span(t_span)
    if t_eval is not None and (t_eval[0] < t_span[0] or t_eval[-1] > t_span[1]):
        raise ValueError("t_eval must lie within t_span")

    rates = model.rates_vector()
    lg = model._loss_and_grad_flat
    counter = [0]

    def rhs(t, y):
        counter[0] += 1
        _, g = lg(y)
        g *= rates
        np.negative(g, out=g)
        return g

    loss_of = model._loss_flat

    levels = thr + ((target_loss,) if target_loss is not None else ())

    def g(y):
        L = loss_of(y)
        return [L - x for x in levels]

    run = solve_bounded(rhs, t_span, vec0, t_eval=t_eval, levels=g if levels else None,
                        terminal=len(thr) if target_loss is not None else None, method=method,
                        rtol=rtol, atol=atol, max_step=max_step, max_steps=max_steps)
    found = [None if hit is None else _state(model, *hit) for hit in run.hits]
    crossings = found[:len(thr)]
    target_state = found[len(thr)] if target_loss is not None else None
    Y = run.y  # (nt, n_params)
    if Y.shape[0]:
        summary = summarize(model, Y)
    else:
        summary = {k: np.empty(0) for k in _SUMMARY_KEYS}
    final = Y[-1] if Y.shape[0] else vec0      # the terminal state is the last record
    message = run.message
    if run.reason == "terminal":
        message = f"target_loss={target_loss} reached at t={target_state['t']:.6g}"
    return _result(model, run.t, summary, final, run.status, message, crossings, target_state,
                   thr, target_loss, counter[0], run.nsteps)


def gradient_descent(
    model,
    params0,
    lr,
    steps,
    record_every=1,
    *,
    loss_thresholds=(),
    target_loss=None,
):
    r"""Full-batch gradient descent :math:`W \leftarrow W - \mathrm{lr}\,\eta_W\,\partial L/\partial W`.

    Parameters
    ----------
    model : AttentionModel
    params0 : dict[str, ndarray] or ndarray
        Initial parameters (dict or flat vector).
    lr : float
        Step size (> 0, finite); step ``s`` is reported at time ``t = s * lr``.
    steps : int
        Number of steps (>= 0).
    record_every : int
        Record every this many steps (>= 1); step 0 and the last step are
        always recorded.
    loss_thresholds : sequence of float
        ``crossings[i]``: the state at the first step whose loss is <=
        ``loss_thresholds[i]``.
    target_loss : float, optional
        Stop at the first step whose loss is <= this value (``target_state``).

    Returns
    -------
    numerics.trajectory.Trajectory
        With ``step`` holding the step index of each record. Status -1 (and
        the step in the message) as soon as the loss, the gradient, the
        parameters or a recorded summary is non-finite: a step size too large
        for the dynamics diverges, it does not succeed.
    """
    vec = _initial_vector(model, params0)
    lr = check_positive("lr", lr)
    steps = check_int("steps", steps, 0)
    record_every = check_int("record_every", record_every, 1)
    thr, target_loss = _check_thresholds(loss_thresholds, target_loss)

    rates_lr = lr * model.rates_vector()
    lg = model._loss_and_grad_flat
    rec_steps, buf, chunks = [], [], []

    def flush():
        if buf:
            with np.errstate(over="ignore", invalid="ignore"):   # non-finite: status -1 below
                chunks.append(summarize(model, np.stack(buf)))
            buf.clear()

    crossings, target_state = [None] * len(thr), None
    pending = sorted(range(len(thr)), key=lambda i: -thr[i])   # highest level first
    status, message = 0, f"completed {steps} steps"
    nfev = 0
    s = 0
    while True:
        L, g = lg(vec)
        nfev += 1
        if not (math.isfinite(L) and np.all(np.isfinite(g)) and np.all(np.isfinite(vec))):
            status, message = -1, f"non-finite loss, gradient or parameters at step {s}"
            break
        if s % record_every == 0 or s == steps:
            rec_steps.append(s)
            buf.append(vec.copy())
            if len(buf) >= 1024:  # bound memory: summarize in chunks
                flush()
        while pending and L <= thr[pending[0]]:
            crossings[pending.pop(0)] = _state(model, s * lr, vec)
        if target_loss is not None and L <= target_loss:
            target_state = _state(model, s * lr, vec)
            status, message = 1, f"target_loss={target_loss} reached at step {s} (t={s * lr:.6g})"
            if rec_steps[-1] != s:
                rec_steps.append(s)
                buf.append(vec.copy())
            break
        if s == steps:
            break
        g *= rates_lr
        vec -= g
        s += 1
    flush()
    if chunks:
        summary = {k: np.concatenate([c[k] for c in chunks]) for k in _SUMMARY_KEYS}
    else:
        summary = {k: np.empty(0) for k in _SUMMARY_KEYS}
    rec_steps = np.asarray(rec_steps, dtype=int)
    return _result(model, rec_steps * lr, summary, vec, status, message, crossings,
                   target_state, thr, target_loss, nfev, s, step=rec_steps)
