"""Ctrl-C in a command: one line on stderr and exit status 130, never a traceback.

Every command's ``main`` is decorated with :func:`exit_on_interrupt`; its ``finally``
clauses stop its workers and remove its temporary files on the way out, and the
decorator prints what is kept. Plain Python at import, as the rest of
:mod:`derivations.core`.
"""
from __future__ import annotations

import sys

__all__ = ["exit_on_interrupt", "EXIT_INTERRUPTED"]


#: Exit status of a command stopped by Ctrl-C (128 + SIGINT, as a shell reports it).
EXIT_INTERRUPTED = 130


def exit_on_interrupt(prog: str, note=None):
    """Decorate a command's ``main(argv=None) -> int`` so that Ctrl-C ends it with one line.

    ``KeyboardInterrupt`` anywhere in ``main`` (whose ``finally`` clauses have stopped its
    workers and removed its temporary files on the way out) prints ``prog: interrupted`` and
    ``note(argv)``'s text, if any (what is kept and how to continue), as one line on stderr
    and returns :data:`EXIT_INTERRUPTED`. A second Ctrl-C while that line is printed is ignored.

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
            try:
                return main(argv)
            except Exception as exc:
                if not _caused_by_interrupt(exc):
                    raise
            except KeyboardInterrupt:
                pass
            try:
                previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
            except ValueError:              # pragma: no cover - not the main thread
                previous = None
            try:
                try:
                    kept = note(argv) if note is not None else None
                except (Exception, KeyboardInterrupt):      # the line is printed all the same
                    kept = None
                print(f"{prog}: interrupted" + (f"; {kept}" if kept else ""), file=sys.stderr, flush=True)
            finally:
                if previous is not None:
                    signal.signal(signal.SIGINT, previous)
            return EXIT_INTERRUPTED
        return guarded
    return decorate


def _caused_by_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` was raised because of a Ctrl-C: a ``KeyboardInterrupt`` in its chain of causes
    (an extension module interrupted while it loads raises ``ImportError: initialization failed``
    from it)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False
