r"""Run independent jobs in-process, on local processes or on a Dask cluster, saving each result as it finishes.

An experiment here is a list of *jobs*: JSON-serialisable dicts (a
parameterization, learning rates, a seed, ...) each handed to the same
top-level function, which returns a JSON-serialisable dict of measurements.
:func:`run_jobs` runs them

* in-process (``workers=1``),
* on a pool of local processes (``workers=N``), or
* on an existing Dask ``distributed`` scheduler (``scheduler="tcp://host:port"``;
  optional extra ``qkov[distributed]``, imported only on this path),

and returns the results in job order.  Every result passes through JSON
(``json.loads(json.dumps(result))``) whatever the backend, so the numbers a
caller receives are the same bit for bit whether they were computed here, in
another process, on a Dask worker or read back from a
:class:`~numerics.experiments.store.ResultStore`
(Python's ``repr`` of a float round-trips exactly).

The runner is split in four modules: this one (:func:`run_jobs`,
:class:`JobError`), :mod:`~numerics.experiments.store` (:class:`~numerics.experiments.store.ResultStore`,
:func:`~numerics.experiments.store.job_key`), :mod:`~numerics.experiments.pool` (local processes) and
:mod:`~numerics.experiments.cluster` (Dask: :func:`~numerics.experiments.cluster.check_scheduler`,
:class:`~numerics.experiments.cluster.SchedulerLost`).

A :class:`~numerics.experiments.store.ResultStore` makes long runs resumable: one JSON file per job,
named by :func:`~numerics.experiments.store.job_key` (SHA-256 of the job's canonical JSON), holding the
job and its result, written atomically as soon as the job finishes.  A run
that is killed loses only the jobs in flight; rerunning the same jobs with the
same store computes only what is missing.  Files that are damaged (truncated,
unparsable, of the wrong shape, or holding another job) count as missing and
are recomputed and overwritten.  The store holds data only (JSON, never
pickle).

*Progress*: a tqdm bar on stderr (on a terminal) counts finished jobs, or,
with ``run_jobs(epochs=...)``, epochs: ``epochs(job)`` gives the epochs a job
trains at most, and ``func`` must then take a keyword ``progress`` (default
None).  Where the bar is shown (in this process or local worker processes),
``func`` is called as ``func(job, progress=p)`` and reports each epoch with
``p(1)`` (a queue carries the counts from worker processes, a few times a
second); on Dask, or without a bar, it is called as ``func(job)``.  A job is
counted whole when it finishes (its runs may have stopped early, at their
target).

Determinism is the job function's business (seed its own
``numpy.random.Generator`` from the job); the runner adds none of its own
randomness and gives each job the same JSON-normalised dict on every backend.
Local worker processes are started with the ``forkserver`` method (``spawn``
where that is unavailable), exit as soon as the parent process dies (so a
killed run leaves no orphans), ignore ``SIGINT`` (the parent handles Ctrl-C) and
ask for one BLAS/OpenMP thread (``OMP_NUM_THREADS`` etc., effective when the
job module loads NumPy after the worker starts), as Dask's nanny does for its
workers: two workers on two cores should not each start two BLAS threads.
Because ``forkserver`` and ``spawn`` re-import the main module of a script, a
script that calls :func:`run_jobs` with ``workers > 1`` must guard its entry
point with ``if __name__ == "__main__":``, as with any :mod:`multiprocessing`
pool; ``python -m numerics.experiments`` and pytest need nothing.
For the 50 × 50 matrices of the paper's experiments the BLAS thread count does
not change results; for large matrix products (hundreds of rows) OpenBLAS's
multithreaded kernels can differ in the last bits from its single-threaded
ones, so such jobs should pin ``OPENBLAS_NUM_THREADS=1`` in the parent too if
bitwise equality across backends matters.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Callable, Sequence

from derivations.core.output import isatty, progress_bar

from .cluster import CONNECT_TIMEOUT, parse_address, run_dask
from .pool import run_pool
from .store import ResultStore, canonical_json, job_key

__all__ = ["run_jobs", "JobError", "usable_cpus"]


class JobError(RuntimeError):
    """A job's function raised; names the job.

    Parameters
    ----------
    index : int
        Position of the job in the list given to :func:`run_jobs`.
    job : dict
        The job (JSON-normalised); the message shows its canonical text, cut to 300 characters.
    cause : BaseException
        What the job's function raised; the message ends with its type and text.

    Attributes
    ----------
    index : int
        Position of the job in the list given to :func:`run_jobs`.
    job : dict
        The job (JSON-normalised).

    Notes
    -----
    The original exception is chained as ``__cause__``.
    """

    def __init__(self, index: int, job: dict, cause: BaseException):
        self.index = index
        self.job = job
        text = canonical_json(job)
        if len(text) > 300:
            text = text[:297] + "..."
        super().__init__(f"job {index} {text} failed: {type(cause).__name__}: {cause}")


def _normalise_result(result: Any, index: int, job: dict) -> dict:
    """``json.loads(json.dumps(result))``: the form every backend and the store agree on."""
    if not isinstance(result, dict):
        cause = TypeError(f"the job function must return a dict, got {type(result).__name__}")
        raise JobError(index, job, cause) from cause
    try:
        return json.loads(json.dumps(result))
    except (TypeError, ValueError) as exc:
        raise JobError(index, job, TypeError(f"the result is not JSON-serialisable: {exc}")) from exc


def usable_cpus() -> int:
    """The CPUs this process may run on (``os.sched_getaffinity``, where the system
    has it; else ``os.cpu_count()``): the default number of local workers."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def _check_workers(workers) -> int:
    if workers is None:
        return usable_cpus()
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be an integer >= 1 (or None for the CPU count), got {workers!r}")
    return workers


def run_jobs(func: Callable[[dict], dict], jobs: Sequence[dict], *, workers: int | None = None,
             scheduler: str | None = None, store: ResultStore | None = None,
             progress: bool = True, desc: str | None = None, epochs: Callable[[dict], int] | None = None,
             connect_timeout: float = CONNECT_TIMEOUT) -> list:
    """Run ``func(job)`` for every job, locally or on Dask, and return the results in job order.

    Parameters
    ----------
    func : callable
        ``func(job) -> dict``; a module-level function (worker processes and Dask workers import
        it by name), deterministic given the job. It receives the JSON-normalised job (tuples
        become lists).
    jobs : sequence of dict
        JSON-serialisable job descriptions. Equal jobs (same
        :func:`~numerics.experiments.store.job_key`) run once and share their result.
    workers : int or None, optional
        Local processes, >= 1; ``None`` means :func:`usable_cpus`. ``1`` (or a single pending
        job) runs in this process, without a pool. Ignored when ``scheduler`` is given.
    scheduler : str or None, optional
        Address ``tcp://host:port`` of a running Dask ``distributed`` scheduler; the jobs are
        submitted there (``distributed`` is imported only then) and gathered as they complete.
        Its workers must be able to import ``func``'s module (qkov installed, or on their
        ``PYTHONPATH``).
    store : ResultStore or None, optional
        Where finished results are saved, each as soon as it finishes. Jobs already stored are not run
        again: rerunning with the same store resumes an interrupted run.
    progress : bool, optional
        Show a tqdm bar on stderr (only if it is a terminal).
    desc : str or None, optional
        Label of the progress bar (default: ``func``'s name).
    epochs : callable or None, optional
        ``epochs(job)``: the epochs a job trains at most; the bar then counts epochs, reported
        by ``func(job, progress=p)`` (*Progress* in the module docstring). The results do not
        depend on it.
    connect_timeout : float, optional
        With ``scheduler``: seconds to wait for it to answer and for a worker to connect.

    Returns
    -------
    list of dict
        ``json.loads(json.dumps(func(job)))`` for each job, in the order of ``jobs``: the
        same bits whichever backend computed it, or read back from ``store``.

    Raises
    ------
    ValueError
        Invalid ``workers``, ``scheduler``, ``store`` or job (before any work), or an
        unreachable scheduler.
    JobError
        A job raised or returned something that is not a JSON dict; the message names the
        job, the original exception is ``__cause__``. Pending jobs are cancelled; results
        already finished stay in ``store``.
    numerics.experiments.pool.WorkerLost
        A local worker process ended abruptly (killed: out of memory, a signal); results
        already finished stay in ``store``.
    KeyboardInterrupt
        Pending jobs are cancelled and worker processes stopped; finished results stay in ``store``.

    Examples
    --------
    >>> import tempfile
    >>> from numerics.experiments.runner import run_jobs
    >>> from numerics.experiments.store import ResultStore
    >>> def square(job):
    ...     return {"square": job["x"] ** 2}
    >>> jobs, store = [{"x": 0.5}, {"x": 2.0}], ResultStore(tempfile.mkdtemp())
    >>> run_jobs(square, jobs, workers=1, store=store, progress=False)
    [{'square': 0.25}, {'square': 4.0}]
    >>> run_jobs(square, jobs, workers=1, store=store, progress=False)  # read back, not recomputed
    [{'square': 0.25}, {'square': 4.0}]
    """
    keys, normalised, workers, store = _check_inputs(func, jobs, workers, scheduler, store, epochs)
    results, first_index, pending = _read_stored(keys, normalised, store)
    bar, report = _progress(func, normalised, first_index.values(), pending, desc, epochs, progress)
    try:
        _dispatch(func, normalised, keys, pending, workers, (scheduler, connect_timeout),
                  _finisher(normalised, results, store, bar), report)
    finally:
        bar.close()
    return [results[first_index[key]] for key in keys]      # equal jobs share the first one's result


def _progress(func, jobs, counted, pending, desc, epochs, show):
    """``(bar, report)``: :func:`run_jobs`' :class:`_JobBar` of the ``jobs`` (``counted``: the indices counted,
    ``pending``: those still to run), in jobs or, with ``epochs``, in epochs; and where ``func`` is to report
    its epochs to the bar (``epochs`` given and the bar shown), ``report(index, n)`` (else None)."""
    desc = getattr(func, "__name__", None) if desc is None else desc
    sizes = [1] * len(jobs) if epochs is None else [int(epochs(job)) for job in jobs]
    bar = _JobBar(sizes, counted, pending, desc=desc, unit="job" if epochs is None else "epoch", show=show)
    return bar, (bar.advance if epochs is not None and show and isatty(sys.stderr) else None)


def _finisher(jobs, results, store, bar):
    """``finish(index, value)``: normalise a finished job's value, save it in ``store``, keep it in
    ``results`` and count the job on ``bar``."""
    def finish(index: int, value) -> None:
        value = _normalise_result(value, index, jobs[index])
        if store is not None:
            store.put(jobs[index], value)
        results[index] = value
        bar.finish(index)
    return finish


def _read_stored(keys, jobs, store):
    """``(results, first_index, pending)``: the stored result of the first job of each key (None
    where missing), ``{key: index of its first job}`` and the indices of those still to run."""
    results: list = [None] * len(jobs)
    first_index: dict[str, int] = {}
    for index, key in enumerate(keys):
        first_index.setdefault(key, index)
    pending: list[int] = []
    for index in first_index.values():
        stored = store.get(jobs[index]) if store is not None else None
        if stored is None:
            pending.append(index)
        else:
            results[index] = stored
    return results, first_index, pending


class _JobBar:
    """:func:`run_jobs`' bar: ``sizes[i]`` units for job ``i`` (1, or its epochs), of which the
    jobs ``counted`` count once and the ``pending`` ones are still to come; a job's reports
    never take more than its size, and a finished job is counted whole."""

    def __init__(self, sizes, counted, pending, **options):
        total = sum(sizes[index] for index in counted)
        self.sizes, self.shown = sizes, [0] * len(sizes)
        self.bar = progress_bar(total, initial=total - sum(sizes[index] for index in pending), smoothing=0.1,
                                **options)

    def advance(self, index: int, n) -> None:
        n = min(n, self.sizes[index] - self.shown[index])    # nothing once the job is counted whole
        if n > 0:
            self.shown[index] += n
            self.bar.update(n)

    def finish(self, index: int) -> None:
        self.advance(index, self.sizes[index] - self.shown[index])

    def close(self) -> None:
        self.bar.close()


def _takes_progress(func) -> bool:
    import inspect
    try:
        parameters = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):      # pragma: no cover - a builtin without a signature
        return False
    return any(p.name == "progress" or p.kind is p.VAR_KEYWORD for p in parameters)


def _check_inputs(func, jobs, workers, scheduler, store, epochs=None):
    """Validate :func:`run_jobs`' arguments before any work: ``(keys, normalised jobs, workers, store)``."""
    if not callable(func):
        raise ValueError(f"func must be a callable taking one job dict, got {type(func).__name__}")
    if epochs is not None and not _takes_progress(func):
        raise ValueError("func must take a progress= keyword when epochs is given")
    if isinstance(jobs, (str, bytes, dict)) or not hasattr(jobs, "__iter__"):
        raise ValueError(f"jobs must be a sequence of dicts, got {type(jobs).__name__}")
    jobs = list(jobs)
    keys = []
    for index, job in enumerate(jobs):
        try:
            keys.append(job_key(job))
        except ValueError as exc:
            raise ValueError(f"jobs[{index}]: {exc}") from None
    normalised = [json.loads(canonical_json(job)) for job in jobs]
    if scheduler is not None:
        parse_address(scheduler)
        if workers is not None:
            _check_workers(workers)
    else:
        workers = _check_workers(workers)
    if store is not None and not isinstance(store, ResultStore):
        raise ValueError(f"store must be a ResultStore or None, got {type(store).__name__}")
    return keys, normalised, workers, store


def _dispatch(func, jobs, keys, pending, workers, dask, finish, report=None) -> None:
    """Run the ``pending`` jobs on the chosen backend (``dask``: the scheduler's address, or None,
    and its connection timeout), handing each value to ``finish``; with ``report``, ``func`` gets
    ``progress=`` and its epochs reach ``report(index, n)`` (not on Dask)."""
    scheduler, timeout = dask
    def settle(index, value_of):
        try:
            value = value_of()
        except Exception as exc:
            raise JobError(index, jobs[index], exc) from exc
        finish(index, value)

    def collect(index, future):
        settle(index, future.result)

    if not pending:
        return
    if scheduler is not None:
        run_dask(func, jobs, keys, pending, scheduler, collect, timeout)
    elif workers == 1 or len(pending) == 1:
        for index in pending:
            settle(index, lambda: func(jobs[index]) if report is None else func(
                jobs[index], progress=lambda n=1, index=index: report(index, n)))
    else:
        run_pool(func, jobs, pending, min(workers, len(pending)), collect, report)
