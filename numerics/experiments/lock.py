"""The lock of an output directory: :data:`~numerics.experiments.lock.LOCK_FILE`, opened without following links and held with ``flock``.

Every command that writes into a directory of the experiments holds it while it works: the ``sweep``,
``reproduce``, ``fig2`` and ``fig3`` commands through their
:class:`~numerics.experiments.directory.ExperimentDirectory`, ``predict`` on its ``--store``. Two of them on one
directory exclude each other; the kernel releases the lock however the process ends.
"""
from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from .entries import entry_kind, same_file

__all__ = ["DirectoryLock", "LOCK_FILE"]

#: The lock file of a directory.
LOCK_FILE = ".lock"


class DirectoryLock:
    """:data:`~numerics.experiments.lock.LOCK_FILE` in ``directory``, held until
    :meth:`~numerics.experiments.lock.DirectoryLock.release`.

    It is opened without following a link (``O_NOFOLLOW``, created with ``O_EXCL``) and held with
    ``fcntl.flock``; a :data:`LOCK_FILE` that is not a regular file of one name (a link, a hard link, a
    directory), or is held, is refused, and so is one replaced while it was taken (twice).

    Parameters
    ----------
    directory : str or os.PathLike
        An existing directory.
    refuse : callable
        ``refuse(text) -> Exception``: the refusal of the directory, ``text`` saying why (``"is in use by ..."``,
        ``"has a .lock that is ..."``), as the command names the directory.
    users : str
        Who else holds such a lock, for the message of a lock held (``"another sweep, ..."``).

    Raises
    ------
    Exception
        What ``refuse`` returns: the lock cannot be taken (nothing is left behind: a lock file created
        here is removed where it is not held).
    """

    def __init__(self, directory, refuse, users: str):
        self.path, self._refuse, self._users = Path(directory) / LOCK_FILE, refuse, users
        self.fd, self.created = None, False
        self._take()

    def _take(self, retry: bool = True) -> None:
        """Open the lock file without following a link and hold ``flock`` on it (refused if held); once held, it
        must still be the file held (a refused run removes the one it created: then it is taken once more)."""
        import fcntl

        what = entry_kind(self.path)
        if what not in (None, "a file"):
            raise self._refuse(f"has a {LOCK_FILE} that is {what}, not a lock file (links in an output "
                               f"directory are never followed); remove it or choose another directory")
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        try:
            self.fd = os.open(self.path, flags | (os.O_EXCL if what is None else 0), 0o644)
        except FileExistsError:
            raise self._in_use(f"another process created its lock file {LOCK_FILE} at the same moment") from None
        except OSError as exc:
            reason = "is a link" if exc.errno == errno.ELOOP else (exc.strerror or str(exc))
            raise self._refuse(f"cannot open its lock file {LOCK_FILE}: {reason}") from None
        self.created = what is None
        if not (stat.S_ISREG((info := os.fstat(self.fd)).st_mode) and info.st_nlink == 1):     # (a hard link's
            self.release(refused=True)                                                  # other file would be written)
            raise self._refuse(f"has a {LOCK_FILE} that is not a regular file of one name (a hard link); remove it")
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self.release()
            raise self._in_use(f"its lock file {LOCK_FILE} is held") from None
        if not same_file(self.fd, self.path):
            self.release()            # (not ours to remove)
            if not retry:
                raise self._in_use(f"its lock file {LOCK_FILE} was replaced while this run took it")
            self._take(retry=False)

    def _in_use(self, why: str):
        return self._refuse(f"is in use by {self._users} ({why}); wait for it to end or choose another directory")

    def record_process(self) -> None:
        """Write this process's id into the lock file (for a person who finds the directory in use)."""
        with contextlib.suppress(OSError):
            os.ftruncate(self.fd, 0)
            os.pwrite(self.fd, f"{os.getpid()}\n".encode(), 0)

    def release(self, refused: bool = False) -> None:
        """Release the lock (once; again does nothing).

        Parameters
        ----------
        refused : bool, optional
            Refused before any work: a lock file created here is removed (nothing in the directory changed).
        """
        if self.fd is None:
            return
        if refused and self.created:
            with contextlib.suppress(OSError):
                os.unlink(self.path)
        os.close(self.fd)
        self.fd = None
