"""Ctrl-C or SIGTERM in a command: one line on stderr and exit status 130 or 143, never a traceback.

Every command's ``main`` is decorated with :func:`exit_on_interrupt`. Ctrl-C raises
``KeyboardInterrupt`` in the main thread; while ``main`` runs, SIGTERM (from ``kill``,
``timeout``, Slurm, systemd) raises :class:`Terminated`, a ``KeyboardInterrupt``, there too,
so that both take the one path: ``main``'s ``finally`` clauses stop its workers and
remove its temporary files on the way out, and the decorator prints what is kept. The exit
status is a shell's for a process a signal ended: 128 + the signal's number
(:data:`EXIT_INTERRUPTED`, :data:`EXIT_TERMINATED`). The handlers note each signal they take, so that one whose
exception is lost on its way (an extension module that reports an ``ImportError`` in its place, a finalizer,
where Python only reports it) still stops the command. Before ``main`` runs, while ``python -m``
loads a command's modules, :func:`guard_loading` gives the same line and status (from the first module of the
package it loads on: what runs before, the interpreter's start and its ``site``, is Python's); once the ``main``
of the command a process runs has returned or printed its line, Ctrl-C and SIGTERM are ignored while
the process exits (its status is the command's). Plain Python at import, as the rest of
:mod:`derivations.core`.
"""
from __future__ import annotations

import _thread
import sys

__all__ = ["exit_on_interrupt", "guard_loading", "interrupts_deferred", "EXIT_INTERRUPTED", "EXIT_TERMINATED",
           "Terminated"]


#: Exit status of a command stopped by Ctrl-C (128 + SIGINT, as a shell reports it).
EXIT_INTERRUPTED = 130
#: Exit status of a command stopped by SIGTERM (128 + SIGTERM, as a shell reports it).
EXIT_TERMINATED = 143


class Terminated(KeyboardInterrupt):
    """SIGTERM in a command guarded by :func:`exit_on_interrupt`: raised in its main thread as Ctrl-C's
    ``KeyboardInterrupt`` is, and handled as one everywhere (workers stopped, temporaries removed)."""


#: The signals this module's handlers took, in order: one whose exception was lost on its way (an extension
#: module that reports ``ImportError`` in its place, a finalizer, a library's ``except``) still stops the command.
_received = []


#: Held while a signal is sent again (:func:`_send_later`), and while a guard stops them being sent: once it has
#: stopped them, none is sent after it.
_sending = _thread.allocate_lock()


def _terminate(signum, frame):
    _received.append(signum)
    raise Terminated


def _interrupt(signum, frame):
    _received.append(signum)
    raise KeyboardInterrupt


def _stderr_note(line: str) -> None:
    """The one line on stderr (:func:`derivations.core.output.note`, loaded only to print it: this module loads
    first, before the command's modules, and loads nothing else)."""
    from .output import note

    note(line)


#: The top-level packages whose modules are commands (``python -m derivations.print_dynamics``).
_PACKAGES = ("derivations", "numerics")
#: While a command loads (:func:`guard_loading`): its module's name, the ``sys.excepthook`` and
#: ``sys.unraisablehook`` it replaced, and where in :data:`_received` its signals begin (``since``).
_loading = {}


def _module_run() -> str | None:
    """The module this process runs as ``python -m <module>`` (from the interpreter's own arguments,
    ``sys.orig_argv``), or None (a script, ``-c``, an interactive interpreter)."""
    argv = getattr(sys, "orig_argv", [])
    value = False                   # (the value of -W or -X)
    for i, arg in enumerate(argv[1:], 1):
        if value or arg in ("-W", "-X"):
            value = not value
        elif arg.startswith("-m"):
            return arg[2:] or (argv[i + 1] if i + 1 < len(argv) else None)
        elif not arg.startswith("-") or arg.startswith("-c") or arg == "-":
            return None
    return None


def guard_loading() -> None:
    """While ``python -m`` loads one of the package's commands, before its ``main`` (guarded by
    :func:`exit_on_interrupt`) runs: Ctrl-C or SIGTERM ends it with one line on stderr,
    ``python -m <module>: interrupted`` (exit status 130) or ``terminated`` (143), not a traceback, also where
    another error took the interrupt's place; one raised in a finalizer stops the command's ``main`` before it
    starts.

    :mod:`derivations.core` calls it before it loads anything else; every command loads it first. In any
    other program (one that imports the package, the tests) it changes nothing, and a signal that is
    ignored (``nohup``, a background job) stays ignored. Once the guarded ``main`` runs, its guard handles them.
    """
    module = _module_run()
    if _loading or module is None or module.partition(".")[0] not in _PACKAGES:
        return          # (once: a command's main that has run has taken over)
    _loading.update(module=module, excepthook=sys.excepthook, unraisablehook=sys.unraisablehook, since=len(_received))
    sys.excepthook, sys.unraisablehook = _stopped_while_loading, _dropped_while_loading
    import signal       # (after the hooks: loading it, a tenth of a millisecond and more, can take a Ctrl-C)

    _set_handler(signal.SIGTERM, _terminate, only_over=signal.SIG_DFL)
    _set_handler(signal.SIGINT, _interrupt, only_over=signal.default_int_handler)


def _dropped_while_loading(unraisable):
    """``sys.unraisablehook`` while a command loads: an interrupt raised in a finalizer (importlib's module
    locks are weakref callbacks) is taken (:data:`_received`: its ``main`` stops before it starts), not reported."""
    if not isinstance(unraisable.exc_value, KeyboardInterrupt):
        _loading["unraisablehook"](unraisable)


def _stopped_while_loading(kind, exc, traceback):
    """``sys.excepthook`` while a command loads: an interrupt is its one line and exit status (nothing has been
    written: only modules were loading), anything else the hook's report."""
    stop = _interrupt_of(exc) or _received_since(_loading["since"])
    if stop is None:
        return _loading["excepthook"](kind, exc, traceback)
    _ignore_interrupts()
    terminated = isinstance(stop, Terminated)
    _stderr_note(f"python -m {_loading['module']}: {'terminated' if terminated else 'interrupted'}")
    import os

    os._exit(EXIT_TERMINATED if terminated else EXIT_INTERRUPTED)


def _taking_over() -> bool:
    """True for the ``main`` of the command this process runs (the first guarded one to run after
    :func:`guard_loading` took effect): the process exits when it returns. Its handlers stay in place (a signal
    meanwhile is the loading's: one line), and the loading's hooks stay until ``main``'s guard has begun
    (:func:`_stop_guarding_loading`)."""
    if not _loading.get("module"):
        return False
    _loading["taken"] = True
    return True


def _stop_guarding_loading() -> None:
    """The command's ``main`` runs, guarded: ``sys.excepthook`` and ``sys.unraisablehook`` are as before
    :func:`guard_loading` (the guard has set its own unraisable hook)."""
    if _loading.pop("taken", False):
        _loading["module"] = None
        if sys.excepthook is _stopped_while_loading:
            sys.excepthook = _loading["excepthook"]


def exit_on_interrupt(prog: str, note=None):
    """Decorate a command's ``main(argv=None) -> int`` so that Ctrl-C or SIGTERM ends it with one line.

    While ``main`` runs in the main thread, SIGTERM raises :class:`Terminated` and Ctrl-C ``KeyboardInterrupt``
    (unless the handler is not the default one: a program that set its own keeps it), each noted as it is
    taken: an error that takes its place (an extension module's ``ImportError``) is the interrupt, and one
    taken while the command loaded stops it before ``main`` starts. ``KeyboardInterrupt``
    anywhere in ``main`` (whose ``finally`` clauses have stopped its workers and removed its
    temporary files on the way out) prints ``prog: interrupted``, or ``prog: terminated``
    for :class:`Terminated`, and ``note(argv)``'s text, if any (what is kept and how to
    continue), as one line on stderr and returns :data:`EXIT_INTERRUPTED` or
    :data:`EXIT_TERMINATED`. A second Ctrl-C or SIGTERM while that line is printed is ignored; in the
    ``main`` of the command this process runs (``python -m``, :func:`guard_loading`), also afterwards, as
    once it has returned: the process exits, with the command's status. An
    interrupt raised in a finalizer (``__del__``, a weakref callback: where the garbage collector runs
    them), which Python would only report as unraisable and drop, is raised again after it; where ``main``
    returns first, or that one is lost in its turn, it stops the command all the same.

    Parameters
    ----------
    prog : str
        The program name that starts the line.
    note : callable, optional
        ``note(argv) -> str or None``: what the interrupted command keeps.

    Returns
    -------
    callable
        The decorator.

    >>> @exit_on_interrupt("demo")
    ... def main(argv=None):
    ...     raise KeyboardInterrupt
    >>> import contextlib, io
    >>> with contextlib.redirect_stderr(io.StringIO()) as err:
    ...     status = main([])
    >>> status, err.getvalue()
    (130, 'demo: interrupted\\n')
    """
    import functools
    import signal

    def decorate(main):
        @functools.wraps(main)
        def guarded(argv=None):
            exiting = _taking_over()                # (this process's command: the process exits after it)
            since = _loading.get("since", len(_received)) if exiting else len(_received)    # (also the loading's)
            previous = {signum: _set_handler(signum, handler, only_over=(default, handler))
                        for signum, handler, default in ((signal.SIGTERM, _terminate, signal.SIG_DFL),
                                                         (signal.SIGINT, _interrupt, signal.default_int_handler))}
            owed, sending = [], [True]          # (raised in finalizers; cleared: none sent again from then on)
            reporting = sys.unraisablehook
            reporting = _loading["unraisablehook"] if reporting is _dropped_while_loading else reporting
            sys.unraisablehook = _raised_again(reporting, owed, sending)
            try:
                try:
                    _stop_guarding_loading()
                    if len(_received) > since:
                        raise _received_since(since)
                    status = main(argv)
                    if not owed:                 # (one raised in a finalizer is the stop, raised again or not)
                        if exiting:
                            _ignore_interrupts()
                        return status
                    stop = owed[0]
                except Exception as exc:         # (an interrupt whose exception another took the place of)
                    stop = _interrupt_of(exc) or _received_since(since) or (owed[0] if owed else None)
                    if stop is None:
                        raise
                except KeyboardInterrupt as exc:
                    stop = exc
                replaced = {}
                while True:                      # (one taken meanwhile, as one sent again: the same stop)
                    try:
                        _quiet(sending, replaced)
                        break
                    except KeyboardInterrupt:
                        continue
                return _report(prog, note, argv, isinstance(stop, Terminated), replaced, keep_ignored=exiting)
            finally:
                if sending:
                    with _sending:
                        sending.clear()
                if exiting:                      # (also after an error, which Python reports as it exits)
                    _ignore_interrupts()
                    _forget_handled_interrupts()
                sys.unraisablehook = reporting
                for signum, handler in previous.items():
                    if handler is not None and not exiting:
                        signal.signal(signum, handler)
        return guarded
    return decorate


class interrupts_deferred:    # noqa: N801 - used as a function: ``with interrupts_deferred(): ...``
    """A block that Ctrl-C and SIGTERM do not stop: one taken while it runs is raised as it ends, by the handler
    in place (in the main thread; elsewhere, or where the handler is not Python's, the block is as without it).

    For loading an extension module: one interrupted while it initializes is left half made (pybind11's report
    ``ImportError: initialization failed`` in place of the interrupt, and may crash the process as it exits).
    """

    def __enter__(self):
        import signal
        import threading

        self._taken, self._previous = [], {}
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                handler = signal.getsignal(signum)
                if callable(handler):
                    self._previous[signum] = signal.signal(signum, lambda taken, frame: self._taken.append(taken))
        return self

    def __exit__(self, *exc):
        import signal

        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        if self._taken:
            self._previous[self._taken[0]](self._taken[0], None)
        return False


def _ignore_interrupts() -> None:
    """Ignore Ctrl-C and SIGTERM from now on: the command is over, the process only exits. That exit (its
    threads joined, its ``atexit`` callbacks, then its modules torn down: half a second and more with NumPy,
    SymPy and Matplotlib loaded) has no ``main`` to handle a signal: a handler in place raises a
    ``KeyboardInterrupt`` that Python reports as a traceback, and after Python has put back the default
    handlers, which it does for all but an ignored signal, the signal kills the process, with no line and
    the signal's status in place of the command's."""
    import signal

    for signum in (signal.SIGINT, signal.SIGTERM):
        _set_handler(signum, signal.SIG_IGN)


def _forget_handled_interrupts() -> None:
    """Clear CPython's mark of a Ctrl-C left unhandled, which a ``KeyboardInterrupt`` sets when it leaves code
    run by ``exec`` or ``eval`` of a string (as ``dataclasses``, ``collections.namedtuple`` and SymPy's
    ``lambdify`` make their functions) even when it is handled afterwards, as the command handles it: with the
    mark, ``python -m`` ends the process by SIGINT once it has exited (status -2, killed by the signal, after
    the command's line) in place of the command's status. CPython clears the mark each time it runs a string
    of code, here an empty one (and leaves it set, as before, on a version that does not)."""
    exec("")


def _raised_again(report, owed, sending):
    """A ``sys.unraisablehook`` that takes an interrupt raised where Python cannot raise it (a finalizer), appended
    to ``owed`` (the guard's stop, once ``main`` has returned), and sends its signal again, a hundredth of a
    second later from another thread (:func:`_send_later`; sent at once, it would be raised in the hook), so
    that its handler raises it in the code that runs then; it hands anything else to ``report``. One taken
    while the hook runs (the signal sent again, where the main thread waited longer than that) is taken
    and sent again in its turn."""
    def hook(unraisable):
        import signal

        exc = unraisable.exc_value
        while isinstance(exc, KeyboardInterrupt):
            try:
                owed.append(exc)
                signum = signal.SIGTERM if isinstance(exc, Terminated) else signal.SIGINT
                _thread.start_new_thread(_send_later, (signum, sending, len(_received)))
                return None
            except KeyboardInterrupt as taken:      # (noted by its handler in _received)
                exc = taken
        return report(unraisable)
    return hook


def _send_later(signum, sending, seen) -> None:
    """Send ``signum`` to this process a hundredth of a second from now, unless its guard has stopped sending
    (``sending`` cleared) or a signal has been taken since (:data:`_received` longer than ``seen``): it stops
    the command already."""
    import os
    import time

    time.sleep(0.01)
    with _sending:
        if sending and len(_received) == seen:
            os.kill(os.getpid(), signum)


def _quiet(sending, replaced) -> None:
    """Stop sending interrupts again (``sending`` cleared: none is sent after this) and ignore Ctrl-C and SIGTERM,
    the handlers replaced in ``replaced`` (signal number: handler, or None if none was set). Run again when
    a signal interrupts it (:func:`signal.signal` first runs the handlers of those taken): it does what is left."""
    import signal

    with _sending:
        sending.clear()
    for signum in (signal.SIGINT, signal.SIGTERM):
        if signum not in replaced:
            replaced[signum] = _set_handler(signum, signal.SIG_IGN)


def _set_handler(signum, handler, only_over=None):
    """Set ``handler`` for ``signum`` (with ``only_over``: only if the current one is that, or one of that tuple)
    and return the handler it replaces, or None if none was set (not the main thread, or another handler in place)."""
    import signal

    try:
        current = signal.getsignal(signum)
        if only_over is not None and current not in (only_over if isinstance(only_over, tuple) else (only_over,)):
            return None
        signal.signal(signum, handler)
    except ValueError:              # pragma: no cover - not the main thread
        return None
    return signal.SIG_DFL if current is None else current      # (None: set in C; never for these two)


def _report(prog, note, argv, terminated, replaced, keep_ignored=False) -> int:
    """Print the one line of a stopped command, Ctrl-C and SIGTERM ignored (:func:`_quiet`), and then put back
    the handlers it ``replaced``, unless ``keep_ignored`` (the process exits, :func:`_ignore_interrupts`);
    its exit status."""
    import signal

    try:
        kept = _quiet_note(note, argv) if note is not None else None
        line = f"{prog}: {'terminated' if terminated else 'interrupted'}" + (f"; {kept}" if kept else "")
        _stderr_note(line)
    finally:
        for signum, handler in replaced.items():
            if handler is not None and not keep_ignored:
                signal.signal(signum, handler)
    return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED


def _quiet_note(note, argv):
    """``note(argv)``, or None where it fails, with what it prints dropped: a note that parses the command line
    again meets its ``--help`` (argparse prints the help, then exits 0) or its bad input (one line, exit 2) again,
    and the stopped command's one line is printed all the same."""
    import contextlib
    import io

    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            return note(argv)
    except (Exception, KeyboardInterrupt, SystemExit):
        return None


def _received_since(since: int):
    """The interrupt of the first signal this module's handlers took from ``_received[since]`` on
    (:class:`Terminated` for SIGTERM, else ``KeyboardInterrupt``), or None."""
    import signal

    if len(_received) <= since:
        return None
    return Terminated() if _received[since] == signal.SIGTERM else KeyboardInterrupt()


def _interrupt_of(exc: BaseException):
    """The ``KeyboardInterrupt`` (Ctrl-C, or SIGTERM's :class:`Terminated`) in the chain of causes of
    ``exc``, or None (an extension module interrupted while it loads raises ``ImportError:
    initialization failed`` from it)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None
