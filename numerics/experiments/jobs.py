"""Job functions: one JSON-serialisable dict in, one JSON-serialisable dict out.

These top-level functions are what :func:`numerics.experiments.runner.run_jobs`
ships to worker processes or a Dask cluster.  A job carries everything its
result depends on (settings and seeds); its result depends on nothing else
(not on the worker, the backend or the other jobs).

* :func:`fig2_job` -- ``{"experiment": "fig2", "config": Fig2Config.to_dict(), "seeds": [...]}``
  -> ``{"runs": [...]}`` (one entry per seed, see :func:`fig2_run_summary`).
* :func:`fig3_job` -- ``{"experiment": "fig3", "config": Fig3Config.to_dict()}``
  -> the dict of :func:`numerics.experiments.fixed_attention.train_fig3`.
* :func:`sweep_job` -- ``{"experiment": "sweep", "config": ..., "seeds": [...], "ratio": r}``
  -> ``{"rows": [...]}`` (one row of ``results.csv`` per seed).
"""
from __future__ import annotations

import numpy as np

from . import measure, sgd

__all__ = ["fig2_job", "fig3_job", "sweep_job", "fig2_run_summary", "combine_runs", "split_seeds",
           "valid_result", "FIG2_RUN_KEYS", "SWEEP_ROW_KEYS"]


def _fig2_config(job):
    return sgd.Fig2Config(**job["config"])


#: The measurements of a run, ``None`` (JSON ``null``) for a diverged run, which is not evaluated.
MEASURED = ("heatmap", "final_loss", "accuracy", "relevant_attention", "label_probability")
#: The keys of a Figure-2 run summary (a stored result without them is damaged).
FIG2_RUN_KEYS = ("seed", "steps", "stopped_epoch", "loss_log", *MEASURED,
                 "separability_n", "separability_sum", "separability_sumsq")
#: The keys of a sweep row (:data:`numerics.experiments.sweep.CSV_COLUMNS`).
SWEEP_ROW_KEYS = ("parameterization", "ratio", "seed", "steps", "reached", "loss", "relevant_attention",
                  "label_probability", "accuracy", "status")


def fig2_run_summary(config: sgd.Fig2Config, run: dict) -> dict:
    """Evaluate one trained run (a dict of :func:`sgd.train_fig2`) on fresh batches.

    A diverged run (``status`` ``"diverged"``: its parameters are not finite) is
    not evaluated: its measurements are ``None`` and it holds no separability."""
    out = {"seed": run["seed"], "steps": run["steps"], "stopped_epoch": run["stopped_epoch"],
           "loss_log": run["loss_log"]}
    if run["status"] == "diverged":
        out.update(dict.fromkeys(MEASURED), separability_n=0, separability_sum=0.0, separability_sumsq=0.0)
    else:
        ev = measure.evaluate_fig2(run["params"], sgd.eval_rng(run["seed"]), config.eval_batches,
                                   config.batch_size, config.seq_len)
        out.update(measure.summarize_one(ev))
    out["status"] = run["status"]
    return out


def combine_runs(runs: list) -> dict:
    """Heatmap mean/std over the runs that did not diverge, pooled separability
    (:func:`numerics.experiments.measure.combine_summaries`); ``None`` where no run is left."""
    kept = [r for r in runs if r.get("status") != "diverged"]
    if not kept:
        return {"heatmap": None, "heatmap_std": None, "separability": {"mean": None, "std": None}}
    return measure.combine_summaries(kept)


def fig2_job(job: dict, progress=None) -> dict:
    """Train and evaluate the seeds of one Figure-2 configuration (stacked)."""
    config = _fig2_config(job)
    runs = sgd.train_fig2(config, job["seeds"], progress=progress)
    return {"runs": [fig2_run_summary(config, r) for r in runs]}


def fig3_job(job: dict, progress=None) -> dict:
    """Train the fixed-attention model at every alpha of the job (stacked)."""
    return sgd.train_fig3(sgd.Fig3Config(**job["config"]), progress=progress)


def sweep_job(job: dict, progress=None) -> dict:
    """Train the seeds of one (parameterization, ratio) to the target loss and measure."""
    config = _fig2_config(job)
    runs = sgd.train_fig2(config, job["seeds"], progress=progress)
    rows = []
    for r in runs:
        if r["status"] == "diverged":
            rows.append({"parameterization": config.parameterization, "ratio": job["ratio"], "seed": r["seed"],
                         "steps": r["steps"], "reached": False, "loss": None, "relevant_attention": None,
                         "label_probability": None, "accuracy": None, "status": "diverged"})
            continue
        ev = measure.evaluate_fig2(r["params"], sgd.eval_rng(r["seed"]), config.eval_batches,
                                   config.batch_size, config.seq_len)
        rows.append({
            "parameterization": config.parameterization, "ratio": job["ratio"], "seed": r["seed"],
            "steps": r["steps"], "reached": r["stopped_epoch"] is not None,
            "loss": float(ev["loss"].mean()),
            "relevant_attention": float(ev["relevant_attention"].mean()),
            "label_probability": float(ev["label_probability"].mean()),
            "accuracy": float(ev["correct"].mean()), "status": r["status"],
        })
    return {"rows": rows}


def _is_number(x, *, none=False):
    return (x is None and none) or (isinstance(x, (int, float)) and not isinstance(x, bool))


def _valid_fig2_run(run, seed) -> bool:
    return (isinstance(run, dict) and all(k in run for k in FIG2_RUN_KEYS) and run["seed"] == seed
            and _is_number(run["steps"]) and isinstance(run["loss_log"], list)
            and all(_is_number(run[k], none=True) for k in MEASURED if k != "heatmap")
            and (run["heatmap"] is None or (isinstance(run["heatmap"], list) and len(run["heatmap"]) == 5
                                            and all(isinstance(r, list) and len(r) == 5 for r in run["heatmap"])))
            and run.get("status", "completed") in sgd.RUN_STATUSES)


def _valid_sweep_row(row, job, seed) -> bool:
    keys = [k for k in SWEEP_ROW_KEYS if k != "status"]   # rows stored before the status column
    return (isinstance(row, dict) and all(k in row for k in keys) and row["seed"] == seed
            and row["ratio"] == job["ratio"] and row["parameterization"] == job["config"]["parameterization"]
            and isinstance(row["reached"], bool) and _is_number(row["steps"])
            and all(_is_number(row[k], none=True) for k in keys[5:])
            and row.get("status", "completed") in sgd.RUN_STATUSES)


def _valid_fig3(result, job) -> bool:
    alphas = job["config"]["alphas"]
    fields = ("loss", "loss_shifted", "incentive", "train_loss")
    return (result.get("alpha") == alphas and isinstance(result.get("final_loss"), list)
            and len(result["final_loss"]) == len(alphas)
            and all(isinstance(result.get(k), list) and len(result[k]) == len(alphas) for k in fields))


def valid_result(job: dict, result) -> bool:
    """Whether a stored ``result`` has the full shape of ``job``'s result (one entry per seed
    or alpha, every key, numbers where numbers belong); a damaged one is recomputed."""
    if not isinstance(result, dict) or not isinstance(job, dict):
        return False
    kind = job.get("experiment")
    if kind == "fig3":
        return _valid_fig3(result, job)
    seeds = job.get("seeds")
    key = {"fig2": "runs", "sweep": "rows"}.get(kind)
    if key is None or not isinstance(seeds, list) or not isinstance(result.get(key), list):
        return False
    items = result[key]
    if len(items) != len(seeds):
        return False
    if kind == "fig2":
        return all(_valid_fig2_run(r, s) for r, s in zip(items, seeds))
    return all(_valid_sweep_row(r, job, s) for r, s in zip(items, seeds))


def split_seeds(seeds, parts: int) -> list:
    """Split seeds into at most ``parts`` contiguous, nearly equal groups (order kept).

    >>> split_seeds([1, 2, 3, 4, 5], 2)
    [[1, 2, 3], [4, 5]]
    """
    parts = max(1, min(int(parts), len(seeds)))
    return [list(map(int, g)) for g in np.array_split(np.asarray(seeds), parts)]
