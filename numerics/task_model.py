r"""The full-matrix model of a task instance (kept path) and ``task_gradient_flow``.

The model lives in :mod:`numerics.model` (:class:`~numerics.model.instance.TaskInstance`,
:func:`~numerics.model.instance.paper_instance`,
:func:`~numerics.model.instance.instance_of_task`,
:class:`~numerics.model.attention.TaskModel`); this module re-exports it under
its old names.

>>> from numerics.task_model import paper_instance, TaskModel
>>> model = TaskModel(paper_instance(M=3, m=5, n=50, b=50), "CACO")
>>> p = model.init_params("zero")
>>> round(model.loss(p), 12) == round(float(np.log(3)), 12)
True
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.integrate import solve_ivp

from derivations.vocabulary import PARAMETERIZATIONS, check_positive

from .model.attention import TaskModel
from .model.instance import TaskInstance, instance_of_task, paper_instance

__all__ = ["PARAMETERIZATIONS", "TaskInstance", "TaskModel", "FlowResult", "task_gradient_flow",
           "paper_instance", "instance_of_task"]


# --------------------------------------------------------------------------- #
# gradient flow
# --------------------------------------------------------------------------- #
class _TooManyEvaluations(Exception):
    pass


@dataclass
class FlowResult:
    """Result of :func:`task_gradient_flow`.

    Attributes
    ----------
    t, loss, alpha : ndarray
        Records (``t_eval`` points reached, or solver steps), ending at the
        terminal event if it fired.
    y : ndarray, shape (n_records, n_params)
        Flat states at ``t``.
    crossings : dict[float, dict]
        Per loss level crossed downwards: ``{"t", "loss", "alpha", "y"}`` at the
        crossing (located by ``solve_ivp``'s event root finding).
    status : int
        1 target loss reached, 0 end of ``t_span``, -1 solver failure.
    message : str
    nfev : int
    """

    t: np.ndarray
    loss: np.ndarray
    alpha: np.ndarray
    y: np.ndarray
    crossings: dict
    status: int
    message: str
    nfev: int

    @property
    def success(self) -> bool:
        return self.status >= 0


def task_gradient_flow(model, params0, *, t_span=(0.0, np.inf), t_eval=None, target_loss=None,
                       loss_thresholds=(), rtol=1e-10, atol=1e-12, method="DOP853",
                       max_step=np.inf, keep_states=True, max_nfev=500_000):
    r"""Integrate :math:`\dot\theta = -\eta\odot\nabla L` with :func:`scipy.integrate.solve_ivp`.

    Parameters
    ----------
    model : TaskModel
    params0 : dict or ndarray
        Initial parameters (dict or flat vector).
    t_span : (float, float)
        Integration interval; an infinite end requires ``target_loss``.
    t_eval : array_like, optional
        Record times (default: the solver's steps).
    target_loss : float, optional
        Terminal event: stop when the loss falls to this level (the event is on
        :math:`\log L - \log L^*`, root refined by ``solve_ivp``).
    loss_thresholds : iterable of float
        Non-terminal events: record the state where the loss first falls
        through each level.
    rtol, atol, method, max_step
        Passed to ``solve_ivp``.
    keep_states : bool
        Keep the flat states of the records (``y``); else ``y`` is empty.
    max_nfev : int
        Bound on gradient evaluations: the run stops with ``status = -1`` and a
        message instead of hanging when the loss creeps towards the target.

    Returns
    -------
    FlowResult
    """
    if not isinstance(model, TaskModel):
        raise ValueError(f"model must be a TaskModel, got {type(model).__name__}")
    y0 = (model.flatten(params0) if isinstance(params0, dict)
          else np.array(params0, dtype=float)).astype(float, copy=True)
    if y0.shape != (model.n_params,):
        raise ValueError(f"params0 must have {model.n_params} entries, got shape {y0.shape}")
    levels = [check_positive("loss_thresholds", v) for v in loss_thresholds]
    if target_loss is not None:
        target_loss = check_positive("target_loss", target_loss)
    t_span = tuple(float(v) for v in t_span)
    if len(t_span) != 2 or not (math.isfinite(t_span[0]) and t_span[1] > t_span[0]):
        raise ValueError(f"t_span must be (t0, t1) with finite t0 < t1, got {t_span!r}")
    if not math.isfinite(t_span[1]) and target_loss is None:
        raise ValueError("an infinite t_span needs target_loss")
    rates = model.rates_vector()
    lg = model._loss_and_grad_flat
    counter = [0]
    max_nfev = int(max_nfev)

    def rhs(t, y):
        counter[0] += 1
        if counter[0] > max_nfev:
            raise _TooManyEvaluations
        _, g = lg(y)
        g *= rates
        np.negative(g, out=g)
        return g

    def make_event(level, terminal):
        log_level = math.log(level)

        def event(t, y):
            return math.log(model.summarize(y)["loss"]) - log_level
        event.terminal, event.direction = terminal, -1
        return event

    events = [make_event(v, False) for v in levels]
    keys = list(levels)
    if target_loss is not None:
        events.append(make_event(target_loss, True))
        keys.append(target_loss)
    try:
        sol = solve_ivp(rhs, t_span, y0, method=method, t_eval=t_eval, events=events or None,
                        rtol=rtol, atol=atol, max_step=max_step)
    except _TooManyEvaluations:
        s = model.summarize(y0)
        return FlowResult(t=np.empty(0), loss=np.empty(0), alpha=np.empty(0),
                          y=np.empty((0, model.n_params)), crossings={}, status=-1,
                          message=f"stopped after max_nfev={max_nfev} gradient evaluations "
                                  f"(initial loss {float(s['loss']):.6g})", nfev=counter[0])
    crossings = {}
    for lev, te, ye in zip(keys, sol.t_events or (), sol.y_events or ()):
        if len(te) and lev not in crossings:
            s = model.summarize(ye[0])
            crossings[lev] = {"t": float(te[0]), "loss": float(s["loss"]),
                              "alpha": float(s["alpha"]), "y": ye[0].copy()}
    t, Y = sol.t, sol.y.T
    if sol.status == 1 and target_loss in crossings:
        c = crossings[target_loss]
        if t.size == 0 or t[-1] < c["t"]:
            t = np.append(t, c["t"])
            Y = np.vstack([Y, c["y"][None, :]])
    summ = model.summarize(Y) if len(t) else {"loss": np.empty(0), "alpha": np.empty(0)}
    return FlowResult(t=np.asarray(t, float), loss=np.asarray(summ["loss"]),
                      alpha=np.asarray(summ["alpha"]),
                      y=Y if keep_states else np.empty((0, model.n_params)),
                      crossings=crossings, status=int(sol.status),
                      message=str(sol.message), nfev=counter[0])
