r"""Matched-loss sweep over learning-rate ratios: the paper's central claim, measured.

Every (parameterization, ratio :math:`r = \eta_{QK}/\eta_{OV}`, seed) is
trained with plain SGD (:math:`\eta_{OV}` fixed, :math:`\eta_{QK} = r\,\eta_{OV}`)
until the mean training loss of an epoch reaches the target loss (or
``max_steps``), then measured on fresh batches: relevant-token attention,
label probability, loss and accuracy.  The theory predicts that the attention
at matched loss increases with :math:`r`.

One job per (parameterization, ratio) trains its seeds stacked
(:func:`numerics.experiments.jobs.sweep_job`); the job partition does not
depend on the number of workers, so a :class:`~numerics.experiments.runner.ResultStore`
written by one run is reused by ``--resume`` with any worker count.
``results.csv`` (:data:`CSV_COLUMNS`) has one row per run in the order
parameterizations x ratios x seeds as given (duplicates removed).
"""
from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import numpy as np

from derivations.atomic_file import atomic_write_text

from . import sgd

__all__ = ["CSV_COLUMNS", "FIRST_SEED", "sweep_jobs", "rows_from_results", "summarize",
           "spearman", "write_csv", "read_csv"]

#: Columns of ``results.csv``.
CSV_COLUMNS = ("parameterization", "ratio", "seed", "steps", "reached", "loss",
               "relevant_attention", "label_probability", "accuracy")
#: Seeds of a sweep are FIRST_SEED, FIRST_SEED + 1, ... (the notebooks' 1234, 1235, ...).
FIRST_SEED = 1234


def _dedupe(seq):
    return list(dict.fromkeys(seq))


def sweep_jobs(parameterizations, ratios, n_seeds: int, target_loss: float, *, max_steps: int = 200_000,
               lr_ov: float = 0.01, seq_len: int = 64, batch_size: int = 32, steps_per_epoch: int = 100,
               init: str = "authors", eval_batches: int = 50) -> list:
    """The jobs of a sweep (validated; duplicates of parameterizations/ratios dropped)."""
    parameterizations = _dedupe(parameterizations)
    ratios = _dedupe(float(r) for r in ratios)
    if not parameterizations:
        raise ValueError("parameterizations must not be empty")
    if not ratios:
        raise ValueError("ratios must not be empty")
    for r in ratios:
        if not (math.isfinite(r) and r > 0):
            raise ValueError(f"ratio must be a finite number > 0, got {r!r}")
    if isinstance(n_seeds, bool) or not isinstance(n_seeds, int) or n_seeds < 1:
        raise ValueError(f"seeds must be an integer >= 1 (the number of seeds), got {n_seeds!r}")
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
        raise ValueError(f"max_steps must be an integer >= 1, got {max_steps!r}")
    if isinstance(steps_per_epoch, bool) or not isinstance(steps_per_epoch, int) or steps_per_epoch < 1:
        raise ValueError(f"steps_per_epoch must be an integer >= 1, got {steps_per_epoch!r}")
    seeds = list(range(FIRST_SEED, FIRST_SEED + n_seeds))
    jobs = []
    for p in parameterizations:
        for r in ratios:
            cfg = sgd.Fig2Config(parameterization=p, lr_qk=r * lr_ov, lr_ov=lr_ov, seq_len=seq_len,
                                 batch_size=batch_size, epochs=-(-max_steps // steps_per_epoch),
                                 steps_per_epoch=steps_per_epoch, stop="none", init=init,
                                 eval_batches=eval_batches, target_loss=target_loss, max_steps=max_steps)
            jobs.append({"experiment": "sweep", "ratio": r, "config": cfg.to_dict(), "seeds": seeds})
    return jobs


def rows_from_results(results) -> list:
    """Flatten the results of :func:`numerics.experiments.jobs.sweep_job` (job order) into CSV rows."""
    return [row for res in results for row in res["rows"]]


def _none_if_nan(x):
    return None if x is None or not math.isfinite(x) else float(x)


def summarize(rows) -> list:
    """Per-(parameterization, ratio) summary: means over seeds and a 95 % t-interval of the attention."""
    from scipy import stats

    groups = {}
    for row in rows:
        groups.setdefault((row["parameterization"], float(row["ratio"])), []).append(row)
    out = []
    for (p, r), g in groups.items():
        att = np.array([float(x["relevant_attention"]) for x in g])
        n = att.size
        mean = float(att.mean())
        if n > 1:
            half = float(stats.t.ppf(0.975, n - 1) * att.std(ddof=1) / math.sqrt(n))
            ci = [mean - half, mean + half]
        else:
            ci = [None, None]
        out.append({
            "parameterization": p, "ratio": r, "n": n,
            "reached": int(sum(_as_bool(x["reached"]) for x in g)),
            "relevant_attention_mean": mean, "relevant_attention_ci95": ci,
            "label_probability_mean": float(np.mean([float(x["label_probability"]) for x in g])),
            "loss_mean": float(np.mean([float(x["loss"]) for x in g])),
            "accuracy_mean": float(np.mean([float(x["accuracy"]) for x in g])),
            "steps_mean": float(np.mean([float(x["steps"]) for x in g])),
        })
    return out


def _as_bool(v):
    return v if isinstance(v, bool) else str(v) == "True"


def spearman(rows) -> dict:
    """Spearman rank correlation between ratio and relevant attention over the runs of
    each parameterization: ``{parameterization: {"rho", "pvalue", "n"}}`` (None where undefined)."""
    from scipy import stats

    out = {}
    for p in _dedupe(r["parameterization"] for r in rows):
        g = [r for r in rows if r["parameterization"] == p]
        x = [float(r["ratio"]) for r in g]
        y = [float(r["relevant_attention"]) for r in g]
        if len(set(x)) < 2 or len(set(y)) < 2:
            out[p] = {"rho": None, "pvalue": None, "n": len(g)}
            continue
        res = stats.spearmanr(x, y)
        out[p] = {"rho": _none_if_nan(res.statistic), "pvalue": _none_if_nan(res.pvalue), "n": len(g)}
    return out


def write_csv(rows, path) -> Path:
    """Write ``rows`` to ``path`` atomically (temporary file, fsync, rename)."""
    path = Path(path)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n")
    w.writeheader()
    for row in rows:
        w.writerow({k: (repr(row[k]) if isinstance(row[k], float) else row[k]) for k in CSV_COLUMNS})
    atomic_write_text(path, buf.getvalue(), fsync=True)
    return path


def read_csv(path) -> list:
    """Rows of a ``results.csv`` (numbers parsed, ``reached`` as bool)."""
    out = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            out.append({"parameterization": row["parameterization"], "ratio": float(row["ratio"]),
                        "seed": int(row["seed"]), "steps": int(row["steps"]),
                        "reached": row["reached"] == "True", "loss": float(row["loss"]),
                        "relevant_attention": float(row["relevant_attention"]),
                        "label_probability": float(row["label_probability"]),
                        "accuracy": float(row["accuracy"])})
    return out
