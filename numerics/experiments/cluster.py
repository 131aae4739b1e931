r"""Running jobs on an existing Dask ``distributed`` scheduler (optional extra ``qkov[distributed]``).

:func:`check_scheduler` checks an address before any work: the form
``tcp://host:port`` (``tls://`` is refused: the runner has no security
options to pass), a TCP connection greeted by the Dask protocol's handshake
(whose frame lengths must agree, so a listener answering with anything else
is refused at once), then a ``distributed.Client``. Everything that goes
wrong on the way is one ``ValueError`` naming the address. :func:`run_dask`
submits jobs and gathers them as they complete; a scheduler lost mid-run is a
:class:`SchedulerLost` (the results finished so far are already saved).
"""
from __future__ import annotations

import contextlib
import math
import re
import socket
import time
import uuid

from derivations.core.cli import UsageError
from derivations.core.optional import require_optional

__all__ = ["check_scheduler", "parse_address", "run_dask", "SchedulerLost", "CONNECT_TIMEOUT"]

_ADDRESS = re.compile(r"^tcp://(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(?P<port>[0-9]{1,5})$")
#: Seconds to wait, by default, for a scheduler to answer and for a worker to be connected to it.
CONNECT_TIMEOUT = 30.0
#: Most frames a Dask handshake message is split into (it has a handful).
_MAX_FRAMES = 64


class SchedulerLost(RuntimeError):
    """The Dask scheduler (or the connection to it) was lost while jobs were running."""


def parse_address(address) -> tuple[str, int]:
    """``(host, port)`` of a ``tcp://host:port`` address.

    Parameters
    ----------
    address : str

    Returns
    -------
    (str, int)

    Raises
    ------
    ValueError
        Not of that form (the message names it): ``tls://`` is refused (the runner passes no
        security options, so a TLS scheduler could not be reached), and so is a trailing
        slash or path.
    """
    text = address.strip() if isinstance(address, str) else None
    if text is not None and text.lower().startswith("tls://"):
        raise ValueError(f"tls:// schedulers are not supported (no security options to pass); "
                         f"give a tcp://host:port address, got {address!r}")
    match = _ADDRESS.match(text) if text is not None else None
    if match is None or not 1 <= int(match["port"]) <= 65535:
        raise ValueError(f"scheduler must be an address like tcp://host:port (port 1-65535, nothing after "
                         f"the port), got {address!r}")
    return match["host"].strip("[]"), int(match["port"])


def _import_distributed():
    try:
        require_optional("distributed", "distributed", "--scheduler")
    except UsageError as exc:
        raise ValueError(str(exc)) from None
    import distributed

    return distributed


def _receive(sock, n: int, deadline: float) -> bytes:
    """Exactly ``n`` bytes from ``sock`` before ``deadline`` (fewer if the peer closes)."""
    data = b""
    while len(data) < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("timed out")
        sock.settimeout(left)
        chunk = sock.recv(n - len(data))
        if not chunk:
            break
        data += chunk
    return data


def _is_handshake(sock, deadline: float) -> bool:
    """Whether the first bytes are a Dask message's prelude: an 8-byte total ``T``, the
    frame count ``n`` (1..64) and ``n`` frame lengths, with ``8 + 8 n <= T <= 8 + 8 n + sum``."""
    head = _receive(sock, 16, deadline)
    if len(head) < 16:
        return False
    total, frames = int.from_bytes(head[:8], "little"), int.from_bytes(head[8:], "little")
    if not 1 <= frames <= _MAX_FRAMES or not 0 < total < 1 << 30:
        return False
    lengths = _receive(sock, 8 * frames, deadline)
    if len(lengths) < 8 * frames:
        return False
    body = sum(int.from_bytes(lengths[8 * i:8 * i + 8], "little") for i in range(frames))
    return 8 + 8 * frames <= total <= 8 + 8 * frames + body


def _probe(address: str, timeout: float) -> None:
    """Fail fast, with ValueError naming ``address``, unless a Dask scheduler greets us there.

    A Dask TCP listener writes its handshake as soon as it accepts a
    connection: a prelude of 8-byte little-endian lengths that agree with each
    other. Anything else (nothing listening, a silent server, another protocol
    or garbage) is refused here, because ``distributed.Client`` can wait
    forever on a peer that never answers, or fail with a low-level error.
    """
    host, port = parse_address(address)
    deadline = time.monotonic() + timeout
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            greeted = _is_handshake(sock, deadline)
    except (OSError, TimeoutError) as exc:
        if isinstance(exc, (TimeoutError, socket.timeout)):
            reason = f"no Dask handshake within {timeout:g} s"
        else:
            reason = exc.strerror or type(exc).__name__
        raise ValueError(f"cannot reach the Dask scheduler at {address}: {reason}") from None
    if not greeted:
        raise ValueError(f"cannot reach the Dask scheduler at {address}: "
                         f"something else is listening there (not the Dask protocol)")


def _connect(address: str, timeout: float):
    """A ``distributed.Client`` on ``address``, or ValueError naming it (whatever went wrong)."""
    distributed = _import_distributed()
    _probe(address, timeout)
    try:
        return distributed.Client(address.strip(), timeout=timeout, set_as_default=False)
    except Exception as exc:   # OSError, TimeoutError, a protocol error: one line naming the address
        reason = f"{exc}".splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(f"cannot reach the Dask scheduler at {address}: {reason}") from None


def check_scheduler(address: str, timeout: float = 10, *, need_workers: bool = False) -> dict:
    """Check that a Dask ``distributed`` scheduler answers at ``address``.

    A command line calls this before any work so that a mistyped or dead
    address fails at once, with one line.  A plain TCP connection is tried
    first and must be greeted by the Dask protocol's handshake (fails fast
    when nothing listens, and within ``timeout`` when something else listens),
    then a ``distributed.Client`` asks for the number of workers (and, with
    ``need_workers``, waits up to ``timeout`` seconds for one to connect);
    the whole check takes about twice ``timeout`` seconds at most, plus Dask's
    import time.

    Parameters
    ----------
    address : str
        ``tcp://host:port`` (``tls://`` is refused: no security options).
    timeout : float, optional
        Seconds to wait for the connection (and for a worker), > 0.
    need_workers : bool, optional
        Refuse a scheduler to which no worker connects within ``timeout``.

    Returns
    -------
    dict
        ``{"address": address, "workers": number of workers connected now}``.

    Raises
    ------
    ValueError
        If the address is malformed, ``distributed`` is not installed, no
        scheduler answers within ``timeout``, or (``need_workers``) no worker
        is connected to it within ``timeout``; the message names the address.

    Examples
    --------
    >>> from numerics.experiments.cluster import check_scheduler
    >>> check_scheduler("tcp://127.0.0.1:1", timeout=2)  # nothing listens on port 1
    Traceback (most recent call last):
    ...
    ValueError: cannot reach the Dask scheduler at tcp://127.0.0.1:1: ...
    """
    parse_address(address)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) or timeout <= 0:
        raise ValueError(f"timeout must be a finite number of seconds > 0, got {timeout!r}")
    client = _connect(address, timeout)
    try:
        if need_workers:
            _wait_for_a_worker(client, address, timeout, ValueError)
        workers = len(client.scheduler_info().get("workers", {}))
    finally:
        client.close()
    return {"address": address, "workers": workers}


def _wait_for_a_worker(client, address: str, timeout: float, error) -> None:
    """Return once a worker is connected to the scheduler; ``error`` after ``timeout`` seconds."""
    if client.scheduler_info().get("workers"):
        return
    try:
        client.wait_for_workers(1, timeout=timeout)
    except (TimeoutError, OSError) as exc:
        if client.scheduler_info().get("workers"):
            return
        raise error(f"no worker is connected to the Dask scheduler at {address} (waited {timeout:g} s)") from exc


class _QuietDistributed:
    """Silence ``distributed``'s own log records (reconnection tracebacks) once the scheduler is
    known lost: the command reports the loss in one line. Restored when the process exits."""

    def __init__(self):
        self.levels = None

    def __enter__(self):
        import logging
        if self.levels is None:
            names = ("distributed", "distributed.client", "distributed.core", "distributed.comm")
            self.levels = {n: logging.getLogger(n).level for n in names}
            for n in names:
                logging.getLogger(n).setLevel(logging.CRITICAL + 1)
        return self

    def restore_later(self):
        """Keep the loggers quiet while the client's threads wind down (they log after close)."""
        if self.levels is not None:
            import atexit
            import logging
            atexit.register(lambda: [logging.getLogger(n).setLevel(v) for n, v in self.levels.items()])


def _lost(exc) -> bool:
    """Whether ``exc`` says the scheduler or the connection went away (not a job's own error)."""
    import asyncio
    names = {type(e).__name__ for e in (exc, exc.__cause__, exc.__context__) if e is not None}
    return bool(names & {"CommClosedError", "CancelledError", "FutureCancelledError", "StreamClosedError"}) \
        or isinstance(exc, (asyncio.CancelledError, ConnectionError, TimeoutError))


#: Seconds between two looks at the scheduler's workers while no run completes.
_WORKER_CHECK = 1.0


def _completed(distributed, client, futures, scheduler: str, timeout: float):
    """The ``futures`` as they complete (``distributed.as_completed``); meanwhile a look at the
    scheduler each :data:`_WORKER_CHECK` seconds: SchedulerLost once no worker has been connected to it
    for ``timeout`` seconds (the runs would wait there for one without end)."""
    completed = distributed.as_completed(futures, loop=client.loop)
    looked = without_workers = time.monotonic()
    while not completed.is_empty():
        if completed.has_ready():
            yield from completed.next_batch(block=False)
            continue
        time.sleep(0.05)
        now = time.monotonic()
        if now - looked >= _WORKER_CHECK:
            looked = now
            if client.scheduler_info(n_workers=1).get("workers"):      # (one is enough to know)
                without_workers = now
            elif now - without_workers >= timeout:
                raise SchedulerLost(f"no worker has been connected to the Dask scheduler at {scheduler} for "
                                    f"{timeout:g} s (--connect-timeout), with runs still to do")


def run_dask(func, jobs, keys, pending, scheduler, collect, timeout: float = CONNECT_TIMEOUT) -> None:
    """Submit ``func(jobs[i])`` for ``i`` in ``pending`` to ``scheduler``; ``collect(i, future)``
    as each completes.

    Parameters
    ----------
    func : callable
        A job function (:mod:`numerics.experiments.jobs`).
    jobs : sequence of dict
    keys : sequence of str
        The jobs' keys (:func:`~numerics.experiments.store.job_key`), part of each Dask key.
    pending : sequence of int
        The indices to run.
    scheduler : str
        ``tcp://host:port``.
    collect : callable
        ``collect(index, future)``.
    timeout : float, optional
        Seconds to wait for the scheduler and for a worker.

    Raises
    ------
    numerics.experiments.pool.WorkerLost
        The scheduler gave a job up: every worker that ran it died while running it.
    SchedulerLost
        The scheduler was lost on the way, or no worker was connected to it for ``timeout``
        seconds, before the runs were sent or while they were still to do (what ``collect``
        saved stays saved).
    """
    distributed = _import_distributed()
    client = _connect(scheduler, timeout)
    futures = {}
    quiet = _QuietDistributed()
    try:
        _wait_for_a_worker(client, scheduler, timeout, SchedulerLost)
        token = uuid.uuid4().hex[:8]
        name = getattr(func, "__name__", "job")
        for index in pending:
            # Explicit unique keys: Dask never merges two runs' jobs, and the dashboard shows which job is which.
            future = client.submit(func, jobs[index], key=f"{name}-{keys[index][:16]}-{token}", pure=False)
            futures[future] = index
        try:
            for future in _completed(distributed, client, list(futures), scheduler, timeout):
                if future.status == "cancelled":
                    raise SchedulerLost(f"the Dask scheduler at {scheduler} cancelled the runs or was lost")
                if future.status == "error" and type(future.exception()).__name__ == "KilledWorker":
                    from .pool import WorkerLost
                    raise WorkerLost(f"the Dask scheduler at {scheduler} gave a run up: every worker that ran it "
                                     "died while running it (out of memory? the kernel then kills the largest "
                                     "process)") from future.exception()
                collect(futures[future], future)
        except SchedulerLost:
            quiet.__enter__()
            raise
        except Exception as exc:
            quiet.__enter__()
            if _lost(exc):
                raise SchedulerLost(f"the Dask scheduler at {scheduler} was lost "
                                    f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})") from exc
            raise
    finally:
        try:
            with contextlib.suppress(Exception):    # the scheduler is gone: nothing left to cancel
                if futures:
                    client.cancel(list(futures))
        finally:
            with contextlib.suppress(Exception):
                client.close(timeout=5)
            quiet.restore_later()
