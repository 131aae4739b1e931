"""Job functions: one JSON-serialisable dict in, one JSON-serialisable dict out.

These top-level functions are what :func:`numerics.experiments.runner.run_jobs`
ships to worker processes or a Dask cluster.  A job carries everything its
result depends on (settings and seeds); its result depends on nothing else
(not on the worker, the backend or the other jobs).

* :func:`fig2_job` -- ``{"experiment": "fig2", "config": Fig2Config.to_dict(), "seeds": [...]}``
  -> ``{"runs": [...]}`` (one entry per seed, see :func:`fig2_run_summary`).
* :func:`fig3_job` -- ``{"experiment": "fig3", "config": Fig3Config.to_dict()}``
  -> the dict of :func:`numerics.experiments.fixed_attention.train_fig3`.
* :func:`sweep_job` -- ``{"experiment": "sweep", "config": ..., "seeds": [...], "ratios": [...]}``
  -> ``{"rows": [...]}`` (one row of ``results.csv`` per ratio, seed and target), every
  ratio x seed trained in one stack (:func:`numerics.experiments.stack.train_stack`).
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from . import fixed_attention, measure, proxies, sgd, stack
from .settings import finite_number, whole_number

__all__ = ["job_epochs", "output_bytes", "OUTPUT_BASE_BYTES",
           "fig2_job", "fig3_job", "sweep_job", "sweep_targets", "sweep_runs", "fig2_run_summary",
           "combine_runs", "split_seeds", "valid_result", "FIG2_RUN_KEYS", "SWEEP_ROW_KEYS"]


def _fig2_config(job):
    return sgd.Fig2Config(**job["config"])


#: The measurements of a run, ``None`` (JSON ``null``) for a diverged run, which is not evaluated.
MEASURED = ("heatmap", "final_loss", "accuracy", "relevant_attention", "label_probability")
#: The keys of a Figure-2 run summary (a stored result without them is damaged).
FIG2_RUN_KEYS = ("seed", "steps", "stopped_epoch", "loss_log", *MEASURED,
                 "separability_n", "separability_sum", "separability_sumsq")
#: The keys of a sweep row, the columns of the sweep's ``results.csv``.
SWEEP_ROW_KEYS = ("parameterization", "ratio", "seed", "steps", "reached", "loss", "relevant_attention",
                  "label_probability", "accuracy", "status", "self_attention", "other_attention", "target_loss",
                  *proxies.PROXIES)
#: Measurements of a sweep row (numbers, or None for a diverged run).
_SWEEP_MEASURED = ("loss", "relevant_attention", "label_probability", "accuracy", "self_attention",
                   "other_attention", *proxies.PROXIES)
#: The measurements of a sweep row that only a diverged run has not (a proxy may be undefined: None).
_SWEEP_EVALUATED = _SWEEP_MEASURED[:-len(proxies.PROXIES)]


def _evaluate(config, params, seed) -> dict:
    """Measure ``params`` on fresh batches of the seed's evaluation stream (:func:`measure.evaluate`)."""
    return measure.evaluate(config.sampled_task, params, sgd.eval_rng(seed), config.eval_batches,
                            config.batch_size, config.seq_len)


def fig2_run_summary(config: sgd.Fig2Config, run: dict) -> dict:
    """Evaluate one trained run (a dict of :func:`~numerics.experiments.sgd.train_fig2`) on fresh batches.

    A diverged run (``status`` ``"diverged"``: its parameters are not finite) is
    not evaluated: its measurements are ``None`` and it holds no separability.

    Parameters
    ----------
    config : numerics.experiments.sgd.Fig2Config
    run : dict
        One run of :func:`~numerics.experiments.sgd.train_fig2`.

    Returns
    -------
    dict
        :data:`FIG2_RUN_KEYS`, the shares, the proxies and ``status``.
    """
    out = {"seed": run["seed"], "steps": run["steps"], "stopped_epoch": run["stopped_epoch"],
           "loss_log": run["loss_log"]}
    if run["status"] == "diverged":
        out.update(dict.fromkeys(MEASURED), separability_n=0, separability_sum=0.0, separability_sumsq=0.0,
                   self_attention=None, other_attention=None, **dict.fromkeys(proxies.PROXIES))
    else:
        ev = _evaluate(config, run["params"], run["seed"])
        out.update(measure.summarize_one(ev))
    out["status"] = run["status"]
    return out


def combine_runs(runs: list) -> dict:
    """Heatmap mean/std over the runs that did not diverge, pooled separability
    (:func:`numerics.experiments.measure.combine_summaries`).

    Parameters
    ----------
    runs : list of dict
        Of :func:`fig2_run_summary`.

    Returns
    -------
    dict
        ``heatmap``, ``heatmap_std``, ``separability``, as a Figure-2 result names them; ``None`` where
        no run is left.
    """
    kept = [r for r in runs if r.get("status") != "diverged"]
    if not kept:
        return {"heatmap": None, "heatmap_std": None, "separability": {"mean": None, "std": None}}
    return measure.combine_summaries(kept)


def job_epochs(job: dict) -> int:
    """The epochs a job trains at most (its stack's schedule; runs that reach their target stop
    sooner): the unit of the progress bars of :func:`numerics.experiments.runner.run_jobs`.

    Parameters
    ----------
    job : dict

    Returns
    -------
    int
    """
    if job.get("experiment") == "fig3":
        return int(job["config"]["epochs"])
    config = _fig2_config(job)
    return -(-config.total_steps // config.steps_per_epoch)


#: Bytes an output file may take beside its runs' numbers: its settings (a task file's text among them, as
#: a sweep's settings file at most 1 MiB), titles, keys and the summaries of Figure 2 (heatmaps, separability).
OUTPUT_BASE_BYTES = 2 << 20
#: Bytes of one number as the indented JSON writes it, with a margin: the longest float (24 characters,
#: ``-2.2250738585072014e-308``), its indentation, comma and line break, or the key of a scalar.
_NUMBER_BYTES = 64
#: Numbers of a Figure-2 run beside its loss log (a 5 x 5 heatmap, its measurements), with a margin.
_FIG2_RUN_NUMBERS = 64
#: Lines of :data:`_NUMBER_BYTES` a sweep row takes in a run file: one per column (its key, at most 30
#: characters quoted, and its value, a number or a short name, on one line) and its braces.
_SWEEP_ROW_NUMBERS = len(SWEEP_ROW_KEYS) + 2


def output_bytes(job: dict) -> int:
    """The most bytes the results of a job take in an output file (``fig2.json``, ``fig3.json``, a
    reproduction's ``report.json``) or in its run file (``runs/<key>.json``), beside
    :data:`OUTPUT_BASE_BYTES`: a Figure-2 job's runs one loss per epoch (:func:`job_epochs`) and their
    measurements each, a Figure-3 job's alphas four curves of one value per epoch and one more, a sweep
    job's runs (:func:`sweep_runs`) a row per target (:func:`sweep_targets`), and its ratios, seeds and
    targets.

    Parameters
    ----------
    job : dict
        ``{"experiment": "fig2", "config", "seeds"}``, ``{"experiment": "fig3", "config"}`` or
        ``{"experiment": "sweep", "seeds", "ratios"}`` (its ``target_losses`` or one target).

    Returns
    -------
    int

    Raises
    ------
    ValueError
        Not such a job.

    >>> output_bytes({"experiment": "sweep", "seeds": [1234, 1235], "ratios": [1.0], "target_losses": [3.5, 3.0]})
    5696
    """
    if job.get("experiment") == "sweep":
        ratios, seeds, targets = len(job["ratios"]), len(job["seeds"]), len(job.get("target_losses") or [None])
        return (seeds * ratios * targets * _SWEEP_ROW_NUMBERS + seeds + ratios + targets) * _NUMBER_BYTES
    epochs = job_epochs(job)
    if job.get("experiment") == "fig3":
        return len(job["config"]["alphas"]) * (4 * (epochs + 1) + 8) * _NUMBER_BYTES
    return len(job["seeds"]) * (epochs + 1 + _FIG2_RUN_NUMBERS) * _NUMBER_BYTES


def fig2_job(job: dict, progress=None) -> dict:
    """Train and evaluate the seeds of one Figure-2 configuration (stacked).

    Parameters
    ----------
    job : dict
        ``{"experiment": "fig2", "config": Fig2Config.to_dict(), "seeds": [...]}``.
    progress : callable, optional
        Called as ``progress(1)`` after every epoch.

    Returns
    -------
    dict
        ``{"runs": [...]}``, one :func:`fig2_run_summary` per seed.
    """
    config = _fig2_config(job)
    runs = sgd.train_fig2(config, job["seeds"], progress=progress)
    return {"runs": [fig2_run_summary(config, r) for r in runs]}


def fig3_job(job: dict, progress=None) -> dict:
    """Train the fixed-attention model at every alpha of the job (stacked).

    Parameters
    ----------
    job : dict
        ``{"experiment": "fig3", "config": Fig3Config.to_dict()}``.
    progress : callable, optional
        Called as ``progress(1)`` after every epoch.

    Returns
    -------
    dict
        Of :func:`numerics.experiments.fixed_attention.train_fig3`.
    """
    return fixed_attention.train_fig3(fixed_attention.Fig3Config(**job["config"]), progress=progress)


def sweep_targets(job: dict) -> list:
    """The target losses of a sweep job, highest first: ``job["target_losses"]`` when the
    job names several, else the one of its config (a one-target job names none).

    Parameters
    ----------
    job : dict

    Returns
    -------
    list of float
    """
    return [float(t) for t in job.get("target_losses") or [job["config"]["target_loss"]]]


def sweep_runs(job: dict) -> list:
    """The ``(ratio, seed)`` of each run of a sweep job, in the order of its rows: ratio by
    ratio, seed by seed.

    Parameters
    ----------
    job : dict

    Returns
    -------
    list of tuple
    """
    return [(r, s) for r in job["ratios"] for s in job["seeds"]]


def _sweep_row(config, ratio, run, target, state):
    """One row of ``results.csv``: ``run`` measured at ``state`` (None: diverged, nothing measured)."""
    row = {"parameterization": config.parameterization, "ratio": ratio, "seed": run["seed"]}
    if state is None:
        row.update(steps=run["steps"], reached=False, status="diverged", **dict.fromkeys(_SWEEP_MEASURED))
    else:
        measured = measure.summarize_one(_evaluate(config, state["params"], run["seed"]))
        measured["loss"] = measured["final_loss"]
        row.update(steps=state["steps"], reached=state["reached"], status=state["status"],
                   **{k: measured[k] for k in _SWEEP_MEASURED})
    row["target_loss"] = target
    return row


def _state_at(run, target, lowest):
    """The state of ``run`` for ``target``: where its epoch-mean loss first reached it, else
    (not reached) its final state; None for a diverged run that had not reached it."""
    mark = run.get("marks", {}).get(target) if target != lowest else None
    if mark is not None:
        return {"params": mark["params"], "steps": mark["steps"], "reached": True, "status": "reached"}
    if run["status"] == "diverged":
        return None
    reached = target == lowest and run["stopped_epoch"] is not None
    return {"params": run["params"], "steps": run["steps"], "reached": reached, "status": run["status"]}


def sweep_job(job: dict, progress=None) -> dict:
    """Train the runs of a job (:func:`sweep_runs`: its ratios x seeds, in one stack) to the
    lowest target loss and measure each run at every target (:func:`sweep_targets`).

    Ratio ``r`` trains with ``lr_qk = r * lr_ov`` (the config's own ``lr_qk`` is not used).
    Every state is measured on the same fresh batches (the seed's evaluation stream,
    restarted), so the lowest target's row is the one-target sweep's; each run's numbers are
    those of the run trained alone (:mod:`numerics.experiments.stack`).

    Parameters
    ----------
    job : dict
        ``{"experiment": "sweep", "config": ..., "seeds": [...], "ratios": [...]}``, optionally
        ``"target_losses"``.
    progress : callable, optional
        Called as ``progress(1)`` after every epoch.

    Returns
    -------
    dict
        ``{"rows": [...]}``: one row of ``results.csv`` (:data:`SWEEP_ROW_KEYS`) per run and
        target, in the order of :func:`sweep_runs`, targets highest first.
    """
    config = _fig2_config(job)
    targets = sweep_targets(job)
    lowest = targets[-1]
    pairs = sweep_runs(job)
    configs = [replace(config, lr_qk=float(r) * config.lr_ov) for r, _ in pairs]
    runs = stack.train_stack(configs, [s for _, s in pairs], progress=progress, record_losses=targets[:-1])
    return {"rows": [_sweep_row(config, ratio, r, t, _state_at(r, t, lowest))
                     for (ratio, _), r in zip(pairs, runs) for t in targets]}


#: Rounding slack of the bounds of :data:`_BOUNDS` (a share summed over positions may pass 1 by an ulp).
_SLACK = 1e-9
#: measurement -> (least, greatest) value of a stored one (up to :data:`_SLACK`); the others need only be
#: finite (a stored number is finite: the writer writes a number that is not as null).
_BOUNDS = {"final_loss": (0.0, math.inf), "loss": (0.0, math.inf), "accuracy": (0.0, 1.0),
           "relevant_attention": (0.0, 1.0), "label_probability": (0.0, 1.0), "self_attention": (0.0, 1.0),
           "other_attention": (0.0, 1.0), "attention_entropy": (0.0, math.inf),
           "attention_entropy_normalized": (0.0, 1.0), "plausibility_auprc": (0.0, 1.0),
           "plausibility_token_f1": (0.0, 1.0), "comprehensiveness": (-1.0, 1.0), "sufficiency": (-1.0, 1.0),
           "heatmap": (0.0, 100.0), "separability_sumsq": (0.0, math.inf)}


def _finite(x, name=None) -> bool:
    """A JSON number that is a finite float (a 400-digit integer is not,
    :func:`~numerics.experiments.settings.finite_number`), within the bounds of ``name``."""
    low, high = _BOUNDS.get(name, (-math.inf, math.inf))
    return finite_number(x) and low - _SLACK <= x <= high + _SLACK


def _measured(x, name) -> bool:
    """A measurement: None (a diverged run's), or a finite number in its bounds."""
    return x is None or _finite(x, name)


def _count(x, most) -> bool:
    """A whole number in ``[0, most]``."""
    return whole_number(x) and 0 <= x <= most


def _most_steps(job) -> int:
    """The steps a run of ``job`` trains at most (:attr:`~numerics.experiments.sgd.Fig2Config.total_steps`
    of its config); -1 for a job without a Figure-2 run's config."""
    try:
        return _fig2_config(job).total_steps
    except (KeyError, TypeError, ValueError):
        return -1


def _valid_fig2_run(run, seed, most_steps) -> bool:
    return (isinstance(run, dict) and all(k in run for k in FIG2_RUN_KEYS) and run["seed"] == seed
            and _count(run["steps"], most_steps) and isinstance(run["loss_log"], list)
            and all(_measured(x, "loss") for x in run["loss_log"])
            and (run["stopped_epoch"] is None or _count(run["stopped_epoch"], math.inf))
            and all(_measured(run[k], k) for k in (*MEASURED[1:], "self_attention", "other_attention",
                                                   *proxies.PROXIES) if k in run)
            and _count(run["separability_n"], math.inf) and _finite(run["separability_sum"])
            and _finite(run["separability_sumsq"], "separability_sumsq")
            and ((run["heatmap"] is None and run.get("status") == "diverged")     # (a diverged run is not measured)
                 or (isinstance(run["heatmap"], list) and len(run["heatmap"]) == 5
                                            and all(isinstance(r, list) and len(r) == 5
                                                    and all(_finite(x, "heatmap") for x in r)
                                                    for r in run["heatmap"])))
            and run.get("status", "completed") in sgd.RUN_STATUSES)


def _valid_sweep_row(row, job, ratio, seed, target, most_steps) -> bool:
    """Whether a stored row has every column of :data:`SWEEP_ROW_KEYS` and belongs to ``job``
    at ``(ratio, seed, target)``, its numbers finite and in their bounds (a row without every
    column is recomputed)."""
    return (isinstance(row, dict) and all(k in row for k in SWEEP_ROW_KEYS) and row["seed"] == seed
            and row["ratio"] == ratio and row["parameterization"] == job["config"]["parameterization"]
            and row["target_loss"] == target and isinstance(row["reached"], bool)
            and _count(row["steps"], most_steps) and all(_measured(row[k], k) for k in _SWEEP_MEASURED)
            and (row["status"] == "diverged" or all(row[k] is not None for k in _SWEEP_EVALUATED))
            and row["status"] in sgd.RUN_STATUSES)


def _fig3_number(x) -> bool:
    """A stored Figure-3 number: a float (NaN or infinite from where an alpha diverged), or a finite integer."""
    return isinstance(x, float) or _finite(x)


def _valid_fig3(result, job) -> bool:
    """One number per alpha and epoch (epochs 0..E measured, 1..E trained) and a final loss per alpha."""
    alphas, epochs = job["config"]["alphas"], job["config"]["epochs"]
    lengths = {"loss": epochs + 1, "loss_shifted": epochs + 1, "incentive": epochs + 1, "train_loss": epochs}
    return (result.get("alpha") == alphas and isinstance(result.get("final_loss"), list)
            and len(result["final_loss"]) == len(alphas) and all(map(_fig3_number, result["final_loss"]))
            and all(isinstance(result.get(k), list) and len(result[k]) == len(alphas)
                    and all(isinstance(row, list) and len(row) == n and all(map(_fig3_number, row))
                            for row in result[k]) for k, n in lengths.items()))


def valid_result(job: dict, result) -> bool:
    """Whether a stored ``result`` has the full shape of ``job``'s result (one entry per seed
    or alpha, every key, numbers where numbers belong: of a Figure-2 or sweep run, finite and in
    their range, steps a whole number up to the job's schedule); a damaged one is recomputed.

    Parameters
    ----------
    job : dict
    result : object
        As read from the store.

    Returns
    -------
    bool
    """
    if not isinstance(result, dict) or not isinstance(job, dict):
        return False
    kind = job.get("experiment")
    if kind == "fig3":
        return _valid_fig3(result, job)
    seeds = job.get("seeds")
    key = {"fig2": "runs", "sweep": "rows"}.get(kind)
    if key is None or not isinstance(seeds, list) or not isinstance(result.get(key), list):
        return False
    items, most = result[key], _most_steps(job)
    if kind == "fig2":
        return len(items) == len(seeds) and all(_valid_fig2_run(r, s, most) for r, s in zip(items, seeds))
    try:
        targets = sweep_targets(job)
        expected = [(r, s, t) for r, s in sweep_runs(job) for t in targets]
    except (KeyError, TypeError, ValueError):
        return False
    return len(items) == len(expected) and all(_valid_sweep_row(row, job, r, s, t, most)
                                               for row, (r, s, t) in zip(items, expected))


def split_seeds(seeds, parts: int) -> list:
    """Split seeds into at most ``parts`` contiguous, nearly equal groups (order kept).

    Parameters
    ----------
    seeds : sequence of int
    parts : int

    Returns
    -------
    list of list of int

    >>> split_seeds([1, 2, 3, 4, 5], 2)
    [[1, 2, 3], [4, 5]]
    """
    parts = max(1, min(int(parts), len(seeds)))
    return [list(map(int, g)) for g in np.array_split(np.asarray(seeds), parts)]
