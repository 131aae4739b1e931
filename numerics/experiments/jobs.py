"""Job functions: one JSON-serialisable dict in, one JSON-serialisable dict out.

These top-level functions are what :func:`numerics.experiments.runner.run_jobs`
ships to worker processes or a Dask cluster.  A job carries everything its
result depends on (settings and seeds); its result depends on nothing else
(not on the worker, the backend or the other jobs).

* :func:`fig2_job` -- ``{"experiment": "fig2", "config": Fig2Config.to_dict(), "seeds": [...]}``
  -> ``{"runs": [...]}`` (one entry per seed, see :func:`fig2_run_summary`).
* :func:`fig3_job` -- ``{"experiment": "fig3", "config": Fig3Config.to_dict()}``
  -> the dict of :func:`numerics.experiments.sgd.train_fig3`.
* :func:`sweep_job` -- ``{"experiment": "sweep", "config": ..., "seeds": [...], "ratio": r}``
  -> ``{"rows": [...]}`` (one row of ``results.csv`` per seed).
"""
from __future__ import annotations

import numpy as np

from . import measure, sgd

__all__ = ["fig2_job", "fig3_job", "sweep_job", "fig2_run_summary", "split_seeds"]


def _fig2_config(job):
    return sgd.Fig2Config(**job["config"])


def fig2_run_summary(config: sgd.Fig2Config, run: dict) -> dict:
    """Evaluate one trained run (a dict of :func:`sgd.train_fig2`) on fresh batches."""
    ev = measure.evaluate_fig2(run["params"], sgd.eval_rng(run["seed"]), config.eval_batches,
                               config.batch_size, config.seq_len)
    out = {"seed": run["seed"], "steps": run["steps"], "stopped_epoch": run["stopped_epoch"],
           "loss_log": run["loss_log"]}
    out.update(measure.summarize_one(ev))
    return out


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
        ev = measure.evaluate_fig2(r["params"], sgd.eval_rng(r["seed"]), config.eval_batches,
                                   config.batch_size, config.seq_len)
        rows.append({
            "parameterization": config.parameterization, "ratio": job["ratio"], "seed": r["seed"],
            "steps": r["steps"], "reached": r["stopped_epoch"] is not None,
            "loss": float(ev["loss"].mean()),
            "relevant_attention": float(ev["relevant_attention"].mean()),
            "label_probability": float(ev["label_probability"].mean()),
            "accuracy": float(ev["correct"].mean()),
        })
    return {"rows": rows}


def split_seeds(seeds, parts: int) -> list:
    """Split seeds into at most ``parts`` contiguous, nearly equal groups (order kept).

    >>> split_seeds([1, 2, 3, 4, 5], 2)
    [[1, 2, 3], [4, 5]]
    """
    parts = max(1, min(int(parts), len(seeds)))
    return [list(map(int, g)) for g in np.array_split(np.asarray(seeds), parts)]
