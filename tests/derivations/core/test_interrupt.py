"""The one line of a stopped command (derivations.core.interrupt.exit_on_interrupt): a second Ctrl-C or SIGTERM
while it is printed, an interrupt behind another error, and the handlers afterwards. Run with the handlers a
terminal gives a program (Ctrl-C raises KeyboardInterrupt, SIGTERM ends it), whatever the shell that started
the tests set: a background shell starts them with SIGINT ignored, where a handler left ignored is not seen."""
import os
import signal
import time

import pytest

from derivations.core.interrupt import exit_on_interrupt


@pytest.fixture
def terminal_handlers():
    """SIGINT raising KeyboardInterrupt and SIGTERM the default, as in a terminal; restored afterwards."""
    previous = {s: signal.signal(s, h) for s, h in ((signal.SIGINT, signal.default_int_handler),
                                                   (signal.SIGTERM, signal.SIG_DFL))}
    yield
    for s, h in previous.items():
        signal.signal(s, h)


@pytest.mark.parametrize("first, second, status, word", [
    (KeyboardInterrupt, signal.SIGINT, 130, "interrupted"), (KeyboardInterrupt, signal.SIGTERM, 130, "interrupted"),
    (signal.SIGTERM, signal.SIGINT, 143, "terminated"), (signal.SIGTERM, signal.SIGTERM, 143, "terminated")])
def test_a_second_ctrl_c_or_sigterm_while_the_line_is_printed_is_ignored(terminal_handlers, capsys, first, second,
                                                                        status, word):
    """The note (what is kept) is computed while the line is printed: a second signal then changes nothing,
    the note included; Ctrl-C and SIGTERM are as before afterwards."""
    def note(argv):
        signal.raise_signal(second)                # (a handler in place would raise here)
        return f"kept in {argv[0]}"

    @exit_on_interrupt("demo", note=note)
    def main(argv=None):
        if first is KeyboardInterrupt:
            raise KeyboardInterrupt
        signal.raise_signal(first)
        return 0
    assert main(["out"]) == status
    assert capsys.readouterr().err == f"demo: {word}; kept in out\n"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_a_note_that_raises_keyboardinterrupt_still_gives_the_line(terminal_handlers, capsys):
    def note(argv):
        raise KeyboardInterrupt

    @exit_on_interrupt("demo", note=note)
    def main(argv=None):
        raise KeyboardInterrupt
    assert main([]) == 130 and capsys.readouterr().err == "demo: interrupted\n"


def test_a_note_that_meets_help_again_still_gives_the_line_and_prints_nothing(terminal_handlers, capsys):
    """Ctrl-C while ``--help`` is printed: the note parses the arguments again, and argparse prints the help
    and exits 0 once more; the command still ends with its one line and 130, the note's output dropped."""
    import argparse

    def note(argv):
        argparse.ArgumentParser(prog="demo").parse_args(argv)

    @exit_on_interrupt("demo", note=note)
    def main(argv=None):
        raise KeyboardInterrupt
    assert main(["--help"]) == 130
    assert capsys.readouterr() == ("", "demo: interrupted\n")


def test_an_error_raised_while_an_interrupt_is_handled_is_the_interrupt(terminal_handlers, capsys):
    """A clean-up that fails on the way out of Ctrl-C (its error's context is the KeyboardInterrupt, not its
    cause) still ends the command as interrupted; an error with no interrupt behind it is raised."""
    @exit_on_interrupt("demo")
    def main(argv=None):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise OSError("clean-up failed")

    @exit_on_interrupt("demo")
    def failing(argv=None):
        try:
            raise ValueError("first")
        except ValueError:
            raise OSError("clean-up failed")
    assert main([]) == 130 and capsys.readouterr().err == "demo: interrupted\n"
    with pytest.raises(OSError, match="clean-up failed"):
        failing([])


_STOP_WHILE_LOADING = """
import os, signal, sys
class _Stop:
    def find_spec(self, name, path=None, target=None):
        if name == {module!r}:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.{signal})       # raised by the handler in place, inside this import
        return None
sys.meta_path.insert(0, _Stop())
"""


@pytest.mark.parametrize("signal_name, status, word", [("SIGINT", 130, "interrupted"), ("SIGTERM", 143, "terminated")])
@pytest.mark.parametrize("command, module", [("derivations.print_dynamics", "derivations.core.atomic_file"),
                                             ("numerics.experiments", "derivations.core.cli")])
def test_ctrl_c_or_sigterm_while_a_command_loads_is_one_line(tmp_path, command, module, signal_name, status, word):
    """A signal while ``python -m`` loads a command's modules, before its guarded ``main`` runs (about a
    tenth of a second, more on a busy machine; here at a module of derivations.core, which every command
    loads first), is one line and the exit status of a stopped command, not a traceback."""
    import subprocess
    import sys

    (tmp_path / "sitecustomize.py").write_text(_STOP_WHILE_LOADING.format(module=module, signal=signal_name))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path)] + sys.path))
    run = subprocess.run([sys.executable, "-m", command, "--help"], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=60, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert (run.returncode, run.stdout, run.stderr) == (status, "", f"python -m {command}: {word}\n")


@pytest.mark.parametrize("at_the_end", [False, True])
@pytest.mark.parametrize("stop, status, word", [(signal.SIGINT, 130, "interrupted"),
                                                (signal.SIGTERM, 143, "terminated")])
def test_ctrl_c_or_sigterm_that_lands_in_a_finalizer_still_stops_the_command(terminal_handlers, capsys, stop, status,
                                                                             word, at_the_end):
    """A signal whose exception is raised inside a finalizer (``__del__``, a weakref callback, run by the
    garbage collector at any moment), where Python only reports it as unraisable, still stops the command
    with its one line, and no "Exception ignored" report; also as ``main`` returns."""
    class Finalized:
        def __del__(self):
            signal.raise_signal(stop)              # the handler raises at the next instruction, in here

    @exit_on_interrupt("demo")
    def main(argv=None):
        Finalized()                                 # (collected at once)
        if not at_the_end:
            time.sleep(10)                          # (ended by the signal, raised again)
        return 0
    after = []
    try:
        returned = main([])
    finally:          # a signal sent again after main ended would be caught here
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda signum, frame: after.append(signum))
        time.sleep(0.1)
    assert (returned, after) == (status, [])
    assert capsys.readouterr().err == f"demo: {word}\n"


@pytest.mark.parametrize("at_the_end", [False, True])
@pytest.mark.parametrize("stop, status, word", [(signal.SIGINT, 130, "interrupted"),
                                                (signal.SIGTERM, 143, "terminated")])
def test_an_interrupt_sent_again_that_lands_in_the_unraisable_hook_still_stops_the_command(
        terminal_handlers, capsys, monkeypatch, stop, status, word, at_the_end):
    """The signal sent again for an interrupt raised in a finalizer, taken while the unraisable hook that sends it
    still runs (a busy machine: the main thread not scheduled for the hundredth of a second the sender waits;
    here the first one sent at once, as the hook starts its sender), where Python drops its exception: the
    command still stops, with its one line, nothing sent after it, no "Exception ignored" report (it returned
    0: seen once under load). (Not timed: a signal taken just before ``time.sleep`` blocks is raised once it
    has slept, on a busy machine.)"""
    import threading

    sleep, first = time.sleep, []

    def no_wait_the_first_time(seconds):         # (the sender's wait: on a busy machine, as long as the hook's)
        if threading.get_ident() == threading.main_thread().ident or first:
            return sleep(seconds)
        first.append(seconds)
    monkeypatch.setattr(time, "sleep", no_wait_the_first_time)

    class Finalized:
        def __del__(self):
            signal.raise_signal(stop)

    @exit_on_interrupt("demo")
    def main(argv=None):
        Finalized()
        if not at_the_end:
            time.sleep(2)                           # (ended by the signal, sent again)
        return 0
    after = []
    try:
        returned = main([])
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda signum, frame: after.append(signum))
        time.sleep(0.1)
    assert len(first) == 1
    assert (returned, after, capsys.readouterr().err) == (status, [], f"demo: {word}\n")


def test_an_interrupt_from_a_finalizer_is_not_raised_after_the_command_stopped_on_another(terminal_handlers, capsys):
    """Ctrl-C in a finalizer, then Ctrl-C again before the first is sent again: one line, and nothing after."""
    class Finalized:
        def __del__(self):
            signal.raise_signal(signal.SIGTERM)

    @exit_on_interrupt("demo")
    def main(argv=None):
        Finalized()
        raise KeyboardInterrupt
    after = []
    try:
        returned = main([])
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda signum, frame: after.append(signum))
        time.sleep(0.1)
    assert (returned, after, capsys.readouterr().err) == (130, [], "demo: interrupted\n")


_STOP_AS_IT_EXITS = """
import atexit, os, signal
class _Stop:
    def __del__(self, kill=os.kill, pid=os.getpid(), signum=signal.{signal}):
        kill(pid, signum)
if {in_atexit}:
    atexit.register(os.kill, os.getpid(), signal.{signal})   # (registered first: the last callback)
else:
    _stop = _Stop()            # collected as Python tears its modules down, its signal handlers reset
"""


@pytest.mark.parametrize("signal_name, in_atexit", [("SIGINT", False), ("SIGTERM", False), ("SIGINT", True),
                                                    ("SIGTERM", True)])
def test_ctrl_c_or_sigterm_after_the_command_ended_leaves_its_status(tmp_path, signal_name, in_atexit):
    """A signal once the command's ``main`` has returned, while the process exits (its ``atexit`` callbacks, then
    its modules torn down: half a second and more with NumPy and Matplotlib loaded), is ignored: the command's
    exit status and output, no traceback, not killed by the signal."""
    import subprocess
    import sys

    (tmp_path / "sitecustomize.py").write_text(_STOP_AS_IT_EXITS.format(signal=signal_name, in_atexit=in_atexit))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path)] + sys.path))
    run = subprocess.run([sys.executable, "-m", "derivations.print_dynamics", "--help"], capture_output=True,
                         text=True, env=env, cwd=tmp_path, timeout=60,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.default_int_handler))
    assert (run.returncode, run.stderr) == (0, ""), run.stderr
    assert run.stdout.startswith("usage: ")


def test_the_command_of_the_process_ignores_ctrl_c_and_sigterm_once_its_line_is_printed(terminal_handlers, capsys,
                                                                                       monkeypatch):
    """The ``main`` of the command this process runs (``python -m``): after its line, Ctrl-C and SIGTERM stay
    ignored while the process exits (a second signal then killed it, with the signal's status); a ``main``
    called within a program keeps them as they were (the first test)."""
    from derivations.core import interrupt

    monkeypatch.setitem(interrupt._loading, "module", "derivations.demo")

    @exit_on_interrupt("demo")
    def main(argv=None):
        raise KeyboardInterrupt
    assert main([]) == 130 and capsys.readouterr().err == "demo: interrupted\n"
    assert signal.getsignal(signal.SIGINT) == signal.getsignal(signal.SIGTERM) == signal.SIG_IGN


_STOP_IN_EXEC = """
import sys
class _Stop:
    def find_spec(self, name, path=None, target=None):
        if name == {module!r}:
            exec("raise KeyboardInterrupt")      # as a Ctrl-C raised in the code exec runs
        return None
sys.meta_path.insert(0, _Stop())
"""


def test_ctrl_c_that_leaves_code_run_by_exec_still_exits_130(tmp_path):
    """Ctrl-C whose ``KeyboardInterrupt`` leaves code run by ``exec`` of a string (as dataclasses and namedtuple
    make classes; here as the command imports a subcommand's module, in its ``main`` and again for the line's
    note, which it stops) gives the one line and exit status 130, not a process killed by SIGINT after it:
    CPython marks such an interrupt as unhandled, and ``python -m`` then ends by SIGINT."""
    import subprocess
    import sys

    (tmp_path / "sitecustomize.py").write_text(_STOP_IN_EXEC.format(module="numerics.experiments.commands.fig2"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path)] + sys.path))
    run = subprocess.run([sys.executable, "-m", "numerics.experiments", "fig2", "--lr-qk", "-1"], capture_output=True,
                         text=True, env=env, cwd=tmp_path, timeout=60)
    assert (run.returncode, run.stdout, run.stderr) == (130, "", "experiments: interrupted\n")


@pytest.mark.parametrize("stop, status, word", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")])
def test_an_interrupt_another_error_took_the_place_of_is_the_interrupt(terminal_handlers, capsys, stop, status, word):
    """Ctrl-C or SIGTERM inside an extension module's import, which drops the ``KeyboardInterrupt`` and reports
    an ``ImportError`` of its own in its place, no interrupt in its chain (NumPy's: 'PyCapsule_Import could not
    import module "datetime"', seen as a 71-line traceback, exit 1, for SIGTERM 0.2 s into fig2): the command
    stops with its one line."""
    @exit_on_interrupt("demo")
    def main(argv=None):
        try:
            os.kill(os.getpid(), stop)
            time.sleep(10)
        except KeyboardInterrupt:
            pass                                    # (the extension module clears it ...)
        raise ImportError('PyCapsule_Import could not import module "datetime"')      # (... and reports this)
    assert main([]) == status and capsys.readouterr().err == f"demo: {word}\n"


_LOST_WHILE_LOADING = """
import os, signal, sys, time
class _Finalized:
    def __del__(self):
        os.kill(os.getpid(), signal.{signal})   # raised in here, where Python only reports it
        time.sleep(0.5)
class _Stop:
    def find_spec(self, name, path=None, target=None):
        if name == {module!r}:
            sys.meta_path.remove(self)
            if {how!r} == "finalizer":
                _Finalized()
                return None
            try:
                os.kill(os.getpid(), signal.{signal})
                time.sleep(10)
            except KeyboardInterrupt:
                pass                            # (lost: a library's except, or an extension module's, below)
            if {how!r} == "replaced":
                raise ImportError("initialization failed")
        return None
sys.meta_path.insert(0, _Stop())
"""


@pytest.mark.parametrize("how", ["dropped", "replaced", "finalizer"])
@pytest.mark.parametrize("signal_name, status, word", [("SIGINT", 130, "interrupted"), ("SIGTERM", 143, "terminated")])
def test_an_interrupt_lost_while_a_command_loads_still_stops_it(tmp_path, signal_name, status, word, how):
    """A signal whose exception is lost while ``python -m`` loads the command: raised in a finalizer (as importlib's
    module locks are, where Python only reports it: 'Exception ignored ... KeyboardInterrupt', and the command ran
    to its end, exit 0: seen for Ctrl-C 0.14 s into fig2), dropped, or replaced by an ImportError (a traceback,
    exit 1): one line and the stopped status."""
    import subprocess
    import sys

    source = _LOST_WHILE_LOADING.format(module="derivations.core.cli", signal=signal_name, how=how)
    (tmp_path / "sitecustomize.py").write_text(source)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path)] + sys.path))
    run = subprocess.run([sys.executable, "-m", "numerics.experiments", "fig2", "--lr-qk", "-1"], capture_output=True,
                         text=True, env=env, cwd=tmp_path, timeout=60,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert (run.returncode, run.stdout, run.stderr.count("\n")) == (status, "", 1), run.stderr
    assert f": {word}" in run.stderr and "Traceback" not in run.stderr


def test_sigterm_is_never_left_to_its_default_as_the_command_takes_over(monkeypatch, terminal_handlers, capsys):
    """From the loading guard to the command's guarded ``main``, SIGTERM always has a handler that gives the one line:
    the guard put SIGTERM back to its default before ``main``'s guard set its own, and a SIGTERM in between killed
    the process with no line."""
    from derivations.core import interrupt

    monkeypatch.setitem(interrupt._loading, "module", "derivations.demo")
    signal.signal(signal.SIGTERM, interrupt._terminate)         # (as guard_loading leaves it)
    set_for_sigterm = []
    real = signal.signal
    monkeypatch.setattr(signal, "signal", lambda s, h: (s == signal.SIGTERM and set_for_sigterm.append(h), real(s, h))[1])

    @exit_on_interrupt("demo")
    def main(argv=None):
        set_for_sigterm.append("main")
        return 0
    assert main([]) == 0
    assert set_for_sigterm[:set_for_sigterm.index("main")].count(signal.SIG_DFL) == 0, set_for_sigterm


_CTRL_C_AS_SIGNAL_LOADS = """
import os, sys
class _Stop:
    def find_spec(self, name, path=None, target=None):
        if name == "signal" and "derivations.core.interrupt" in sys.modules:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), 2)                 # Ctrl-C (SIGINT), as the guard loads the signal module
        return None
sys.meta_path.insert(0, _Stop())
"""


def test_ctrl_c_as_the_loading_guard_loads_the_signal_module_is_one_line(tmp_path):
    """The guard loads ``signal`` (its enums: a tenth of a millisecond and more) after it has set its hooks: a Ctrl-C
    then (seen 0.12 s into fig2) was a traceback and the process killed by SIGINT."""
    import subprocess
    import sys

    (tmp_path / "sitecustomize.py").write_text(_CTRL_C_AS_SIGNAL_LOADS)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path)] + sys.path))
    run = subprocess.run([sys.executable, "-m", "numerics.experiments", "fig2", "--lr-qk", "-1"], capture_output=True,
                         text=True, env=env, cwd=tmp_path, timeout=60,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.default_int_handler))
    assert (run.returncode, run.stdout, run.stderr) == (130, "", "python -m numerics.experiments: interrupted\n")


def test_an_interrupt_in_a_deferred_block_is_raised_as_it_ends():
    """Ctrl-C and SIGTERM taken in the block are raised by the handler in place once it ends, the first one
    taken; the block runs to its end."""
    from derivations.core.interrupt import interrupts_deferred

    ran, previous = [], signal.signal(signal.SIGTERM, lambda signum, frame: ran.append("handled"))
    try:
        with pytest.raises(KeyboardInterrupt):
            with interrupts_deferred():
                signal.raise_signal(signal.SIGINT)
                signal.raise_signal(signal.SIGTERM)
                ran.append(sum(range(100000)))
        assert ran == [sum(range(100000))]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGTERM, previous)
