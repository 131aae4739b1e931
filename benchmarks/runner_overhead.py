"""Per-job overhead of :func:`numerics.experiments.runner.run_jobs` for tiny jobs, by backend.

Run: ``PYTHONPATH=. python benchmarks/runner_overhead.py [n_jobs]``.

For each backend, ``run_jobs`` is timed on ``n_small`` and ``n_jobs`` trivial
jobs (a dict in, a dict out); the difference over the extra jobs is the
per-job overhead, the rest the fixed start-up cost (process pool start,
Dask client connection).  Backends: in-process (``workers=1``), two local
processes (``workers=2``), a ``distributed.LocalCluster`` with two worker
processes; each also with a :class:`~numerics.experiments.store.ResultStore`
(one fsynced JSON file per job).  The experiments' jobs are SGD runs of
seconds to minutes, so what matters is that the overhead is far below that.
"""
import sys
import tempfile
import time

from numerics.experiments.runner import run_jobs
from numerics.experiments.store import ResultStore


def tiny_job(job):
    """Nothing to compute: measures the runner, not the job."""
    return {"x": job["x"], "y": [job["x"] * 0.5] * 8}


def timed(n, store=False, repeats=3, **kwargs):
    best = float("inf")
    for _ in range(repeats):
        jobs = [{"x": i, "n": n} for i in range(n)]
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            run_jobs(tiny_job, jobs, progress=False, store=ResultStore(tmp) if store else None, **kwargs)
            best = min(best, time.perf_counter() - t0)
    return best


def report(name, n_small, n_large, **kwargs):
    for store in (False, True):
        small, large = timed(n_small, store, **kwargs), timed(n_large, store, **kwargs)
        per_job = (large - small) / (n_large - n_small)
        fixed = small - n_small * per_job
        label = f"{name}{' + store' if store else ''}"
        print(f"{label:<34} {per_job * 1e3:8.3f} ms/job   fixed {fixed:7.3f} s   "
              f"({n_large} jobs in {large:.3f} s)", flush=True)


def main(n_jobs=400):
    import os
    print(f"run_jobs overhead, tiny jobs ({os.cpu_count()} CPUs, best of 3; machine load shows in these figures)")
    report("in-process (workers=1)", 20, n_jobs, workers=1)
    report("local processes (workers=2)", 20, n_jobs, workers=2)
    try:
        import distributed
    except ImportError:
        print("dask LocalCluster: skipped (distributed not installed)")
        return
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
                                  dashboard_address=None, protocol="tcp") as cluster:
        report("dask LocalCluster (2 processes)", 20, n_jobs, scheduler=cluster.scheduler_address)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 400)
