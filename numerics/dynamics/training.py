r"""Gradient flow and gradient descent of the full-matrix attention model (any task).

Both integrators work on the flat parameter vector :math:`\theta` of
:meth:`numerics.model.attention.TaskModel.flatten` with per-entry rates
:math:`\eta` (:meth:`~numerics.model.attention.TaskModel.rates_vector`), for the
general model and the paper's :class:`~numerics.model.paper.AttentionModel` alike:

* gradient flow  :math:`\dot\theta = -\eta\odot\nabla_\theta L(\theta)`
  (:func:`gradient_flow`, bounded :func:`numerics.dynamics.bounded_ivp.solve_bounded`);
* gradient descent :math:`\theta_{s+1} = \theta_s - \mathrm{lr}\,\eta\odot\nabla_\theta L(\theta_s)`
  (:func:`gradient_descent`), reported at time :math:`t = s\cdot\mathrm{lr}` so
  that it converges to the flow at first order as :math:`\mathrm{lr}\to 0`.

Both return a :class:`numerics.dynamics.trajectory.Trajectory` (the type the reduced
flow returns too) with the model's summaries of every record
(:meth:`~numerics.model.attention.TaskModel.summarize`: the loss and the
class-averaged attention :math:`\alpha`; for the paper's model also the
reduced coordinates :math:`(\mu_{OV}, \mu_{QK})` projected on the invariant
family, :mod:`numerics.model.family`, and the relative distance from it) and
the final parameters.

>>> from numerics.model import AttentionModel, structured_params
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
import numbers

import numpy as np

from derivations.core.vocabulary import check_positive

from .bounded_ivp import DEFAULT_MAX_STEPS, METHODS, solve_loss_levels
from ..model.attention import TaskModel
from ..model.family import summarize
from .trajectory import Trajectory
from ..validation import check_int, check_t_span, check_times

__all__ = ["gradient_flow", "gradient_descent"]


def _check_thresholds(loss_thresholds, target_loss):
    if isinstance(loss_thresholds, (str, bytes)) or not np.iterable(loss_thresholds):
        raise ValueError("loss_thresholds must be a sequence of finite numbers > 0, "
                         f"got {loss_thresholds!r}")
    thr = tuple(check_positive("loss_thresholds", x) for x in loss_thresholds)
    if target_loss is not None:
        target_loss = check_positive("target_loss", target_loss)
    return thr, target_loss


def _initial_vector(model, params0):
    if not isinstance(model, TaskModel):
        raise ValueError(f"model must be an AttentionModel or a TaskModel, "
                         f"got {type(model).__name__}")
    if isinstance(params0, dict):
        model._check_params(params0)
        vec = model.flatten(params0).astype(float, copy=True)
    else:
        vec = np.array(params0, dtype=float, copy=True)
        if vec.shape != (model.n_params,):
            raise ValueError(
                f"params0 must be a params dict or a flat vector of length {model.n_params}, "
                f"got shape {vec.shape}")
    if not np.all(np.isfinite(vec)):
        raise ValueError("params0 must be finite")
    return vec


def _check_times(t_eval, t_span, infinite_end):
    """``(t_eval or None, t_span)``: increasing output times within the interval."""
    if t_eval is None and t_span is None:
        raise ValueError("give t_eval (increasing times) or t_span=(t0, t1)")
    if t_eval is not None:
        t_eval = check_times("t_eval", t_eval)
        if t_eval.size < 2 and t_span is None:
            raise ValueError("t_eval must contain at least two times when t_span is not given")
    if t_span is None:
        t_span = (float(t_eval[0]), float(t_eval[-1]))
    t_span = check_t_span(t_span, allow_infinite_end=infinite_end)
    if t_eval is not None and (t_eval[0] < t_span[0] or t_eval[-1] > t_span[1]):
        raise ValueError(f"t_eval must lie within t_span = {t_span!r}; got times from {float(t_eval[0])!r} "
                         f"to {float(t_eval[-1])!r}")
    return t_eval, t_span


def _check_solver(method, rtol, atol, max_steps, max_nfev, max_step):
    """Validated ``(rtol, atol, max_steps, max_nfev)`` of :func:`gradient_flow`;
    ``max_step`` checked (> 0, ``inf`` allowed)."""
    if not (isinstance(max_step, numbers.Real) and not isinstance(max_step, bool) and max_step > 0):
        raise ValueError(f"max_step must be a number > 0 (inf: no bound); got {max_step!r}")
    checked = (check_positive("rtol", rtol), check_positive("atol", atol),
               check_int("max_steps", max_steps, 1))
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
    return checked + (None if max_nfev is None else check_int("max_nfev", max_nfev, 1),)


def _state(model, t, vec):
    out = {"t": float(t)}
    out.update({k: float(v) for k, v in summarize(model, vec).items()})
    out["params"] = {k: v.copy() for k, v in model.unflatten(vec).items()}
    return out


def _summaries(model, Y):
    """The model's summaries of the records ``Y`` (n, n_params), empty arrays if n = 0."""
    with np.errstate(over="ignore", invalid="ignore"):   # non-finite: status -1 in _result
        return {k: np.asarray(v, dtype=float) for k, v in summarize(model, Y).items()}


def _result(model, t, summary, final_vec, status, message, found, thresholds, target_loss,
            nfev, **extra):
    bad = [k for k, v in summary.items() if not np.all(np.isfinite(v))]
    if status >= 0 and (bad or not np.all(np.isfinite(final_vec))):
        status = -1
        message = (f"non-finite {', '.join(bad) or 'parameters'} along the run "
                   f"(diverged; was: {message})")
        if "reason" in extra:            # a flow's (descent has none)
            extra["reason"] = "nonfinite"
    target_state = found[len(thresholds)] if target_loss is not None else None
    return Trajectory(
        t=np.asarray(t, dtype=float), **summary,
        params={k: v.copy() for k, v in model.unflatten(final_vec).items()},
        status=int(status), message=str(message), success=status >= 0,
        thresholds=thresholds, crossings=found[:len(thresholds)], target_loss=target_loss,
        target_state=target_state, nfev=int(nfev),
        **{k: v for k, v in extra.items() if v is not None})


def _flow_rhs(model):
    r"""The right-hand side :math:`-\eta\odot\nabla L` of the flow."""
    rates = model.rates_vector()
    lg = model._loss_and_grad_flat

    def rhs(t, y):
        _, g = lg(y)
        g *= rates
        np.negative(g, out=g)
        return g
    return rhs


def gradient_flow(model, params0, t_eval=None, *, t_span=None, rtol=1e-10, atol=1e-12,
                  method="DOP853", loss_thresholds=(), target_loss=None, max_step=np.inf,
                  max_steps=DEFAULT_MAX_STEPS, max_nfev=None, log_events=False,
                  keep_states=False):
    r"""Integrate the gradient flow :math:`\dot W = -\eta_W\,\partial L/\partial W`.

    Parameters
    ----------
    model : TaskModel or AttentionModel
    params0 : dict[str, ndarray] or ndarray
        Initial parameters (dict, or flat vector of ``model.flatten``; finite).
    t_eval : array_like, optional
        Increasing output times (at least two); the integration interval is
        ``(t_eval[0], t_eval[-1])`` unless ``t_span`` is given.
    t_span : (float, float), optional
        Integration interval (the end may be ``inf`` with ``target_loss``).
        If ``t_eval`` is omitted the solver's own steps are recorded.
    rtol, atol : float
        Relative and absolute tolerances (finite, > 0).
    method : str
        A key of :data:`numerics.dynamics.bounded_ivp.METHODS` (default ``"DOP853"``).
    loss_thresholds : sequence of float
        ``crossings[i]`` records the state where the loss first falls through
        ``loss_thresholds[i]`` (located between solver steps to solver accuracy).
    target_loss : float, optional
        Stop (terminal event) when the loss falls to this value; the state is
        ``target_state``.
    max_step : float
        Largest step of the solver (> 0; ``inf``: no bound).
    max_steps : int
        Bound on the solver steps (>= 1): past it the run stops with status
        -1 and what it has recorded.
    max_nfev : int, optional
        Bound on the gradient evaluations, checked after every solver step:
        past it the run stops with status -1, a message and what it has
        recorded (instead of creeping towards the target).
    log_events : bool
        Locate the loss levels on :math:`\log L - \log L_i` instead of
        :math:`L - L_i` (the same crossing, found with relative accuracy at
        small losses).
    keep_states : bool
        Also return the flat states of the records as ``y`` (n, n_params).

    Returns
    -------
    numerics.dynamics.trajectory.Trajectory
        Records at ``t_eval`` (those reached before a terminal event, then
        the terminal state), with the model's summaries and the final
        ``params``. Status -1 if the solver failed, ran out of ``max_steps``
        or ``max_nfev``, or a value became non-finite.
    """
    vec0 = _initial_vector(model, params0)
    thr, target_loss = _check_thresholds(loss_thresholds, target_loss)
    rtol, atol, max_steps, max_nfev = _check_solver(method, rtol, atol, max_steps, max_nfev, max_step)
    t_eval, t_span = _check_times(t_eval, t_span, target_loss is not None)
    levels = thr + ((target_loss,) if target_loss is not None else ())
    loss_of = model._loss_flat      # the events: L - L_i, or log L - log L_i
    run = solve_loss_levels(_flow_rhs(model), t_span, vec0,
                            (lambda y: math.log(loss_of(y))) if log_events else loss_of,
                            levels, len(thr), log=log_events, t_eval=t_eval, method=method,
                            rtol=rtol, atol=atol, max_step=max_step, max_steps=max_steps,
                            max_nfev=max_nfev)
    found = [None if hit is None else _state(model, *hit) for hit in run.hits]
    final = run.y[-1] if run.y.shape[0] else vec0      # the terminal state is the last record
    message = run.message
    if run.reason == "terminal":
        message = f"target_loss={target_loss} reached at t={found[len(thr)]['t']:.6g}"
    return _result(model, run.t, _summaries(model, run.y), final, run.status, message, found,
                   thr, target_loss, run.nfev, nsteps=run.nsteps, reason=run.reason,
                   y=run.y if keep_states else None)


class _Records:
    """Summaries of the recorded descent states, computed 1024 at a time (bounded memory)."""

    def __init__(self, model):
        self.model, self.buf, self.parts = model, [], []

    def add(self, vec):
        self.buf.append(vec.copy())
        if len(self.buf) >= 1024:
            self.flush()

    def flush(self):
        if self.buf:
            self.parts.append(_summaries(self.model, np.stack(self.buf)))
            self.buf.clear()

    def summaries(self) -> dict:
        self.flush()
        if not self.parts:
            return _summaries(self.model, np.empty((0, self.model.n_params)))
        return {k: np.concatenate([p[k] for p in self.parts]) for k in self.parts[0]}


def _descend(model, vec, lr, steps, record_every, thr, target_loss):
    """The descent loop of :func:`gradient_descent`: ``(rec_steps, records, s, status,
    message, found, nfev)``; ``vec`` is updated in place."""
    rates_lr = lr * model.rates_vector()
    lg = model._loss_and_grad_flat
    rec_steps, records = [], _Records(model)
    found = [None] * (len(thr) + (target_loss is not None))
    pending = sorted(range(len(thr)), key=lambda i: -thr[i])   # highest level first
    status, message = 0, f"completed {steps} steps"
    s = nfev = 0
    while True:
        L, g = lg(vec)
        nfev += 1
        if not (math.isfinite(L) and np.all(np.isfinite(g)) and np.all(np.isfinite(vec))):
            status, message = -1, f"non-finite loss, gradient or parameters at step {s}"
            break
        if s % record_every == 0 or s == steps:
            rec_steps.append(s)
            records.add(vec)
        while pending and L <= thr[pending[0]]:
            found[pending.pop(0)] = _state(model, s * lr, vec)
        if target_loss is not None and L <= target_loss:
            found[-1] = _state(model, s * lr, vec)
            status, message = 1, f"target_loss={target_loss} reached at step {s} (t={s * lr:.6g})"
            if rec_steps[-1] != s:
                rec_steps.append(s)
                records.add(vec)
            break
        if s == steps:
            break
        g *= rates_lr
        vec -= g
        s += 1
    return rec_steps, records, s, status, message, found, nfev


def gradient_descent(model, params0, lr, steps, record_every=1, *, loss_thresholds=(),
                     target_loss=None):
    r"""Full-batch gradient descent :math:`W \leftarrow W - \mathrm{lr}\,\eta_W\,\partial L/\partial W`.

    Parameters
    ----------
    model : TaskModel or AttentionModel
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
    numerics.dynamics.trajectory.Trajectory
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
    rec_steps, records, s, status, message, found, nfev = _descend(
        model, vec, lr, steps, record_every, thr, target_loss)
    rec_steps = np.asarray(rec_steps, dtype=int)
    return _result(model, rec_steps * lr, records.summaries(), vec, status,
                   message, found, thr, target_loss, nfev, nsteps=s, step=rec_steps)
