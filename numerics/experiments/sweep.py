r"""Matched-loss sweep over learning-rate ratios: the paper's central claim, measured.

Every (parameterization, ratio :math:`r = \eta_{QK}/\eta_{OV}`, seed) is
trained with plain SGD (:math:`\eta_{OV}` fixed, :math:`\eta_{QK} = r\,\eta_{OV}`)
until the mean training loss of an epoch reaches the target loss (or
``max_steps``), then measured on fresh batches: where the attention goes
(relevant tokens, the query's own token, other positions:
:func:`numerics.experiments.measure.attention_shares`), label probability,
loss and accuracy.  The theory predicts that the attention at matched loss
increases with :math:`r`.

Several target losses: one run answers every target.  It is trained until
the lowest target and its state is kept where its epoch-mean training loss
first reached each higher one (:func:`numerics.experiments.sgd.train_fig2`'s
``record_losses``); every state is measured on the same fresh batches, so the
lowest target's rows are those of a sweep of that target alone.

One job per parameterization and block of consecutive seeds (at most
:data:`SEEDS_PER_JOB`: 1234-1236, 1237-1239, ...) trains those seeds at every
ratio in one stack (:func:`numerics.experiments.jobs.sweep_job`,
:func:`numerics.experiments.stack.train_stack`: a run that reaches the lowest
target or diverges leaves the stack).  A step's fixed cost (NumPy's per-call overhead, about 0.05 ms)
is paid once per stack and step, so the fewer stacks the better, and a stack's
length is that of its longest run (the lowest ratio's); blocks of three seeds
keep the README sweep's 60 runs in 4 jobs.  A smaller sweep takes smaller
blocks, down to one seed, so that it still has :data:`MIN_JOBS` jobs where it
can (:func:`seeds_per_job`): one parameterization of 3 seeds is 3 jobs, not one
that would leave a worker idle.  The job partition depends on the sweep's
parameterizations and seeds, never on the number of workers, so a
:class:`~numerics.experiments.store.ResultStore` written by one run is reused
by ``--resume`` with any worker count; ``--extend`` may change the blocks, and
the runs of a changed block are retrained.
``results.csv`` (:data:`numerics.experiments.jobs.SWEEP_ROW_KEYS`) has one row per run and target in the
order parameterizations x ratios x seeds as given (duplicates removed) x
targets (highest first); ``steps`` are the steps trained by the row's state,
``status`` says whether the run reached the row's target (``reached``), ended
at ``max_steps`` before it (``completed``: the row holds its final state) or
diverged before it (``diverged``: a non-finite training loss stopped it, or its
parameters were not finite where it stopped; its measurements are empty cells).

The sweep's directory (:class:`~numerics.experiments.directory.ExperimentDirectory`)
records its settings before any work: ``--resume`` with other settings is
refused, naming the difference
(:func:`~numerics.experiments.settings.settings_difference`); ``--extend``
adds parameterizations, ratios or seeds to a stored sweep and keeps every
stored row (the stored jobs whose stack, parameterization, ratios and block of
seeds, is unchanged are reused; added ratios change every job's stack and added
seeds or parameterizations may change the blocks, and those runs are
recomputed: :mod:`numerics.experiments.stack` gives each run its own numbers,
whatever it is stacked with).
"""
from __future__ import annotations

import copy
import csv
import io
import math
from pathlib import Path

import numpy as np

from derivations.core.atomic_file import atomic_write_text
from derivations.core.vocabulary import SHARES, check_positive

from ..validation import check_int
from . import precision, sgd, task_sampling
from .jobs import OUTPUT_BASE_BYTES, SWEEP_ROW_KEYS, output_bytes
from .proxies import PROXIES
from .settings import whole_number
from .stopping import MAX_SGD_STEPS, target_losses

__all__ = ["FIRST_SEED", "SEEDS_PER_JOB", "MIN_JOBS", "seeds_per_job", "job_seed_blocks", "sweep_jobs", "run_bytes",
           "rows_from_results", "summarize", "spearman", "write_csv", "number_or_none"]

#: Seeds of a sweep are FIRST_SEED, FIRST_SEED + 1, ... (the notebooks' 1234, 1235, ...).
FIRST_SEED = 1234
#: Most seeds stacked in one job (with every ratio): the seeds are cut into consecutive blocks.
SEEDS_PER_JOB = 3
#: Jobs a sweep has at least where its parameterizations and seeds allow (:func:`seeds_per_job`).
MIN_JOBS = 4


def sweep_jobs(parameterizations, ratios, n_seeds: int, target_loss, *, max_steps: int = 200_000,
               lr_ov: float = 0.01, seq_len: int = 64, batch_size: int = 32, steps_per_epoch: int = 100,
               init: str = "authors", eval_batches: int = 50, seed_blocks=None, task: str = "authors",
               task_params=(), dtype: str = "float64") -> list:
    """The jobs of a sweep (validated; duplicates of parameterizations/ratios dropped).

    One job per parameterization and block of consecutive seeds (:func:`job_seed_blocks`),
    stacking every ratio (``"ratios"``; the config is that of ratio 1, ratio ``r`` trains with
    ``lr_qk = r * lr_ov``).

    Parameters
    ----------
    parameterizations : sequence of str
    ratios : sequence of float
        Each finite and > 0, with ``ratio * lr_ov`` too.
    n_seeds : int
        Seeds ``FIRST_SEED, FIRST_SEED + 1, ...``.
    target_loss : float or sequence of float
        One loss or several (:func:`~numerics.experiments.stopping.target_losses`): the runs
        train to the lowest; a job of several targets names them all (``target_losses``,
        highest first), a job of one names none.
    max_steps, lr_ov, seq_len, batch_size, steps_per_epoch, init, eval_batches
        As in :class:`~numerics.experiments.sgd.Fig2Config`; the epochs are
        ``ceil(max_steps / steps_per_epoch)``.
    seed_blocks : list of int, optional
        Sizes summing to ``n_seeds`` (default one block; the history of ``--extend``):
        checked, and do not change the jobs.
    task, task_params
        The task trained (:class:`~numerics.experiments.sgd.Fig2Config`; default the authors').
    dtype : {"float64", "float32"}
        The step's floating type (a float32 job has another key).

    Returns
    -------
    list of dict

    Raises
    ------
    ValueError
        An empty list, a bad ratio, count or size (the message names it).
    """
    parameterizations = list(dict.fromkeys(parameterizations))
    ratios = list(dict.fromkeys(check_positive("ratio", r) for r in ratios))
    check_positive("lr_ov", lr_ov)          # named as itself (not as the lr_qk it gives), value kept as given
    if not parameterizations:
        raise ValueError("parameterizations must not be empty")
    if not ratios:
        raise ValueError("ratios must not be empty")
    check_int("seeds", n_seeds, 1)
    check_int("max_steps", max_steps, 1, MAX_SGD_STEPS)
    check_int("steps_per_epoch", steps_per_epoch, 1, MAX_SGD_STEPS)
    targets = target_losses(target_loss)
    _check_seed_blocks(n_seeds, seed_blocks)
    blocks = job_seed_blocks(len(parameterizations), n_seeds)
    jobs = []
    for p in parameterizations:
        cfg = sgd.Fig2Config(parameterization=p, lr_qk=lr_ov, lr_ov=lr_ov, seq_len=seq_len,
                             batch_size=batch_size, epochs=-(-max_steps // steps_per_epoch),
                             steps_per_epoch=steps_per_epoch, stop="none", init=init,
                             eval_batches=eval_batches, target_loss=targets[-1], max_steps=max_steps,
                             task=task, task_params=task_params, dtype=dtype)
        st = cfg.sampled_task
        for r in ratios:                # each run's rates (jobs.sweep_job), before any work
            precision.check_rates(r * lr_ov, lr_ov, 1.0, st.score_divisor, dtype, ratio=r,
                                  divisor=lambda: task_sampling.divisor_parameter(st))
        config = cfg.to_dict()
        for block in blocks:
            job = {"experiment": "sweep", "ratios": ratios, "config": copy.deepcopy(config), "seeds": block}
            if len(targets) > 1:
                job["target_losses"] = targets
            jobs.append(job)
    return jobs


def seeds_per_job(n_parameterizations: int, n_seeds: int) -> int:
    """Seeds stacked in one job of a sweep: :data:`SEEDS_PER_JOB`, or the largest fewer that still
    gives :data:`MIN_JOBS` jobs (one per parameterization and block), or 1.

    Parameters
    ----------
    n_parameterizations, n_seeds : int

    Returns
    -------
    int

    >>> seeds_per_job(4, 3), seeds_per_job(2, 3), seeds_per_job(1, 3), seeds_per_job(1, 10)
    (3, 2, 1, 3)
    """
    for size in range(SEEDS_PER_JOB, 1, -1):
        if n_parameterizations * -(-n_seeds // size) >= MIN_JOBS:
            return size
    return 1


def job_seed_blocks(n_parameterizations: int, n_seeds: int) -> list:
    """The seeds ``FIRST_SEED ...`` of a sweep cut into its jobs' blocks of :func:`seeds_per_job`.

    Parameters
    ----------
    n_parameterizations, n_seeds : int

    Returns
    -------
    list of list of int

    >>> job_seed_blocks(1, 4)
    [[1234], [1235], [1236], [1237]]
    """
    seeds = list(range(FIRST_SEED, FIRST_SEED + n_seeds))
    size = seeds_per_job(n_parameterizations, n_seeds)
    return [seeds[i:i + size] for i in range(0, n_seeds, size)]


def run_bytes(settings: dict) -> int:
    """The most bytes a run file (``runs/<key>.json``) of a sweep of ``settings`` takes: that of a job of
    :data:`SEEDS_PER_JOB` seeds (or all, if fewer; a job's block is never larger, before an ``--extend``
    either), every ratio and every target (:func:`~numerics.experiments.jobs.output_bytes`, beside
    :data:`~numerics.experiments.jobs.OUTPUT_BASE_BYTES`). A larger file is not a run of these settings.

    Parameters
    ----------
    settings : dict
        A sweep's stored settings, checked (:func:`~numerics.experiments.settings.check_sweep_settings`).

    Returns
    -------
    int

    >>> run_bytes({"ratios": [0.5, 1.0, 2.0], "seeds": 4, "target_loss": 3.5}) - OUTPUT_BASE_BYTES
    12544
    """
    seeds = [None] * min(SEEDS_PER_JOB, settings["seeds"])
    job = {"experiment": "sweep", "ratios": settings["ratios"], "seeds": seeds,
           "target_losses": target_losses(settings["target_loss"])}
    return OUTPUT_BASE_BYTES + output_bytes(job)


def _check_seed_blocks(n_seeds, sizes) -> None:
    """``sizes`` (None, or the blocks of seeds a sweep was extended by) must be whole numbers >= 1
    summing to ``n_seeds``."""
    sizes = [n_seeds] if sizes is None else sizes
    if not (isinstance(sizes, (list, tuple)) and all(whole_number(k) and k >= 1 for k in sizes)
            and sum(sizes) == n_seeds):
        shown = repr(sizes) if len(repr(sizes)) <= 40 else repr(sizes)[:37] + "..."
        raise ValueError(f"seed_blocks must be whole numbers >= 1 summing to seeds = {n_seeds}, got {shown}")


def rows_from_results(results) -> list:
    """Flatten the results of :func:`numerics.experiments.jobs.sweep_job` (job order) into CSV rows.

    Parameters
    ----------
    results : iterable of dict

    Returns
    -------
    list of dict
    """
    return [row for res in results for row in res["rows"]]


def _mean_ci(values):
    """Mean and 95 % t-interval of the mean (``scipy.stats.t.interval`` with the
    standard error ``scipy.stats.sem``; ``[None, None]`` for one value, ``[mean, mean]``
    for equal values) of a list of numbers."""
    from scipy import stats

    v = np.array(values, dtype=float)
    mean = float(v.mean())
    if len(v) < 2:
        return mean, [None, None]
    sem = float(stats.sem(v))
    if sem == 0:                                   # equal values: the interval is the point
        return mean, [mean, mean]
    low, high = stats.t.interval(0.95, len(v) - 1, loc=mean, scale=sem)
    return mean, [float(low), float(high)]


#: The row values a summary gives the mean of, without an interval (``label_probability_mean``, ...).
_MEANS = ("label_probability", "loss", "accuracy", "steps")


def _summary_entry(p, r, target, n, g) -> dict:
    """The summary of one (parameterization, ratio, target) from its measured rows ``g``."""
    out = {"parameterization": p, "ratio": r, "n": n}
    if not g:
        out.update(reached=0, relevant_attention_mean=None, relevant_attention_ci95=[None, None],
                   **{f"{key}_mean": None for key in _MEANS})
    else:
        mean, ci = _mean_ci([float(x["relevant_attention"]) for x in g])
        out.update(reached=int(sum(_as_bool(x["reached"]) for x in g)), relevant_attention_mean=mean,
                   relevant_attention_ci95=ci, **{f"{key}_mean": float(np.mean([float(x[key]) for x in g]))
                                                  for key in _MEANS})
    for share in SHARES[1:]:
        values = [number_or_none(x.get(share)) for x in g]
        mean, ci = _mean_ci(values) if values and None not in values else (None, [None, None])
        out[f"{share}_mean"], out[f"{share}_ci95"] = mean, ci
    out["target_loss"] = target
    for name in PROXIES:            # over the runs that define it (a run without a rationale has none)
        values = [v for v in (number_or_none(x.get(name)) for x in g) if v is not None]
        mean, ci = _mean_ci(values) if values else (None, [None, None])
        out[f"{name}_mean"], out[f"{name}_ci95"] = mean, ci
    return out


def summarize(rows) -> list:
    """Per-(parameterization, ratio, target loss) summary: means over seeds and a 95 %
    t-interval of each attention share (the relevant share's keys first), then of each
    interpretability proxy (``{name}_mean``, ``{name}_ci95``).

    Parameters
    ----------
    rows : list of dict
        Sweep rows (numbers, or CSV text; a diverged run's empty measurements are left out).

    Returns
    -------
    list of dict
        In order of first appearance.
    """
    groups = {}
    for row in rows:
        target = number_or_none(row.get("target_loss"))
        groups.setdefault((row["parameterization"], float(row["ratio"]), target), []).append(row)
    out = []
    for (p, r, target), g in groups.items():
        # diverged runs measure nothing
        measured = [x for x in g if number_or_none(x["relevant_attention"]) is not None]
        out.append(_summary_entry(p, r, target, len(g), measured))
    return out


def _as_bool(v):
    return v if isinstance(v, bool) else str(v) == "True"


def number_or_none(v):
    """A measurement as a finite float, or None where it is empty or undefined (a ``results.csv``
    cell, a row's value).

    Parameters
    ----------
    v : float, str or None

    Returns
    -------
    float or None

    >>> number_or_none("0.25"), number_or_none(""), number_or_none(float("nan")), number_or_none(None)
    (0.25, None, None, None)
    """
    if v is None or v == "":
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def spearman(rows) -> dict:
    """Spearman rank correlation between ratio and relevant attention over the runs of
    each parameterization.

    Parameters
    ----------
    rows : list of dict

    Returns
    -------
    dict
        ``{parameterization: {"rho", "pvalue", "n"}}`` (None where undefined).
    """
    from scipy import stats

    out = {}
    for p in dict.fromkeys(r["parameterization"] for r in rows):
        g = [r for r in rows if r["parameterization"] == p and number_or_none(r["relevant_attention"]) is not None]
        x = [float(r["ratio"]) for r in g]
        y = [float(r["relevant_attention"]) for r in g]
        if len(set(x)) < 2 or len(set(y)) < 2:
            out[p] = {"rho": None, "pvalue": None, "n": len(g)}
            continue
        res = stats.spearmanr(x, y)
        out[p] = {"rho": number_or_none(res.statistic), "pvalue": number_or_none(res.pvalue), "n": len(g)}
    return out


def _cell(v):
    """A CSV cell: floats by ``repr`` (exact), an undefined number empty."""
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else ""
    return "" if v is None else v


def write_csv(rows, path) -> Path:
    """Write ``rows`` to ``path`` atomically (temporary file, fsync, rename).

    Parameters
    ----------
    rows : list of dict
        Columns :data:`~numerics.experiments.jobs.SWEEP_ROW_KEYS`; floats by ``repr``
        (exact), an undefined number as an empty cell.
    path : str or path-like

    Returns
    -------
    pathlib.Path
    """
    path = Path(path)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=SWEEP_ROW_KEYS, lineterminator="\n")
    w.writeheader()
    for row in rows:
        w.writerow({k: _cell(row.get(k)) for k in SWEEP_ROW_KEYS})
    atomic_write_text(path, buf.getvalue(), fsync=True)
    return path
