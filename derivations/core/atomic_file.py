"""Write a file atomically (used for every file the package writes); read one within a bound
(used for every file the package reads as data: task files, caches).

Plain Python (no SymPy, no NumPy): importable from anywhere, including the
experiment runner's worker processes.

>>> import tempfile, pathlib
>>> from derivations.core.atomic_file import atomic_write, atomic_write_text
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> atomic_write_text(d / "sub" / "a.txt", "hello")
>>> (d / "sub" / "a.txt").read_text()
'hello'
>>> atomic_write(d / "b.bin", lambda fh: fh.write(b"\\x00\\x01"), binary=True, fsync=True)
>>> (d / "b.bin").read_bytes()
b'\\x00\\x01'
>>> read_bounded(d / "sub" / "a.txt", 64)
b'hello'
>>> read_bounded(d / "sub", 64)
Traceback (most recent call last):
...
IsADirectoryError: [Errno 21] Is a directory: ...
"""
import errno
import os
import secrets
import stat
from pathlib import Path

__all__ = ["atomic_write", "atomic_write_text", "read_bounded", "is_temporary", "temporary_name_length"]


#: The temporary file of ``name`` is ``.<name>.<random>.tmp`` (:func:`atomic_write`, without a ``prefix``):
#: ``<random>`` is drawn from these characters (:func:`tempfile.mkstemp`'s), of this length.
_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789_"
_RANDOM_CHARACTERS = frozenset(_ALPHABET)
_RANDOM_LENGTH = 8
_SUFFIX = ".tmp"
#: Names drawn before a write gives up (each is taken with probability ~ files / 37**8).
_ATTEMPTS = 100
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)


def _random_part() -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(_RANDOM_LENGTH))


def _temporary_prefix(name: str) -> str:
    return f".{name}."


def temporary_name_length(name: str) -> int:
    """The length in bytes of the name of the temporary file :func:`atomic_write` writes a file ``name`` in.

    Parameters
    ----------
    name : str
        The file's name.

    Returns
    -------
    int

    >>> temporary_name_length("report.json")
    25
    """
    return len(os.fsencode(_temporary_prefix(name))) + _RANDOM_LENGTH + len(_SUFFIX)


def is_temporary(path, names=None) -> bool:
    """Whether ``path`` is named as the temporary file :func:`atomic_write` writes a file in
    (``.<name>.<random>.tmp``, without a ``prefix``): one that a killed write may have left.

    Parameters
    ----------
    path : str or os.PathLike
    names : collection of str, optional
        Only the temporary files of these file names (default: of any).

    Returns
    -------
    bool

    >>> is_temporary(".results.csv.k1ll3d0n.tmp"), is_temporary(".results.csv.k1ll3d0n.tmp", {"sweep.json"})
    (True, False)
    >>> is_temporary(".draft.tmp"), is_temporary("notes.txt.abcdefgh.tmp")
    (False, False)
    """
    name = os.path.basename(os.fspath(path))
    if not (name.startswith(".") and name.endswith(_SUFFIX)):
        return False
    written, dot, random = name[1:-len(_SUFFIX)].rpartition(".")
    return (bool(written and dot and random) and set(random) <= _RANDOM_CHARACTERS
            and (names is None or written in names))


def atomic_write(path, write, *, binary: bool = False, fsync: bool = False, prefix: str = None,
                 encoding: str = None) -> None:
    """Write ``path`` atomically: ``write(handle)`` fills a temporary file in the
    same directory, which then replaces ``path`` (``os.replace``; readers see the
    old or the new file, never a partial one). Creates the parent directory.

    Parameters
    ----------
    path : str or os.PathLike
        The file to write.
    write : callable
        Called once with the open temporary file (text, or bytes if ``binary``).
    binary : bool
        Open the temporary file in binary mode.
    fsync : bool
        Flush and fsync the file before the rename, and the directory after it
        (durable across a crash, for results that must not be lost).
    prefix : str, optional
        Name prefix of the temporary file (default ``.<name>.``, :func:`is_temporary`); it
        always ends in ``.tmp``. A temporary file is deleted if writing fails.
    encoding : str, optional
        Text encoding (default: the locale's).

    Raises
    ------
    OSError
        If the directory or the file cannot be written; ``path`` is then unchanged.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = None
    try:
        for _ in range(_ATTEMPTS):
            # The name is held before the file exists (``O_EXCL``: made here or not at all), so an
            # interruption at any point after it finds the file below and removes it.
            tmp = path.parent / f"{prefix or _temporary_prefix(path.name)}{_random_part()}{_SUFFIX}"
            try:
                fd = os.open(tmp, _CREATE, 0o666)   # the umask applies, as to any new file
                break
            except FileExistsError:
                tmp = None                          # another's file: never removed
        else:
            raise FileExistsError(errno.EEXIST, f"no free temporary name in {_ATTEMPTS} attempts", str(path))
        with os.fdopen(fd, "wb" if binary else "w", encoding=None if binary else encoding) as fh:
            write(fh)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise
    if fsync:
        _fsync_directory(path.parent)


def atomic_write_text(path: Path, text: str, **options) -> None:
    """Write ``text`` to ``path`` atomically (:func:`atomic_write`; same options).

    Parameters
    ----------
    path : str or os.PathLike
        The file to write.
    text : str
        Its content.
    **options
        Keyword options of :func:`atomic_write` (``fsync``, ``prefix``, ``encoding``).
    """
    atomic_write(path, lambda fh: fh.write(text), **options)


def _fsync_directory(directory: Path) -> None:
    """Make the rename durable (POSIX); a no-op where directories cannot be opened."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def read_bounded(path, limit: int, *, follow_links: bool = True) -> bytes:
    """The content of the regular file ``path``, refused when it is larger than ``limit`` bytes.

    The file is opened without waiting (``O_NONBLOCK``) and checked to be a regular file before
    a byte is read, so a FIFO without a writer, a device (``/dev/zero``, a link to it) or a
    directory is an ``OSError`` at once, never a hang; a file whose size is above ``limit`` is
    refused before a byte is read, and at most ``limit + 1`` bytes are read, so a huge (or
    sparse) file costs no memory. A path that is not a file system path (an
    :mod:`importlib.resources` resource in an archive) is read through its ``open``.

    Parameters
    ----------
    path : str, os.PathLike or importlib.resources.abc.Traversable
        The file.
    limit : int
        The largest size accepted, in bytes.
    follow_links : bool, optional
        False: a symbolic link is refused (``OSError``, ``ELOOP``) instead of read through.

    Returns
    -------
    bytes

    Raises
    ------
    OSError
        If the file cannot be opened, or is not a regular file (a directory, a FIFO, a device).
    ValueError
        If it holds more than ``limit`` bytes (``"larger than <limit> bytes"``).
    """
    if isinstance(path, (str, os.PathLike)):
        name = os.fspath(path)
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(name, flags if follow_links else flags | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as fh:
            mode = os.fstat(fd).st_mode
            if stat.S_ISDIR(mode):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), name)
            if not stat.S_ISREG(mode):
                raise OSError(errno.EINVAL, "not a regular file: a FIFO, a socket or a device", name)
            if os.fstat(fd).st_size > limit:
                raise ValueError(f"larger than {limit} bytes")
            data = fh.read(limit + 1)       # (a file that grows meanwhile is still cut at the limit)
    else:
        with path.open("rb") as fh:
            data = fh.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"larger than {limit} bytes")
    return data
