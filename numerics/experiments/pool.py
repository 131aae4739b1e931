r"""Local worker processes for :func:`numerics.experiments.runner.run_jobs`.

Workers start with the ``forkserver`` method (``spawn`` where that is
unavailable), exit as soon as the parent process dies (a killed run leaves no
orphans), ignore ``SIGINT`` (the parent handles Ctrl-C) and ask for one
BLAS/OpenMP thread, as Dask's nanny does for its workers.
"""
from __future__ import annotations

import os
import signal
import time

__all__ = ["run_pool"]

_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                     "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


def _init_worker(parent: int) -> None:
    """Worker-process setup: one BLAS thread, Ctrl-C left to the parent, exit when the parent dies.

    A pool's workers otherwise outlive a parent killed with SIGKILL (they hold
    their own queues open), finishing their job and then waiting forever.
    """
    for name in _THREAD_VARIABLES:
        os.environ.setdefault(name, "1")
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except (ValueError, OSError):  # pragma: no cover - not the main thread
        pass
    import threading
    threading.Thread(target=_exit_with_parent, args=(parent,), name="qkov-parent-watch", daemon=True).start()


def _exit_with_parent(parent: int) -> None:
    """Block until process ``parent`` ends, then end this process at once (its results have nowhere to go)."""
    try:
        import select
        fd = os.pidfd_open(parent)
    except (AttributeError, OSError):
        fd = None
    if fd is not None:
        select.select([fd], [], [])
    else:  # pragma: no cover - no pidfd (not Linux >= 5.3)
        while True:
            try:
                os.kill(parent, 0)
            except ProcessLookupError:
                break
            except OSError:
                pass
            time.sleep(1.0)
    os._exit(1)


def _mp_context():
    import multiprocessing
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def run_pool(func, jobs, pending, workers, collect) -> None:
    """Run ``func(jobs[i])`` for ``i`` in ``pending`` on ``workers`` local processes;
    ``collect(i, future)`` as each finishes (in index order among those finishing together).

    On an error raised by ``collect`` or Ctrl-C the queued jobs are dropped and
    the jobs in flight stopped (their results are lost anyway)."""
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    executor = ProcessPoolExecutor(max_workers=workers, mp_context=_mp_context(), initializer=_init_worker,
                                   initargs=(os.getpid(),))
    clean = False
    try:
        futures = {executor.submit(func, jobs[index]): index for index in pending}
        remaining = set(futures)
        while remaining:
            done, remaining = wait(remaining, return_when=FIRST_COMPLETED)
            for future in sorted(done, key=futures.__getitem__):
                collect(futures[future], future)
        clean = True
    finally:
        if clean:
            executor.shutdown(wait=True)
        else:
            # Error or Ctrl-C: drop queued jobs and stop the jobs in flight (their results are lost anyway).
            # (ProcessPoolExecutor has no public way to stop running calls before Python 3.14's terminate_workers.)
            processes = list((getattr(executor, "_processes", None) or {}).values())
            executor.shutdown(wait=False, cancel_futures=True)
            for process in processes:
                try:
                    process.terminate()
                except Exception:  # pragma: no cover - already gone
                    pass
            for process in processes:
                process.join(5)

