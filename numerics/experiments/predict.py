r"""The theory's prediction beside the sweep: one record per (parameterization, ratio, seed, target).

:func:`predict` runs one expected-count gradient flow
(:func:`numerics.experiments.theory.flow_to_losses`) per (parameterization,
ratio, seed), from exactly that SGD seed's initial matrices, and reads it off
where the loss first reaches each target loss: the flow time in SGD steps and
where the attention goes (relevant tokens, the query's own token, all other
positions). Seeds are numbered as the sweep's: 1234, 1235, ... When an
initialization draws nothing at random (``identity``; ``authors`` for FACO and
CAFO) every seed starts from the same matrices, and one flow answers them all.

The flows of one (parameterization, ratio) are one job (:func:`predict_jobs`, :func:`predict_job`)
of :func:`numerics.experiments.runner.run_jobs`, as the sweep's theory
(:func:`numerics.experiments.overlay.theory_job`, which calls :func:`predict`): they run on local
worker processes, and a :class:`~numerics.experiments.store.ResultStore` keeps each finished job, so
that an interrupted prediction resumes without running it again (:func:`valid_result` tells a whole
stored result).

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

__all__ = ["RECORD_FIELDS", "TASK_RECORD_FIELDS", "predict", "predict_jobs", "predict_job", "valid_result",
           "check_settings", "master_lambdas"]

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
#: Every field a record may have, in its order (a stored record is read back with its keys sorted).
_FIELD_ORDER = RECORD_FIELDS + TASK_RECORD_FIELDS + ("closed_form_reason", "stopped_by")


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


def predict_jobs(settings, *, rtol=1e-8, atol=1e-13, max_nfev=500_000) -> list:
    """The jobs of :func:`predict`: one per (parameterization, ratio) of checked ``settings``, in that
    order, each a JSON dict that names everything its flows need (:func:`predict_job`).

    Parameters
    ----------
    settings : dict
        Of :func:`check_settings`.
    rtol, atol, max_nfev
        Of each flow (:func:`numerics.experiments.theory.flow_to_losses`).

    Returns
    -------
    list of dict
        ``experiment`` (``"predict"``), ``parameterization``, ``ratio``, ``target_losses``, ``seeds``,
        ``init``, ``init_scale``, ``seq_len``, ``lr_ov``, ``task`` (its key: a built-in task's name or a
        task file's canonical text), ``task_params``, ``rtol``, ``atol``, ``max_nfev``.
    """
    st = task_sampling.sampled_task(settings.get("task", task_sampling.DEFAULT_TASK), settings.get("task_params", ()))
    shared = {"target_losses": list(settings["target_losses"]), "seeds": list(settings["seeds"]),
              "init": settings["init"], "init_scale": settings.get("init_scale", models.IDENTITY_SCALE),
              "seq_len": settings["seq_len"], "lr_ov": settings["lr_ov"], "task": st.key,
              "task_params": [list(p) for p in st.params], "rtol": rtol, "atol": atol, "max_nfev": max_nfev}
    return [{"experiment": "predict", "parameterization": P, "ratio": r, **shared}
            for P in settings["parameterizations"] for r in settings["ratios"]]


def predict_job(job: dict) -> dict:
    """The flows of one :func:`predict_jobs` job: one per seed (one for every seed where the
    initialization draws nothing at random), read off at every target.

    Parameters
    ----------
    job : dict

    Returns
    -------
    dict
        ``{"records": [...]}``: :func:`predict`'s records of the job's parameterization and ratio, seed
        by seed, targets high to low.
    """
    st = task_sampling.sampled_task(job["task"], job["task_params"])
    P, r, targets = job["parameterization"], job["ratio"], job["target_losses"]
    closed = None if not st.engine_state else theory.closed_form_attention(st, P, r, targets, job["seq_len"])
    lams = master_lambdas(job["task"], dict(st.params), r, targets)
    records, shared = [], None
    for seed in job["seeds"]:
        if shared is None or models.draws(P, job["init"]):
            shared = theory.flow_to_losses(
                st, P, r, targets, lr_ov=job["lr_ov"], seq_len=job["seq_len"], init=job["init"],
                init_scale=job["init_scale"], seed=seed, rtol=job["rtol"], atol=job["atol"],
                max_nfev=job["max_nfev"])
        records.extend(_record(P, r, seed, rec, lams, closed) for rec in shared["records"])
    return {"records": records}


def _record(P, r, seed, rec, lams, closed) -> dict:
    """One record of :func:`predict` from a flow's reading ``rec`` at a target."""
    row = {"parameterization": P, "ratio": r, "seed": seed, **rec, "master_lambda": lams[rec["target_loss"]]}
    if closed is not None:
        row.update(closed_form_method=closed["method"],
                   closed_form_relevant_attention=closed["relevant_attention"][rec["target_loss"]])
    record = {k: row[k] for k in RECORD_FIELDS + (TASK_RECORD_FIELDS if closed else ())}
    if closed is not None and closed["reason"] is not None:
        record["closed_form_reason"] = closed["reason"]
    if "stopped_by" in rec:
        record["stopped_by"] = rec["stopped_by"]
    return record


def valid_result(job: dict, result) -> bool:
    """Whether a stored ``result`` of a :func:`predict_jobs` job is whole: one record per seed and target,
    in order, of the job's parameterization and ratio, with every field of :data:`RECORD_FIELDS` and no field
    a record does not have (a result that is not counts as missing, and its flows are run again).

    Parameters
    ----------
    job : dict
    result : object
        As read from the store.

    Returns
    -------
    bool
    """
    records = result.get("records") if isinstance(result, dict) else None
    try:
        expected = [(seed, t) for seed in job["seeds"] for t in job["target_losses"]]
    except (KeyError, TypeError):
        return False
    return (isinstance(records, list) and len(records) == len(expected)
            and all(isinstance(rec, dict) and all(k in rec for k in RECORD_FIELDS) and set(rec) <= set(_FIELD_ORDER)
                    and (rec["parameterization"], rec["ratio"], rec["seed"], rec["target_loss"])
                    == (job["parameterization"], job["ratio"], seed, t) for rec, (seed, t) in zip(records, expected)))


def predict(parameterizations, ratios, target_losses, seeds=1, init="authors",
            seq_len=None, lr_ov=0.01, *, init_scale=None, rtol=1e-8, atol=1e-13,
            max_nfev=500_000, workers=1, store=None, progress=False, task=task_sampling.DEFAULT_TASK,
            task_params=()) -> list:
    r"""The theory's records: one per (parameterization, ratio, seed, target).

    The flows of each (parameterization, ratio) are one job (:func:`predict_jobs`,
    :func:`predict_job`) of :func:`numerics.experiments.runner.run_jobs`: on ``workers`` local
    processes, each job's result saved in ``store`` as it finishes and read back from it, not run
    again. Each flow is independent of the others: the records are the same bits whatever the
    workers, and whether read from a store.

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
    workers : int, optional
        Local worker processes (>= 1; default 1, in this process).
    store : numerics.experiments.store.ResultStore, optional
        Where each finished job is saved (give it :func:`valid_result`); a job stored there is read
        back, not run again.
    progress : bool, optional
        Show a progress bar of the jobs on stderr (a terminal only).

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

    Raises
    ------
    ValueError
        A bad argument (before any flow), ``workers`` included.
    numerics.experiments.store.EditedRecord
        A file of ``store`` changed after it was written (before any flow).
    """
    from .runner import JobError, run_jobs

    s = check_settings(parameterizations, ratios, target_losses, seeds, init, seq_len, lr_ov,
                       init_scale, task=task, task_params=task_params)
    jobs = predict_jobs(s, rtol=rtol, atol=atol, max_nfev=max_nfev)
    try:
        results = run_jobs(predict_job, jobs, workers=workers, store=store, progress=progress, desc="predict")
    except JobError as exc:         # what a flow raised, as a flow run here raises it
        raise exc.__cause__ from None
    return [{k: record[k] for k in _FIELD_ORDER if k in record} for result in results for record in result["records"]]
