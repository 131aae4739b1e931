r"""The full-matrix model of a task instance under its old names, and ``task_gradient_flow``.

The model lives in :mod:`numerics.model` (:class:`~numerics.model.instance.TaskInstance`,
:func:`~numerics.model.instance.paper_instance`,
:func:`~numerics.model.instance.instance_of_task`,
:class:`~numerics.model.attention.TaskModel`) and its gradient flow in
:func:`numerics.dynamics.training.gradient_flow`; this module re-exports
the model and keeps :func:`task_gradient_flow`, a thin adapter over that one
integrator that returns the :class:`FlowResult` shape its callers
(:mod:`numerics.task_verify`, :mod:`numerics.authors_task`) read: crossings
keyed by loss level, flat states ``y``, a ``max_nfev`` bound.

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

from derivations.vocabulary import PARAMETERIZATIONS, check_positive

from .dynamics.training import gradient_flow
from .model.attention import TaskModel
from .model.instance import TaskInstance, instance_of_task, paper_instance

__all__ = ["PARAMETERIZATIONS", "TaskInstance", "TaskModel", "FlowResult", "task_gradient_flow",
           "paper_instance", "instance_of_task"]


# --------------------------------------------------------------------------- #
# gradient flow (adapter)
# --------------------------------------------------------------------------- #
@dataclass
class FlowResult:
    r"""Result of :func:`task_gradient_flow`.

    Attributes
    ----------
    t, loss, alpha : ndarray
        Records (``t_eval`` points reached, or solver steps), ending at the
        terminal event if it fired.
    y : ndarray, shape (n_records, n_params)
        Flat states at ``t``.
    crossings : dict[float, dict]
        Per loss level crossed downwards: ``{"t", "loss", "alpha", "y"}`` at the
        crossing (located on :math:`\log L` between solver steps).
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
    r"""Integrate :math:`\dot\theta = -\eta\odot\nabla L` and return a :class:`FlowResult`.

    Kept for the callers that read a :class:`FlowResult`; the integration is
    :func:`numerics.dynamics.training.gradient_flow` with events on
    :math:`\log L` and a bound of ``max_nfev`` gradient evaluations.

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
        Terminal event: stop when the loss falls to this level.
    loss_thresholds : iterable of float
        Non-terminal events: record the state where the loss first falls
        through each level.
    rtol, atol, method, max_step
        Solver settings (:func:`numerics.bounded_ivp.solve_bounded`).
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
    levels = tuple(check_positive("loss_thresholds", v) for v in loss_thresholds)
    if target_loss is not None:
        target_loss = check_positive("target_loss", target_loss)
    t_span = tuple(float(v) for v in t_span)
    if len(t_span) != 2 or not (math.isfinite(t_span[0]) and t_span[1] > t_span[0]):
        raise ValueError(f"t_span must be (t0, t1) with finite t0 < t1, got {t_span!r}")
    if not math.isfinite(t_span[1]) and target_loss is None:
        raise ValueError("an infinite t_span needs target_loss")
    max_nfev = int(max_nfev)
    run = gradient_flow(model, y0, t_eval, t_span=t_span, rtol=rtol, atol=atol, method=method,
                        loss_thresholds=levels, target_loss=target_loss, max_step=max_step,
                        max_steps=max(max_nfev, 1), max_nfev=max_nfev, log_events=True,
                        keep_states=True)
    crossings = {}
    hits = list(run.crossings) + [run.target_state]
    for level, c in zip(levels + (target_loss,), hits):
        if c is not None and level not in crossings:
            crossings[level] = {"t": c["t"], "loss": c["loss"], "alpha": c["alpha"],
                                "y": model.flatten(c["params"])}
    return FlowResult(t=run.t, loss=run.loss, alpha=run.alpha,
                      y=run.y if keep_states else np.empty((0, model.n_params)),
                      crossings=crossings, status=run.status, message=run.message,
                      nfev=run.nfev)
