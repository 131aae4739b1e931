r"""The crossover ratio of the expected-count flow, for any sampled task and any start of ``predict``.

Where the attention on the query's own token equals the attention on the relevant tokens when the
flow stops at a target loss. The authors' task has no master curve (its scores are scaled, its
relevant types have unequal weights, its common tokens are embedded), so there is no
:math:`\Lambda` collapse: the crossover is searched on the flow itself. For one
(parameterization, seed), the self share minus the relevant share where the expected-count flow
(:func:`numerics.experiments.theory.flow_to_losses`, from that seed's initial matrices, as
:func:`numerics.experiments.predict.predict` runs it) first reaches a target is a function of the
ratio :math:`r = \eta_{QK}/\eta_{OV}`; :func:`~numerics.dynamics.sign_change.log_sign_change`
finds its sign change in :math:`\log r`. One flow answers every target, so a search's flows are
shared by its targets, and an initialization that draws nothing at random
(:func:`numerics.experiments.models.draws`) gives every seed one start and one search.

For CACO from a small start on a task of the ``query-copies`` shape it gives the master curve's
:math:`r^*` (:func:`numerics.dynamics.boundary`), which it does not use.

>>> [rec] = flow_boundary(["CACO"], [0.5], init="identity")
>>> rec["reason"] is None and 5 < rec["crossover_ratio"] < 20
True
"""
from __future__ import annotations

import math

import numpy as np

from ..dynamics.sign_change import log_sign_change
from ..validation import check_positive_range
from . import models, predict, task_sampling, theory

__all__ = ["RECORD_FIELDS", "XTOL", "MAX_STEPS", "flow_boundary"]

#: Fields of a record of :func:`flow_boundary`, in order.
RECORD_FIELDS = ("parameterization", "seed", "target_loss", "crossover_ratio", "crossover_lambda",
                 "reason")
#: Tolerance of the search in :math:`\log r` (:math:`r^*` to a relative :math:`10^{-5}`).
XTOL = 1e-5
#: Most steps of one target's search after the two ends (each step is one flow, unless an
#: earlier target's search ran it).
MAX_STEPS = 40


def _search(task, st, P, seed, s, ratio_range):
    """``{target: (r_star, Lambda at r_star, reason)}`` of one (parameterization, seed)."""
    lo, hi = ratio_range
    flows = {}

    def differences(r):
        r = min(max(r, lo), hi)             # exp(log(lo)) may round below lo
        if r not in flows:
            out = theory.flow_to_losses(st, P, r, s["target_losses"], seq_len=s["seq_len"], init=s["init"],
                                        init_scale=s.get("init_scale", models.IDENTITY_SCALE), seed=seed)
            flows[r] = {rec["target_loss"]: rec["self_attention"] - rec["relevant_attention"]
                        if rec["reached"] else math.nan for rec in out["records"]}
        return flows[r]
    found = {}
    for target in s["target_losses"]:
        r, reason = log_sign_change(lambda x, t=target: differences(x)[t], lo, hi, xtol=XTOL,
                                    maxiter=MAX_STEPS, name="ratio")
        if reason is not None and reason.startswith("undefined"):
            reason += " (the flow did not reach the target loss)"
        r = None if r is None else min(max(r, lo), hi)
        lam = None if r is None else predict.master_lambdas(task, dict(st.params), r, [target])[target]
        found[target] = (r, lam, reason)
    return found


def _attends_to_its_query(st) -> bool:
    """Whether a class's query token holds an attended position: the query's own or a copy in the context."""
    return bool(st.query_in_context) or bool(np.any(st.probabilities[np.arange(st.K), st.query] > 0))


def flow_boundary(parameterizations, target_losses, seeds=1, init="authors", *, init_scale=None,
                  ratio_range=theory.RATIO_RANGE, task=task_sampling.DEFAULT_TASK, task_params=(),
                  seq_len=None, progress=None) -> list:
    r"""The crossover ratio :math:`r^*` of the expected-count flow, per (parameterization, seed,
    target loss).

    Parameters
    ----------
    parameterizations : iterable of {"CACO", "CAFO", "FACO", "FAFO"}
    target_losses : iterable of float
        Distinct losses below every initial loss (sorted high to low).
    seeds : int or iterable of int
        As :func:`numerics.experiments.predict.predict`'s.
    init : {"authors", "identity", "uniform"}
        The SGD models' initialization (:func:`numerics.experiments.models.init_params`).
    init_scale : float, optional
        Scale of the identity matrices (default ``1e-6``).
    ratio_range : tuple of float
        ``(low, high)``, the ratios searched, inside
        :data:`~numerics.experiments.theory.RATIO_RANGE` (the default).
    task, task_params : str or derivations.engine.task.Task, dict
        A task that can be sampled and its parameter values (default the authors' task).
    seq_len : int, optional
        The sequence length of the flow (default the task's own; needed for a task whose total
        multiplicity is not an integer), as :func:`numerics.experiments.predict.check_settings` takes it.
    progress : callable, optional
        Called as ``progress()`` once per (parameterization, seed) searched (a progress bar's
        ``update``), ``len(parameterizations) * seeds`` times in all.

    Returns
    -------
    list of dict
        Fields :data:`RECORD_FIELDS`, in the order parameterization x seed x target:
        ``crossover_ratio`` :math:`r^*` (None where there is none); ``crossover_lambda``
        :math:`\Lambda` of the task at :math:`r^*` and the target
        (:func:`numerics.dynamics.master_lambda`: the coordinate alone, with no collapse behind it
        for a task not of the ``query-copies`` shape or a start that is not small; None without
        :math:`r^*` or at a target not below :math:`\log M`); ``reason`` None, or why there is no
        :math:`r^*` (``"not reached within the ratio range searched ..."``: one sign at both ends;
        ``"tie: ..."``; ``"undefined at ratio ..."``: a flow that did not reach the target;
        ``"no convergence ..."``; ``"none: task ... never attends to the query's own token ..."``:
        a task whose self share is 0, where no flow is run).

    Raises
    ------
    ValueError
        A bad argument (before any flow), as :func:`numerics.experiments.predict.check_settings`
        names it, or a ``ratio_range`` that is not two numbers ``0 < low < high < inf``.
    """
    lo, hi = check_positive_range("ratio_range", ratio_range)
    s = predict.check_settings(parameterizations, [lo, hi], target_losses, seeds, init, seq_len, 0.01,
                               init_scale, task=task, task_params=task_params)
    st = task_sampling.sampled_task(task, task_params)
    never = None if _attends_to_its_query(st) else (
        f"none: task {st.name!r} never attends to the query's own token (it is not in the context and has no "
        "copies there), so the self share is 0 at every ratio")
    records = []
    for P in s["parameterizations"]:
        found = None
        for seed in s["seeds"]:
            if never is not None:
                found = {target: (None, None, never) for target in s["target_losses"]}
            elif found is None or models.draws(P, init):
                found = _search(task, st, P, seed, s, (lo, hi))
            if progress is not None:
                progress()
            for target in s["target_losses"]:
                r, lam, reason = found[target]
                records.append({"parameterization": P, "seed": seed, "target_loss": target,
                                "crossover_ratio": r, "crossover_lambda": lam, "reason": reason})
    return records
