"""The time bound of a computation the input decides (derivations.core.time_bound): its status bar."""
import io
import sys
import time

import pytest

from derivations.core import time_bound


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_bounded_body_past_its_first_second_shows_the_seconds_spent_on_a_terminal(monkeypatch):
    """A reduction keeps SymPy busy up to its bound in silence otherwise: with a status, a body running
    past a second shows '<status>: <bar> n/N s' on a terminal; a quick one and one without a status
    show nothing, and nothing goes to a stream that is not a terminal."""
    monkeypatch.setattr(time_bound, "_TICK", 0.1)         # the first second and each second after, shortened
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    with time_bound.time_limit(1, "never", status="demo (CACO): reducing"):
        time.sleep(0.35)
    assert "demo (CACO): reducing" in terminal.getvalue() and "/10 s" in terminal.getvalue()
    for status, stream, seconds in ((None, _Terminal(), 0.25), ("quick", _Terminal(), 0.001),
                                    ("piped", io.StringIO(), 0.25)):
        monkeypatch.setattr(sys, "stderr", stream)
        with time_bound.time_limit(1, "never", status=status):
            time.sleep(seconds)
        assert stream.getvalue() == ""


def test_the_status_bar_goes_with_an_expired_bound(monkeypatch):
    """The bound still raises its one ValueError with a status bar running, and the bar's thread ends."""
    import threading

    monkeypatch.setattr(sys, "stderr", _Terminal())
    before = threading.active_count()
    with pytest.raises(ValueError, match="did not finish"):
        with time_bound.time_limit(0.2, "did not finish", status="demo"):
            while True:
                pass
    assert threading.active_count() == before


def test_no_bar_no_thread(monkeypatch):
    """Where no bar shows (no status, or a stream that is not a terminal) no ticking thread runs either;
    with a bar on a terminal, one does."""
    import threading

    before = threading.active_count()
    for status, stream, ticking in ((None, _Terminal(), False), ("piped", io.StringIO(), False),
                                    ("shown", _Terminal(), True)):
        monkeypatch.setattr(sys, "stderr", stream)
        with time_bound.time_limit(1, "never", status=status):
            assert threading.active_count() == before + ticking, status
        assert threading.active_count() == before


def test_the_bar_counts_the_bound_in_whole_seconds_rounded_up_and_is_cleared_at_the_end(monkeypatch):
    """A bound of 2.5 ticks is a bar of 3 (0.25 s with ticks of 0.1 s); when the body ends, the bar's line is
    blanked and the cursor back at its start (nothing left on the terminal, no new line)."""
    monkeypatch.setattr(time_bound, "_TICK", 0.1)
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    with time_bound.time_limit(0.25, "never", status="demo"):
        time.sleep(0.15)
    shown = terminal.getvalue()
    assert "demo: " in shown and " 1/3 s" in shown and "\n" not in shown
    assert shown.endswith("\r") and shown.rstrip("\r").rsplit("\r", 1)[-1].strip() == "", repr(shown)


class _OuterExpired(Exception):
    """Raised by the outer timer of the nesting tests."""


def _outer_timer(seconds):
    """Arm a real-time timer of ``seconds`` raising :class:`_OuterExpired` (a test runner's per-test
    timeout); return its handler."""
    import signal

    def outer(signum, frame):
        raise _OuterExpired
    signal.signal(signal.SIGALRM, outer)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    return outer


@pytest.fixture
def restore_alarm():
    import signal
    previous = signal.getsignal(signal.SIGALRM), signal.getitimer(signal.ITIMER_REAL)
    yield
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, previous[0])
    if previous[1][0] > 0:
        signal.setitimer(signal.ITIMER_REAL, *previous[1])


def test_a_bound_inside_a_later_outer_timer_holds_and_rearms_the_outer_one(restore_alarm):
    """Under an armed timer due later (a per-test timeout), the inner bound still stops the body at its
    own time; then the outer handler is back and its timer armed with what it had left."""
    import signal
    outer = _outer_timer(1.0)
    t0 = time.monotonic()
    with pytest.raises(ValueError, match="did not finish"):
        with time_bound.time_limit(0.2, "did not finish"):
            while True:
                pass
    left = signal.getitimer(signal.ITIMER_REAL)[0]      # the ValueError came before the outer timer's 1 s
    assert signal.getsignal(signal.SIGALRM) is outer and 1.0 - (time.monotonic() - t0) - 0.1 < left < 0.9
    with pytest.raises(_OuterExpired):
        while True:
            pass


def test_an_outer_timer_due_first_holds_alone(restore_alarm):
    """An armed timer due before the bound is left as it is: it stops the body with its own handler."""
    import signal
    outer = _outer_timer(0.2)
    with pytest.raises(_OuterExpired):
        with time_bound.time_limit(30, "never"):
            assert signal.getsignal(signal.SIGALRM) is outer
            while True:
                pass


def _spin(seconds):
    t = time.monotonic()
    while time.monotonic() - t < seconds:
        pass


class _BusyFinalizer:
    """An object whose ``__del__`` keeps the interpreter busy (as a garbage-collected object's
    finalizer may), then raises ``error`` if given: an exception raised in it is lost (Python hands it
    to ``sys.unraisablehook``, which prints "Exception ignored")."""

    def __init__(self, seconds, error=None):
        self.seconds, self.error = seconds, error

    def __del__(self):
        _spin(self.seconds)
        if self.error is not None:
            raise self.error


def test_an_expiry_lost_in_a_finalizer_is_followed_by_another(monkeypatch):
    """The bound's first expiry lands in a finalizer, which loses the exception it raises; the timer
    fires again, so the body still stops within the bound (give or take a repeat), where a single
    expiry would have let it run on. The lost expiry is not reported; another lost exception is."""
    seen = []

    def hook(unraisable):
        seen.append(type(unraisable.exc_value))
    monkeypatch.setattr(sys, "unraisablehook", hook)
    t0 = time.monotonic()
    with pytest.raises(ValueError, match="did not finish"):
        with time_bound.time_limit(0.2, "did not finish"):
            _BusyFinalizer(0, RuntimeError("lost in a finalizer"))
            _BusyFinalizer(0.4)                    # made and dropped at once: __del__ runs 0.4 s
            while time.monotonic() - t0 < 3:
                _spin(0.05)
    assert time.monotonic() - t0 < 2.5                  # well before the body's own 3 s
    assert seen == [RuntimeError] and sys.unraisablehook is hook       # put back
