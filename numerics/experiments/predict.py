r"""The theory's prediction beside the sweep: one record per (parameterization, ratio, seed, target).

:func:`predict` runs one expected-count gradient flow
(:func:`numerics.experiments.theory.flow_to_losses`) per (parameterization,
ratio, seed), from exactly that SGD seed's initial matrices, and reads it off
where the loss first reaches each target loss: the flow time in SGD steps and
where the attention goes (relevant tokens, the query's own token, all other
positions). Seeds are numbered as the sweep's: 1234, 1235, ... When an
initialization draws nothing at random (``identity``; ``authors`` for FACO and
CAFO) every seed starts from the same matrices, and one flow answers them all.

The command line is ``python -m numerics.experiments predict``
(:mod:`numerics.experiments.commands.predict`).  Where the engine answers a task
(``engine_state`` of :class:`~numerics.experiments.task_sampling.SampledTask`), its records also
carry the engine's own state at each target from zero initialization
(:data:`TASK_RECORD_FIELDS`).

>>> recs = predict(["CACO"], [1.0], [1.0, 2.0], seeds=2)
>>> [(r["seed"], r["target_loss"], r["reached"]) for r in recs]
[(1234, 2.0, True), (1234, 1.0, True), (1235, 2.0, True), (1235, 1.0, True)]
>>> r = recs[-1]
>>> round(r["relevant_attention"] + r["self_attention"] + r["other_attention"], 12)
1.0
"""
from __future__ import annotations

import numbers

from derivations.core.vocabulary import SHARES, check_parameterization

from . import models, task_sampling, theory
from .proxies import THEORY_PROXIES
from .sgd import check_seeds
from .sweep import FIRST_SEED

__all__ = ["RECORD_FIELDS", "TASK_RECORD_FIELDS", "predict", "check_settings", "master_lambdas"]

#: Fields of a record of :func:`predict`, in order: beside the shares ``master_lambda``, the master
#: curve's coordinate :math:`\Lambda = r (M - 1)\ell(L)^2/(M b)` at the ratio and the target loss
#: (:func:`numerics.dynamics.master_lambda`; None at a target not below :math:`\log M`).
RECORD_FIELDS = ("parameterization", "ratio", "seed", "target_loss", "reached", "steps", "loss", *SHARES,
                 "master_lambda", *THEORY_PROXIES)
#: Further fields of a record where the engine answers the task: its state at the target from zero
#: initialization (:func:`numerics.experiments.theory.closed_form_attention`). A record whose method
#: is None because the engine was asked and refused (a task it does not reduce, a value outside the
#: range of its method) ends with one more, ``closed_form_reason``: the engine's message. A record whose
#: target the flow did not reach ends with ``stopped_by`` where the flow did not level off above it:
#: ``"budget"`` (it spent ``max_nfev``), ``"solver"`` (the solver failed) or ``"overflow"``
#: (:data:`numerics.experiments.theory.STOPPED_BY`); one where it levelled off has no such field.
TASK_RECORD_FIELDS = ("closed_form_method", "closed_form_relevant_attention")


def _seed_list(seeds) -> list:
    if isinstance(seeds, bool):
        raise ValueError(f"seeds must be a number of seeds >= 1 or a list of seeds; got {seeds!r}")
    if isinstance(seeds, numbers.Integral):
        if seeds < 1:
            raise ValueError(f"seeds must be an integer >= 1 (the number of seeds); got {seeds!r}")
        return list(range(FIRST_SEED, FIRST_SEED + int(seeds)))
    if isinstance(seeds, numbers.Number):
        raise ValueError(f"seeds must be an integer >= 1 (the number of seeds) or a list of seeds; got {seeds!r}")
    return list(dict.fromkeys(check_seeds(seeds, distinct=False)))


def master_lambdas(task, params, ratio, targets) -> dict:
    r"""``{target: Lambda}`` of the task at ``ratio`` (:func:`numerics.dynamics.master_lambda`);
    None at a target not below :math:`\log M`, where the margin :math:`\ell(L)` is not positive.

    Parameters
    ----------
    task : str or derivations.engine.task.Task
    params : dict
        The task's parameter values.
    ratio : float
    targets : iterable of float

    Returns
    -------
    dict
    """
    from ..dynamics import master_lambda

    out = {}
    for target in targets:
        try:
            out[target] = float(master_lambda(ratio, target, task, **params))
        except ValueError:
            out[target] = None
    return out


def check_settings(parameterizations, ratios, target_losses, seeds=1, init="authors",
                   seq_len=None, lr_ov=0.01, init_scale=None, *, task=task_sampling.DEFAULT_TASK,
                   task_params=()) -> dict:
    """Validate every argument of :func:`predict` before any flow: a dict of the
    cleaned settings (duplicates of parameterizations and ratios dropped, targets
    sorted high to low), or ``ValueError`` naming the parameter and its range.

    The targets must lie below the initial loss of every (parameterization, seed)
    (computed here: one forward pass each). ``init_scale`` (default
    :data:`numerics.experiments.models.IDENTITY_SCALE`) is refused when no
    requested matrix is a multiple of the identity (``init="uniform"``, or
    ``"authors"`` for CACO alone): it would have no effect. ``task``, ``task_params``: an
    engine task and its parameter values (default the authors' task); ``seq_len`` (default
    the task's own length, 64 for the authors') as in the SGD runs.

    Parameters
    ----------
    parameterizations, ratios, target_losses, seeds, init, seq_len, lr_ov, init_scale, task, task_params
        As :func:`predict`'s.

    Returns
    -------
    dict
        ``parameterizations``, ``ratios``, ``target_losses``, ``seeds``, ``init``, ``init_scale`` (only
        where a matrix is a multiple of the identity), ``seq_len``, ``lr_ov`` and the task
        (:func:`~numerics.experiments.task_sampling.task_settings`).

    Raises
    ------
    ValueError
        A bad argument.
    """
    st = task_sampling.sampled_task(task, task_params)
    if seq_len is None:
        seq_len = st.own_seq_len
    params = list(dict.fromkeys(check_parameterization(p) for p in parameterizations))
    if not params:
        raise ValueError("parameterizations must not be empty")
    ratios = list(dict.fromkeys(theory.check_ratio(r) for r in ratios))
    if not ratios:
        raise ValueError("ratios must not be empty")
    # (init_kinds refuses an unknown init, naming INITS)
    identity = any("identity" in models.init_kinds(p, init).values() for p in params)
    if init_scale is not None and not identity:
        raise ValueError(f"init_scale has no effect: no matrix of the {init!r} initialization of "
                         f"{','.join(params)} is a multiple of the identity")
    scale = theory.check_init_scale(models.IDENTITY_SCALE if init_scale is None else init_scale)
    seeds = _seed_list(seeds)
    lr_ov = theory.check_lr_ov(lr_ov)
    theory.task_model(st, params[0], 1.0, seq_len=seq_len)      # seq_len check
    targets = theory.check_target_losses(target_losses)
    _, initial = theory.lowest_initial_loss(st, params, init, seeds, seq_len=seq_len, init_scale=scale)
    theory.check_target_losses(targets, initial)
    out = {"parameterizations": params, "ratios": ratios, "target_losses": list(targets), "seeds": seeds,
           "init": init, **({"init_scale": scale} if identity else {}), "seq_len": int(seq_len), "lr_ov": lr_ov,
           **task_sampling.task_settings(st)}
    return out


def predict(parameterizations, ratios, target_losses, seeds=1, init="authors",
            seq_len=None, lr_ov=0.01, *, init_scale=None, rtol=1e-8, atol=1e-13,
            max_nfev=500_000, progress=None, task=task_sampling.DEFAULT_TASK, task_params=()) -> list:
    r"""The theory's records: one per (parameterization, ratio, seed, target).

    Parameters
    ----------
    parameterizations : iterable of {"CACO", "CAFO", "FACO", "FAFO"}
    ratios : iterable of float
        :math:`\eta_{QK}/\eta_{OV}`, in :data:`~numerics.experiments.theory.RATIO_RANGE`.
    target_losses : iterable of float
        Distinct losses below every initial loss (any order; sorted high to low).
    seeds : int or iterable of int
        The number of seeds (numbered as the sweep's, 1234, 1235, ...) or the seeds.
    init : {"authors", "identity", "uniform"}
        The SGD experiments' initialization (:func:`numerics.experiments.models.init_params`).
    seq_len : int, optional
        Sequence length (>= 3): context, query and label; default the task's own (64 for
        the authors' task).
    lr_ov : float
        OV learning rate: converts flow time to SGD steps.
    task, task_params : str, dict, optional
        An engine task that can be sampled and its parameter values
        (:mod:`numerics.experiments.task_sampling`); default the authors' task.
    init_scale : float, optional
        Scale of the identity matrices (default ``1e-6``, the SGD models').
    rtol, atol, max_nfev
        Of each flow (:func:`numerics.experiments.theory.flow_to_losses`).
    progress : callable, optional
        Called with no argument after each flow.

    Returns
    -------
    list of dict
        Fields :data:`RECORD_FIELDS` (and :data:`TASK_RECORD_FIELDS` for an engine
        task: None where the engine has no state at a loss, and ``closed_form_reason``, why,
        where it was asked and refused), in the order
        parameterization x ratio x seed x target; ``reached`` False (and None
        for the numbers) where a flow stopped before a target, and then ``stopped_by`` (the record's
        last field) where it did not level off above it: ``"budget"`` (it spent ``max_nfev``),
        ``"solver"`` (the solver failed) or ``"overflow"``.
    """
    s = check_settings(parameterizations, ratios, target_losses, seeds, init, seq_len, lr_ov,
                       init_scale, task=task, task_params=task_params)
    st = task_sampling.sampled_task(task, task_params)
    records = []
    for P in s["parameterizations"]:
        for r in s["ratios"]:
            shared = None
            closed = None if not st.engine_state else theory.closed_form_attention(
                st, P, r, s["target_losses"], s["seq_len"])
            lams = master_lambdas(task, dict(st.params), r, s["target_losses"])
            for seed in s["seeds"]:
                if shared is None or models.draws(P, init):
                    shared = theory.flow_to_losses(
                        st, P, r, s["target_losses"], lr_ov=s["lr_ov"], seq_len=s["seq_len"], init=init,
                        init_scale=s.get("init_scale", models.IDENTITY_SCALE), seed=seed, rtol=rtol, atol=atol,
                        max_nfev=max_nfev)
                if progress is not None:
                    progress()
                for rec in shared["records"]:
                    row = {"parameterization": P, "ratio": r, "seed": seed, **rec,
                           "master_lambda": lams[rec["target_loss"]]}
                    if closed is not None:
                        row.update(closed_form_method=closed["method"], closed_form_relevant_attention=
                                   closed["relevant_attention"][rec["target_loss"]])
                    record = {k: row[k] for k in RECORD_FIELDS + (TASK_RECORD_FIELDS if closed else ())}
                    if closed is not None and closed["reason"] is not None:
                        record["closed_form_reason"] = closed["reason"]
                    if "stopped_by" in rec:
                        record["stopped_by"] = rec["stopped_by"]
                    records.append(record)
    return records
