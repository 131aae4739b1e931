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
