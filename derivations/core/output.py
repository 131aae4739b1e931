"""Write a command-line program's output without ending in a traceback, and show its progress.

Results are written as JSON data (:func:`json_text`): JSON has no NaN or infinity, so
a number that is not finite is written ``null``.

``| head`` closes the pipe early (BrokenPipeError: the reader has what it
wanted, exit 0); ``> /dev/full`` cannot be written, nor a stdout closed at start
(``>&-``) (one line on stderr, exit 1). Afterwards stdout points at /dev/null, so the interpreter's final flush
cannot print a traceback either. Every line on stderr (a warning, an error, a note of progress) is written by
:func:`note`: a stderr that cannot take it loses that line alone. A progress bar (:func:`progress_bar`) is drawn
on stderr only when it is a terminal: logs and pipes get none. An output directory is
created and proved to take files before any work (:func:`prepare_output_dir`).

>>> from derivations.core.output import emit
>>> emit("hello", "demo")
hello
0
"""
import json
import math
import numbers
import os
import sys
from pathlib import Path

__all__ = ["emit", "note", "progress_bar", "isatty", "json_ready", "json_text", "shown_float", "prepare_output_dir",
           "missing_directories", "first_directory"]


def _silence(stream):
    """Point ``stream``'s file descriptor at /dev/null (nothing for a stream without one)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # a stream without a file descriptor
        pass


def note(line: str) -> None:
    """Write ``line`` and a newline on stderr: a warning, an error, a note of progress.

    A stderr that cannot take it (closed at start, ``2>&-``; a full disk; a reader gone) loses the line
    and nothing else: the command's output and exit status stay as they are, the line never goes to
    stdout instead, and stderr then points at /dev/null (the interpreter's final flush cannot fail).

    Parameters
    ----------
    line : str
        The text, without its final newline.
    """
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):  # None (started without one), closed, or not writable
        _silence(sys.stderr)


def emit(text: str, prog: str) -> int:
    """Print ``text`` (plus a newline) to stdout; returns the exit status:
    0, or 1 when the output could not be written (reported by ``prog`` on stderr).

    Parameters
    ----------
    text : str
        The output, without its final newline.
    prog : str
        The program's name, which prefixes the error line on stderr.

    Returns
    -------
    int
        0 when written (or the reader closed the pipe), 1 when stdout could not be written.
    """
    if sys.stdout is None:          # a process started without one (``>&-``)
        note(f"{prog}: error: cannot write the output: stdout is closed")
        return 1
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        _silence(sys.stdout)
        return 0
    except OSError as exc:
        _silence(sys.stdout)
        note(f"{prog}: error: cannot write the output: {exc.strerror or exc}")
        return 1
    return 0


def isatty(stream) -> bool:
    """``stream.isatty()``, False for streams that cannot say.

    Parameters
    ----------
    stream : file-like

    Returns
    -------
    bool
    """
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class _NoBar:
    """The do-nothing stand-in for a tqdm bar; ``disable`` is True, as on a tqdm bar that shows nothing."""

    disable = True

    def update(self, n=1):
        pass

    def set_description(self, desc=None, refresh=True):
        pass

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def progress_bar(total, *, desc=None, unit="it", show: bool = True, initial: int = 0, **options):
    """A tqdm progress bar on stderr when ``show`` and stderr is a terminal, otherwise an object with
    the same ``update``/``set_description``/``close`` that does nothing and whose ``disable`` is True
    (logs and pipes get no bar).

    Parameters
    ----------
    total, initial : int
        Number of steps (0 or None: no bar), and of steps already done (default 0).
    desc, unit : str, optional
        Label before the bar, and the name of a step (default ``"it"``).
    show : bool, optional
        False never shows a bar (default True).
    **options
        Further keyword arguments of ``tqdm.tqdm``.

    Returns
    -------
    object
        A ``tqdm.tqdm`` bar, or one with the same ``update``, ``set_description`` and ``close``
        (and context manager) that draws nothing.
    """
    if not (show and total and isatty(sys.stderr)):
        return _NoBar()
    from tqdm import tqdm
    return tqdm(total=total, initial=initial, desc=desc, unit=unit, file=sys.stderr,
                dynamic_ncols=True, **options)


def json_ready(obj):
    """``obj`` as JSON data: numbers that are not finite as ``None`` (JSON has no NaN or
    infinity), NumPy scalars as Python numbers, tuples as lists, keys as text.

    Parameters
    ----------
    obj : object
        Dicts, lists, tuples, text, booleans, ``None`` and numbers; anything else that is
        not a number becomes ``None``.

    Returns
    -------
    object

    >>> json_ready({"loss": float("nan"), "steps": (1, 2.5), 3: True})
    {'loss': None, 'steps': [1, 2.5], '3': True}
    """
    if isinstance(obj, dict):
        return {str(k): json_ready(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_ready(v) for v in obj]
    if isinstance(obj, (str, bool)) or obj is None:
        return obj
    if isinstance(obj, numbers.Integral):
        return int(obj)
    try:
        value = float(obj)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def json_text(obj, indent: int = 1) -> str:
    """``obj`` as JSON text (:func:`json_ready`: a number that is not finite is ``null``).

    Parameters
    ----------
    obj : object
    indent : int, optional

    Returns
    -------
    str
    """
    return json.dumps(json_ready(obj), indent=indent, allow_nan=False)


def shown_float(value) -> str:
    """A real number as the user would type it: a double at 15 significant digits, a subnormal one (below
    about 2.2e-308, which holds fewer) at the digits it holds, the shortest text that reads back as it.

    Parameters
    ----------
    value : real

    Returns
    -------
    str

    >>> shown_float(1e-320), shown_float(0.1 + 0.2), shown_float(20.0)
    ('1e-320', '0.3', '20')
    """
    x = float(value)
    return repr(x) if 0 < abs(x) < sys.float_info.min else f"{x:.15g}"


def missing_directories(path) -> list:
    """The directories from ``path`` up to (not including) its nearest existing ancestor: those that making
    ``path`` creates, which a run that made them removes again where it leaves them empty.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    list of pathlib.Path
        Absolute paths, deepest first (none where ``path`` exists).
    """
    missing = []
    probe = Path(path).absolute()
    while not os.path.lexists(probe) and probe.parent != probe:
        missing.append(probe)
        probe = probe.parent
    return missing


def first_directory(paths):
    """The first of ``paths`` that is a directory, a link not followed (an atomic write, which renames a file
    over its path, replaces a link or a file but not a directory), else None.

    Parameters
    ----------
    paths : iterable of str or os.PathLike

    Returns
    -------
    str or os.PathLike or None
    """
    import stat

    for path in paths:
        try:
            if stat.S_ISDIR(os.lstat(path).st_mode):
                return path
        except OSError:
            continue
    return None


def _probe(path: Path, longest_name: int) -> None:
    """Write and remove a file of a ``longest_name``-byte name in ``path`` (OSError if that fails). The name
    is random and created exclusively, so no file of the user's is touched, and the probe is removed
    whether or not its write succeeded (a full disk leaves nothing behind)."""
    import secrets

    probe = path / ("." + secrets.token_hex(longest_name))[:max(2, longest_name)]
    fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        os.write(fd, b"qkov")
        os.fsync(fd)
    finally:
        os.close(fd)
        try:
            probe.unlink()
        except OSError:
            pass


def prepare_output_dir(output, *, name: str = "--output", longest_name: int = 64) -> Path:
    """Create the output directory ``output`` and prove it takes files, before any work.

    The check is a real write: the directory (and missing parents) is created, a temporary file whose
    name is ``longest_name`` bytes long is written, synced and removed (also when its write fails).
    Whatever stops that (an empty path, a file in the way, a path under ``/proc`` or ``/sys``, no
    permission, an immutable directory, a name over the file system's limit, a dangling link or a link
    loop, a full disk) raises ``ValueError`` naming ``name`` and the reason; the directories created
    for the probe are removed again.

    Parameters
    ----------
    output : str or os.PathLike
    name : str, optional
        The option, for the message (default ``"--output"``).
    longest_name : int, optional
        Length in bytes of the probe file's name (default 64).

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ValueError
        If ``output`` is not a path, or the directory cannot take files.

    >>> import tempfile, pathlib
    >>> d = prepare_output_dir(pathlib.Path(tempfile.mkdtemp()) / "a" / "b")
    >>> d.is_dir(), list(d.iterdir())
    (True, [])
    >>> prepare_output_dir("")
    Traceback (most recent call last):
    ...
    ValueError: --output must name a directory; got ''
    """
    text = os.fspath(output) if isinstance(output, (str, os.PathLike)) else None
    if text is None or not text.strip():
        raise ValueError(f"{name} must name a directory; got {output!r}")
    path = Path(text)
    created = []
    try:
        created = missing_directories(path)
        path.mkdir(parents=True, exist_ok=True)
        _probe(path, longest_name)
    except OSError as exc:
        for directory in created:      # deepest first: leave nothing behind
            try:
                directory.rmdir()
            except OSError:
                pass
        reason = exc.strerror or str(exc)
        where = f" ({exc.filename})" if exc.filename and str(exc.filename) != text else ""
        raise ValueError(f"{name} {text[:80]!r} cannot take files: {reason}{where}"[:300]) from None
    return path
