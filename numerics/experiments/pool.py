r"""Local worker processes for :func:`numerics.experiments.runner.run_jobs`.

Workers start with the ``forkserver`` method (``spawn`` where that is
unavailable), exit as soon as the parent process dies (a killed run leaves no
orphans), ignore ``SIGINT`` (the parent handles Ctrl-C), end on ``SIGTERM`` and ask for one
BLAS/OpenMP thread, as Dask's nanny does for its workers. The pool's queues
are semaphores that :mod:`multiprocessing`'s resource tracker removes when
their process ends; after a parent killed with SIGKILL it does so with a
"leaked semaphore objects" warning, which says nothing to the user: the
tracker is started with that warning silenced (``TRACKER_WARNING``).
"""
from __future__ import annotations

import contextlib
import os
import signal
import time

__all__ = ["run_pool", "WorkerLost"]


class WorkerLost(RuntimeError):
    """A worker process ended abruptly (killed by a signal, such as the kernel's when memory runs out)
    while it ran a job: a local pool is then broken, and a Dask job whose every worker died while
    running it is given up by the scheduler; the results finished before are kept."""


#: In a worker process: the queue its jobs report their epochs to (None: they report nothing).
_PROGRESS = None

_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                     "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


def _init_worker(parent: int, progress=None) -> None:
    """Worker-process setup: one BLAS thread, Ctrl-C left to the parent, SIGTERM taken (the pool stops its
    workers with it), exit when the parent dies;
    ``progress``: the queue the worker's jobs report their epochs to (or None).

    A pool's workers otherwise outlive a parent killed with SIGKILL (they hold
    their own queues open), finishing their job and then waiting forever.
    """
    global _PROGRESS
    _PROGRESS = progress
    for name in _THREAD_VARIABLES:
        os.environ.setdefault(name, "1")
    with contextlib.suppress(ValueError, OSError):     # (not the main thread)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):      # held while the pool started: the pool stops its workers with it
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
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


#: The warnings filter (``-W``) the resource tracker starts with: its cleanup after a killed parent is silent.
TRACKER_WARNING = "ignore:resource_tracker:UserWarning:multiprocessing.resource_tracker"


def _quiet_resource_tracker() -> None:
    """Have the resource tracker (not yet started) start with ``TRACKER_WARNING``: it takes this
    process's ``-W`` options (``sys.warnoptions``) on its command line."""
    import sys

    if TRACKER_WARNING not in sys.warnoptions:
        sys.warnoptions.append(TRACKER_WARNING)


#: The signals held while the pool starts its processes: Ctrl-C, and SIGTERM (which a command turns into
#: Ctrl-C's ``KeyboardInterrupt``: :func:`derivations.core.interrupt.exit_on_interrupt`).
_HELD = ("SIGINT", "SIGTERM")


@contextlib.contextmanager
def _signals_held():
    """Hold Ctrl-C and SIGTERM while the pool starts its processes (the fork server, the workers): they
    are new processes in the terminal's process group (which Ctrl-C, ``timeout`` and a batch system's
    SIGTERM reach as a whole) and inherit both signals blocked from this thread (workers ignore SIGINT
    and take SIGTERM back, :func:`_init_worker`), so that neither signal meets a Python that is
    starting (a "Fatal Python error" of theirs, a worker's traceback printed after this process ended)
    nor this process halfway through starting its pool. A signal meanwhile (blocked here, or taken by
    another thread of this process) is raised right after, as it would have been (``KeyboardInterrupt``)."""
    import threading

    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield                      # (signals are the main thread's; no signal masks on Windows)
        return
    held = [getattr(signal, name) for name in _HELD]
    caught = []
    previous = {signum: signal.signal(signum, lambda signum, frame: caught.append(signum)) for signum in held}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)     # (None: set in C)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)             # one held here is raised now
    for signum in dict.fromkeys(caught):
        signal.raise_signal(signum)


def _mp_context():
    import multiprocessing
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


#: Seconds between two progress messages of a job (its epochs are added up in between).
_REPORT_EVERY = 0.1


def _call(func, job, index):
    """``func(job)`` in a worker; with a progress queue, ``func(job, progress=...)`` whose calls
    ``progress(n)`` (n epochs done) reach the parent as ``(index, epochs)`` messages, at most
    one per :data:`_REPORT_EVERY` seconds (the parent counts a finished job whole anyway)."""
    if _PROGRESS is None:
        return func(job)
    queue, pending, last = _PROGRESS, [0], [time.monotonic()]

    def progress(n=1):
        pending[0] += n
        now = time.monotonic()
        if now - last[0] >= _REPORT_EVERY:
            queue.put((index, pending[0]))
            pending[0], last[0] = 0, now
    return func(job, progress=progress)


def _drain(queue, report) -> None:
    while not queue.empty():
        report(*queue.get())


def run_pool(func, jobs, pending, workers, collect, report=None) -> None:
    """Run ``func(jobs[i])`` for ``i`` in ``pending`` on ``workers`` local processes.

    On an error raised by ``collect`` or Ctrl-C the queued jobs are dropped and
    the jobs in flight stopped (their results are lost anyway).

    Parameters
    ----------
    func : callable
        A job function (:mod:`numerics.experiments.jobs`).
    jobs : sequence of dict
    pending : sequence of int
        The indices to run.
    workers : int
    collect : callable
        ``collect(i, future)`` as each job finishes (in index order among those finishing together).
    report : callable, optional
        If given, ``func`` is called with ``progress=`` and each of its calls
        ``progress(n)`` in a worker becomes ``report(i, n)`` here (a few times a second).

    Raises
    ------
    WorkerLost
        A worker process ended abruptly: the jobs that finished before are collected, the others
        are not run.
    """
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool
    from multiprocessing import resource_tracker

    _quiet_resource_tracker()
    resource_tracker.ensure_running()     # (it holds SIGINT while it starts, then lets it through: not held below)
    context = _mp_context()
    queue = None if report is None else context.SimpleQueue()
    executor = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_init_worker,
                                   initargs=(os.getpid(), queue))
    clean = False
    try:
        with _signals_held():            # the fork server and the workers start here
            futures = {executor.submit(_call, func, jobs[index], index): index for index in pending}
        remaining = set(futures)
        while remaining:
            done, remaining = wait(remaining, timeout=None if queue is None else 0.2, return_when=FIRST_COMPLETED)
            if queue is not None:
                _drain(queue, report)
            broken = [f for f in done if isinstance(f.exception(), BrokenProcessPool)]
            for future in sorted(set(done) - set(broken), key=futures.__getitem__):
                collect(futures[future], future)
            if broken:
                raise WorkerLost(_lost_worker(executor)) from broken[0].exception()
        clean = True
    finally:
        if queue is not None:
            queue.close()
        if clean:
            executor.shutdown(wait=True)
        else:
            # Error or Ctrl-C: drop queued jobs and stop the jobs in flight (their results are lost anyway).
            # (ProcessPoolExecutor has no public way to stop running calls before Python 3.14's terminate_workers.)
            processes = list((getattr(executor, "_processes", None) or {}).values())
            executor.shutdown(wait=False, cancel_futures=True)
            for process in processes:
                with contextlib.suppress(Exception):      # (already gone)
                    process.terminate()
            for process in processes:
                process.join(5)


def _lost_worker(executor) -> str:
    """What :class:`WorkerLost` says: which worker process ended, and how (its signal, where known)."""
    processes = list((getattr(executor, "_processes", None) or {}).values())
    # (the pool ends its other workers with SIGTERM once it is broken, and one may then end with a status of
    # its own: the one lost is the one a signal killed, else one that ended otherwise)
    ended = ([p for p in processes if p.exitcode is not None and p.exitcode < 0 and p.exitcode != -signal.SIGTERM]
             or [p for p in processes if p.exitcode not in (None, 0, -signal.SIGTERM)]
             or [p for p in processes if p.exitcode not in (None, 0)])
    how = ""
    if ended and ended[0].exitcode < 0:
        try:
            how = f", killed by {signal.Signals(-ended[0].exitcode).name}"
        except ValueError:
            how = f", killed by signal {-ended[0].exitcode}"
    elif ended:
        how = f", exit status {ended[0].exitcode}"
    pid = f" {ended[0].pid}" if ended else ""
    return (f"a local worker process{pid} ended abruptly{how} (out of memory? the kernel then kills the "
            "largest process); the runs it had not finished are lost")
