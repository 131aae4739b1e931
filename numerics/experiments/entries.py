"""What an entry of an output directory is, never following a link: the checks of
:class:`~numerics.experiments.directory.ExperimentDirectory` (the files it writes, its folder of runs) and of
:class:`~numerics.experiments.lock.DirectoryLock` (its lock file) before anything is opened or written.
"""
from __future__ import annotations

import os
import stat

__all__ = ["entry_kind", "same_file"]


def same_file(fd: int, path) -> bool:
    """Whether ``path`` (not following a link) is the file open as ``fd``.

    Parameters
    ----------
    fd : int
        An open file descriptor.
    path : str or os.PathLike

    Returns
    -------
    bool
        False where ``path`` cannot be looked at.
    """
    try:
        held, there = os.fstat(fd), os.lstat(path)
    except OSError:
        return False
    return (held.st_dev, held.st_ino) == (there.st_dev, there.st_ino)


def entry_kind(path):
    """What ``path`` is, without following a link.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    str or None
        None (absent), ``"a file"``, ``"a directory"``, ``"a link to a directory"``, ``"a dangling link"``,
        ``"a link"`` or ``"a special file"`` (also where it cannot be looked at).

    >>> entry_kind("/"), entry_kind("/no/such/entry")
    ('a directory', None)
    """
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError:
        return "a special file"
    if stat.S_ISLNK(mode):
        if not os.path.exists(path):
            return "a dangling link"
        return "a link to a directory" if os.path.isdir(path) else "a link"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "a file" if stat.S_ISREG(mode) else "a special file"
