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
another process, on a Dask worker or read back from a :class:`ResultStore`
(Python's ``repr`` of a float round-trips exactly).

A :class:`ResultStore` makes long runs resumable: one JSON file per job,
named by :func:`job_key` (SHA-256 of the job's canonical JSON), holding the
job and its result, written atomically as soon as the job finishes.  A run
that is killed loses only the jobs in flight; rerunning the same jobs with the
same store computes only what is missing.  Files that are damaged (truncated,
unparsable, of the wrong shape, or holding another job) count as missing and
are recomputed and overwritten.  The store holds data only (JSON, never
pickle).

Determinism is the job function's business (seed its own
``numpy.random.Generator`` from the job); the runner adds none of its own
randomness and gives each job the same JSON-normalised dict on every backend.
Local worker processes are started with the ``forkserver`` method (``spawn``
where that is unavailable), exit as soon as the parent process dies (so a
killed run leaves no orphans), ignore ``SIGINT`` (the parent handles Ctrl-C) and
ask for one BLAS/OpenMP thread (``OMP_NUM_THREADS`` etc., effective when the
job module loads NumPy after the worker starts), as Dask's nanny does for its
workers: two workers on two cores should not each start two BLAS threads.
For the 50 × 50 matrices of the paper's experiments the BLAS thread count does
not change results; for large matrix products (hundreds of rows) OpenBLAS's
multithreaded kernels can differ in the last bits from its single-threaded
ones, so such jobs should pin ``OPENBLAS_NUM_THREADS=1`` in the parent too if
bitwise equality across backends matters.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import signal
import socket
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from derivations.atomic_file import atomic_write_text

__all__ = ["run_jobs", "ResultStore", "JobError", "job_key", "check_scheduler"]

#: Tag written into every stored file; a file without it is not ours and is recomputed.
STORE_FORMAT = "qkov.experiments.runner.ResultStore/1"

_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                     "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")

_ADDRESS = re.compile(r"^(?P<scheme>tcp|tls)://(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(?P<port>[0-9]{1,5})/?$")


class JobError(RuntimeError):
    """A job's function raised; names the job.

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
        text = _canonical(job)
        if len(text) > 300:
            text = text[:297] + "..."
        super().__init__(f"job {index} {text} failed: {type(cause).__name__}: {cause}")


# --------------------------------------------------------------------------- keys and JSON

def _canonical(job: Any) -> str:
    return json.dumps(job, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def job_key(job: dict) -> str:
    """Stable name of a job: SHA-256 of its canonical JSON.

    The canonical form is ``json.dumps(job, sort_keys=True, separators=(",", ":"),
    ensure_ascii=True, allow_nan=False)``, so the key does not depend on key
    order, the Python session or the machine.  Tuples hash like lists; ``1``
    and ``1.0`` are different jobs.

    Parameters
    ----------
    job : dict
        JSON-serialisable job description (finite numbers only).

    Returns
    -------
    str
        64 lowercase hexadecimal digits.

    Raises
    ------
    ValueError
        If ``job`` is not a dict or not JSON-serialisable.

    Examples
    --------
    >>> from numerics.experiments.runner import job_key
    >>> job_key({"seed": 1234, "lr": 0.01}) == job_key({"lr": 0.01, "seed": 1234})
    True
    >>> job_key({"seed": 1234, "lr": 0.01})[:16]
    '83165306dbbb6f09'
    """
    if not isinstance(job, dict):
        raise ValueError(f"job must be a dict of JSON values, got {type(job).__name__}")
    try:
        text = _canonical(job)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"job must be a dict of finite JSON values (str keys, numbers, str, bool, "
                         f"None, lists, dicts): {exc}") from None
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _normalise_result(result: Any, index: int, job: dict) -> dict:
    """``json.loads(json.dumps(result))``: the form every backend and the store agree on."""
    if not isinstance(result, dict):
        raise JobError(index, job, TypeError(f"the job function must return a dict, got {type(result).__name__}"))
    try:
        return json.loads(json.dumps(result))
    except (TypeError, ValueError) as exc:
        raise JobError(index, job, TypeError(f"the result is not JSON-serialisable: {exc}")) from exc


# --------------------------------------------------------------------------- store

class ResultStore:
    """A directory of finished jobs: one atomic JSON file per job, for resumable runs.

    Each file ``<directory>/<job_key(job)>.json`` holds
    ``{"format": STORE_FORMAT, "key": ..., "job": ..., "result": ...}``, so a
    file describes itself (which job, which result) and can be read without
    qkov.  Files are written to a temporary file in the same directory, flushed
    and fsynced, then renamed over the final name (:func:`os.replace`), so a
    reader sees either the old file, the new one, or none, never half a file.
    A file that does not parse, has the wrong shape or holds another job than
    its name says is treated as missing.  Temporary files left by a writer
    killed mid-write (named after its host and process id) are deleted when a
    store is next opened on the same host.

    The key depends on the job only, not on the function that ran it: give a
    store to one job function, or put what distinguishes the functions into
    the jobs (e.g. ``{"experiment": "sweep", ...}``).

    Parameters
    ----------
    directory : str or os.PathLike
        Where the files live; created (with parents) if missing.

    Raises
    ------
    ValueError
        If ``directory`` (or one of its parents) exists and is not a directory.

    Examples
    --------
    >>> import tempfile
    >>> from numerics.experiments.runner import ResultStore
    >>> store = ResultStore(tempfile.mkdtemp())
    >>> job = {"seed": 1234}
    >>> store.get(job) is None
    True
    >>> store.put(job, {"loss": 0.125})
    >>> store.get(job), job in store, len(store)
    ({'loss': 0.125}, True, 1)
    """

    def __init__(self, directory):
        path = Path(directory)
        try:
            path.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise ValueError(f"store directory {str(path)!r} is not a directory (a file is in the way)") from None
        if not path.is_dir():
            raise ValueError(f"store directory {str(path)!r} is not a directory")
        self.directory = path
        self._remove_stale_temporaries()

    def _temporary_prefix(self, key: str) -> str:
        return f".{key[:16]}~{socket.gethostname()}~{os.getpid()}~"

    def _remove_stale_temporaries(self) -> None:
        """Delete temporary files left by writers on this host that no longer run (killed mid-write)."""
        host = socket.gethostname()
        for tmp in self.directory.glob(".*~*~*~*.tmp"):
            parts = tmp.name.split("~")
            if len(parts) != 4 or parts[1] != host or not parts[2].isdigit():
                continue
            try:
                os.kill(int(parts[2]), 0)
                continue                      # its writer still runs
            except ProcessLookupError:
                pass
            except OSError:                   # exists but not ours to signal: leave it
                continue
            try:
                tmp.unlink()
            except OSError:
                pass

    def __repr__(self) -> str:
        return f"ResultStore({str(self.directory)!r})"

    def path(self, job: dict) -> Path:
        """File that holds (or will hold) ``job``'s result."""
        return self.directory / f"{job_key(job)}.json"

    def _read(self, path: Path, key: str | None = None):
        try:
            with open(path, encoding="utf-8") as handle:
                record = json.load(handle)
        except (OSError, ValueError, UnicodeDecodeError):
            return None
        if (not isinstance(record, dict) or record.get("format") != STORE_FORMAT
                or not isinstance(record.get("job"), dict) or not isinstance(record.get("result"), dict)):
            return None
        try:
            actual = job_key(record["job"])
        except ValueError:
            return None
        if record.get("key") != actual or actual != (key if key is not None else path.stem):
            return None
        return record

    def get(self, job: dict, default=None):
        """The stored result of ``job``, or ``default`` if it is missing or damaged."""
        record = self._read(self.path(job), job_key(job))
        return default if record is None else record["result"]

    def __contains__(self, job: dict) -> bool:
        return self.get(job) is not None

    def put(self, job: dict, result: dict) -> None:
        """Save ``result`` for ``job`` atomically (temporary file, fsync, rename).

        Raises
        ------
        ValueError
            If ``job`` or ``result`` is not JSON-serialisable.
        """
        key = job_key(job)
        if not isinstance(result, dict):
            raise ValueError(f"result must be a dict, got {type(result).__name__}")
        record = {"format": STORE_FORMAT, "key": key, "job": json.loads(_canonical(job)), "result": result}
        try:
            text = json.dumps(record, indent=1, sort_keys=True)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"result is not JSON-serialisable: {exc}") from None
        atomic_write_text(self.directory / f"{key}.json", text, fsync=True, encoding="utf-8",
                          prefix=self._temporary_prefix(key))

    def items(self) -> Iterator[tuple[dict, dict]]:
        """``(job, result)`` for every intact file, in file-name order."""
        for path in sorted(self.directory.glob("*.json")):
            record = self._read(path)
            if record is not None:
                yield record["job"], record["result"]

    def __len__(self) -> int:
        return sum(1 for _ in self.items())


# --------------------------------------------------------------------------- validation

def _check_workers(workers) -> int:
    if workers is None:
        return os.cpu_count() or 1
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be an integer >= 1 (or None for the CPU count), got {workers!r}")
    return workers


def _parse_address(address) -> tuple[str, int]:
    if not isinstance(address, str) or _ADDRESS.match(address.strip()) is None:
        raise ValueError(f"scheduler must be an address like tcp://host:port (port 1-65535), got {address!r}")
    match = _ADDRESS.match(address.strip())
    port = int(match["port"])
    if not 1 <= port <= 65535:
        raise ValueError(f"scheduler must be an address like tcp://host:port (port 1-65535), got {address!r}")
    return match["host"].strip("[]"), port


def _import_distributed():
    try:
        import distributed
    except ImportError:
        raise ValueError("scheduler needs the optional dependency 'distributed': "
                         "pip install 'qkov[distributed]'") from None
    return distributed


def _probe(address: str, timeout: float) -> None:
    """Fail fast, with ValueError naming ``address``, unless a Dask scheduler greets us there.

    A Dask TCP listener writes its handshake as soon as it accepts a
    connection, starting with an 8-byte little-endian length; anything else
    (nothing listening, a silent server, another protocol) is refused here
    because ``distributed.Client`` can wait forever on a peer that never
    answers the handshake.  ``tls://`` addresses are only checked for a TCP
    connection.
    """
    host, port = _parse_address(address)
    scheme = address.strip().split("://", 1)[0]
    deadline = time.monotonic() + timeout
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            if scheme != "tcp":
                return
            data = b""
            while len(data) < 8:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("timed out")
                sock.settimeout(left)
                chunk = sock.recv(8 - len(data))
                if not chunk:
                    break
                data += chunk
    except (OSError, TimeoutError) as exc:
        if isinstance(exc, (TimeoutError, socket.timeout)):
            reason = f"no Dask handshake within {timeout:g} s"
        else:
            reason = exc.strerror or type(exc).__name__
        raise ValueError(f"cannot reach the Dask scheduler at {address}: {reason}") from None
    if len(data) < 8 or not 0 < int.from_bytes(data, "little") < 1 << 24:
        raise ValueError(f"cannot reach the Dask scheduler at {address}: "
                         f"something else is listening there (not the Dask protocol)")


def _connect(address: str, timeout: float):
    """A ``distributed.Client`` on ``address``, or ValueError naming it."""
    distributed = _import_distributed()
    _probe(address, timeout)
    try:
        return distributed.Client(address.strip(), timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise ValueError(f"cannot reach the Dask scheduler at {address}: {exc}".splitlines()[0]) from None


def check_scheduler(address: str, timeout: float = 10) -> dict:
    """Check that a Dask ``distributed`` scheduler answers at ``address``.

    A command line calls this before any work so that a mistyped or dead
    address fails at once, with one line.  A plain TCP connection is tried
    first and must be greeted by the Dask protocol's handshake (fails fast
    when nothing listens, and within ``timeout`` when something else listens),
    then a ``distributed.Client`` asks for the number of workers; the whole
    check takes about ``timeout`` seconds at most, plus Dask's import time.

    Parameters
    ----------
    address : str
        ``tcp://host:port`` (or ``tls://host:port``).
    timeout : float, optional
        Seconds to wait for the connection, > 0.

    Returns
    -------
    dict
        ``{"address": address, "workers": number of workers connected now}``.

    Raises
    ------
    ValueError
        If the address is malformed, ``distributed`` is not installed, or no
        scheduler answers within ``timeout``; the message names the address.

    Examples
    --------
    >>> from numerics.experiments.runner import check_scheduler
    >>> check_scheduler("tcp://127.0.0.1:1", timeout=2)  # nothing listens on port 1
    Traceback (most recent call last):
    ...
    ValueError: cannot reach the Dask scheduler at tcp://127.0.0.1:1: ...
    """
    _parse_address(address)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) or timeout <= 0:
        raise ValueError(f"timeout must be a finite number of seconds > 0, got {timeout!r}")
    client = _connect(address, timeout)
    try:
        workers = len(client.scheduler_info().get("workers", {}))
    finally:
        client.close()
    return {"address": address, "workers": workers}


# --------------------------------------------------------------------------- execution

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


class _Progress:
    """A tqdm bar on stderr when asked for and stderr is a terminal; otherwise nothing."""

    def __init__(self, show: bool, total: int, initial: int, desc: str | None):
        self.bar = None
        if show and total and _isatty(sys.stderr):
            from tqdm import tqdm
            self.bar = tqdm(total=total, initial=initial, desc=desc, unit="job", file=sys.stderr,
                            dynamic_ncols=True, smoothing=0.1)

    def update(self) -> None:
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def run_jobs(func: Callable[[dict], dict], jobs: Sequence[dict], *, workers: int | None = None,
             scheduler: str | None = None, store: ResultStore | str | os.PathLike | None = None,
             progress: bool = True, desc: str | None = None) -> list:
    """Run ``func(job)`` for every job, locally or on Dask, and return the results in job order.

    Parameters
    ----------
    func : callable
        ``func(job) -> dict``; a module-level function (worker processes and
        Dask workers import it by name) that is deterministic given the job.
        It receives the JSON-normalised job (tuples become lists).
    jobs : sequence of dict
        JSON-serialisable job descriptions.  Equal jobs (same :func:`job_key`)
        run once and share their result.
    workers : int or None, optional
        Local processes, >= 1; ``None`` means :func:`os.cpu_count`.  ``1`` (or a
        single pending job) runs in this process, without a pool.  Ignored when
        ``scheduler`` is given.
    scheduler : str or None, optional
        Address ``tcp://host:port`` of a running Dask ``distributed``
        scheduler; the jobs are submitted there (``distributed`` is imported only
        then) and gathered as they complete.  Its workers must be able to
        import ``func``'s module (qkov installed, or on their ``PYTHONPATH``).
    store : ResultStore, str, os.PathLike or None, optional
        Where finished results are saved, each as soon as it finishes (a path
        is wrapped in a :class:`ResultStore`).  Jobs already stored are not run
        again: rerunning with the same store resumes an interrupted run.
    progress : bool, optional
        Show a tqdm bar on stderr (only if stderr is a terminal).
    desc : str or None, optional
        Label of the progress bar (default: ``func``'s name).

    Returns
    -------
    list of dict
        ``json.loads(json.dumps(func(job)))`` for each job, in the order of
        ``jobs`` — identical bit for bit whichever backend computed it or
        whether it was read back from ``store``.

    Raises
    ------
    ValueError
        Invalid ``workers``, ``scheduler``, ``store`` or job (before any work),
        or an unreachable scheduler.
    JobError
        A job raised or returned something that is not a JSON dict; the
        message names the job, the original exception is ``__cause__``.
        Pending jobs are cancelled; results already finished stay in ``store``.
    KeyboardInterrupt
        Pending jobs are cancelled and worker processes stopped; results
        already finished stay in ``store``.

    Notes
    -----
    Worker processes start with ``forkserver`` (or ``spawn``), which re-import
    the main module of a script: a script that calls ``run_jobs`` with
    ``workers > 1`` must guard its entry point with
    ``if __name__ == "__main__":``, as with any :mod:`multiprocessing` pool.
    ``python -m numerics.experiments`` and pytest need nothing.

    Examples
    --------
    >>> import tempfile
    >>> from numerics.experiments.runner import run_jobs, _example_job  # x -> x**2
    >>> jobs = [{"x": 0.5}, {"x": 2.0}]
    >>> store = tempfile.mkdtemp()
    >>> run_jobs(_example_job, jobs, workers=1, store=store, progress=False)
    [{'square': 0.25}, {'square': 4.0}]
    >>> run_jobs(_example_job, jobs, workers=1, store=store, progress=False)  # read back, not recomputed
    [{'square': 0.25}, {'square': 4.0}]
    """
    if not callable(func):
        raise ValueError(f"func must be a callable taking one job dict, got {type(func).__name__}")
    if isinstance(jobs, (str, bytes, dict)) or not hasattr(jobs, "__iter__"):
        raise ValueError(f"jobs must be a sequence of dicts, got {type(jobs).__name__}")
    jobs = list(jobs)
    keys = []
    for index, job in enumerate(jobs):
        try:
            keys.append(job_key(job))
        except ValueError as exc:
            raise ValueError(f"jobs[{index}]: {exc}") from None
    normalised = [json.loads(_canonical(job)) for job in jobs]
    if scheduler is not None:
        _parse_address(scheduler)
        if workers is not None:
            _check_workers(workers)
    else:
        workers = _check_workers(workers)
    if store is not None and not isinstance(store, ResultStore):
        if not isinstance(store, (str, os.PathLike)):
            raise ValueError(f"store must be a ResultStore, a directory path or None, got {type(store).__name__}")
        store = ResultStore(store)
    if desc is None:
        desc = getattr(func, "__name__", None)

    results: list = [None] * len(jobs)
    first_index: dict[str, int] = {}
    for index, key in enumerate(keys):
        first_index.setdefault(key, index)
    pending: list[int] = []            # indices of the first job of each key still to run
    for key, index in first_index.items():
        stored = store.get(normalised[index]) if store is not None else None
        if stored is None:
            pending.append(index)
        else:
            results[index] = stored

    def finish(index: int, value) -> None:
        value = _normalise_result(value, index, normalised[index])
        if store is not None:
            store.put(normalised[index], value)
        results[index] = value
        bar.update()

    bar = _Progress(progress, len(first_index), len(first_index) - len(pending), desc)
    try:
        if not pending:
            pass
        elif scheduler is not None:
            _run_dask(func, normalised, keys, pending, scheduler, finish)
        elif workers == 1 or len(pending) == 1:
            for index in pending:
                try:
                    value = func(normalised[index])
                except Exception as exc:
                    raise JobError(index, normalised[index], exc) from exc
                finish(index, value)
        else:
            _run_pool(func, normalised, pending, min(workers, len(pending)), finish)
    finally:
        bar.close()
    for index, key in enumerate(keys):
        if results[index] is None:
            results[index] = results[first_index[key]]
    return results


def _finish_one(future, index, jobs, finish) -> None:
    """Hand job ``index``'s value to ``finish``; a job that raised becomes a :class:`JobError`."""
    try:
        value = future.result()
    except Exception as exc:
        raise JobError(index, jobs[index], exc) from exc
    finish(index, value)


def _run_pool(func, jobs, pending, workers, finish) -> None:
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
                _finish_one(future, futures[future], jobs, finish)
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


def _run_dask(func, jobs, keys, pending, scheduler, finish) -> None:
    distributed = _import_distributed()
    client = _connect(scheduler, 30)
    futures = {}
    try:
        if not client.scheduler_info().get("workers"):
            import warnings
            warnings.warn(f"the Dask scheduler at {scheduler} has no workers yet: the jobs wait until some join",
                          RuntimeWarning, stacklevel=3)
        token = uuid.uuid4().hex[:8]
        name = getattr(func, "__name__", "job")
        for index in pending:
            # Explicit unique keys: Dask never merges two runs' jobs, and the dashboard shows which job is which.
            future = client.submit(func, jobs[index], key=f"{name}-{keys[index][:16]}-{token}", pure=False)
            futures[future] = index
        for future in distributed.as_completed(list(futures), loop=client.loop):
            _finish_one(future, futures[future], jobs, finish)
    finally:
        try:
            if futures:
                client.cancel(list(futures))
        finally:
            client.close()


def _example_job(job: dict) -> dict:
    """Toy job for the docstring example: ``{"square": x**2}``."""
    return {"square": job["x"] ** 2}
