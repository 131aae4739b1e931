"""A bound on the wall time of a computation whose cost the input decides (a task's symbolic reduction).

Plain Python (no SymPy, no NumPy), as the rest of :mod:`derivations.core`.

>>> import time
>>> with time_limit(5, "never"):
...     time.sleep(0.01)
>>> with time_limit(0.05, "the demo did not finish within 0.05 s"):
...     while True:
...         pass
Traceback (most recent call last):
...
ValueError: the demo did not finish within 0.05 s
"""
from __future__ import annotations

import contextlib
import math
import signal
import sys
import threading
import time

__all__ = ["time_limit"]


#: Seconds before the status bar of :func:`time_limit` shows, and between its updates.
_TICK = 1.0
#: Seconds between the timer's expiries once the bound has passed (:func:`time_limit`).
_REPEAT = 0.1


class _Expired(BaseException):
    """Raised by the timer; a BaseException, so that no ``except Exception`` of the library
    running at that moment can swallow it."""


@contextlib.contextmanager
def _seconds_bar(seconds: float, status):
    """A bar of the seconds spent out of ``seconds`` on a terminal, labelled ``status``, shown after
    the first second and gone when the body ends, advanced by a thread once a second (nothing
    without ``status``)."""
    from .output import progress_bar

    bar = progress_bar(math.ceil(seconds / _TICK), desc=status, unit="s", show=status is not None, delay=_TICK,
                       leave=False, bar_format="{desc}: {bar} {n_fmt}/{total_fmt} s")
    done = threading.Event()

    def tick():
        while not done.wait(_TICK) and bar.n < bar.total:
            bar.update(1)
    ticker = threading.Thread(target=tick, daemon=True) if not bar.disable else None
    if ticker is not None:
        ticker.start()
    try:
        yield
    finally:
        done.set()
        if ticker is not None:
            ticker.join()
        bar.close()


@contextlib.contextmanager
def time_limit(seconds: float, message: str, status: str | None = None):
    """Run the body for at most ``seconds`` of wall time, else raise ``ValueError(message)``.

    The bound is a real-time interval timer (``SIGALRM``), so it stops pure-Python work such as
    SymPy's wherever it is. It applies in the main thread of a platform with ``setitimer``;
    elsewhere the body runs without one. Bounds nest: where a timer is already armed (an outer
    bound, or a test runner's per-test timeout) and is due first, it holds alone; else this bound
    holds, and on the way out the previous ``SIGALRM`` handler is restored and the outer timer
    re-armed with the time it has left. Past ``seconds`` the timer fires again every
    ``_REPEAT`` seconds until the body has stopped: an expiry that lands in code which
    cannot pass an exception on (a finalizer ``__del__`` or a weakref callback run by the
    garbage collector, which would print "Exception ignored" and go on) is followed by another, and
    not printed.

    Parameters
    ----------
    seconds : float
        The bound (> 0).
    message : str
        The text of the ``ValueError`` (say what did not finish, and within how long).
    status : str, optional
        What runs: with it, a body running longer than a second shows on a terminal a bar of the
        seconds spent out of ``seconds``, labelled ``status`` (:func:`~derivations.core.output.progress_bar`).

    Yields
    ------
    None

    Raises
    ------
    ValueError
        If the body has not finished within ``seconds``.
    """
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return
    outer = signal.getitimer(signal.ITIMER_REAL)
    if 0 < outer[0] <= seconds:
        yield
        return
    with _seconds_bar(seconds, status), _bounded(seconds, message, outer):
        yield


@contextlib.contextmanager
def _bounded(seconds, message, outer):
    """The real-time interval timer of :func:`time_limit` (in the main thread), due before the ``outer``
    timer (``signal.getitimer``'s (delay, interval); delay 0: none armed), which is re-armed after it."""
    armed, report = [True], sys.unraisablehook

    def expire(signum, frame):
        if armed[0]:                 # not once disarmed (a signal handled late)
            raise _Expired

    def lost(unraisable):            # an expiry lost in a finalizer: not printed, the timer fires again
        if not isinstance(unraisable.exc_value, _Expired):
            report(unraisable)
    previous = signal.signal(signal.SIGALRM, expire)
    sys.unraisablehook = lost
    start = time.monotonic()
    try:
        signal.setitimer(signal.ITIMER_REAL, seconds, _REPEAT)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            armed[0] = False
    except _Expired:
        raise ValueError(message) from None
    finally:
        signal.signal(signal.SIGALRM, previous)
        sys.unraisablehook = report
        if outer[0] > 0:
            signal.setitimer(signal.ITIMER_REAL, max(outer[0] - (time.monotonic() - start), 1e-6), outer[1])
