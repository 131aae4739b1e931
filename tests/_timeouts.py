"""A per-test time bound that a finalizer cannot swallow: the suite's pytest plugin beside pytest-timeout.

pytest-timeout (``timeout`` in setup.cfg, signal method) fails a test by raising from its ``SIGALRM``
handler. When the signal arrives while a finalizer runs (``__del__``, a weakref callback run by the
garbage collector), Python cannot pass that exception on: it reports it to ``sys.unraisablehook``
("Exception ignored") and the test goes on, with no second signal to come. A hung test would then hang
the run. While each phase of a test (setup, call, teardown) runs, the hook below sees such a lost
failure and re-arms the timer for :data:`REFIRE` seconds, so the handler runs again, outside the
finalizer, and the test fails where it is; every other unraisable goes on to the hook before it
(pytest's, which reports it as a warning).

``tests/conftest.py`` imports the three hooks; ``tests/test_packaging.py`` runs them in a pytest of its own
(``-p _timeouts``).
"""
import contextlib
import re
import signal
import sys

import pytest

#: Seconds after a lost timeout failure at which pytest-timeout's handler runs again.
REFIRE = 0.1
#: The start of pytest-timeout's failure: ``Timeout (>0.1s) from pytest-timeout.`` (its ``PYTEST_FAILURE_MESSAGE``,
#: 2.4), ``Timeout >0.1s`` (2.3.1, the declared floor).
_TIMEOUT_TEXT = re.compile(r"Timeout \(?>")


@contextlib.contextmanager
def _lost_timeouts_refired():
    previous = sys.unraisablehook

    def hook(unraisable):
        if isinstance(unraisable.exc_value, pytest.fail.Exception) and _TIMEOUT_TEXT.match(str(unraisable.exc_value)):
            signal.setitimer(signal.ITIMER_REAL, REFIRE)
        previous(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    with _lost_timeouts_refired():
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    with _lost_timeouts_refired():
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item):
    with _lost_timeouts_refired():
        return (yield)
