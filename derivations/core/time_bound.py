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
import signal
import threading

__all__ = ["time_limit"]


class _Expired(BaseException):
    """Raised by the timer; a BaseException, so that no ``except Exception`` of the library
    running at that moment can swallow it."""


@contextlib.contextmanager
def time_limit(seconds: float, message: str):
    """Run the body for at most ``seconds`` of wall time, else raise ``ValueError(message)``.

    The bound is a real-time interval timer (``SIGALRM``), so it stops pure-Python work such as
    SymPy's wherever it is. It applies in the main thread of a platform with ``setitimer``, and
    only when no other timer is armed (an outer bound then holds); elsewhere the body runs without
    one. The previous ``SIGALRM`` handler is restored on the way out.

    Parameters
    ----------
    seconds : float
        The bound (> 0).
    message : str
        The text of the ``ValueError`` (say what did not finish, and within how long).

    Yields
    ------
    None

    Raises
    ------
    ValueError
        If the body has not finished within ``seconds``.
    """
    if (not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread()
            or signal.getitimer(signal.ITIMER_REAL)[0] > 0):
        yield
        return

    def expire(signum, frame):
        raise _Expired
    previous = signal.signal(signal.SIGALRM, expire)
    try:
        signal.setitimer(signal.ITIMER_REAL, seconds)
        yield
    except _Expired:
        raise ValueError(message) from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
