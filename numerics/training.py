r"""Gradient flow and gradient descent for :class:`numerics.attention_model.AttentionModel`.

Both integrators work on the flat parameter vector :math:`\theta` of
:meth:`AttentionModel.flatten` with per-entry rates
:math:`\eta` (:meth:`AttentionModel.rates_vector`):

* gradient flow  :math:`\dot\theta = -\eta\odot\nabla_\theta L(\theta)`
  (:func:`gradient_flow`, :func:`scipy.integrate.solve_ivp`);
* gradient descent :math:`\theta_{s+1} = \theta_s - \mathrm{lr}\,\eta\odot\nabla_\theta L(\theta_s)`
  (:func:`gradient_descent`), reported at time :math:`t = s\cdot\mathrm{lr}` so
  that it converges to the flow at first order as :math:`\mathrm{lr}\to 0`.

Both return a :class:`TrainingResult` with the trajectory of the reduced
coordinates :math:`(\mu_{OV}, \mu_{QK})`, the class-averaged attention
:math:`\alpha`, the loss and the relative distance from the invariant family.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.integrate import solve_ivp

from .attention_model import AttentionModel, _check_int, _check_positive

__all__ = ["TrainingResult", "gradient_flow", "gradient_descent"]


@dataclass
class TrainingResult:
    """Trajectory of a training run.

    Attributes
    ----------
    t : ndarray
        Times of the records (flow: ``t_eval`` or solver steps; descent:
        ``step * lr``).
    mu_OV, mu_QK : ndarray
        Least-squares family coordinates (:meth:`AttentionModel.project`).
    alpha : ndarray
        Attention on the relevant group, averaged over classes.
    loss : ndarray
        Population loss.
    distance : ndarray
        Relative distance from the invariant family
        (:meth:`AttentionModel.distance_from_family`).
    params : dict[str, ndarray]
        Final parameters (at the last time reached, which may be a terminal
        event rather than the last record).
    status : int
        0: finished the requested interval / steps; 1: ``target_loss``
        reached (terminal event); -1: failure (solver failure or non-finite
        values in descent).
    message : str
        Human-readable termination reason.
    crossings : dict[float, dict]
        For each threshold in ``loss_thresholds`` (and ``target_loss``) that
        the loss crossed downwards: the state at the crossing, a dict with
        keys ``t, loss, mu_OV, mu_QK, alpha, distance, params``.
        Thresholds never crossed are absent.
    nfev : int
        Number of gradient evaluations.
    step : ndarray or None
        Descent only: step index of each record.
    """

    t: np.ndarray
    mu_OV: np.ndarray
    mu_QK: np.ndarray
    alpha: np.ndarray
    loss: np.ndarray
    distance: np.ndarray
    params: dict
    status: int
    message: str
    crossings: dict = field(default_factory=dict)
    nfev: int = 0
    step: np.ndarray | None = None

    @property
    def success(self) -> bool:
        """True unless the run failed (``status >= 0``)."""
        return self.status >= 0


def _check_thresholds(loss_thresholds, target_loss):
    try:
        thr = tuple(float(x) for x in loss_thresholds)
    except TypeError:
        raise ValueError(
            f"loss_thresholds must be an iterable of finite numbers > 0, got {loss_thresholds!r}"
        ) from None
    for x in thr:
        if not (math.isfinite(x) and x > 0):
            raise ValueError(f"loss_thresholds must contain finite numbers > 0, got {x!r}")
    if target_loss is not None:
        target_loss = _check_positive("target_loss", target_loss)
    return thr, target_loss


def _initial_vector(model, params0):
    if not isinstance(model, AttentionModel):
        raise ValueError(f"model must be an AttentionModel, got {type(model).__name__}")
    if isinstance(params0, dict):
        model._check_params(params0)
        return model.flatten(params0).astype(float, copy=True)
    vec = np.array(params0, dtype=float, copy=True)
    if vec.shape != (model.n_params,):
        raise ValueError(
            f"params0 must be a params dict or a flat vector of length {model.n_params}, "
            f"got shape {vec.shape}"
        )
    return vec


def _state(model, t, vec):
    s = model.summarize(vec)
    out = {"t": float(t)}
    out.update({k: float(v) for k, v in s.items()})
    out["params"] = {k: v.copy() for k, v in model.unflatten(vec).items()}
    return out


def _result(model, t, vecs_summary, final_vec, status, message, crossings, nfev, step=None):
    return TrainingResult(
        t=np.asarray(t, dtype=float),
        mu_OV=np.asarray(vecs_summary["mu_OV"], dtype=float),
        mu_QK=np.asarray(vecs_summary["mu_QK"], dtype=float),
        alpha=np.asarray(vecs_summary["alpha"], dtype=float),
        loss=np.asarray(vecs_summary["loss"], dtype=float),
        distance=np.asarray(vecs_summary["distance"], dtype=float),
        params={k: v.copy() for k, v in model.unflatten(final_vec).items()},
        status=int(status),
        message=str(message),
        crossings=crossings,
        nfev=int(nfev),
        step=step,
    )


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
):
    r"""Integrate the gradient flow :math:`\dot W = -\eta_W\,\partial L/\partial W`.

    Parameters
    ----------
    model : AttentionModel
    params0 : dict[str, ndarray] or ndarray
        Initial parameters (dict, or flat vector of :meth:`AttentionModel.flatten`).
    t_eval : array_like, optional
        Increasing output times (at least two); the integration interval is
        ``(t_eval[0], t_eval[-1])`` unless ``t_span`` is given.
    t_span : (float, float), optional
        Integration interval.  If ``t_eval`` is omitted the solver's own steps
        are recorded.
    rtol, atol : float
        Tolerances of :func:`scipy.integrate.solve_ivp` (> 0).
    method : str
        ``solve_ivp`` method (default ``"DOP853"``).
    loss_thresholds : iterable of float
        Record the state when the loss crosses each value downwards (located
        by ``solve_ivp`` events to solver accuracy).
    target_loss : float, optional
        Stop (terminal event) when the loss falls to this value; the state is
        also recorded in ``crossings[target_loss]``.
    max_step : float
        Passed to ``solve_ivp``.

    Returns
    -------
    TrainingResult
        Records at ``t_eval`` (only those reached before a terminal event).
    """
    vec0 = _initial_vector(model, params0)
    thr, target_loss = _check_thresholds(loss_thresholds, target_loss)
    rtol = _check_positive("rtol", rtol)
    atol = _check_positive("atol", atol)
    if t_eval is None and t_span is None:
        raise ValueError("give t_eval (increasing times) or t_span=(t0, t1)")
    if t_eval is not None:
        t_eval = np.asarray(t_eval, dtype=float).ravel()
        if t_eval.size < 2 or not np.all(np.isfinite(t_eval)) or np.any(np.diff(t_eval) <= 0):
            raise ValueError("t_eval must contain at least two finite, strictly increasing times")
    if t_span is None:
        t_span = (float(t_eval[0]), float(t_eval[-1]))
    else:
        if len(t_span) != 2:
            raise ValueError(f"t_span must be (t0, t1) with t1 > t0, got {t_span!r}")
        t_span = (float(t_span[0]), float(t_span[1]))
        if not (all(map(math.isfinite, t_span)) and t_span[1] > t_span[0]):
            raise ValueError(f"t_span must be (t0, t1) with finite t1 > t0, got {t_span!r}")
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

    def loss_of(y):
        return lg(y)[0]

    events, event_keys = [], []
    for x in thr:
        def ev(t, y, x=x):
            return loss_of(y) - x
        ev.terminal, ev.direction = False, -1
        events.append(ev)
        event_keys.append(x)
    if target_loss is not None:
        def ev_target(t, y):
            return loss_of(y) - target_loss
        ev_target.terminal, ev_target.direction = True, -1
        events.append(ev_target)
        event_keys.append(target_loss)

    sol = solve_ivp(
        rhs,
        t_span,
        vec0,
        method=method,
        t_eval=t_eval,
        events=events or None,
        rtol=rtol,
        atol=atol,
        max_step=max_step,
    )

    crossings = {}
    if events:
        for x, te, ye in zip(event_keys, sol.t_events, sol.y_events):
            if len(te) and x not in crossings:
                crossings[x] = _state(model, te[0], ye[0])

    Y = sol.y.T  # (nt, n_params)
    if Y.shape[0]:
        summary = model.summarize(Y)
    else:
        summary = {k: np.empty(0) for k in ("loss", "alpha", "mu_OV", "mu_QK", "distance")}
    # final state: terminal event state if any, else last solver state
    if sol.status == 1 and target_loss is not None and target_loss in crossings:
        final = model.flatten(crossings[target_loss]["params"])
    elif Y.shape[0]:
        final = Y[-1]
    else:
        final = vec0
    if sol.status == 1:
        status, message = 1, f"target_loss={target_loss} reached at t={crossings[target_loss]['t']:.6g}"
    elif sol.status == 0:
        status, message = 0, sol.message
    else:
        status, message = -1, sol.message
    return _result(model, sol.t, summary, final, status, message, crossings, counter[0])


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
    loss_thresholds : iterable of float
        Record the state at the first step whose loss is <= each value.
    target_loss : float, optional
        Stop at the first step whose loss is <= this value.

    Returns
    -------
    TrainingResult
        With ``step`` holding the step index of each record.
    """
    vec = _initial_vector(model, params0)
    lr = _check_positive("lr", lr)
    steps = _check_int("steps", steps, 0)
    record_every = _check_int("record_every", record_every, 1)
    thr, target_loss = _check_thresholds(loss_thresholds, target_loss)

    rates_lr = lr * model.rates_vector()
    lg = model._loss_and_grad_flat
    rec_steps, buf, chunks = [], [], []

    def flush():
        if buf:
            chunks.append(model.summarize(np.stack(buf)))
            buf.clear()

    crossings = {}
    pending = sorted(set(thr) | ({target_loss} if target_loss is not None else set()),
                     reverse=True)
    status, message = 0, f"completed {steps} steps"
    nfev = 0
    s = 0
    while True:
        L, g = lg(vec)
        nfev += 1
        if not (math.isfinite(L) and np.all(np.isfinite(g))):
            status, message = -1, f"non-finite loss or gradient at step {s}"
            break
        if s % record_every == 0 or s == steps:
            rec_steps.append(s)
            buf.append(vec.copy())
            if len(buf) >= 1024:  # bound memory: summarize in chunks
                flush()
        while pending and L <= pending[0]:
            crossings[pending.pop(0)] = _state(model, s * lr, vec)
        if target_loss is not None and L <= target_loss:
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
    keys = ("loss", "alpha", "mu_OV", "mu_QK", "distance")
    if chunks:
        summary = {k: np.concatenate([c[k] for c in chunks]) for k in keys}
    else:
        summary = {k: np.empty(0) for k in keys}
    rec_steps = np.asarray(rec_steps, dtype=int)
    return _result(model, rec_steps * lr, summary, vec, status, message, crossings, nfev,
                   step=rec_steps)
